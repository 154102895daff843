"""Statistics for A/B samples: summaries, the ratio of medians with a bootstrap CI, Mann-Whitney U
(:func:`compare`: the pooled figures every comparison keeps as descriptive, every run taken as
independent), Holm's adjustment, Fisher's exact test, the Wilcoxon signed-rank test, and Student's
t and F distributions without scipy. The verdict itself is patchbench.analysis.paired's."""

from __future__ import annotations

import functools
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


def median(values: Sequence[float] | np.ndarray) -> float:
    """The median (for an even count, the mean of the two middle values; NaN when one is NaN):
    the one every statistic, report and chart uses."""
    return float(np.median(np.asarray(values, dtype=float)))


def summarize(samples: Sequence[float]) -> Summary:
    a = np.asarray(samples, dtype=float)
    if a.size == 0:
        raise ValueError("no samples")
    return Summary(
        n=int(a.size),
        median=median(a),
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
    """Medians of ``resamples`` bootstrap resamples of ``a``, in chunks of bounded memory.

    Exactly ``np.median(a[idx], axis=1)`` for the same draws ``idx``, about twice as fast: a
    resample's k-th smallest value is the sorted sample at the k-th smallest rank of its draws,
    and partitioning 32-bit integer ranks is quicker than partitioning the floats."""
    chunk = chunk or max(1, min(resamples, 4_000_000 // a.size))
    order = np.argsort(a, kind="stable")
    ordered = a[order]
    rank = np.empty(a.size, dtype=np.int32)  # half the bytes of intp: the partition is faster
    rank[order] = np.arange(a.size, dtype=np.int32)
    half = a.size // 2
    kth = [half] if a.size % 2 else [half - 1, half]
    out = []
    done = 0
    while done < resamples:
        n = min(chunk, resamples - done)
        ranks = np.partition(rank[rng.integers(0, a.size, (n, a.size))], kth, axis=1)
        if a.size % 2:
            out.append(ordered[ranks[:, half]])
        else:  # np.median's even case: the mean of the two middle values
            out.append((ordered[ranks[:, half - 1]] + ordered[ranks[:, half]]) / 2)
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


def judge(speedup: float, ci: tuple[float, float] | None, p: float | None, *, alpha: float,
          min_effect: float) -> str:
    """The verdict rule, for every method: "faster" or "slower" only when p < alpha, the effect
    is at least ``min_effect`` and the CI (when there is one) excludes 1."""
    significant = p is not None and p < alpha and abs(speedup - 1.0) >= min_effect
    if significant and (ci is None or not (ci[0] <= 1.0 <= ci[1])):
        return "faster" if speedup > 1 else "slower"
    return "no significant difference"


def compare(
    base: Sequence[float], cand: Sequence[float], *, alpha: float = 0.05, min_effect: float = 0.02,
    seed: int = 0, resamples: int = BOOTSTRAP,
) -> Comparison:
    """The pooled rule: every run taken as independent (Mann-Whitney U and a bootstrap CI of the
    ratio of medians). Runs of one round are consecutive, so drift between blocks makes this rule
    too confident; the verdict is the round-paired rule's (patchbench.analysis.paired)."""
    sb, sc = summarize(base), summarize(cand)
    speedup = sb.median / sc.median if sc.median else float("inf")
    ci = bootstrap_ratio_ci(base, cand, seed=seed, level=1 - alpha, resamples=resamples)
    p: float | None = None
    if len(base) >= 3 and len(cand) >= 3:
        p = mann_whitney_u(base, cand)
    verdict = judge(speedup, ci, p, alpha=alpha, min_effect=min_effect)
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


# --- Student's t and F distributions, without scipy ------------------------------------------
# scipy.stats costs about a second to import at every start, so the few distribution functions
# the verdict needs are computed here from the regularized incomplete beta function (a Lentz
# continued fraction, as in Numerical Recipes' betacf). The tests compare them with scipy.

_BETA_EPS = 1e-15
_BETA_TINY = 1e-300


def _beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz); x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _BETA_TINY else _BETA_TINY)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _BETA_TINY else _BETA_TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _BETA_TINY else _BETA_TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _BETA_TINY else _BETA_TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _BETA_TINY else _BETA_TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _BETA_EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge (a={a}, b={b}, x={x})")


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if not (a > 0 and b > 0):
        raise ValueError(f"betainc needs a, b > 0 (got a={a}, b={b})")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1 (got {x})")
    if x == 0.0 or x == 1.0:
        return x
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_cf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_cf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """Upper tail P(T > t) of Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"t distribution needs df > 0 (got {df})")
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t > 0 else 1.0 - tail


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) of Student's t with ``df`` degrees of freedom."""
    return t_sf(-t, df)


@functools.lru_cache(maxsize=4096)
def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t: the t with P(T <= t) = p (0 < p < 1)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t quantile needs 0 < p < 1 (got {p})")
    if df <= 0:
        raise ValueError(f"t distribution needs df > 0 (got {df})")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    # P(T > t) = q = I_x(df/2, 1/2) / 2 with x = df / (df + t^2), decreasing in t: bisect on x
    target = 2.0 * (1.0 - p)
    a = df / 2.0
    lo, hi = 0.0, 1.0  # I_lo(a, 1/2) = 0 < target < 1 = I_hi(a, 1/2)
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi) or hi - lo <= 1e-17 * hi:
            break
        if betainc(a, 0.5, mid) < target:
            lo = mid
        else:
            hi = mid
    x = 0.5 * (lo + hi)
    t = math.sqrt(df * (1.0 - x) / x)
    # two Newton steps on the CDF sharpen what the bisection's last bits of x leave
    for _ in range(2):
        pdf = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
                       - 0.5 * math.log(df * math.pi) - (df + 1) / 2 * math.log1p(t * t / df))
        if pdf <= 0:
            break
        t -= (t_cdf(t, df) - p) / pdf
    return t


