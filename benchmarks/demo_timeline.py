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
- warmups: that call (the tool's pending work runs beside it: util/idle.py);
- measured rounds: the other hyperfine calls;
- after measuring: the last call's end to the process's exit (statistics with the verify checks
  beside them, the results record, report.md and report.html).

The load averages at the start and the end are printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PHASES = [("start-up (python, invoke)", "start", "invoke"),
          ("imports and the matrix (to the end of pipeline.load)", "invoke", "loaded"),
          ("fetch, build lookup, launcher, cgroup", "loaded", "warmups"),
          ("warmups (one hyperfine call; pending work beside it)", "warmups", "measuring"),
          ("measured rounds (the other hyperfine calls)", "measuring", "measured"),
          ("after measuring (statistics and verify, record, reports, exit)", "measured", "exit")]


def child(out: Path, argv: list[str]) -> None:
    """Run `invoke compare ...` here, noting when each step is reached (into ``out``)."""
    t0 = float(os.environ["PB_TIMELINE_T0"])
    marks: dict[str, float] = {}

    def mark(name: str, *, last: bool = False) -> None:
        if last or name not in marks:
            marks[name] = time.time() - t0

    sys.argv = ["invoke", *argv]
    from invoke.main import program

    mark("invoke")
    sys.path.insert(0, argv[argv.index("--search-root") + 1])  # that checkout's patchbench, as
    # invoke does when it loads the tasks.py there (after this process has wrapped its functions)
    from patchbench import pipeline
    from patchbench.util import command

    load = pipeline.load

    def timed_load(*a: Any, **k: Any) -> Any:
        try:
            return load(*a, **k)
        finally:
            mark("loaded")

    pipeline.load = timed_load  # type: ignore[assignment]
    run = command.run

    def timed_run(args: Any, *a: Any, **k: Any) -> Any:
        hyperfine = Path(str(args[0])).name == "hyperfine" and "--export-json" in args
        if hyperfine:
            mark("measuring" if "warmups" in marks else "warmups")
        try:
            return run(args, *a, **k)
        finally:
            if hyperfine:
                mark("measured", last=True)

    command.run = timed_run  # type: ignore[assignment]
    exit_ = os._exit

    def timed_exit(code: int) -> None:
        mark("exit")
        out.write_text(json.dumps(marks))
        exit_(code)

    os._exit = timed_exit  # type: ignore[assignment]
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
    walls = [r["wall"] for r in rows]
    print(f"| wall, as the parent saw it | {statistics.median(walls):.3f} "
          f"({min(walls):.3f}-{max(walls):.3f}) |")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), sys.argv[3:])
    else:
        main()
