"""Calibration of the five metrics' family (patchbench.analysis.metrics.family) with the tool's
own code: how often a comparison calls any metric faster or slower when none changed.

    python3 benchmarks/metrics_calibration.py [--replicates 4000] [--jobs 2] [--out FILE]

Each replicate is one comparison of R rounds of 4 runs in the balanced order, every run with the
five metrics a timed scenario records by default: wall time (CV 15 % per run, 5 % per block, the
machine's speed), user and system time (the same block speed and 70 % of the run's wall noise,
plus 10 % of their own), CPU time = user + system, and peak memory (1 % per run, 0.5 % per
block). It is judged by ``patchbench.analysis.verdict.judge`` (wall time gated, the other four
judged alike and made one family with it), and again with each metric on its own at alpha
(results version 7) on the same replicates. Cases: an A/A (nothing changed); wall, user,
system and CPU time 10 % slower (power: is CPU time still called?); CPU time 10 % slower at the
same wall time (work moved off the critical path: what the family gives up).

Target: the A/A calls any metric faster or slower in at most 5 % of comparisons (one-sided
binomial test of the count against 5 %, and its 95 % Clopper-Pearson interval).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.gate_calibration import pct  # noqa: E402
from patchbench.analysis import metrics as mx  # noqa: E402
from patchbench.analysis import stats, verdict  # noqa: E402
from patchbench.measure import bench  # noqa: E402

ALPHA = 0.05
MIN_EFFECT = 0.02
RUNS = 4
ROUNDS = (10, 20, 40)
LEVEL = 0.100  # seconds: a run's typical wall time
CASES = {
    "A/A": {},
    "all time 10 % slower": {"wall": 1.10, "user": 1.10, "system": 1.10},
    "CPU 10 % more, same wall": {"user": 1.10, "system": 1.10},
}
NAMES = ("cpu", "user", "system", "peak-rss")


@dataclass
class Runs:
    times: list[float]
    rounds: list[int]
    metrics: dict[str, list[float]] = field(default_factory=dict)


def simulate(rng: np.random.Generator, rounds: int, change: dict[str, float]
             ) -> tuple[Runs, Runs, dict[int, int]]:
    order = bench.schedule([bench.Cell("baseline"), bench.Cell("candidate")], rounds,
                           int(rng.integers(2**31)))
    pos = np.array([[c.variant for c in r].index("candidate") for r in order])
    sigma = math.sqrt(math.log1p(0.15**2))
    out = []
    for v in range(2):
        f = change if v == 1 else {}
        speed = rng.normal(0, 0.05, (rounds, 1))
        e = rng.normal(0, sigma, (rounds, RUNS))
        wall = LEVEL * f.get("wall", 1.0) * np.exp(speed + e)
        user = 0.6 * LEVEL * f.get("user", 1.0) * np.exp(
            speed + 0.7 * e + rng.normal(0, 0.1, (rounds, RUNS)))
        system = 0.3 * LEVEL * f.get("system", 1.0) * np.exp(
            speed + 0.7 * e + rng.normal(0, 0.1, (rounds, RUNS)))
        rss = 30e6 * np.exp(rng.normal(0, 0.005, (rounds, 1)) + rng.normal(0, 0.01,
                                                                            (rounds, RUNS)))
        ids = [r for r in range(1, rounds + 1) for _ in range(RUNS)]
        out.append(Runs(wall.ravel().tolist(), ids, {
            "cpu": (user + system).ravel().tolist(), "user": user.ravel().tolist(),
            "system": system.ravel().tolist(), "peak-rss": rss.ravel().tolist()}))
    signs = {r: 1 if (pos[r - 1] == 1) == (pos[r] == 0) else -1 for r in range(1, rounds)}
    return out[0], out[1], signs


def one(b: Runs, c: Runs, signs: dict[int, int]) -> tuple[dict[str, str], dict[str, str]]:
    """Each metric's verdict by the live rule (one family) and each on its own at alpha."""
    j = verdict.judge(b, c, alpha=ALPHA, min_effect=MIN_EFFECT, seed=0, signs=signs,
                      metrics={n: MIN_EFFECT for n in NAMES}, gated=(mx.WALL,))
    assert j.record is not None
    live = {mx.WALL: str(j.record["verdict"]), **{n: str(r["verdict"])
                                                  for n, r in j.metrics.items()}}
    alone = {mx.WALL: live[mx.WALL]}  # wall time is gated: its call is the same
    for n in NAMES:
        alone[n] = str(mx.judge(n, b.metrics[n], b.rounds, c.metrics[n], c.rounds, alpha=ALPHA,
                                min_effect=MIN_EFFECT)["verdict"])
    return live, alone


