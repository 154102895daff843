"""Side by side: the protocol people use today against patchbench's, for the same runs.

    PATH=<hyperfine 2>:$PATH python3 benchmarks/side_by_side.py [--repeats 3]
        [--targets demo,runc] [--seed-hyperfine /usr/bin/hyperfine]
        [--source runc=<runc git>] [--out benchmarks/results/side_by_side.md]

In one session, on the same builds, each case runs twice, in alternating order:

- **the seed's protocol**: ``hyperfine -w 50 -r 500 A B`` (``--seed-hyperfine``: Debian's 1.15 by
  default, with its default shell, as a runc maintainer ran it), read as hyperfine reports it:
  the ratio of the means ± ratio * sqrt((sd_A/mean_A)^2 + (sd_B/mean_B)^2) (hyperfine 1.x's "B ran
  1.14 ± 0.05 times faster than A"), that ± taken as an interval ("different" when it excludes
  1); beside it, the pooled 95 % Welch t interval of the ratio of the means, which a careful
  reader would compute from the same runs;
- **patchbench's protocol**: the same commands, the same 50 warmups and 500 runs per command, in
  25 interleaved rounds of 20 (``patchbench.measure.bench``, hyperfine 2 on PATH), judged by the
  round-paired rule (``patchbench.analysis.paired``) for wall time and for CPU time
  (``patchbench.analysis.metrics``), alpha 0.05, min_effect 2 %.

The same number of runs takes about the same wall-clock time (each run's seconds are recorded).
Cases: runc-signal's ``run`` (``runc run`` of a ``true`` container: baseline against itself, A/A,
and against ``async-signal-notify``, A/B), and the demo (``slowstart -n 50 -boot 2ms``, 50
sandboxes booted one after the other under its lock, about 117 ms, against itself, and against
``-n 51``: one boot more, a planted change of 2 % by the same binary; not ``-boot 15.3ms``
against ``15ms``: Go's timers sleep 15.3 ms as 16 ms here, a 6 % change).
Recorded per case and repeat: the load at the start, each protocol's seconds, its ratio, the
half-width it reaches (relative: the ± over the ratio; the CI's, as a factor), whether it calls
the pair different, and patchbench's wall and CPU answers. Needs root for runc.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench import config, pipeline, runtimes, scenarios  # noqa: E402
from patchbench.analysis import metrics as mx  # noqa: E402
from patchbench.analysis import paired, sequential, stats  # noqa: E402
from patchbench.build import Variant  # noqa: E402
from patchbench.config.scenarios import TimedConfig  # noqa: E402
from patchbench.measure import bench, engine  # noqa: E402
from patchbench.measure.bench import Cell, Invocation  # noqa: E402
from patchbench.util.layout import Layout  # noqa: E402
from patchbench.util.workspace import Workspace  # noqa: E402

WARMUP, RUNS, ROUNDS = 50, 500, 25  # the seed's -w 50 -r 500; patchbench's rounds of 20


@dataclass
class Case:
    target: str  # "demo" or "runc"
    kind: str  # "A/A" or "A/B"
    a: list[str]
    b: list[str]
    env: dict[str, str] | None = None


@dataclass(frozen=True)
class Size:
    warmup: int = WARMUP
    runs: int = RUNS
    rounds: int = ROUNDS


def seed_protocol(case: Case, hyperfine: str, work: Path, size: Size) -> dict[str, Any]:
    """``hyperfine -w 50 -r 500 A B``, as hyperfine 1.x reports it."""
    export = work / "seed.json"
    argv = [hyperfine, "-w", str(size.warmup), "-r", str(size.runs), "--style", "basic", "--export-json",
            str(export), "--", shlex.join(case.a), shlex.join(case.b)]
    began = time.monotonic()
    subprocess.run(argv, check=True, capture_output=True, env=case.env, timeout=3600)
    seconds = time.monotonic() - began
    res = json.loads(export.read_text())["results"]
    ta, tb = (engine.runs(r).times for r in res)
    ma, mb = stats.summarize(ta), stats.summarize(tb)
    ratio = ma.mean / mb.mean  # above 1: B faster
    pm = ratio * math.sqrt((ma.stdev / ma.mean) ** 2 + (mb.stdev / mb.mean) ** 2)
    se = math.sqrt((ma.stdev / ma.mean) ** 2 / ma.n + (mb.stdev / mb.mean) ** 2 / mb.n)
    q = stats.t_ppf(0.975, ma.n + mb.n - 2)
    return {"seconds": seconds, "ratio": ratio, "pm": pm, "half": pm / ratio,
            "different": not ratio - pm <= 1 <= ratio + pm,
            "pooled_half": math.expm1(q * se), "pooled_different": abs(math.log(ratio)) > q * se}


def patchbench_protocol(case: Case, work: Path, seed: int, size: Size) -> dict[str, Any]:
    """The same runs in 25 interleaved rounds, judged round by round (wall and CPU time)."""
    names = tuple(mx.DEFAULT)
    invs = {"A": Invocation(command=case.a, env=case.env, metrics=names),
            "B": Invocation(command=case.b, env=case.env, metrics=names)}
    cells = [Cell("A"), Cell("B")]
    began = time.monotonic()
    samples, _ = bench.measure("side", cells, lambda c: invs[c.variant], runs=size.runs,
                               rounds=size.rounds, warmup=size.warmup, timeout=60, seed=seed,
                               workdir=work / "pb")
    seconds = time.monotonic() - began
    a, b = samples[cells[0]], samples[cells[1]]
    wall = paired.paired_verdict(a.times, a.rounds, b.times, b.rounds, alpha=0.05,
                                 min_effect=0.02)
    cpu = mx.judge("cpu", a.metrics["cpu"], a.rounds, b.metrics["cpu"], b.rounds, alpha=0.05,
                   min_effect=0.02)
    shutil.rmtree(work / "pb", ignore_errors=True)
    return {"seconds": seconds, "ratio": wall.speedup,
            "half": sequential.half_width(wall.ci_low, wall.ci_high),
            "different": wall.ci_low is not None and wall.ci_high is not None
            and not wall.ci_low <= 1 <= wall.ci_high,
            "verdict": str(wall.verdict), "cpu_ratio": cpu["speedup"],
            "cpu_half": sequential.half_width(cpu["ci_low"], cpu["ci_high"]),
            "cpu_verdict": cpu["verdict"]}


def demo_cases(ws: Workspace) -> list[Case]:
    project = pipeline.load(ws)
    (built,) = pipeline.build_variants(project, ws, "demo", [Variant("baseline", ())], [])
    exe = str(built.bin / "slowstart")
    a = [exe, "-n", "50", "-boot", "2ms"]
    return [Case("demo", "A/A", a, a), Case("demo", "A/B", a, [exe, "-n", "51", "-boot", "2ms"])]


def runc_cases(ws: Workspace, work: Path) -> tuple[list[Case], Callable[[], None]]:
    """runc-signal's ``run``, baseline against itself and against async-signal-notify, with the
    runc runtime's bundle and state roots prepared (and torn down by the returned function)."""
    project = pipeline.load(ws)
    comp = project.comparison("runc-signal")
    built = pipeline.build_variants(project, ws, "runc", [
        Variant("baseline", ()), Variant("async-signal-notify", ("async-signal-notify",))], [])
    runtime = runtimes.get(config.runtime_of(project, comp))
    assert runtime is not None
    runtime.prepare(work, project, comp, dry_run=False, bin_dir=built[0].bin, variants=[
        runtimes.VariantBuild(b.variant.name, b.bin, b.manifest["artifacts"]) for b in built])
    sc = next(s for s in comp.scenarios if s.name == "run")
    assert isinstance(sc, TimedConfig)
    ctx: scenarios.ScenarioContext[TimedConfig] = scenarios.ScenarioContext(
        scenario=sc, built=built, runtime=runtime, workdir=work, seed=1,
        layout=Layout(ws.builds, ws.reports), project_root=project.root, alpha=0.05,
        min_effect=0.02)
    base, fix = (ctx.expand(Cell(b.variant.name)).command for b in built)

    def teardown() -> None:
        runtimes.tear_down(runtime, [(b.variant.name, b.bin) for b in built])

    return [Case("runc", "A/A", base, base), Case("runc", "A/B", base, fix)], teardown


