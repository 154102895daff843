"""Calibration of patchbench's verdict rule (results schema 5, issue 22), with the tool's own code.

    python3 benchmarks/stats_calibration.py [--replicates 1000] [--out FILE] [--quick]

Each replicate simulates one comparison as patchbench measures it: R rounds; in every round each
variant runs one block of n = 4 consecutive runs, in the order ``bench.schedule`` gives (AB/BA).
The candidate's times are the baseline's model scaled by a true factor (1.00; 1.02 and 1/1.02,
exactly min_effect either way; 1.05; 1.10), so the true speedup, the ratio of the geometric means that the
rule estimates, is 1 / factor. Models (the baseline's median 126 ms, the demo's):

  lognormal    CV 5 %, an independent log-normal drift factor (sd 3 %) per block
  ar1-drift    CV 5 %, the machine's speed an AR(1) over the blocks in the order run
               (phi 0.9, stationary sd 5 %)
  shape        baseline CV 2 % log-normal; candidate CV about 20 %, right-skewed (its log a
               shifted exponential), the same geometric mean: the demo's shapes (issue 22)
  position     CV 5 %; the second block of every round runs 3 % slower
  shuffled     the same position effect under the old random order (for contrast)
  outliers     CV 5 %; 5 % of runs 1.5x slower, in both variants alike
  coarse-clock CV 2 % on a 10 ms baseline read by a 1 ms clock (times floored to the tick);
               the floor changes the geometric means, so the truth is known only at 1.00

R = 5, 10, 20, 40 rounds (and 60 for the shape model), alpha 0.05, min_effect 0.02.

Per cell: **sig** = two-sided p < alpha at 1.00 (the t test's size: 5 % nominal); **false** = a
faster/slower verdict at 1.00; **coverage** = the 95 % CI holds the true speedup (lowest over the
factors where it is known); **slower@edge** = verdict "slower" at a true slowdown of exactly
min_effect and **equiv@edge** = verdict "equivalent" there, **faster@edge** = verdict "faster"
at a true speedup of exactly min_effect (each the size of a one-sided test: <= 5 %);
**equiv@1** and **slower@1.05/1.10** = the power of each answer; **MDE** = the median
minimum detectable effect at 1.00; **drift** = the drift check fires at 1.00 (checked against
its nominal 1 % in the models without drift). The old rule (``stats.paired_rounds``, per-round medians,
min_effect on the ratio scale) is run on the same replicates at 1.00 for contrast.

A check misses when a one-sided binomial test of its count against the target gives p < 0.05
(false, sig, slower@edge, equiv@edge against 5 %; 1 - coverage against 5 %). Checks at exactly
their nominal level miss by chance in about 5 % of cells, so the calibration FAILS when more
checks miss than Binomial(checks, 0.05) exceeds with probability 0.05, or when any check misses
at p < 0.001; otherwise it passes, and the misses are listed.
"""

from __future__ import annotations

import argparse
import math
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench.analysis import paired, stats  # noqa: E402
from patchbench.analysis.paired import Verdict  # noqa: E402
from patchbench.measure import bench  # noqa: E402

BASE_MEDIAN = 0.126
ALPHA = 0.05
MIN_EFFECT = 0.02
RUNS = 4
ROUNDS = (5, 10, 20, 40)
SHAPE_ROUNDS = (*ROUNDS, 60)
# candidate / baseline: above 1, slower; the second and third exactly min_effect either way
FACTORS = (1.00, 1.0 + MIN_EFFECT, 1.0 / (1.0 + MIN_EFFECT), 1.05, 1.10)
TARGET = 0.05  # false alarms, sizes and 1 - coverage
MISS_P = 0.05
REAL_MISS_P = 0.001

Sim = tuple[list[float], list[int], list[float], list[int]]


def lognormal_sigma(cv: float) -> float:
    return math.sqrt(math.log1p(cv * cv))


def simulate(rng: np.random.Generator, rounds: int, runs: int, cv: float, drift: float,
             ratio: float) -> Sim:
    """The ``lognormal`` model: log-normal runs (CV ``cv``) around a baseline median of 126 ms,
    the candidate's median the baseline's divided by ``ratio`` (the true speedup), and every
    block its own drift factor exp(N(0, drift^2))."""
    sigma = lognormal_sigma(cv)
    medians = (BASE_MEDIAN, BASE_MEDIAN / ratio)
    out: list[list[float]] = [[], []]
    for v in range(2):
        block_drift = rng.normal(0.0, drift, rounds) if drift else np.zeros(rounds)
        noise = rng.normal(0.0, sigma, (rounds, runs))
        out[v] = list((medians[v] * np.exp(block_drift[:, None] + noise)).ravel())
    round_ids = [r for r in range(1, rounds + 1) for _ in range(runs)]
    return out[0], round_ids, out[1], list(round_ids)


