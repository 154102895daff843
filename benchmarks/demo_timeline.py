"""Where the warm demo's wall time goes, phase by phase (run by hand; figures go to docs/cost.md).

    python benchmarks/demo_timeline.py [--repeat 5] [--project DIR]

Builds the demo once in a temporary builds/ (a cold `invoke compare demo`), then runs the warm
`invoke compare demo` ``--repeat`` times, each in a fresh interpreter that records when it
reaches each step (patchbench's functions wrapped in that process only; nothing is changed on
disk). Prints the median of each phase, in seconds from the interpreter's start:

- start-up: the interpreter and invoke's import;
- imports and the matrix: up to the end of `pipeline.load` (patchbench's modules, pydantic, the
  kinds' config models, matrix.yaml validated);
- fetch, build lookup, launcher, cgroup: up to the first hyperfine call (the warmups);
- warmups: from the run reaching them to their end (the tool's pending work runs beside them:
  util/idle.py; a head start, measure/headstart.py, began them before: its start is printed too);
- measured rounds: the other hyperfine calls;
- after measuring: the last call's end to the process's exit (statistics with the verify checks
  beside them, the results record, report.md and report.html).

The load averages at the start and the end are printed with the figures.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PHASES = [("start-up (python, invoke)", "start", "invoke"),
          ("imports and the matrix (to the end of pipeline.load)", "invoke", "loaded"),
          ("fetch, build lookup, launcher, cgroup", "loaded", "warmups"),
          ("warmups, from the run reaching them (pending work beside them)", "warmups",
           "measuring"),
          ("measured rounds (the other hyperfine calls)", "measuring", "measured"),
          ("after measuring (statistics and verify, record, reports, exit)", "measured", "exit")]


def on_import(name: str, patch: Callable[[ModuleType], None]) -> None:
    """Call ``patch`` with the module ``name`` once it has been imported (by the tool, when
    it needs it: importing it here would move its cost to another phase)."""

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)
            if spec is None or spec.loader is None:
                return spec
            loader = spec.loader
            exec_module = loader.exec_module

            def patched(module: ModuleType) -> None:
                exec_module(module)
                patch(module)

            loader.exec_module = patched  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, Finder())


def child(out: Path, argv: list[str]) -> None:
    """Run `invoke compare ...` here, noting when each step is reached (into ``out``)."""
    t0 = float(os.environ["PB_TIMELINE_T0"])
    marks: dict[str, float] = {}

    def mark(name: str, *, last: bool = False) -> None:
        if last or name not in marks:
            marks[name] = time.time() - t0

    def around(module: ModuleType, fn: str, before: str | None, after: str | None,
               when: Callable[[], bool] = lambda: True) -> None:
        real = getattr(module, fn)

        def timed(*a: Any, **k: Any) -> Any:
            if before:
                mark(before)
            try:
                return real(*a, **k)
            finally:
                if after and when():
                    mark(after)

        setattr(module, fn, timed)

    sys.argv = ["invoke", *argv]
    from invoke.main import program

    mark("invoke")
    sys.path.insert(0, argv[argv.index("--search-root") + 1])  # that checkout's patchbench, as
    # invoke does when it loads the tasks.py there

    def command_module(command: ModuleType) -> None:
        run = command.run

        def timed_run(args: Any, *a: Any, **k: Any) -> Any:
            hyperfine = Path(str(args[0])).name == "hyperfine" and "--export-json" in args
            if hyperfine and "warmups" not in marks:  # no warmup call of its own
                mark("warmups")
                mark("measuring")
            try:
                return run(args, *a, **k)
            finally:
                if hyperfine:
                    mark("measured", last=True)

        command.run = timed_run

    def headstart_module(headstart: ModuleType) -> None:
        around(headstart, "begin", None, "head start",
               lambda: headstart._SESSION is not None and headstart._SESSION.early is not None)

    on_import("patchbench.pipeline", lambda m: around(m, "load", None, "loaded"))
    on_import("patchbench.util.command", command_module)
    on_import("patchbench.measure.headstart", headstart_module)
    on_import("patchbench.measure.bench", lambda m: around(m, "_warm_up", "warmups", "measuring"))
    exit_ = os._exit

    def timed_exit(code: int) -> None:
        mark("exit")
        out.write_text(json.dumps(marks))
        exit_(code)

    os._exit = timed_exit
    program.run()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--project", type=Path, default=ROOT, help="the patchbench checkout to run")
    args = ap.parse_args()
    project = args.project.resolve()
    load_start = os.getloadavg()
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        dirs = ["--builds", f"{tmp}/builds", "--reports", f"{tmp}/reports"]
        base = ["--search-root", str(project), "compare", "demo", *dirs]
        subprocess.run([sys.executable, "-m", "invoke", *base], check=True, cwd=tmp,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # the cold build
        for i in range(args.repeat):
            out = Path(tmp) / f"marks-{i}.json"
            env = {**os.environ, "PB_TIMELINE_T0": repr(time.time())}
            t0 = time.monotonic()
            subprocess.run([sys.executable, __file__, "--child", str(out), *base], check=True,
                           cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            marks = json.loads(out.read_text())
            marks["start"], marks["wall"] = 0.0, time.monotonic() - t0
            rows.append(marks)
    load_end = os.getloadavg()
    print(f"warm `invoke compare demo`, {args.repeat} runs, medians (min-max); load average "
          f"{'/'.join(f'{x:.2f}' for x in load_start)} -> {'/'.join(f'{x:.2f}' for x in load_end)}")
    print()
    print("| phase | seconds |")
    print("|---|---|")
    for label, a, b in PHASES:
        xs = [r[b] - r[a] for r in rows]
        print(f"| {label} | {statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f}) |")
    began = [r["head start"] for r in rows if "head start" in r]
    if began:
        print(f"| (the warmups' head start began at, {len(began)} of {len(rows)} runs) | "
              f"{statistics.median(began):.3f} ({min(began):.3f}-{max(began):.3f}) |")
    walls = [r["wall"] for r in rows]
    print(f"| wall, as the parent saw it | {statistics.median(walls):.3f} "
          f"({min(walls):.3f}-{max(walls):.3f}) |")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), sys.argv[3:])
    else:
        main()