def fmt(x: float | None, pct: bool = True) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x * 100:.1f} %" if pct else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--targets", default="demo,runc")
    ap.add_argument("--seed-hyperfine", default="/usr/bin/hyperfine")
    ap.add_argument("--source", action="append", default=[], metavar="TARGET=PATH")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/side_by_side.md")
    ap.add_argument("--runs", type=int, default=RUNS, help="per command (a smoke test: fewer)")
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--warmup", type=int, default=WARMUP)
    args = ap.parse_args(argv)
    size = Size(args.warmup, args.runs, args.rounds)
    engine.require()
    seed_version = subprocess.run([args.seed_hyperfine, "--version"], capture_output=True,
                                  text=True, check=True).stdout.strip()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="patchbench-side-") as tmp:
        ws = Workspace(root=ROOT, matrix=ROOT / "matrix.yaml", builds=ROOT / "builds",
                       reports=Path(tmp) / "reports",
                       sources=config.parse_source_overrides(args.source, {}))
        cases: list[Case] = []
        teardowns: list[Callable[[], None]] = []
        targets = args.targets.split(",")
        if "demo" in targets:
            cases += demo_cases(ws)
        if "runc" in targets:
            more, down = runc_cases(ws, Path(tmp) / "runc")
            cases += more
            teardowns.append(down)
        try:
            for rep in range(args.repeats):
                for i, case in enumerate(cases):
                    work = Path(tmp) / f"{case.target}-{i}-{rep}"
                    work.mkdir()
                    load = os.getloadavg()[0]
                    first_seed = (rep + i) % 2 == 0  # alternate which protocol goes first
                    got: dict[str, dict[str, Any]] = {}
                    for which in (("seed", "pb") if first_seed else ("pb", "seed")):
                        got[which] = (seed_protocol(case, args.seed_hyperfine, work, size)
                                      if which == "seed" else
                                      patchbench_protocol(case, work, 100 * rep + i, size))
                    rows.append({"target": case.target, "kind": case.kind, "repeat": rep + 1,
                                 "load": load, **{f"seed_{k}": v for k, v in got["seed"].items()},
                                 **{f"pb_{k}": v for k, v in got["pb"].items()}})
                    print(json.dumps(rows[-1]), flush=True)
        finally:
            for down in teardowns:
                down()
    write(args, rows, seed_version, engine.version())
    return 0


