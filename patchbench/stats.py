"""Statistics for A/B samples: summaries, ratio of medians with a bootstrap CI, Mann-Whitney U,
and a verdict that says "no significant difference" when that is the truth."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

NOISY_CV = 0.10
BOOTSTRAP = 10_000


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    stdev: float
    min: float
    max: float

    @property
    def cv(self) -> float:
        return self.stdev / self.mean if self.mean else 0.0

    @property
    def noisy(self) -> bool:
        return self.cv >= NOISY_CV


def summarize(samples: Sequence[float]) -> Summary:
    a = np.asarray(samples, dtype=float)
    if a.size == 0:
        raise ValueError("no samples")
    return Summary(
        n=int(a.size),
        median=float(np.median(a)),
        mean=float(a.mean()),
        stdev=float(a.std(ddof=1)) if a.size > 1 else 0.0,
        min=float(a.min()),
        max=float(a.max()),
    )


@dataclass(frozen=True)
class Comparison:
    """``speedup`` = median(baseline) / median(candidate): above 1 means the candidate is faster."""

    speedup: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: str  # "faster" | "slower" | "no significant difference"
    alpha: float
    min_effect: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def median_ci(samples: Sequence[float], *, seed: int, level: float = 0.95,
              resamples: int = BOOTSTRAP) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the median; None when there are too few samples."""
    a = np.asarray(samples, dtype=float)
    if a.size < 3:
        return None
    meds = _resampled_medians(a, np.random.default_rng(seed), resamples)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(meds, [tail, 100 - tail])
    return float(low), float(high)


def _resampled_medians(a: np.ndarray, rng: np.random.Generator, resamples: int,
                       chunk: int | None = None) -> np.ndarray:
    """Medians of ``resamples`` bootstrap resamples of ``a``, in chunks of bounded memory."""
    chunk = chunk or max(1, min(resamples, 4_000_000 // a.size))
    out = []
    done = 0
    while done < resamples:
        n = min(chunk, resamples - done)
        out.append(np.median(a[rng.integers(0, a.size, (n, a.size))], axis=1))
        done += n
    return np.concatenate(out)


def bootstrap_ratio_ci(
    base: Sequence[float], cand: Sequence[float], *, seed: int, level: float = 0.95,
    resamples: int = BOOTSTRAP,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of median(base)/median(cand); None when too few samples."""
    a = np.asarray(base, dtype=float)
    b = np.asarray(cand, dtype=float)
    if a.size < 3 or b.size < 3:
        return None
    rng = np.random.default_rng(seed)
    # chunk by chunk, a then b, so that a seed gives the same CI as in earlier saved reports
    chunk = max(1, min(resamples, 4_000_000 // max(a.size, b.size)))
    ratios = []
    done = 0
    while done < resamples:
        n = min(chunk, resamples - done)
        ratios.append(_resampled_medians(a, rng, n, chunk) / _resampled_medians(b, rng, n, chunk))
        done += n
    r = np.concatenate(ratios)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(r, [tail, 100 - tail])
    return float(low), float(high)


def _ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based) of ``x`` and the sizes of its groups of ties."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    boundaries = np.concatenate(([True], xs[1:] != xs[:-1], [True]))
    starts = np.flatnonzero(boundaries)
    counts = np.diff(starts)
    avg = starts[:-1] + (counts + 1) / 2.0  # average 1-based rank of each group
    ranks = np.empty(x.size, dtype=float)
    ranks[order] = np.repeat(avg, counts)
    return ranks, counts


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test: normal approximation with tie correction and
    continuity correction (scipy's ``method="asymptotic"``; checked against scipy in the tests).
    Written with numpy because importing scipy.stats costs about a second at every start."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    n1, n2 = x.size, y.size
    ranks, ties = _ranks(np.concatenate([x, y]))
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2.0
    mu = n1 * n2 / 2.0
    n = n1 + n2
    tie_term = float((ties**3 - ties).sum())
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))))
    if sigma == 0:
        return 1.0
    u = max(u1, n1 * n2 - u1)
    z = (u - mu - 0.5) / sigma
    return float(min(1.0, math.erfc(z / math.sqrt(2.0))))


def compare(
    base: Sequence[float], cand: Sequence[float], *, alpha: float = 0.05, min_effect: float = 0.02,
    seed: int = 0,
) -> Comparison:
    sb, sc = summarize(base), summarize(cand)
    speedup = sb.median / sc.median if sc.median else float("inf")
    ci = bootstrap_ratio_ci(base, cand, seed=seed, level=1 - alpha)
    p: float | None = None
    if len(base) >= 3 and len(cand) >= 3:
        p = mann_whitney_u(base, cand)
    verdict = "no significant difference"
    significant = p is not None and p < alpha and abs(speedup - 1.0) >= min_effect
    # the CI must also exclude 1 for a verdict, when there is one
    if significant and (ci is None or not (ci[0] <= 1.0 <= ci[1])):
        verdict = "faster" if speedup > 1 else "slower"
    return Comparison(
        speedup=speedup,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        p_value=p,
        verdict=verdict,
        alpha=alpha,
        min_effect=min_effect,
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (same order as given): for deciding on several
    comparisons at once without inflating the chance of a false alarm."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def slope(ks: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of values against k (seconds per extra instance)."""
    if len(set(ks)) < 2:
        return float("nan")
    fit = np.polyfit(np.asarray(ks, dtype=float), np.asarray(values, dtype=float), 1)
    return float(fit[0])


def fisher_exact(a: int, b: int, c: int, d: int, alternative: str = "two-sided") -> float:
    """p-value of Fisher's exact test on the 2x2 table [[a, b], [c, d]], e.g. [[hangs, fine] of the
    candidate, [hangs, fine] of the baseline]. ``alternative``: "two-sided" (the sum over the
    tables with the same margins that are no more likely than the observed one, within R's
    relative tolerance 1e-7), "greater" (a is larger than independence predicts) or "less".
    Exact for the margins of a soak (thousands of runs, few hangs); checked against scipy."""
    if min(a, b, c, d) < 0:
        raise ValueError("a 2x2 table of counts cannot hold a negative number")
    r1, r2, c1 = a + b, c + d, a + c
    n = r1 + r2
    lo, hi = max(0, c1 - r2), min(r1, c1)
    if n == 0 or lo == hi:
        return 1.0

    def log_pmf(x: int) -> float:  # hypergeometric: x of the c1 column total fall in row 1
        return (_log_comb(r1, x) + _log_comb(r2, c1 - x)) - _log_comb(n, c1)

    if alternative == "greater":
        return min(1.0, math.fsum(math.exp(log_pmf(x)) for x in range(a, hi + 1)))
    if alternative == "less":
        return min(1.0, math.fsum(math.exp(log_pmf(x)) for x in range(lo, a + 1)))
    if alternative != "two-sided":
        raise ValueError(f"alternative must be two-sided, greater or less, not {alternative!r}")
    observed = log_pmf(a)
    limit = observed + math.log1p(1e-7)
    return min(1.0, math.fsum(math.exp(lp) for lp in map(log_pmf, range(lo, hi + 1))
                              if lp <= limit))


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
