"""Change points on a series, found by an existing library and kept only when significant.

The approach is Hunter's and Apache Otava's (``analysis.py``: E-divisive proposes change
points, a two-sided t-test between the segments either side gates them, weakest first; here
Welch's, below), with the candidates proposed by ``ruptures`` (C. Truong et al.): kernel
change-point detection with a linear kernel (the least-squares cost, solved exactly by PELT) and a penalty
of ``PENALTY`` x sigma^2 x ln(n), sigma estimated robustly from the differences of neighbouring
points. Then, as Otava's ``merge``: while a candidate's test between its neighbouring segments
has p above ``max_p``, or its relative change is below ``min_magnitude``, the weakest is dropped
and its neighbours tested again.

- **Ratios** (a commit's time, CPU time, memory against the reference build's): the series is
  the log of the ratios, so a change is a shift of the mean log ratio; its magnitude is the
  ratio of the geometric means either side.
- **Counts** (hangs of N runs): the series of rates proposes candidates; the gate is Fisher's
  exact test of the counts pooled either side (patchbench.analysis.stats), as ``bisect`` judges
  hangs.

A change needs ``min_size`` points on each side, so the newest change of a series shows once
that many points were measured after it. False alarms were calibrated in simulation with
:data:`MAX_P` and :data:`PENALTY` (counts: :data:`COUNT_MAX_P`, :data:`COUNT_PENALTY`;
benchmarks/track_calibration.py; results in
benchmarks/results/track_calibration.md): with no change in 365 nightly points, at most 5 % of
series flag one."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from patchbench.analysis import stats

MAX_P = 0.001  # the gate's level (Otava's default max_pvalue)
PENALTY = 2.0  # ruptures' penalty in units of sigma^2 ln(n) (BIC-like)
MIN_SIZE = 3  # points on each side of a change
# counts: a rare event's rates are mostly 0, and the split that ruptures picks is searched over
# more ways to arrange a few events: a higher penalty and a stricter level keep false alarms
# at the same few per cent (benchmarks/results/track_calibration.md)
COUNT_PENALTY = 3.0
COUNT_MAX_P = 0.0003


@dataclass(frozen=True)
class ChangePoint:
    """A change before point ``index`` (the first point after it): the p of the gate's test,
    and the level either side (the geometric mean of the ratios, or the pooled rate)."""

    index: int
    p_value: float
    before: float
    after: float

    @property
    def magnitude(self) -> float:
        """after / before (a rate that was 0: infinite)."""
        if self.before == 0:
            return math.inf if self.after > 0 else 1.0
        return self.after / self.before

    @property
    def up(self) -> bool:
        """More after than before: slower, more memory, more hangs."""
        return self.after > self.before


def _sigma(x: np.ndarray) -> float:
    """The noise of a series with a few steps: from the median absolute deviation of the
    differences of neighbouring points (a step moves one difference only)."""
    if len(x) < 3:
        return float(np.std(x)) or 1.0
    d = np.diff(x)
    mad = float(np.median(np.abs(d - np.median(d)))) * 1.4826 / math.sqrt(2)
    if mad > 0:
        return mad
    sd = float(np.std(x))
    return sd if sd > 0 else 1e-12


def candidates(x: Sequence[float], *, min_size: int = MIN_SIZE, penalty: float = PENALTY,
               sigma: float | None = None) -> list[int]:
    """The change points ruptures proposes (indices of the first point after each); ``sigma``:
    the noise of a point (default: estimated from the series)."""
    import ruptures

    arr = np.asarray(x, dtype=float)
    n = len(arr)
    if n < 2 * min_size:
        return []
    pen = penalty * (sigma if sigma else _sigma(arr)) ** 2 * math.log(n)
    algo = ruptures.KernelCPD(kernel="linear", min_size=min_size, jump=1)
    bkps = algo.fit(arr.reshape(-1, 1)).predict(pen=pen)
    return [int(b) for b in bkps if 0 < int(b) < n]


def t_test(left: np.ndarray, right: np.ndarray) -> float:
    """Two-sided Welch's t-test of two segments' means (each segment its own variance: a short
    burst of outliers, with its large spread, is not taken for a change); 1 when a segment has
    fewer than two points, 0 when neither has any spread and the means differ."""
    n1, n2 = len(left), len(right)
    if n1 < 2 or n2 < 2:
        return 1.0
    m1, m2 = float(np.mean(left)), float(np.mean(right))
    v1, v2 = float(np.var(left, ddof=1)) / n1, float(np.var(right, ddof=1)) / n2
    if v1 + v2 <= 0:
        return 0.0 if m1 != m2 else 1.0
    df = (v1 + v2) ** 2 / ((v1 ** 2 / (n1 - 1) if v1 else 0.0) + (v2 ** 2 / (n2 - 1) if v2 else 0.0))
    return min(1.0, 2 * stats.t_sf(abs(m1 - m2) / math.sqrt(v1 + v2), df))


Test = Callable[[int, int, int], ChangePoint]  # (start, index, end) -> the change point there


def merge(cps: list[int], n: int, test: Test, *, max_p: float,
          min_magnitude: float) -> list[ChangePoint]:
    """Otava's bottom-up merge: drop the weakest candidate (the highest p above ``max_p``, else
    the smallest relative change below ``min_magnitude``), test its neighbours again between
    the candidates left, until every one passes."""
    idx = sorted(set(cps))

    def tested(k: int) -> ChangePoint:
        bounds = [0, *idx, n]
        return test(bounds[k], bounds[k + 1], bounds[k + 2])

    points = [tested(k) for k in range(len(idx))]
    while points:
        worst = max(range(len(points)), key=lambda k: points[k].p_value)
        if points[worst].p_value <= max_p:
            worst = min(range(len(points)), key=lambda k: _rel(points[k]))
            if _rel(points[worst]) >= min_magnitude:
                break
        del idx[worst]
        del points[worst]
        for k in (worst - 1, worst):
            if 0 <= k < len(points):
                points[k] = tested(k)
    return points


def _rel(cp: ChangePoint) -> float:
    """The relative change either way: max(after/before, before/after) - 1."""
    m = cp.magnitude
    if m <= 0 or math.isinf(m):
        return math.inf
    return max(m, 1 / m) - 1


def ratio_changes(ratios: Sequence[float], *, max_p: float = MAX_P, min_magnitude: float = 0.0,
                  min_size: int = MIN_SIZE, penalty: float = PENALTY) -> list[ChangePoint]:
    """Change points of a series of positive ratios (a commit's value / the reference's)."""
    arr = np.asarray(ratios, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError("a ratio series needs positive, finite ratios")
    x = np.log(arr)

    def test(start: int, i: int, end: int) -> ChangePoint:
        left, right = x[start:i], x[i:end]
        return ChangePoint(i, t_test(left, right), float(np.exp(np.mean(left))),
                           float(np.exp(np.mean(right))))

    return merge(candidates(x, min_size=min_size, penalty=penalty), len(x), test,
                 max_p=max_p, min_magnitude=min_magnitude)


def count_changes(events: Sequence[int], runs: Sequence[int], *, max_p: float = COUNT_MAX_P,
                  min_size: int = MIN_SIZE, penalty: float = COUNT_PENALTY
                  ) -> list[ChangePoint]:
    """Change points of a series of counts (``events`` of ``runs`` at each point): candidates
    on the rates, each kept when Fisher's exact test of the counts pooled either side has p at
    most ``max_p``."""
    e, r = np.asarray(events, dtype=int), np.asarray(runs, dtype=int)
    if np.any(r <= 0) or np.any(e < 0) or np.any(e > r):
        raise ValueError("counts need 0 <= events <= runs and runs > 0")
    rates = e / r

    def test(start: int, i: int, end: int) -> ChangePoint:
        a, n1 = int(e[start:i].sum()), int(r[start:i].sum())
        c, n2 = int(e[i:end].sum()), int(r[i:end].sum())
        p = stats.fisher_exact(a, n1 - a, c, n2 - c)
        return ChangePoint(i, p, a / n1, c / n2)

    if not rates.any():
        return []
    # the noise of a rate were it the same everywhere (binomial): a rare event's rates are
    # mostly 0, and their differences say nothing of it
    pooled = float(e.sum() / r.sum())
    sigma = math.sqrt(pooled * (1 - pooled) / float(np.mean(r))) or None
    return merge(candidates(rates, min_size=min_size, penalty=penalty, sigma=sigma), len(rates),
                 test,
                 max_p=max_p, min_magnitude=0.0)