def _positions(rounds: int, seed: int, shuffled: bool) -> np.ndarray:
    """Per round, the position (0 or 1) of the candidate's block: bench.schedule's balanced
    order, or (``shuffled``) the old independent coin flip per round."""
    if shuffled:
        rng = random.Random(seed)
        return np.array([rng.random() < 0.5 for _ in range(rounds)], dtype=int)
    order = bench.schedule([bench.Cell("baseline"), bench.Cell("candidate")], rounds, seed)
    return np.array([[c.variant for c in r].index("candidate") for r in order], dtype=int)


def _pack(b: np.ndarray, c: np.ndarray) -> Sim:
    rounds, runs = b.shape
    ids = [r for r in range(1, rounds + 1) for _ in range(runs)]
    return b.ravel().tolist(), ids, c.ravel().tolist(), list(ids)


def model_lognormal(rng: np.random.Generator, rounds: int, factor: float) -> Sim:
    return simulate(rng, rounds, RUNS, 0.05, 0.03, 1.0 / factor)


def model_ar1(rng: np.random.Generator, rounds: int, factor: float) -> Sim:
    phi, sd = 0.9, 0.05
    pos = _positions(rounds, int(rng.integers(2**31)), False)
    speed = np.empty(2 * rounds)
    speed[0] = rng.normal(0, sd)
    for t in range(1, 2 * rounds):
        speed[t] = phi * speed[t - 1] + rng.normal(0, sd * math.sqrt(1 - phi * phi))
    at = speed.reshape(rounds, 2)
    cand_drift = at[np.arange(rounds), pos]
    base_drift = at[np.arange(rounds), 1 - pos]
    s = lognormal_sigma(0.05)
    b = BASE_MEDIAN * np.exp(base_drift[:, None] + rng.normal(0, s, (rounds, RUNS)))
    c = BASE_MEDIAN * factor * np.exp(cand_drift[:, None] + rng.normal(0, s, (rounds, RUNS)))
    return _pack(b, c)


def model_shape(rng: np.random.Generator, rounds: int, factor: float) -> Sim:
    b = BASE_MEDIAN * np.exp(rng.normal(0, lognormal_sigma(0.02), (rounds, RUNS)))
    scale = 0.18  # log = scale * (Exp(1) - 1): mean 0 (the same geometric mean), CV about 20 %
    c = BASE_MEDIAN * factor * np.exp(scale * (rng.exponential(1.0, (rounds, RUNS)) - 1.0))
    return _pack(b, c)


def _position(rng: np.random.Generator, rounds: int, factor: float, shuffled: bool) -> Sim:
    pos = _positions(rounds, int(rng.integers(2**31)), shuffled)
    s = lognormal_sigma(0.05)
    effect = math.log(1.03)
    b = BASE_MEDIAN * np.exp(((1 - pos) * effect)[:, None] + rng.normal(0, s, (rounds, RUNS)))
    c = BASE_MEDIAN * factor * np.exp((pos * effect)[:, None]
                                      + rng.normal(0, s, (rounds, RUNS)))
    return _pack(b, c)


def model_position(rng: np.random.Generator, rounds: int, factor: float) -> Sim:
    return _position(rng, rounds, factor, False)


def model_shuffled(rng: np.random.Generator, rounds: int, factor: float) -> Sim:
    return _position(rng, rounds, factor, True)


def model_outliers(rng: np.random.Generator, rounds: int, factor: float) -> Sim:
    s = lognormal_sigma(0.05)
    out = []
    for f in (1.0, factor):
        x = BASE_MEDIAN * f * np.exp(rng.normal(0, s, (rounds, RUNS)))
        out.append(np.where(rng.random((rounds, RUNS)) < 0.05, 1.5 * x, x))
    return _pack(out[0], out[1])


def model_coarse(rng: np.random.Generator, rounds: int, factor: float) -> Sim:
    tick, s = 0.001, lognormal_sigma(0.02)
    b = 0.010 * np.exp(rng.normal(0, s, (rounds, RUNS)))
    c = 0.010 * factor * np.exp(rng.normal(0, s, (rounds, RUNS)))
    return _pack(np.floor(b / tick) * tick, np.floor(c / tick) * tick)


Model = Callable[[np.random.Generator, int, float], Sim]
# models in which no block drifts: there the drift check's false alarms are checked against 1 %
DRIFTLESS = ("shape", "outliers", "coarse-clock")
MODELS: dict[str, tuple[Model, tuple[int, ...], bool]] = {  # the full grid
    # name: (model, rounds, the truth is known at every factor)
    "lognormal": (model_lognormal, ROUNDS, True),
    "ar1-drift": (model_ar1, ROUNDS, True),
    "shape": (model_shape, SHAPE_ROUNDS, True),
    "position": (model_position, ROUNDS, True),
    "shuffled": (model_shuffled, ROUNDS, True),
    "outliers": (model_outliers, ROUNDS, True),
    "coarse-clock": (model_coarse, ROUNDS, False),
}


