"""Calibration of patchbench's verdicts under drift (issue 9), with the tool's own analysis code.

    python3 benchmarks/stats_calibration.py [--replicates 1000] [--out FILE] [--quick]

Each replicate simulates one comparison as patchbench measures it: R rounds; in every round each
variant runs one block of n consecutive runs. Run times are log-normal (coefficient of variation
CV) around a baseline median of 126 ms (the demo's), and the candidate's median is the baseline's
divided by the planted true ratio (so the true speedup is that ratio). Every block, that is every
variant in every round, gets its own multiplicative drift factor exp(N(0, drift^2)): the machine's
speed at the moment that block ran, shared by the block's runs, as with interleaved blocks.

Grid: CV 5/20/35 %, drift 0/1/3/5 % (sd of the log drift factor), true ratio 1.00/1.03/1.05/1.10,
and the settings
  demo         10 rounds x 4 runs   (the new default the issue proposes for the demo)
  ci            5 rounds x 8 runs   (today's CI setting, 40 runs in 5 rounds: the fewest rounds
                                     that still get a verdict)
  runc-signal  25 rounds x 20 runs
alpha 0.05 and min_effect 0.02, as in matrix.yaml.

For every cell it prints, for the NEW rule (``stats.paired_rounds``): the false-alarm rate (any
verdict at ratio 1.00), the coverage of the 95 % CI (true ratio inside it), the power (verdict
"faster" at ratio > 1) and how often the drift check fires. For contrast, the OLD pooled rule
(``stats.compare``: Mann-Whitney U plus a bootstrap CI, every run taken as independent) on a
subset of the ratios, with fewer replicates and fewer bootstrap resamples than the tool's 10,000,
because its bootstrap is about 10-50x slower (the flags below say how many).

Rates are Monte Carlo estimates: with 1000 replicates a true 5 % rate reads between 3.6 and 6.4 %
in 95 % of cells, so a cell above a target is also tested against it (one-sided binomial test).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench.analysis import stats  # noqa: E402

SETTINGS: dict[str, tuple[int, int]] = {"demo": (10, 4), "ci": (5, 8), "runc-signal": (25, 20)}
CVS = (0.05, 0.20, 0.35)
DRIFTS = (0.0, 0.01, 0.03, 0.05)
RATIOS = (1.00, 1.03, 1.05, 1.10)
BASE_MEDIAN = 0.126
ALPHA = 0.05
MIN_EFFECT = 0.02
TARGET_FALSE_ALARMS = 0.06
TARGET_COVERAGE = 0.94
MISS_P = 0.001  # a cell misses a target when a one-sided binomial test against it gives p below


def simulate(rng: np.random.Generator, rounds: int, runs: int, cv: float, drift: float,
             ratio: float) -> tuple[list[float], list[int], list[float], list[int]]:
    """One comparison's raw runs: (baseline times, their rounds, candidate times, their rounds)."""
    sigma = math.sqrt(math.log1p(cv * cv))  # log-normal with this coefficient of variation
    medians = (BASE_MEDIAN, BASE_MEDIAN / ratio)
    out: list[list[float]] = [[], []]
    for v in range(2):
        block_drift = rng.normal(0.0, drift, rounds) if drift else np.zeros(rounds)
        noise = rng.normal(0.0, sigma, (rounds, runs))
        out[v] = list((medians[v] * np.exp(block_drift[:, None] + noise)).ravel())
    round_ids = [r for r in range(1, rounds + 1) for _ in range(runs)]
    return out[0], round_ids, out[1], list(round_ids)


@dataclass
class Tally:
    n: int = 0
    faster: int = 0
    slower: int = 0
    covered: int = 0
    withheld: int = 0
    drift_flagged: int = 0
    seconds: float = 0.0

    def rate(self, k: int) -> float:
        return k / self.n if self.n else math.nan


@dataclass
class Cell:
    setting: str
    cv: float
    drift: float
    ratio: float
    new: Tally = field(default_factory=Tally)
    old: Tally = field(default_factory=Tally)


def run_cell(cell: Cell, replicates: int, old_replicates: int, old_resamples: int,
             seed: int) -> None:
    rounds, runs = SETTINGS[cell.setting]
    key = [seed, list(SETTINGS).index(cell.setting), CVS.index(cell.cv), DRIFTS.index(cell.drift),
           RATIOS.index(cell.ratio)]
    rng = np.random.default_rng(key)
    for i in range(max(replicates, old_replicates)):
        bt, br, ct, cr = simulate(rng, rounds, runs, cell.cv, cell.drift, cell.ratio)
        if i < replicates:
            t0 = time.perf_counter()
            p = stats.paired_rounds(bt, br, ct, cr, alpha=ALPHA, min_effect=MIN_EFFECT)
            cell.new.seconds += time.perf_counter() - t0
            tally(cell.new, p.verdict, p.ci_low, p.ci_high, cell.ratio)
            cell.new.withheld += p.withheld
            cell.new.drift_flagged += bool(p.drift and p.drift.flagged)
        if i < old_replicates:
            t0 = time.perf_counter()
            c = stats.compare(bt, ct, alpha=ALPHA, min_effect=MIN_EFFECT, seed=i,
                              resamples=old_resamples)
            cell.old.seconds += time.perf_counter() - t0
            tally(cell.old, c.verdict, c.ci_low, c.ci_high, cell.ratio)


