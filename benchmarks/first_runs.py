"""What the first runs of a block cost, per variant, and the bias each schedule would carry.

    python3 benchmarks/first_runs.py [--target runc] [--rounds 60] [--block 20]
        [--source runc=<runc git>] [--out benchmarks/results/first_runs.md]

Long blocks without warm-ups (``--block`` timed runs per cell, runc-signal's ``run`` for the
baseline and its two candidates, or the demo's two commands; benchmarks/schedules.py), so that
every position of a block is timed. Per variant and position k, the mean over blocks of
ln(run k) − mean ln(runs 9 ..): how much slower the k-th run after a switch of variant is than the
block's settled runs, with its 95 % t interval over blocks. A schedule of blocks of N timed runs
after W warm-ups times positions W+1 .. W+N; its estimate of the ratio differs from the settled
runs' by the mean of (baseline's position effect − candidate's) over those positions: that bias,
with its interval (blocks are paired by round), is given for each schedule. Because every figure
compares runs of the same block, a change of the machine's load between blocks cancels.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import schedules  # noqa: E402
from patchbench import config  # noqa: E402
from patchbench.analysis import stats  # noqa: E402
from patchbench.measure import bench, hyperfine2  # noqa: E402
from patchbench.measure.bench import Cell, Invocation  # noqa: E402
from patchbench.util.workspace import Workspace  # noqa: E402

SETTLED = 9  # positions from this one on are a block's settled runs
SHOWN = 6  # positions shown
SCHEDULES = ((20, 0), (20, 1), (10, 1), (5, 1), (3, 1), (2, 1), (2, 2), (3, 2), (1, 1), (2, 0))


def effects(values: list[float], rounds: list[int], block: int) -> np.ndarray:
    """Per block (a row) and position: ln(run) − mean ln(the block's settled runs)."""
    by: dict[int, list[float]] = {}
    for r, v in zip(rounds, values, strict=True):
        by.setdefault(r, []).append(v)
    rows = [np.log(np.array(b)) for _, b in sorted(by.items()) if len(b) == block
            and min(b) > 0]
    x = np.array(rows)
    return x - x[:, SETTLED - 1:].mean(axis=1, keepdims=True)


def ci(d: np.ndarray) -> tuple[float, float, float]:
    """The mean of ``d`` (as a factor − 1) with its 95 % t interval."""
    n = d.size
    m = float(d.mean())
    h = stats.t_ppf(0.975, n - 1) * float(d.std(ddof=1)) / math.sqrt(n)
    return math.expm1(m), math.expm1(m - h), math.expm1(m + h)


def fmt(t: tuple[float, float, float]) -> str:
    return f"{t[0] * 100:+.1f} % [{t[1] * 100:+.1f}, {t[2] * 100:+.1f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--target", default="runc", choices=("runc", "demo"))
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--block", type=int, default=20)
    ap.add_argument("--source", action="append", default=[], metavar="TARGET=PATH")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/first_runs.md")
    args = ap.parse_args(argv)
    hyperfine2.require()
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="patchbench-first-") as tmp:
        ws = Workspace(root=ROOT, matrix=ROOT / "matrix.yaml", builds=ROOT / "builds",
                       reports=Path(tmp) / "reports",
                       sources=config.parse_source_overrides(args.source, {}))
        target = (schedules.runc_target(ws, Path(tmp) / "runc") if args.target == "runc"
                  else schedules.demo_target(ws))
        try:
            invs = {v: Invocation(command=c, metrics=schedules.METRICS)
                    for v, c in target.commands.items()}
            cells = [Cell(v) for v in target.commands]
            t0 = time.monotonic()
            samples, _ = bench.measure("first-runs", cells, lambda c: invs[c.variant],
                                       runs=args.rounds * args.block, rounds=args.rounds,
                                       warmup=2, timeout=60, seed=7, workdir=Path(tmp) / "w")
            seconds = time.monotonic() - t0
        finally:
            target.teardown()
    load1 = os.getloadavg()[0]
    lines = ["# The first runs of a block: their cost per variant, and each schedule's bias", "",
             f"Made with `python3 benchmarks/first_runs.py --target {args.target} --rounds "
             f"{args.rounds} --block {args.block}` from {began} ({seconds:.0f} s), hyperfine "
             f"{'.'.join(map(str, hyperfine2.version() or ()))}, load {load0:.1f} at the start, "
             f"{load1:.1f} at the end, {os.cpu_count()} CPUs. Blocks of {args.block} runs "
             f"without warm-ups, {args.rounds} rounds; the settled runs are runs {SETTLED} to "
             f"{args.block} of each block.", ""]
    base = cells[0]
    for metric in ("cpu", "wall"):
        eff = {c: effects(samples[c].times if metric == "wall" else samples[c].metrics["cpu"],
                          samples[c].rounds, args.block) for c in cells}
        lines += [f"## {'CPU' if metric == 'cpu' else 'Wall'} time", "",
                  "How much slower run k of a block is than the block's settled runs (mean over "
                  "blocks, 95 % interval):", "",
                  "| variant | " + " | ".join(f"run {k}" for k in range(1, SHOWN + 1)) + " |",
                  "|---|" + "---|" * SHOWN]
        for c in cells:
            lines.append(f"| {c.label} | " + " | ".join(fmt(ci(eff[c][:, k]))
                                                       for k in range(SHOWN)) + " |")
        lines += ["", "The bias of a schedule's estimate of the ratio against the settled runs' "
                  "(baseline's first-runs cost − the candidate's over the positions it times; "
                  "above 0: the candidate looks faster than it is):", "",
                  "| schedule | " + " | ".join(c.label for c in cells[1:]) + " |",
                  "|---|" + "---|" * (len(cells) - 1)]
        for n, w in SCHEDULES:
            if w + n > args.block:
                continue
            row = []
            for c in cells[1:]:
                b, k = eff[base], eff[c]
                m = min(len(b), len(k))
                d = b[:m, w:w + n].mean(axis=1) - k[:m, w:w + n].mean(axis=1)
                row.append(fmt(ci(d)))
            lines.append(f"| {n}+{w}w | " + " | ".join(row) + " |")
        lines.append("")
    med = {c.label: statistics.median(samples[c].times) * 1000 for c in cells}
    lines.append("Median wall time per run: " + ", ".join(f"{k} {v:.2f} ms"
                                                           for k, v in med.items()) + ".")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