def shown(args: argparse.Namespace) -> str:
    """The command line's options as given, a --source's path left out (it is this machine's)."""
    out = [f"--repeats {args.repeats}", f"--targets {args.targets}",
           f"--seed-hyperfine {args.seed_hyperfine}"]
    out += [f"--source {s.partition('=')[0]}=<its git directory>" for s in args.source]
    if (args.runs, args.rounds, args.warmup) != (RUNS, ROUNDS, WARMUP):
        out.append(f"--runs {args.runs} --rounds {args.rounds} --warmup {args.warmup}")
    return " ".join(out)


def write(args: argparse.Namespace, rows: list[dict[str, Any]], seed_version: str,
          version: tuple[int, ...] | None) -> None:
    lines = [
        "# Side by side: `hyperfine -w 50 -r 500 A B` against patchbench's interleaved rounds",
        "",
        "Made with `PATH=<hyperfine 2>:$PATH python3 benchmarks/side_by_side.py "
        + shown(args) + "` on "
        + time.strftime("%Y-%m-%d", time.gmtime())
        + f" (the seed's protocol with {seed_version}; patchbench's with hyperfine "
        + ".".join(map(str, version or ())) + "). Half-widths are relative: the seed's ± over "
        "its ratio, the intervals' half-width as a factor; \"different\": the ± (or the "
        "interval) excludes 1.",
        "",
        "| target | case | repeat | load | seed: s | seed: ratio ± | seed: ± half | seed: "
        "different | pooled 95 % half | pooled different | patchbench: s | patchbench: ratio "
        "[95 % CI] half | different | wall answer | CPU half | CPU answer |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['target']} | {r['kind']} | {r['repeat']} | {r['load']:.1f} | "
            f"{r['seed_seconds']:.0f} | {r['seed_ratio']:.3f} ± {r['seed_pm']:.3f} | "
            f"{fmt(r['seed_half'])} | {'yes' if r['seed_different'] else 'no'} | "
            f"{fmt(r['seed_pooled_half'])} | {'yes' if r['seed_pooled_different'] else 'no'} | "
            f"{r['pb_seconds']:.0f} | {r['pb_ratio']:.3f}, {fmt(r['pb_half'])} | "
            f"{'yes' if r['pb_different'] else 'no'} | {r['pb_verdict']} | "
            f"{fmt(r['pb_cpu_half'])} | {r['pb_cpu_verdict']} |")
    lines += ["", "Per target and case, over the repeats:", "",
              "| target | case | seed: ± half (median) | seed: A/A or A/B called different | "
              "pooled 95 % half | pooled different | patchbench: wall half | different | "
              "CPU half | wall answers |", "|---|---|---|---|---|---|---|---|---|---|"]
    for target in dict.fromkeys(r["target"] for r in rows):
        for kind in ("A/A", "A/B"):
            rs = [r for r in rows if r["target"] == target and r["kind"] == kind]
            if not rs:
                continue

            def med(key: str, rs: list[dict[str, Any]] = rs) -> str:
                vals = [r[key] for r in rs if r[key] is not None]
                return fmt(stats.summarize(vals).median) if vals else "-"

            def count(key: str, rs: list[dict[str, Any]] = rs) -> str:
                return f"{sum(bool(r[key]) for r in rs)} of {len(rs)}"

            answers = ", ".join(r["pb_verdict"] for r in rs)
            lines.append(f"| {target} | {kind} | {med('seed_half')} | {count('seed_different')} "
                         f"| {med('seed_pooled_half')} | {count('seed_pooled_different')} | "
                         f"{med('pb_half')} | {count('pb_different')} | {med('pb_cpu_half')} | "
                         f"{answers} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    (args.out.with_suffix(".json")).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