@dataclass
class Tally:
    n: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    mdes: list[float] = field(default_factory=list)

    def add(self, key: str, hit: bool) -> None:
        self.counts[key] = self.counts.get(key, 0) + int(hit)

    def rate(self, key: str) -> float:
        return self.counts.get(key, 0) / self.n if self.n else math.nan


def run_cell(model: str, rounds: int, factor: float, replicates: int, seed: int,
             old: bool) -> Tally:
    fn = MODELS[model][0]
    rng = np.random.default_rng([seed, list(MODELS).index(model), rounds,
                                 FACTORS.index(factor)])
    t = Tally()
    truth = 1.0 / factor
    for _ in range(replicates):
        bt, br, ct, cr = fn(rng, rounds, factor)
        v = paired.paired_verdict(bt, br, ct, cr, alpha=ALPHA, min_effect=MIN_EFFECT)
        t.n += 1
        t.add("sig", v.p_value is not None and v.p_value < ALPHA)
        t.add("false", v.verdict in (Verdict.FASTER, Verdict.SLOWER))
        t.add("slower", v.verdict is Verdict.SLOWER)
        t.add("faster", v.verdict is Verdict.FASTER)
        t.add("equivalent", v.verdict is Verdict.EQUIVALENT)
        t.add("covered", v.ci_low is not None and v.ci_high is not None
              and v.ci_low <= truth <= v.ci_high)
        t.add("drift", v.drift is not None and v.drift.flagged)
        if v.mde is not None:
            t.mdes.append(v.mde)
        if old:
            o = stats.paired_rounds(bt, br, ct, cr, alpha=ALPHA, min_effect=MIN_EFFECT)
            t.add("old false", o.verdict in ("faster", "slower"))
            t.add("old covered", o.ci_low is not None and o.ci_high is not None
                  and o.ci_low <= truth <= o.ci_high)
            t.add("old drift", o.drift is not None and o.drift.flagged)
    return t


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return stats.betainc(k, n - k + 1, p)


def binom_quantile(n: int, p: float, level: float) -> int:
    """The smallest k with P(X > k) <= 1 - level for X ~ Binomial(n, p)."""
    k = 0
    while binom_sf(k + 1, n, p) > 1 - level:
        k += 1
    return k


def pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


@dataclass
class Check:
    name: str
    misses: int  # count past the target
    n: int

    target: float = TARGET

    @property
    def p(self) -> float:
        return binom_sf(self.misses, self.n, self.target)


Models = dict[str, tuple[Model, tuple[int, ...], bool]]


def evaluate(cells: dict[tuple[str, int, float], Tally], models: Models
             ) -> tuple[list[list[str]], list[Check]]:
    rows, checks = [], []
    edge, fast_edge = FACTORS[1], FACTORS[2]
    for model, (_, rounds_list, known) in models.items():
        for rounds in rounds_list:
            aa, at_edge = cells[(model, rounds, 1.0)], cells[(model, rounds, edge)]
            at_fast = cells[(model, rounds, fast_edge)]
            name = f"{model} R={rounds}"
            checks += [Check(f"{name}: sig @1.00", aa.counts.get("sig", 0), aa.n),
                       Check(f"{name}: false @1.00", aa.counts.get("false", 0), aa.n)]
            if model in DRIFTLESS:
                checks.append(Check(f"{name}: drift flagged @1.00 (nominal "
                                    f"{stats.DRIFT_ALPHA:.0%})", aa.counts.get("drift", 0), aa.n,
                                    stats.DRIFT_ALPHA))
            factors = FACTORS if known else (1.0,)
            covs = []
            for f in factors:
                c = cells[(model, rounds, f)]
                covs.append(c.rate("covered"))
                checks.append(Check(f"{name}: coverage @{1 / f:.3f}",
                                    c.n - c.counts.get("covered", 0), c.n))
            if known:
                checks += [Check(f"{name}: slower @edge", at_edge.counts.get("slower", 0),
                                 at_edge.n),
                           Check(f"{name}: faster @edge", at_fast.counts.get("faster", 0),
                                 at_fast.n),
                           Check(f"{name}: equivalent @edge",
                                 at_edge.counts.get("equivalent", 0), at_edge.n)]
            mde = float(np.median(aa.mdes)) if aa.mdes else math.nan
            rows.append([
                model, f"{rounds}x{RUNS}", pct(aa.rate("sig")), pct(aa.rate("false")),
                pct(min(covs)), pct(at_edge.rate("slower")) if known else "-",
                pct(at_fast.rate("faster")) if known else "-",
                pct(at_edge.rate("equivalent")) if known else "-", pct(aa.rate("equivalent")),
                pct(cells[(model, rounds, 1.05)].rate("slower")),
                pct(cells[(model, rounds, 1.10)].rate("slower")), pct(mde),
                pct(aa.rate("drift")), pct(aa.rate("old false")), pct(aa.rate("old covered")),
                pct(aa.rate("old drift")),
            ])
    return rows, checks


