"""Calibration of track's change-point detection, with the tool's own code.

    python3 benchmarks/track_calibration.py [--replicates 2000] [--seed N] [--out FILE] [--quick]

Simulates series as ``track`` stores them and runs patchbench.track.detect on each, with the
defaults ``track`` uses: a year of nightly points (365) with no change, and the same with a
step, for ratios (the log of a commit's time against the reference's, normal, heavy-tailed, or
with a noise that differs from night to night) and for counts (hangs of 200 runs a night at a
constant rate). Tallies the series that flag a change (false alarms: the target is at most 5 %
of series, checked on the upper bound of the 95 % Clopper-Pearson interval), and with a step
the series whose change is found within two points of it. ``min_magnitude`` is 0 in the null
cells unless said: the worst case (track passes the comparison's ``min_effect``, which only
removes changes). Results: benchmarks/results/track_calibration.md; docs/track.md."""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench.track import detect  # noqa: E402

NIGHTS = 365
TARGET = 0.05
RUNS = 200  # hangs: runs of a commit a night


@dataclass(frozen=True)
class Cell:
    name: str
    what: str
    kind: str  # "ratio" or "count"
    draw: Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray | None]]
    step_at: int | None = None  # the first point after the change; None: no change
    min_magnitude: float = 0.0


def _ratio(sd: float, n: int = NIGHTS, step: float = 0.0, at: int = 0,
           tails: str = "normal") -> Callable[[np.random.Generator],
                                              tuple[np.ndarray, np.ndarray | None]]:
    def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        if tails == "t3":
            x = sd * rng.standard_t(3, n) / math.sqrt(3)  # the same variance as the normal
        elif tails == "varying":
            x = rng.normal(0, 1, n) * sd * rng.lognormal(0, 0.5, n)
        else:
            x = rng.normal(0, sd, n)
        if step:
            x[at:] += math.log1p(step)
        return np.exp(x), None
    return draw


def _count(rate: float, after: float | None = None, at: int = 0
           ) -> Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray | None]]:
    def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        e = rng.binomial(RUNS, rate, NIGHTS)
        if after is not None:
            e[at:] = rng.binomial(RUNS, after, NIGHTS - at)
        return e, np.full(NIGHTS, RUNS)
    return draw


CELLS = (
    Cell("null-normal", "no change, normal, sd 2 %", "ratio", _ratio(0.02)),
    Cell("null-normal-min-effect", "no change, normal, sd 2 %, min_magnitude 0.02 (the default "
         "min_effect)", "ratio", _ratio(0.02), min_magnitude=0.02),
    Cell("null-t3", "no change, Student t (3 df) tails, sd 2 %", "ratio",
         _ratio(0.02, tails="t3")),
    Cell("null-varying", "no change, a night's sd 2 % x lognormal(0, 0.5)", "ratio",
         _ratio(0.02, tails="varying")),
    Cell("null-short", "no change, 30 points (the fixture's size), normal, sd 2 %", "ratio",
         _ratio(0.02, n=30)),
    Cell("null-hangs-0.05", "no change, hangs 0.05 % of 200 runs a night", "count",
         _count(0.0005)),
    Cell("null-hangs-1", "no change, hangs 1 % of 200 runs a night", "count", _count(0.01)),
    Cell("null-hangs-10", "no change, hangs 10 % of 200 runs a night", "count", _count(0.10)),
    Cell("step-5", "+5 % at night 200, normal, sd 2 %", "ratio",
         _ratio(0.02, step=0.05, at=200), step_at=200, min_magnitude=0.02),
    Cell("step-2", "+2 % at night 200, normal, sd 2 %", "ratio",
         _ratio(0.02, step=0.02, at=200), step_at=200),
    Cell("step-hangs", "hangs 0.1 % -> 0.6 % at night 200, 200 runs a night", "count",
         _count(0.001, 0.006, 200), step_at=200),
)


