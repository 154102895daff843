"""Stalls: runs that took many times as long as the comparison's typical run (a page-cache miss
of a whole binary, a host's hiccup, a lock timeout). One such run in a block moves its mean log
time by ln(10) / n at 10x, so at 1 % of runs the rounds' spread grows tenfold and the gate cannot
decide for hundreds of rounds. A run of either variant whose wall time is at least
:data:`FACTOR` times the median of both variants' runs pooled is a stall. Every comparison
counts them; the verdict keeps every run (its estimand is the geometric mean of all of them, and
a patch that removes stalls is faster by it), while the gate judges them apart, as hangs are:
its call is made on the runs that did not stall, and Fisher's exact test asks whether the
candidate stalls more often than the baseline (the gate fails it when it does). The pooled
median sits between the variants' medians when they run equally often, so a candidate slower in
every run by any factor is judged by its times, not counted as stalling.
docs/statistics.md ("Stalls")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from patchbench.analysis import stats

FACTOR = 5.0  # a run at least this many times the pooled median is a stall


@dataclass(frozen=True)
class Stalls:
    """The stalls of one comparison: how many of each variant's runs, the threshold they passed
    (seconds), and the one-sided p of Fisher's exact test that the candidate stalls more often
    than the baseline (None without a stall)."""

    baseline: int
    baseline_runs: int
    candidate: int
    candidate_runs: int
    threshold_s: float
    p_more: float | None
    factor: float = FACTOR
    # the runs that did not stall, judged alike: the ratio and its 1 - 2 alpha interval (the
    # gate's one-sided bounds); None without a stall
    speedup: float | None = None
    low: float | None = None
    high: float | None = None

    @property
    def any(self) -> bool:
        return self.baseline + self.candidate > 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        """``2 of 400 baseline runs and 3 of 400 candidate runs stalled (>= 5x the median,
        630 ms): in the verdict, judged apart by the gate (Fisher p that the candidate stalls
        more: 0.5)``."""
        p = f"{self.p_more:.2g}" if self.p_more is not None else "-"
        return (f"{self.baseline} of {self.baseline_runs} baseline runs and {self.candidate} of "
                f"{self.candidate_runs} candidate runs stalled (>= {self.factor:g}x the median, "
                f"{self.threshold_s * 1e3:.3g} ms): in the verdict, judged apart by the gate "
                f"(Fisher p that the candidate stalls more: {p})")


def threshold(base_times: Sequence[float], cand_times: Sequence[float],
              factor: float = FACTOR) -> float:
    """``factor`` times the median of both variants' runs pooled (inf without runs)."""
    pooled = np.concatenate([np.asarray(base_times, float), np.asarray(cand_times, float)])
    if pooled.size == 0:
        return float("inf")
    return factor * stats.median(pooled)


def keep(times: Sequence[float], limit: float) -> np.ndarray:
    """The runs of ``times`` below ``limit`` (a boolean mask)."""
    return np.asarray(times, float) < limit


def count(base_times: Sequence[float], cand_times: Sequence[float], factor: float = FACTOR
          ) -> tuple[Stalls, np.ndarray, np.ndarray]:
    """The stalls of a comparison and the masks of the runs each variant keeps."""
    limit = threshold(base_times, cand_times, factor)
    kb, kc = keep(base_times, limit), keep(cand_times, limit)
    sb, sc = int((~kb).sum()), int((~kc).sum())
    p = None
    if sb + sc:
        p = stats.fisher_exact(sc, int(kc.sum()), sb, int(kb.sum()), alternative="greater")
    return Stalls(baseline=sb, baseline_runs=kb.size, candidate=sc, candidate_runs=kc.size,
                  threshold_s=limit, p_more=p, factor=factor), kb, kc


def pick(values: Sequence[Any], mask: np.ndarray) -> list[Any]:
    """The values of the runs ``mask`` keeps (``values`` one per run)."""
    return [v for v, k in zip(values, mask.tolist(), strict=True) if k]
