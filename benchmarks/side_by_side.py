"""Side by side: the protocol people use today, patchbench's old schedule and its new one, for the
same commands and the same number of timed runs, in one session.

    python3 benchmarks/side_by_side.py [--repeats 3] [--targets demo,runc]
        [--seed-hyperfine /usr/bin/hyperfine] [--new 3:1] [--source runc=<runc git>]
        [--out benchmarks/results/side_by_side.md]

Each case runs its three protocols in turn, in a rotated order per case and repeat:

- **the seed's protocol**: ``hyperfine -w 50 -r 500 A B`` (``--seed-hyperfine``: Debian's 1.15 by
  default, with its default shell, as a runc maintainer ran it; seed 002), read as hyperfine
  reports it: the ratio of the means ± ratio * sqrt((sd_A/mean_A)^2 + (sd_B/mean_B)^2) ("B ran
  1.14 ± 0.05 times faster than A"), that ± taken as an interval ("different" when it excludes 1);
  beside it the pooled 95 % Welch t interval of the ratio of the means, which a careful reader
  would compute from the same runs;
- **patchbench's old schedule**: 500 runs per command in 25 interleaved rounds of 20, the 50
  warm-ups once per command before its first round (bench.measure without block warm-ups);
- **patchbench's new schedule** (``--new RUNS:WARMUPS``): the same 500 timed runs in short blocks,
  each block after its own warm-up runs (recorded apart, never timed), 5 warm-ups once per command.

Both patchbench schedules are judged by the round-paired rule (patchbench.analysis.paired) in wall
and CPU time, alpha 0.05, min_effect 2 %. Cases (benchmarks/schedules.py): runc-signal's ``run``
(``runc run`` of a ``true`` container), the baseline against itself (A/A) and against
``async-signal-notify`` (A/B); the demo (``slowstart -n 50 -boot 2ms``, about 117 ms) against
itself and against ``-n 51`` (a planted change of 2 %). Recorded per case, repeat and protocol:
the load at its start, its seconds, its ratio, the half-width it reaches (relative), that
half-width per minute of measuring (x sqrt(seconds / 60)), whether it calls the pair different,
and patchbench's wall and CPU answers. Needs root for runc.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import schedules  # noqa: E402
from benchmarks.schedules import Schedule, Target  # noqa: E402
from patchbench import config  # noqa: E402
from patchbench.analysis import stats  # noqa: E402
from patchbench.measure import hyperfine2  # noqa: E402
from patchbench.util.workspace import Workspace  # noqa: E402

WARMUP, RUNS = 50, 500  # the seed's -w 50 -r 500
OLD = Schedule(per_block=20, block_warmup=0, warmup=WARMUP)  # 25 rounds of 20
PROTOCOLS = ("seed", "old", "new")


@dataclass
class Case:
    target: str  # "demo" or "runc"
    kind: str  # "A/A" or "A/B"
    a: list[str]
    b: list[str]


def seed_protocol(case: Case, hyperfine: str, work: Path, runs: int) -> dict[str, Any]:
    """``hyperfine -w 50 -r 500 A B``, as hyperfine 1.x reports it."""
    export = work / "seed.json"
    argv = [hyperfine, "-w", str(WARMUP), "-r", str(runs), "--style", "basic", "--export-json",
            str(export), "--", shlex.join(case.a), shlex.join(case.b)]
    began = time.monotonic()
    subprocess.run(argv, check=True, capture_output=True, timeout=3600)
    seconds = time.monotonic() - began
    res = json.loads(export.read_text())["results"]
    ta, tb = (hyperfine2.runs(r).times for r in res)
    ma, mb = stats.summarize(ta), stats.summarize(tb)
    ratio = ma.mean / mb.mean  # above 1: B faster
    pm = ratio * math.sqrt((ma.stdev / ma.mean) ** 2 + (mb.stdev / mb.mean) ** 2)
    se = math.sqrt((ma.stdev / ma.mean) ** 2 / ma.n + (mb.stdev / mb.mean) ** 2 / mb.n)
    q = stats.t_ppf(0.975, ma.n + mb.n - 2)
    return {"seconds": seconds, "ratio": ratio, "half": pm / ratio,
            "different": not ratio - pm <= 1 <= ratio + pm,
            "pooled_half": math.expm1(q * se), "pooled_different": abs(math.log(ratio)) > q * se}


def patchbench_protocol(case: Case, schedule: Schedule, runs: int, seed: int, work: Path
                        ) -> dict[str, Any]:
    """The same commands, interleaved under ``schedule`` and judged round by round."""
    target = Target(case.target, {"A": case.a, "B": case.b})
    got = schedules.measure(target, schedule, runs, seed, work)
    c = got["candidates"]["B"]
    return {"seconds": got["seconds"], "ratio": c["wall"], "half": c["wall_half"],
            "different": c["wall_verdict"] in ("faster", "slower"),
            "verdict": c["wall_verdict"], "cpu_ratio": c["cpu"], "cpu_half": c["cpu_half"],
            "cpu_verdict": c["cpu_verdict"]}


def cases_of(ws: Workspace, targets: list[str], work: Path) -> tuple[list[Case], list[Target]]:
    cases: list[Case] = []
    made: list[Target] = []
    if "demo" in targets:
        demo = schedules.demo_target(ws)
        a, b = demo.commands["n50"], demo.commands["n51"]
        cases += [Case("demo", "A/A", a, a), Case("demo", "A/B", a, b)]
        made.append(demo)
    if "runc" in targets:
        runc = schedules.runc_target(ws, work / "runc", variants=("async-signal-notify",))
        base, fix = runc.commands["baseline"], runc.commands["async-signal-notify"]
        cases += [Case("runc", "A/A", base, base), Case("runc", "A/B", base, fix)]
        made.append(runc)
    return cases, made


def fmt(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * 100:.1f} %"


def per_minute(half: float | None, seconds: float) -> float | None:
    return None if half is None else half * math.sqrt(seconds / 60)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--targets", default="demo,runc")
    ap.add_argument("--seed-hyperfine", default="/usr/bin/hyperfine")
    ap.add_argument("--new", default="3:1", help="the new schedule, RUNS:WARMUPS per block")
    ap.add_argument("--source", action="append", default=[], metavar="TARGET=PATH")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/side_by_side.md")
    ap.add_argument("--runs", type=int, default=RUNS, help="per command (a smoke test: fewer)")
    args = ap.parse_args(argv)
    new = Schedule.parse(args.new)
    new = Schedule(new.per_block, new.block_warmup, warmup=5)
    old = Schedule(min(OLD.per_block, args.runs), 0, warmup=OLD.warmup)
    hyperfine2.require()
    seed_version = subprocess.run([args.seed_hyperfine, "--version"], capture_output=True,
                                  text=True, check=True).stdout.strip()
    rows: list[dict[str, Any]] = []
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="patchbench-side-") as tmp:
        ws = Workspace(root=ROOT, matrix=ROOT / "matrix.yaml", builds=ROOT / "builds",
                       reports=Path(tmp) / "reports",
                       sources=config.parse_source_overrides(args.source, {}))
        cases, made = cases_of(ws, args.targets.split(","), Path(tmp))
        try:
            for rep in range(args.repeats):
                for i, case in enumerate(cases):
                    turn = (rep + i) % len(PROTOCOLS)
                    for which in PROTOCOLS[turn:] + PROTOCOLS[:turn]:
                        work = Path(tmp) / f"{case.target}-{i}-{rep}-{which}"
                        work.mkdir()
                        load = os.getloadavg()[0]
                        if which == "seed":
                            got = seed_protocol(case, args.seed_hyperfine, work, args.runs)
                        else:
                            got = patchbench_protocol(case, old if which == "old" else new,
                                                      args.runs, 100 * rep + i, work)
                        rows.append({"target": case.target, "kind": case.kind,
                                     "repeat": rep + 1, "protocol": which, "load": load, **got})
                        print(json.dumps(rows[-1]), flush=True)
        finally:
            for t in made:
                t.teardown()
    write(args, rows, seed_version, began, new, old)
    return 0


def write(args: argparse.Namespace, rows: list[dict[str, Any]], seed_version: str, began: str,
          new: Schedule, old: Schedule) -> None:
    names = {"seed": f"seed: `hyperfine -w {WARMUP} -r {args.runs}` ({seed_version})",
             "old": f"old: {args.runs // old.per_block} rounds of {old.per_block}, "
                    f"{old.warmup} warm-ups once",
             "new": f"new: {args.runs // new.per_block} rounds of {new.per_block}, each after "
                    f"{new.block_warmup} warm-up run{'s' if new.block_warmup != 1 else ''}"}
    loads = [r["load"] for r in rows]
    lines = [
        "# Side by side: the seed's protocol, patchbench's old schedule and its new one", "",
        "Made with `python3 benchmarks/side_by_side.py --repeats "
        f"{args.repeats} --targets {args.targets} --seed-hyperfine {args.seed_hyperfine} "
        f"--new {args.new}" + (f" --runs {args.runs}" if args.runs != RUNS else "")
        + "`" + (" (with `--source runc=<its git directory>`)" if args.source else "")
        + f" from {began}; patchbench with hyperfine "
        + ".".join(map(str, hyperfine2.version() or ())) + f"; load {min(loads):.1f}-"
        f"{max(loads):.1f} (1-minute average at each protocol's start), {os.cpu_count()} CPUs.",
        "", "Protocols: " + "; ".join(names.values()) + ". Every protocol times the same "
        f"{args.runs} runs per command. Half-widths are relative (the seed's ± over its ratio; "
        "the intervals' half-width as a factor); \"± /min\": that half-width scaled to one "
        "minute of measuring (x sqrt(seconds / 60)); \"different\": the ± (or the interval) "
        "excludes 1; patchbench calls a pair different only with a faster or slower verdict.",
        "", "Per target, case and protocol, the median over the repeats:", "",
        "| target | case | protocol | s | ratio | ± half | ± /min | called different | "
        "wall answers | CPU ± half | CPU ± /min | CPU answers |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for target in dict.fromkeys(r["target"] for r in rows):
        for kind in ("A/A", "A/B"):
            for p in PROTOCOLS:
                rs = [r for r in rows if (r["target"], r["kind"], r["protocol"]) == (
                    target, kind, p)]
                if not rs:
                    continue

                def med(values: list[float | None]) -> float | None:
                    vals = [v for v in values if v is not None]
                    return statistics.median(vals) if vals else None

                called = f"{sum(bool(r['different']) for r in rs)} of {len(rs)}"
                seconds = med([r["seconds"] for r in rs]) or 0.0
                ratio = med([r["ratio"] for r in rs])
                cpu = p != "seed"
                lines.append(
                    f"| {target} | {kind} | {names[p].split(':')[0]} | {seconds:.0f} | "
                    f"{ratio:.3f} | {fmt(med([r['half'] for r in rs]))} | "
                    f"{fmt(med([per_minute(r['half'], r['seconds']) for r in rs]))} | "
                    f"{called} | "
                    + (", ".join(r["verdict"] for r in rs) if cpu else "-") + " | "
                    + (fmt(med([r["cpu_half"] for r in rs])) if cpu else "-") + " | "
                    + (fmt(med([per_minute(r["cpu_half"], r["seconds"]) for r in rs]))
                       if cpu else "-") + " | "
                    + (", ".join(str(r["cpu_verdict"]) for r in rs) if cpu else "-") + " |")
    lines += ["", "Every measurement:", "",
              "| target | case | repeat | protocol | load | s | ratio | ± half | different | "
              "pooled 95 % half (seed) | wall answer | CPU ratio | CPU ± half | CPU answer |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        seed = r["protocol"] == "seed"
        lines.append(
            f"| {r['target']} | {r['kind']} | {r['repeat']} | {r['protocol']} | "
            f"{r['load']:.1f} | {r['seconds']:.0f} | {r['ratio']:.3f} | {fmt(r['half'])} | "
            f"{'yes' if r['different'] else 'no'} | "
            + (fmt(r["pooled_half"]) if seed else "-") + " | "
            + ("-" if seed else r["verdict"]) + " | "
            + ("-" if seed else f"{r['cpu_ratio']:.3f}") + " | "
            + ("-" if seed else fmt(r["cpu_half"])) + " | "
            + ("-" if seed else str(r["cpu_verdict"])) + " |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