def detect_cell(cell: Cell, values: np.ndarray, runs: np.ndarray | None
                ) -> list[detect.ChangePoint]:
    if cell.kind == "count":
        assert runs is not None
        return detect.count_changes(values.tolist(), runs.tolist())
    return detect.ratio_changes(values.tolist(), min_magnitude=cell.min_magnitude)


def binom_cdf(k: int, n: int, p: float) -> float:
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    return min(1.0, math.fsum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1)
                                       - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
                              for i in range(k + 1)))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact two-sided interval of a binomial proportion (k of n)."""
    tail = (1 - level) / 2

    def solve(f: Callable[[float], float]) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return (lo + hi) / 2

    low = 0.0 if k == 0 else solve(lambda p: (1 - binom_cdf(k - 1, n, p)) - tail)
    high = 1.0 if k == n else solve(lambda p: tail - binom_cdf(k, n, p))
    return low, high


@dataclass
class Tally:
    n: int = 0
    flagged: int = 0  # series with any change point
    found: int = 0  # with a step: a change point within 2 of it
    seconds: float = 0.0


def run_cell(cell: Cell, replicates: int, seed: int) -> Tally:
    rng = np.random.default_rng(seed)
    t = Tally()
    start = time.monotonic()
    for _ in range(replicates):
        values, runs = cell.draw(rng)
        cps = detect_cell(cell, values, runs)
        t.n += 1
        t.flagged += bool(cps)
        if cell.step_at is not None:
            t.found += any(abs(c.index - cell.step_at) <= 2 for c in cps)
    t.seconds = time.monotonic() - start
    return t


def report(tallies: dict[str, Tally], args: argparse.Namespace, seconds: float) -> str:
    lines = ["# Track calibration", "",
             f"`python3 benchmarks/track_calibration.py --replicates {args.replicates} --seed "
             f"{args.seed}`", "",
             f"{time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, "
             f"{seconds:.0f} s. patchbench.track.detect with its defaults: candidates from "
             f"ruptures (KernelCPD, linear kernel, penalty {detect.PENALTY:g} sigma^2 ln n; "
             f"counts {detect.COUNT_PENALTY:g}), at least {detect.MIN_SIZE} points either "
             f"side, kept by Welch's t-test at p <= {detect.MAX_P:g} (counts: Fisher's exact "
             f"test at p <= {detect.COUNT_MAX_P:g}).", "",
             "`flagged`: series with any change point, in % with its 95 % Clopper-Pearson "
             "interval; with no change that is a false alarm, and `meets` says its upper bound "
             "is at most 5 %. `found`: with a step, a change point within 2 points of it.", "",
             "| cell | model | replicates | flagged [95 % CI] | found | meets |",
             "|---|---|---|---|---|---|"]
    ok = True
    for cell in CELLS:
        t = tallies[cell.name]
        lo, hi = clopper_pearson(t.flagged, t.n)
        null = cell.step_at is None
        meets = hi <= TARGET if null else None
        ok = ok and meets is not False
        lines.append(f"| {cell.name} | {cell.what} | {t.n} | {100 * t.flagged / t.n:.2f} "
                     f"[{100 * lo:.2f}, {100 * hi:.2f}] | "
                     + ("-" if null else f"{100 * t.found / t.n:.1f}") + " | "
                     + ("-" if meets is None else "yes" if meets else "**no**") + " |")
    lines += ["", "**Result: " + ("every series without a change flags one in at most 5 % of "
                                   "replicates.**" if ok else "a target is missed.**"), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261205)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--quick", action="store_true", help="50 replicates a cell")
    args = ap.parse_args(argv)
    if args.quick:
        args.replicates = 50
    start = time.monotonic()
    tallies = {c.name: run_cell(c, args.replicates, args.seed + i) for i, c in enumerate(CELLS)}
    text = report(tallies, args, time.monotonic() - start)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0 if "a target is missed" not in text else 1


if __name__ == "__main__":
    raise SystemExit(main())