def cell(job: tuple[str, int, int, int]) -> tuple[tuple[str, int], dict[str, Any]]:
    case, rounds, replicates, seed = job
    rng = np.random.default_rng([seed, list(CASES).index(case), rounds])
    counts = {"any": 0, "any alone": 0, "cpu": 0, "cpu alone": 0, "wall": 0}
    for _ in range(replicates):
        b, c, signs = simulate(rng, rounds, CASES[case])
        live, alone = one(b, c, signs)
        changed = ("faster", "slower")
        counts["any"] += any(v in changed for v in live.values())
        counts["any alone"] += any(v in changed for v in alone.values())
        counts["cpu"] += live["cpu"] == "slower"
        counts["cpu alone"] += alone["cpu"] == "slower"
        counts["wall"] += live[mx.WALL] in changed
    return (case, rounds), {"n": replicates, **counts}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=4000, help="per A/A cell (4000)")
    ap.add_argument("--power-replicates", type=int, default=1000,
                    help="per cell of the other cases (1000)")
    ap.add_argument("--seed", type=int, default=20261205)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    t0, load0 = time.monotonic(), os.getloadavg()
    jobs = [(c, r, args.replicates if c == "A/A" else args.power_replicates, args.seed)
            for c in CASES for r in ROUNDS]
    with multiprocessing.Pool(args.jobs) as pool:
        got = dict(pool.imap_unordered(cell, jobs))
    rows, ok = [], True
    for case in CASES:
        for r in ROUNDS:
            g = got[(case, r)]
            n = g["n"]
            p = ""
            if case == "A/A":
                binom = stats.betainc(g["any"], n - g["any"] + 1, 0.05) if g["any"] else 1.0
                ok = ok and g["any"] / n <= 0.05
                p = f" (binomial p {binom:.2g} that the rate is above 5 %)"
            rows.append(f"| {case} | {r}x{RUNS} | {pct(g['any'], n)}{p} | "
                        f"{pct(g['any alone'], n)} | {pct(g['wall'], n)} | {pct(g['cpu'], n)} | "
                        f"{pct(g['cpu alone'], n)} |")
    shown = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("/")]
    text = "\n".join([
        "# Calibration of the metrics' family (benchmarks/metrics_calibration.py)\n",
        f"Command: `{' '.join(['python3 benchmarks/metrics_calibration.py', *shown])}`  ",
        f"Python {platform.python_version()}, numpy {np.__version__}; "
        f"{time.monotonic() - t0:.0f} s on a shared 2-core VM; load "
        f"{' '.join(f'{x:.2f}' for x in load0)} at the start, "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end.  ",
        f"Replicates per cell: {args.replicates} (A/A), {args.power_replicates} (the others); "
        f"alpha {ALPHA}, min_effect {MIN_EFFECT} for "
        "every metric; wall time gated. The model is in the script's docstring.\n",
        f"The family: {mx.FAMILY}.\n",
        "Columns (% with 95 % Clopper-Pearson intervals): **any metric called** = a comparison "
        "calls at least one of the five faster or slower; **each alone** = the same with each "
        "metric judged on its own at alpha (results version 7); **wall called**; **CPU slower** "
        "by the family, and **alone**.\n",
        "| case | R x n | any metric called | each alone | wall called | CPU slower | "
        "CPU slower alone |",
        "|---|---|---|---|---|---|---|",
        *rows, "",
        "**Target met**: the A/A calls any metric in at most 5 %." if ok
        else "**Target MISSED** (see the A/A rows).",
    ]) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