def tally(t: Tally, verdict: str, low: float | None, high: float | None, ratio: float) -> None:
    t.n += 1
    t.faster += verdict == "faster"
    t.slower += verdict == "slower"
    t.covered += low is not None and high is not None and low <= ratio <= high


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return stats.betainc(k, n - k + 1, p)


def pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def report(cells: dict[tuple[str, float, float, float], Cell], args: argparse.Namespace,
           command: str, elapsed: float) -> str:
    out: list[str] = []
    out.append("# Calibration of the verdict under drift (benchmarks/stats_calibration.py)\n")
    out.append(f"Command: `{command}`  ")
    out.append(f"Python {platform.python_version()}, numpy {np.__version__}; "
               f"{elapsed:.0f} s wall time on a shared 2-core VM.  ")
    out.append(f"Replicates per cell: {args.replicates} for the new rule; the old rule "
               f"{args.old_replicates} at ratios {', '.join(f'{r:.2f}' for r in args.old_ratios)}, "
               f"with {args.old_resamples} bootstrap resamples (the tool uses "
               f"{stats.BOOTSTRAP}).  ")
    out.append(f"alpha {ALPHA}, min_effect {MIN_EFFECT}, baseline median {BASE_MEDIAN * 1000:.0f} "
               "ms, log-normal noise, an independent log-normal drift factor per block (variant x "
               "round). Drift = sd of the log drift factor; CV = the runs' coefficient of "
               "variation.\n")
    out.append("Columns: **false alarms** = share of A/A replicates (true ratio 1.00) with any "
               "verdict; **coverage** = share of 95 % CIs containing the true ratio (lowest over "
               "the four ratios, and at 1.00); **power** = share with verdict \"faster\" at the "
               "true ratio; **drift flagged** = share of A/A replicates where the drift check "
               f"fires (threshold p < {stats.DRIFT_ALPHA}).\n")
    out.append("## New rule: round-paired t on per-round log ratios (`stats.paired_rounds`)\n")
    rows = []
    worst_fa, worst_cov = 0.0, 1.0
    misses: list[tuple[str, float]] = []  # (cell past a target, binomial p against the target)
    for setting, (R, n) in SETTINGS.items():
        for cv in CVS:
            for drift in DRIFTS:
                aa = cells[(setting, cv, drift, 1.00)].new
                fa = aa.rate(aa.faster + aa.slower)
                covs = {r: cells[(setting, cv, drift, r)].new for r in RATIOS}
                cov_min = min(t.rate(t.covered) for t in covs.values())
                name = f"{setting} {R}x{n} CV {cv:.0%} drift {drift:.0%}"
                if R >= stats.MIN_ROUNDS:
                    worst_fa = max(worst_fa, fa)
                    worst_cov = min(worst_cov, cov_min)
                    k = aa.faster + aa.slower
                    if fa > TARGET_FALSE_ALARMS:
                        p = binom_sf(k, aa.n, TARGET_FALSE_ALARMS)
                        misses.append((f"{name}: false alarms {pct(fa)} %", p))
                    for r, t in covs.items():
                        if t.rate(t.covered) < TARGET_COVERAGE:
                            p = binom_sf(t.n - t.covered, t.n, 1 - TARGET_COVERAGE)
                            misses.append((f"{name} ratio {r:.2f}: coverage "
                                           f"{pct(t.rate(t.covered))} %", p))
                rows.append([
                    setting, f"{R}x{n}", f"{cv:.0%}", f"{drift:.0%}", pct(fa), pct(cov_min),
                    pct(aa.rate(aa.covered)),
                    *(pct(covs[r].rate(covs[r].faster)) for r in RATIOS[1:]),
                    pct(aa.rate(aa.drift_flagged)),
                ])
    out.append(table(["setting", "R x n", "CV", "drift", "false alarms %", "coverage min %",
                      "coverage @1.00 %", *(f"power @{r:.2f} %" for r in RATIOS[1:]),
                      "drift flagged %"], rows))
    real = [(m, p) for m, p in misses if p < MISS_P]
    chance = [(m, p) for m, p in misses if p >= MISS_P]
    out.append(f"\nTargets (R >= {stats.MIN_ROUNDS}, every drift up to 5 %): false alarms <= "
               f"{TARGET_FALSE_ALARMS:.0%}, coverage >= {TARGET_COVERAGE:.0%}. Observed: worst "
               f"false-alarm rate {pct(worst_fa)} %, lowest coverage {pct(worst_cov)} %. Cells "
               f"past a target: {len(misses)}; of those, significantly past it (one-sided binomial "
               f"p < {MISS_P}): {len(real)}.")
    out.extend(f"- {m} (binomial p = {p:.2g}: a real miss)" for m, p in real)
    if chance:
        out.append(f"- {len(chance)} cell(s) past a target by no more than Monte Carlo error "
                   f"explains (one-sided binomial p >= {MISS_P}; the lowest: "
                   f"{min(p for _, p in chance):.2g}): "
                   + "; ".join(m for m, _ in sorted(chance, key=lambda mp: mp[1])[:5])
                   + ("; ..." if len(chance) > 5 else "") + ".")
    if args.quick:
        out.append("\n(--quick: a smoke run; too few replicates to judge the targets.)")
    else:
        if real:
            out.append("\n**Targets NOT met** (see the cells above).")
        elif misses:
            out.append("\n**Targets met within Monte Carlo error**: no cell is significantly past "
                       "a target (more replicates narrow the error: --replicates).")
        else:
            out.append("\n**Targets met** in every cell.")

    if args.old_replicates:
        out.append("\n## Old rule for contrast: pooled Mann-Whitney U + bootstrap CI "
                   "(`stats.compare`)\n")
        rows = []
        for setting, (R, n) in SETTINGS.items():
            for cv in CVS:
                for drift in DRIFTS:
                    row = [setting, f"{R}x{n}", f"{cv:.0%}", f"{drift:.0%}"]
                    for r in args.old_ratios:
                        c = cells[(setting, cv, drift, r)]
                        if r == 1.0:
                            row += [pct(c.old.rate(c.old.faster + c.old.slower)),
                                    pct(c.new.rate(c.new.faster + c.new.slower))]
                        row += [pct(c.old.rate(c.old.covered)), pct(c.new.rate(c.new.covered))]
                        if r != 1.0:
                            row += [pct(c.old.rate(c.old.faster)), pct(c.new.rate(c.new.faster))]
                    rows.append(row)
        header = ["setting", "R x n", "CV", "drift"]
        for r in args.old_ratios:
            if r == 1.0:
                header += ["false alarms old %", "new %"]
            header += [f"coverage @{r:.2f} old %", "new %"]
            if r != 1.0:
                header += [f"power @{r:.2f} old %", "new %"]
        out.append(table(header, rows))
        old_s = sum(c.old.seconds for c in cells.values())
        old_n = sum(c.old.n for c in cells.values())
        new_s = sum(c.new.seconds for c in cells.values())
        new_n = sum(c.new.n for c in cells.values())
        out.append(f"\nCost per analysis: new rule {1000 * new_s / max(new_n, 1):.2f} ms, old rule "
                   f"{1000 * old_s / max(old_n, 1):.1f} ms at {args.old_resamples} resamples.")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=1000, help="per cell, new rule (1000)")
    ap.add_argument("--old-replicates", type=int, default=300,
                    help="per cell, old rule, at --old-ratios only (300; 0 skips it)")
    ap.add_argument("--old-resamples", type=int, default=1000,
                    help="bootstrap resamples for the old rule (1000; the tool uses 10000)")
    ap.add_argument("--old-ratios", type=float, nargs="+", default=[1.00, 1.05],
                    choices=RATIOS, help="true ratios at which to run the old rule")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 40 replicates (old rule 10), the numbers are not meaningful")
    ap.add_argument("--out", type=Path, help="also write the markdown table to this file")
    args = ap.parse_args(argv)
    if args.quick:
        args.replicates, args.old_replicates = 40, 10
    if args.replicates < 1 or args.old_replicates < 0 or args.old_resamples < 10:
        ap.error("--replicates must be >= 1, --old-replicates >= 0, --old-resamples >= 10")
    args.old_ratios = sorted(set(args.old_ratios))
    shown = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("/")]
    command = " ".join(["python3 benchmarks/stats_calibration.py", *shown])
    cells: dict[tuple[str, float, float, float], Cell] = {}
    t0 = time.monotonic()
    total = len(SETTINGS) * len(CVS) * len(DRIFTS) * len(RATIOS)
    for setting in SETTINGS:
        for cv in CVS:
            for drift in DRIFTS:
                for ratio in RATIOS:
                    cell = Cell(setting, cv, drift, ratio)
                    old = args.old_replicates if ratio in args.old_ratios else 0
                    run_cell(cell, args.replicates, old, args.old_resamples, args.seed)
                    cells[(setting, cv, drift, ratio)] = cell
                    print(f"calibration: {len(cells)}/{total} cells, "
                          f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    text = report(cells, args, command, time.monotonic() - t0)
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
