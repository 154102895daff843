"""How long a block should be, and how many warm-ups each block needs: CI half-width per minute of
measuring, and the estimate against a long-block reference made with warm-ups.

    python3 benchmarks/block_size.py [--targets runc,demo] [--repeats 2]
        [--schedules 20:0,20:1,10:1,5:1,3:1,2:1,2:0] [--reference 20:1]
        [--runs runc=300,demo=100] [--source runc=<runc git>]
        [--out benchmarks/results/block_size.md]

Each schedule (``RUNS:WARMUPS``: timed runs per block, each block after that many warm-up runs of
its own, recorded apart) measures the same commands (benchmarks/schedules.py: runc-signal's
``run`` for the baseline and its two candidates; the demo's 2 % planted change) for the same
timed runs per cell; the schedules take turns, in a rotated order per repeat, so that each meets
the machine in every phase. Per schedule and candidate: the CI half-width of wall and CPU time
scaled to one minute of measuring (half-width x sqrt(seconds / 60): a half-width shrinks as one
over the square root of the time), and the estimate pooled over the repeats against the
reference's, with the interval of their difference ("agrees": it holds 0). Needs root for runc.
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
from patchbench.measure import hyperfine2  # noqa: E402
from patchbench.util.workspace import Workspace  # noqa: E402

DEFAULT = "20:0,20:1,10:1,5:1,3:1,2:1,2:0"


def pooled(logs: list[float]) -> tuple[float, float]:
    """The mean of per-round log ratios pooled over repeats, and its standard error."""
    n = len(logs)
    return statistics.fmean(logs), (statistics.stdev(logs) / math.sqrt(n) if n > 1 else math.inf)


def per_minute(h: float | None, seconds: float) -> float | None:
    return None if h is None else h * math.sqrt(seconds / 60)


def pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None or math.isnan(x) else f"{x * 100:.{digits}f} %"


def summarize(rows: list[dict[str, Any]], reference: str) -> list[str]:
    out = ["| target | candidate | schedule | repeats | s each | wall ±/min | CPU ±/min | "
           "wall ratio | vs reference (95 % CI) | CPU ratio | vs reference (95 % CI) | "
           "first run's extra CPU: baseline / candidate |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = dict.fromkeys((r["target"], c) for r in rows for c in r["candidates"])
    for target, cand in keys:
        mine = [r for r in rows if r["target"] == target]
        ref = [r["candidates"][cand] for r in mine if r["schedule"] == reference]
        ref_pool = {m: pooled([x for c in ref for x in c[f"{m}_logs"]]) for m in ("wall", "cpu")}
        for name in dict.fromkeys(r["schedule"] for r in mine):
            rs = [r for r in mine if r["schedule"] == name]
            cs = [r["candidates"][cand] for r in rs]
            secs = statistics.median(r["seconds"] for r in rs)
            cells = []
            for m in ("wall", "cpu"):
                hw = [per_minute(c[f"{m}_half"], r["seconds"]) for c, r in zip(cs, rs,
                                                                                strict=True)]
                hw_ok = [h for h in hw if h is not None]
                cells.append(pct(statistics.median(hw_ok)) if hw_ok else "-")
            ratios = []
            for m in ("wall", "cpu"):
                mean, se = pooled([x for c in cs for x in c[f"{m}_logs"]])
                rm, rse = ref_pool[m]
                if name == reference:
                    ratios += [f"{math.exp(mean):.3f}", "reference"]
                    continue
                d, dse = mean - rm, math.sqrt(se ** 2 + rse ** 2)
                lo, hi = d - 1.96 * dse, d + 1.96 * dse
                agree = "agrees" if lo <= 0 <= hi else "**differs**"
                ratios += [f"{math.exp(mean):.3f}",
                           f"{math.expm1(d) * 100:+.1f} % [{math.expm1(lo) * 100:+.1f}, "
                           f"{math.expm1(hi) * 100:+.1f}] {agree}"]
            firsts = [c["first_run"] for c in cs]
            fb = [f["base"] for f in firsts if f["base"] is not None]
            fc = [f["cand"] for f in firsts if f["cand"] is not None]
            first = (f"{pct(statistics.median(fb))} / {pct(statistics.median(fc))}"
                     if fb and fc else "-")
            out.append(f"| {target} | {cand} | {name} | {len(rs)} | {secs:.0f} | {cells[0]} | "
                       f"{cells[1]} | {ratios[0]} | {ratios[1]} | {ratios[2]} | {ratios[3]} | "
                       f"{first} |")
    return out


def profiles(rows: list[dict[str, Any]]) -> list[str]:
    """The CPU cost of a block's first runs against its settled ones (runs 5 and later), per
    target, schedule (blocks long enough) and variant: the median over the repeats."""
    out = ["| target | schedule | variant | run 1 | run 2 | run 3 | run 4 |",
           "|---|---|---|---|---|---|---|"]
    seen = False
    for r in rows:
        for cand, c in r["candidates"].items():
            for who, key in (("baseline", "profile_base"), (cand, "profile_cand")):
                prof = c["first_run"].get(key)
                if prof is None or (who == "baseline" and cand != next(iter(r["candidates"]))):
                    continue
                seen = True
                out.append(f"| {r['target']} | {r['schedule']} (repeat {r['repeat']}) | {who} | "
                           + " | ".join(f"{x * 100:+.1f} %" for x in prof) + " |")
    return out if seen else []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--targets", default="runc,demo")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--schedules", default=DEFAULT)
    ap.add_argument("--reference", default="20:1")
    ap.add_argument("--runs", default="runc=300,demo=100",
                    help="timed runs per cell, per target")
    ap.add_argument("--source", action="append", default=[], metavar="TARGET=PATH")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/block_size.md")
    args = ap.parse_args(argv)
    hyperfine2.require()
    plan = [Schedule.parse(s) for s in args.schedules.split(",")]
    reference = Schedule.parse(args.reference).name
    if reference not in {s.name for s in plan}:
        ap.error(f"the reference {args.reference} is not one of --schedules")
    runs = {k: int(v) for k, _, v in (x.partition("=") for x in args.runs.split(","))}
    rows: list[dict[str, Any]] = []
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
            for rep in range(args.repeats):
                for t, target in enumerate(targets):
                    turn = plan[rep % len(plan):] + plan[:rep % len(plan)]
                    for i, sch in enumerate(turn):
                        load = os.getloadavg()[0]
                        got = schedules.measure(target, sch, runs[target.name],
                                                seed=1000 * rep + 10 * t + i,
                                                work=Path(tmp) / f"w-{rep}-{t}-{i}")
                        rows.append({"target": target.name, "schedule": sch.name,
                                     "repeat": rep + 1, "load": load, **got})
                        short = {c: (round(v["wall"], 3), pct(v["wall_half"]), round(v["cpu"], 3),
                                     pct(v["cpu_half"])) for c, v in got["candidates"].items()}
                        print(json.dumps({"target": target.name, "schedule": sch.name,
                                          "repeat": rep + 1, "load": round(load, 1),
                                          "seconds": round(got["seconds"]), **short}),
                              flush=True)
        finally:
            for target in targets:
                target.teardown()
    loads = [r["load"] for r in rows]
    lines = ["# Block size and warm-ups: CI half-width per minute, and the estimate against a "
             "long-block reference", "",
             f"Made with `python3 benchmarks/block_size.py --targets {args.targets} --repeats "
             f"{args.repeats} --schedules {args.schedules} --reference {args.reference} --runs "
             f"{args.runs}` from {began}, hyperfine {'.'.join(map(str, hyperfine2.version() or ()))},"
             f" load {min(loads):.1f}-{max(loads):.1f} (1-minute average at each measurement's "
             f"start), {os.cpu_count()} CPUs.", "",
             "A schedule `N+Ww`: blocks of N timed runs per cell, each after W warm-up runs of "
             "its own (recorded apart, never timed). \"±/min\": the 95 % CI half-width scaled to "
             "one minute of measuring (median over the repeats). \"vs reference\": the pooled "
             "estimate's difference from the reference's, with its 95 % interval (\"agrees\": it "
             "holds 0). \"first run's extra CPU\": the first warm-up run of a block against the "
             "block's timed runs (median over blocks).", "",
             *summarize(rows, reference), "",
             *(["How much more CPU time the first runs of a block take than its settled runs "
                "(runs 5 and later, their median; a block's warm-ups counted first), median "
                "over its blocks:", "", *prof, ""] if (prof := profiles(rows)) else []),
             "Every measurement:", "",
             "| target | schedule | repeat | load | s | candidate: wall ratio ± half, CPU ratio ± "
             "half |", "|---|---|---|---|---|---|"]
    for r in rows:
        cands = "; ".join(f"{c}: {v['wall']:.3f} ± {pct(v['wall_half'])}, {v['cpu']:.3f} ± "
                          f"{pct(v['cpu_half'])}" for c, v in r["candidates"].items())
        lines.append(f"| {r['target']} | {r['schedule']} | {r['repeat']} | {r['load']:.1f} | "
                     f"{r['seconds']:.0f} | {cands} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(rows) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