def f_sf(f: float, df1: float, df2: float) -> float:
    """Upper tail P(F > f) of the F distribution with (df1, df2) degrees of freedom."""
    if df1 <= 0 or df2 <= 0:
        raise ValueError(f"F distribution needs df1, df2 > 0 (got {df1}, {df2})")
    if f <= 0:
        return 1.0
    if math.isinf(f):
        return 0.0
    return betainc(df2 / 2.0, df1 / 2.0, df2 / (df2 + df1 * f))


# --- Wilcoxon signed-rank test ----------------------------------------------------------------

WILCOXON_EXACT_MAX = 200  # up to this many non-zero d: the exact distribution; beyond: normal


def wilcoxon_signed_rank(d: Sequence[float]) -> float | None:
    """Two-sided p-value of the Wilcoxon signed-rank test that ``d`` is centred on 0.

    Zeros are dropped (scipy's ``zero_method="wilcox"``); tied |d| get their average rank. Up to
    :data:`WILCOXON_EXACT_MAX` non-zero d the p-value is exact for the ranks as tied (the
    distribution of W+ over all 2^n sign patterns, counted on doubled ranks so that half ranks
    stay integers); beyond it, where 2^n sign patterns overflow a float from about 1,024, the
    normal approximation with the tie and continuity corrections (scipy's ``method="approx"``,
    ``correction=True``). None when no d is non-zero."""
    x = np.asarray(d, dtype=float)
    x = x[x != 0]
    n = x.size
    if n == 0:
        return None
    ranks, ties = _ranks(np.abs(x))
    if n > WILCOXON_EXACT_MAX:
        return _wilcoxon_normal(float(ranks[x > 0].sum()), n, ties)
    doubled = [round(2 * r) for r in ranks]
    total = sum(doubled)
    counts = np.zeros(total + 1, dtype=float)  # counts[w] = sign patterns with 2*W+ = w
    counts[0] = 1.0
    for r in doubled:
        counts[r:] = counts[r:] + counts[: total + 1 - r]
    probs = counts / counts.sum()
    w = int(sum(r for r, v in zip(doubled, x, strict=True) if v > 0))
    low = float(probs[: w + 1].sum())
    high = float(probs[w:].sum())
    return min(1.0, 2.0 * min(low, high))


def _wilcoxon_normal(w_plus: float, n: int, ties: np.ndarray) -> float:
    """The normal approximation of the signed-rank test's two-sided p for W+ = ``w_plus`` of
    ``n`` non-zero values with groups of tied |d| of sizes ``ties``: mean n(n+1)/4, variance
    n(n+1)(2n+1)/24 - sum(t^3 - t)/48, a continuity correction of 1/2 towards the mean."""
    mean = n * (n + 1) / 4.0
    var = n * (n + 1) * (2 * n + 1) / 24.0 - float((ties**3 - ties).sum()) / 48.0
    if var <= 0:
        return 1.0
    z = max(0.0, abs(w_plus - mean) - 0.5) / math.sqrt(var)
    return float(min(1.0, math.erfc(z / math.sqrt(2.0))))


# --- Round-paired comparison --------------------------------------------------------------------

MIN_ROUNDS = 5
DRIFT_ALPHA = 0.01


@dataclass(frozen=True)
class DriftCheck:
    """Do the per-round ratios vary more than the noise within rounds explains?

    Every block (one variant's runs in one round) gets the machine's speed of its moment. A drift
    that moves both blocks of a round alike cancels in the round's ratio; a drift that differs
    between the two blocks does not, and it makes the runs of one block dependent. The check
    compares the variance between rounds of e_r = mean ln(baseline_r) - mean ln(candidate_r)
    with what the within-block variance s_w^2 (pooled over all blocks) explains,
    s_w^2 (1/n_base + 1/n_cand) averaged over rounds. Without block drift and with log-normal
    noise their ratio follows F(R-1, sum of (n_block - 1)) exactly: the check uses log-means, not
    the log-medians of the verdict, because their within-round variance is known without a
    distributional constant; a block's drift factor moves both alike. ``flagged`` when the
    one-sided F test gives p < ``threshold``."""

    flagged: bool
    ratio: float  # observed / expected variance of e_r (about 1 without drift)
    p_value: float
    observed_sd: float  # sd of e_r between rounds (log units)
    expected_sd: float  # what within-round noise alone explains (log units)
    drift_sd: float  # estimated sd of a block's drift factor (log units ~ relative), 0 if none
    df_between: int
    df_within: int
    threshold: float
    meaning: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _by_round(times: Sequence[float], rounds: Sequence[int], what: str) -> dict[int, np.ndarray]:
    if len(times) != len(rounds):
        raise ValueError(f"{what}: {len(times)} times but {len(rounds)} round numbers")
    groups: dict[int, list[float]] = {}
    for t, r in zip(times, rounds, strict=True):
        if not t > 0 or math.isinf(t):
            raise ValueError(f"{what}: times must be positive and finite (got {t})")
        groups.setdefault(int(r), []).append(float(t))
    # sorted, so that the order of the runs within a round cannot change a rounding
    return {r: np.sort(np.asarray(v)) for r, v in groups.items()}
