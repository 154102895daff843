"""How long a block should be, and how many warm-ups each block needs: CI half-width per minute of
measuring, and the estimate against a long-block reference made with warm-ups.

    python3 benchmarks/block_size.py [--targets runc,demo] [--chunks 12]
        [--schedules 20:0,20:1,10:1,5:1,3:1,2:1,1:1,2:0] [--reference 20:1]
        [--runs runc=40,demo=20] [--source runc=<runc git>]
        [--out benchmarks/results/block_size.md]

A schedule ``RUNS:WARMUPS``: blocks of RUNS timed runs per cell, each block after WARMUPS runs of
its own (recorded apart, never timed). The commands (benchmarks/schedules.py): runc-signal's
``run`` for the baseline and its two candidates; the demo's planted 2 % change.

The schedules are interleaved in time in short chunks: each chunk measures every schedule once,
in a rotated order, for the same few timed runs per cell (``--runs``, per target), so a change of
the machine's load falls on every schedule alike (a first version measured each schedule for
half a minute at a time, and the load, 2 to 13 that day, moved the runc estimates by more than
the schedules did). Per schedule, the rounds of all chunks are pooled: the estimate is the mean
per-round log ratio, its 95 % interval a t interval over the pooled rounds, and the CI half-width
per minute of measuring is that half-width x sqrt(the schedule's seconds / 60) (a half-width
shrinks as one over the square root of the time spent). "vs reference": the difference from the
reference schedule's estimate with its 95 % interval ("agrees": it holds 0). The CPU cost of a
block's first runs is read from the schedules with long blocks. Needs root for runc.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
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

DEFAULT = "20:0,20:1,10:1,5:1,3:1,2:1,1:1,2:0"
METRICS = ("wall", "cpu")


def pooled(logs: list[float]) -> tuple[float, float, int]:
    """The mean of per-round log ratios pooled over chunks, its standard error and the rounds."""
    n = len(logs)
    sd = statistics.stdev(logs) if n > 1 else math.inf
    return statistics.fmean(logs), sd / math.sqrt(n), n


def pct(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x * 100:.1f} %"


def summarize(chunks: list[dict[str, Any]], reference: str) -> list[str]:
    out = ["| target | candidate | schedule | rounds | s | wall ±/min | CPU ±/min | wall ratio | "
           "vs reference (95 % CI) | CPU ratio | vs reference (95 % CI) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = dict.fromkeys((c["target"], cand) for c in chunks for cand in c["candidates"])
    for target, cand in keys:
        mine = [c for c in chunks if c["target"] == target]
        ref = {m: pooled([x for c in mine if c["schedule"] == reference
                          for x in c["candidates"][cand][f"{m}_logs"]]) for m in METRICS}
        for name in dict.fromkeys(c["schedule"] for c in mine):
            cs = [c for c in mine if c["schedule"] == name]
            seconds = sum(c["seconds"] for c in cs)
            cells: list[str] = []
            ratios: list[str] = []
            for m in METRICS:
                mean, se, n = pooled([x for c in cs for x in c["candidates"][cand][f"{m}_logs"]])
                half = math.expm1(stats.t_ppf(0.975, n - 1) * se) if n > 1 else None
                cells.append(pct(None if half is None else half * math.sqrt(seconds / 60)))
                if name == reference:
                    ratios += [f"{math.exp(mean):.3f}", "reference"]
                    continue
                d, dse = mean - ref[m][0], math.hypot(se, ref[m][1])
                lo, hi = d - 1.96 * dse, d + 1.96 * dse
                ratios += [f"{math.exp(mean):.3f}",
                           f"{math.expm1(d) * 100:+.1f} % [{math.expm1(lo) * 100:+.1f}, "
                           f"{math.expm1(hi) * 100:+.1f}] "
                           + ("agrees" if lo <= 0 <= hi else "**differs**")]
            rounds = sum(len(c["candidates"][cand]["wall_logs"]) for c in cs)
            out.append(f"| {target} | {cand} | {name} | {rounds} | {seconds:.0f} | {cells[0]} | "
                       f"{cells[1]} | {ratios[0]} | {ratios[1]} | {ratios[2]} | {ratios[3]} |")
    return out


def profiles(chunks: list[dict[str, Any]]) -> list[str]:
    """The CPU cost of a block's first four runs against its settled ones (runs 5 and later),
    per target, schedule with blocks long enough, and variant: the median over the chunks of
    each chunk's median over its blocks."""
    out = ["| target | schedule | variant | run 1 | run 2 | run 3 | run 4 |",
           "|---|---|---|---|---|---|---|"]
    rows: dict[tuple[str, str, str], list[list[float]]] = {}
    for c in chunks:
        first = True
        for cand, v in c["candidates"].items():
            for who, key in (("baseline", "profile_base"), (cand, "profile_cand")):
                prof = v["first_run"].get(key)
                if prof is None or (who == "baseline" and not first):
                    continue
                rows.setdefault((c["target"], c["schedule"], who), []).append(prof)
            first = False
    for (target, name, who), profs in rows.items():
        med = [statistics.median(p[k] for p in profs) for k in range(4)]
        out.append(f"| {target} | {name} | {who} | "
                   + " | ".join(f"{x * 100:+.1f} %" for x in med) + " |")
    return out if rows else []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--targets", default="runc,demo")
    ap.add_argument("--chunks", type=int, default=12)
    ap.add_argument("--schedules", default=DEFAULT)
    ap.add_argument("--reference", default="20:1")
    ap.add_argument("--runs", default="runc=40,demo=20",
                    help="timed runs per cell per chunk, per target")
    ap.add_argument("--source", action="append", default=[], metavar="TARGET=PATH")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/block_size.md")
    args = ap.parse_args(argv)
    hyperfine2.require()
    # two unrecorded warm-ups per cell at the start of each chunk, the same for every schedule
    plan = [Schedule(x.per_block, x.block_warmup, warmup=2)
            for x in map(Schedule.parse, args.schedules.split(","))]
    reference = Schedule.parse(args.reference).name
    if reference not in {s.name for s in plan}:
        ap.error(f"the reference {args.reference} is not one of --schedules")
    runs = {k: int(v) for k, _, v in (x.partition("=") for x in args.runs.split(","))}
    chunks: list[dict[str, Any]] = []
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="patchbench-blocks-") as tmp:
        ws = Workspace(root=ROOT, matrix=ROOT / "matrix.yaml", builds=ROOT / "builds",
                       reports=Path(tmp) / "reports",
                       sources=config.parse_source_overrides(args.source, {}))
        targets: list[Target] = []
        names = args.targets.split(",")
        if "runc" in names:
            targets.append(schedules.runc_target(ws, Path(tmp) / "runc"))
        if "demo" in names:
            targets.append(schedules.demo_target(ws))
        try:
            for k in range(args.chunks):
                for t, target in enumerate(targets):
                    turn = plan[k % len(plan):] + plan[:k % len(plan)]
                    for i, sch in enumerate(turn):
                        load = os.getloadavg()[0]
                        # whole blocks, at least two rounds per chunk
                        n = max(2 * sch.per_block, runs[target.name] // sch.per_block
                                * sch.per_block)
                        got = schedules.measure(target, sch, n, seed=1000 * k + 10 * t + i,
                                                work=Path(tmp) / f"w-{k}-{t}-{i}")
                        chunks.append({"target": target.name, "schedule": sch.name,
                                       "chunk": k + 1, "load": load, **got})
                print(f"chunk {k + 1}/{args.chunks} done, load {os.getloadavg()[0]:.1f}",
                      file=sys.stderr, flush=True)
        finally:
            for target in targets:
                target.teardown()
    loads = [c["load"] for c in chunks]
    prof = profiles(chunks)
    lines = ["# Block size and warm-ups: CI half-width per minute, and the estimate against a "
             "long-block reference", "",
             f"Made with `python3 benchmarks/block_size.py --targets {args.targets} --chunks "
             f"{args.chunks} --schedules {args.schedules} --reference {args.reference} --runs "
             f"{args.runs}` from {began}, hyperfine {'.'.join(map(str, hyperfine2.version() or ()))},"
             f" load {min(loads):.1f}-{max(loads):.1f} (1-minute average at each measurement's "
             f"start, median {statistics.median(loads):.1f}), {os.cpu_count()} CPUs.", "",
             "A schedule `N+Ww`: blocks of N timed runs per cell, each after W warm-up runs of "
             "its own (recorded apart, never timed). The schedules take turns in chunks of a few "
             "seconds each; every schedule's rounds are pooled over the chunks. \"±/min\": the "
             "95 % CI half-width scaled to one minute of measuring; \"s\": the seconds the "
             "schedule took in all, warm-ups included. \"vs reference\": the difference of the "
             "pooled estimate from the reference's, with its 95 % interval (\"agrees\": it holds "
             "0).", "", *summarize(chunks, reference), ""]
    if prof:
        lines += ["How much more CPU time the first runs of a block take than its settled runs "
                  "(runs 5 and later; a block's warm-ups count as its first runs): the median "
                  "over the chunks of each chunk's median over its blocks.", "", *prof, ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(chunks) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