def report(cells: dict[tuple[str, int, float], Tally], models: Models, args: argparse.Namespace,
           command: str, elapsed: float) -> tuple[str, bool]:
    rows, checks = evaluate(cells, models)
    missed = [c for c in checks if c.p < MISS_P]
    real = [c for c in checks if c.p < REAL_MISS_P]
    allowed = binom_quantile(len(checks), TARGET, 0.95)
    passed = not real and len(missed) <= allowed
    out = ["# Calibration of the verdict rule of schema 5 (benchmarks/stats_calibration.py)\n",
           f"Command: `{command}`  ",
           f"Python {platform.python_version()}, numpy {np.__version__}; {elapsed:.0f} s wall "
           "time on a shared 2-core VM.  ",
           f"Replicates per cell: {args.replicates}; {RUNS} runs per block; alpha {ALPHA}, "
           f"min_effect {MIN_EFFECT}; the models are described in the script's docstring.\n",
           "Columns (%): **sig** = two-sided p < alpha at 1.00 (nominal 5); **false** = a "
           "faster/slower verdict at 1.00; **coverage** = lowest share of 95 % CIs holding the "
           "true speedup; **slower@edge**, **equiv@edge** = verdict slower / equivalent at a true "
           "slowdown of exactly min_effect, **faster@edge** = verdict faster at a true speedup of "
           "exactly min_effect (each <= 5); **equiv@1** = verdict equivalent at "
           "1.00; **slower@1.05/1.10** = power; **MDE** = median minimum detectable effect at "
           "1.00; **drift** = the drift check fires at 1.00 (nominal 1 % in the models without "
           f"drift: {', '.join(DRIFTLESS)}); **old false**, **old coverage**, **old drift** = "
           "the rule of schema 3-4 (`stats.paired_rounds`, its equal-variance drift check) on "
           "the same A/A replicates.\n",
           table(["model", "R x n", "sig", "false", "coverage", "slower@edge", "faster@edge",
                  "equiv@edge",
                  "equiv@1", "slower@1.05", "slower@1.10", "MDE", "drift", "old false",
                  "old coverage", "old drift"], rows),
           f"\nChecks: {len(checks)} (each a one-sided binomial test against {TARGET:.0%}); "
           f"missed at p < {MISS_P}: {len(missed)} (chance alone exceeds {allowed} with "
           f"probability < 5 %); missed at p < {REAL_MISS_P}: {len(real)}."]
    out += [f"- {c.name}: {c.misses} of {c.n} (binomial p = {c.p:.2g})"
            for c in sorted(missed, key=lambda c: c.p)]
    if args.quick:
        out.append("\n(--quick: a smoke run; too few replicates to judge the targets.)")
    elif passed:
        out.append("\n**Calibration passed**: no check missed beyond what chance explains.")
    else:
        out.append("\n**Calibration FAILED** (see the checks above).")
    return "\n".join(out) + "\n", passed


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=1000, help="per cell (1000)")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 20 replicates, R up to 10; the numbers are not meaningful")
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    ap.add_argument("--out", type=Path, help="also write the markdown table to this file")
    args = ap.parse_args(argv)
    if args.replicates < 1:
        ap.error("--replicates must be >= 1")
    models = {k: v for k, v in MODELS.items() if k in args.models}
    if args.quick:
        args.replicates = min(args.replicates, 20)
        models = {k: (fn, tuple(r for r in rs if r <= 10), known)
                  for k, (fn, rs, known) in models.items()}
    shown = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("/")]
    command = " ".join(["python3 benchmarks/stats_calibration.py", *shown])
    cells: dict[tuple[str, int, float], Tally] = {}
    t0 = time.monotonic()
    total = sum(len(rs) for _, rs, _ in models.values()) * len(FACTORS)
    for model, (_, rounds_list, _) in models.items():
        for rounds in rounds_list:
            for f in FACTORS:
                cells[(model, rounds, f)] = run_cell(model, rounds, f, args.replicates,
                                                     args.seed, old=f == 1.0)
                print(f"calibration: {len(cells)}/{total} cells, "
                      f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    text, passed = report(cells, models, args, command, time.monotonic() - t0)
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0 if passed or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
