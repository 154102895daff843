"""The verdict rule: per round, the log ratio of the two blocks' geometric means; a t interval
over rounds, skewness-corrected (Hall's transformation, the skewness jackknifed over rounds), its
standard error widened for noise that neighbouring rounds share; the answers faster, slower,
equivalent (TOST), inconclusive (with the minimum detectable effect) or withheld; the effect in
seconds from the ratio (the change of the geometric-mean time); the mean and 90th percentile
beside it when the shapes differ; a guard for zero spread. The one live rule (``METHOD``): its
reasons and calibration are in docs/statistics.md; records judged by an earlier rule are judged
again by it when read (patchbench.analysis.rejudge)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from patchbench.analysis import stats
from patchbench.results import PAIRED7_METHOD

METHOD = PAIRED7_METHOD  # the rule new comparisons are judged by
POWER = 0.80  # the power the minimum detectable effect is quoted at
# what the rule compares, said in every report judged by it
ESTIMAND = ("the ratio of the two variants' geometric means (the mean of log times), paired "
            "round by round")
# the variants' shapes differ when their within-round spreads of log time differ by more than
# this factor (in sd) and an F test says so at SHAPE_ALPHA: then the mean and the 90th percentile
# are compared too, each with its own interval
SHAPE_FACTOR = 1.2
SHAPE_ALPHA = 0.01
BOOTSTRAP = 2000  # resamples of rounds for the 90th percentile's interval


class Verdict(StrEnum):
    """The answer of one comparison (str-valued: results.json keeps the words)."""

    FASTER = "faster"
    SLOWER = "slower"
    EQUIVALENT = "equivalent"
    INCONCLUSIVE = "inconclusive"
    WITHHELD = "withheld"


@dataclass(frozen=True)
class PairedVerdict:
    """One comparison under the live rule (see the module's docstring). Ratios are
    baseline / candidate (above 1: the candidate is faster). ``effect_s`` is the change of the
    geometric-mean time in seconds, L (1 / speedup - 1) with L the baseline's geometric mean over
    the paired rounds, its interval the ratio's mapped alike (above 0: the candidate is slower).
    It is not the change of the mean time: when the variants' spreads differ the two part (the
    ratio of means is then shown too, ``also``). With zero spread it is the mean per-round
    difference of the blocks' geometric means, with a t interval."""

    speedup: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None  # two-sided: d = 0
    verdict: Verdict
    alpha: float
    min_effect: float
    p_slower: float | None  # one-sided: the candidate is not slower by more than min_effect
    p_faster: float | None  # one-sided: the candidate is not faster by more than min_effect
    p_equivalent: float | None  # TOST: the change is at least min_effect one way or the other
    equivalence_low: float | None  # the (1 - 2 alpha) interval of the ratio
    equivalence_high: float | None
    mde: float | None  # minimum detectable effect (a fraction, at POWER), from this run's noise
    effect_s: float
    effect_ci_low_s: float | None
    effect_ci_high_s: float | None
    resolution_s: float | None  # set when zero spread made the clock's resolution the bound
    rounds: int
    min_rounds: int
    round_ids: tuple[int, ...]
    round_ratios: tuple[float, ...]  # geometric mean(baseline_r) / geometric mean(candidate_r)
    wilcoxon_p: float | None
    drift: stats.DriftCheck | None
    note: str
    method: str = METHOD
    also: Also | None = None  # the mean and the 90th percentile, when the shapes differ

    @property
    def withheld(self) -> bool:
        return self.verdict is Verdict.WITHHELD

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = str(self.verdict)
        d["round_ids"] = list(self.round_ids)
        d["round_ratios"] = list(self.round_ratios)
        if self.also is None:
            d.pop("also")
        return d


@dataclass(frozen=True)
class Also:
    """When the two variants' shapes differ, the ratio of geometric means is not the only
    answer a reader may care about: the ratio of means and of 90th percentiles (baseline /
    candidate, above 1 the candidate is faster), each with its (1 - alpha) interval, and a
    warning when they disagree in direction."""

    sd_ratio: float  # candidate's within-round sd of log time / the baseline's
    shape_p: float  # the F test of equal spreads
    mean_ratio: float
    mean_ci_low: float | None
    mean_ci_high: float | None
    p90_ratio: float
    p90_ci_low: float | None
    p90_ci_high: float | None
    disagree: str  # "" or why the answers disagree


def margin(min_effect: float) -> float:
    """min_effect on the log scale: a change by the factor 1 + min_effect either way."""
    if not min_effect >= 0:
        raise ValueError(f"min_effect must be 0 or more (got {min_effect})")
    return math.log1p(min_effect)


def _answer(alpha: float, p: float, p_slower: float, p_faster: float, p_equivalent: float
            ) -> tuple[Verdict, float, float, float, float]:
    """The verdict of the four tests at level ``alpha``, with their p-values: slower or faster
    (significant and beyond the margin), else equivalent (within it), else inconclusive."""
    if p < alpha and p_slower < alpha:
        return Verdict.SLOWER, p, p_slower, p_faster, p_equivalent
    if p < alpha and p_faster < alpha:
        return Verdict.FASTER, p, p_slower, p_faster, p_equivalent
    if p_equivalent < alpha:
        return Verdict.EQUIVALENT, p, p_slower, p_faster, p_equivalent
    return Verdict.INCONCLUSIVE, p, p_slower, p_faster, p_equivalent


def decide(mean: float, se: float, df: int, *, alpha: float, min_effect: float
           ) -> tuple[Verdict, float, float, float, float]:
    """The answer for an estimate ``mean`` (log ratio, baseline over candidate) with standard
    error ``se`` > 0 on ``df`` degrees of freedom: (verdict, two-sided p, p_slower, p_faster,
    p_equivalent)."""
    delta = margin(min_effect)
    p = 2.0 * stats.t_sf(abs(mean) / se, df)
    p_slower = stats.t_cdf((mean + delta) / se, df)
    p_faster = stats.t_sf((mean - delta) / se, df)
    p_equivalent = max(stats.t_sf((mean + delta) / se, df), stats.t_cdf((mean - delta) / se, df))
    return _answer(alpha, p, p_slower, p_faster, p_equivalent)


@dataclass(frozen=True)
class Pivot:
    """The statistics a hypothesis mean d = mu0 is tested with: the t statistic and, with a
    skewness ``gamma``, Hall's transformation of it (see the module's docstring)."""

    mean: float
    sd: float  # of the per-round d_r (> 0)
    n: int  # rounds
    gamma: float | None = None
    dof: float | None = None  # the t's degrees of freedom when not n - 1 (:func:`widened`)

    @property
    def df(self) -> float:
        return self.n - 1 if self.dof is None else self.dof

    def values(self, mu0: float) -> list[float]:
        s = (self.mean - mu0) / self.sd
        out = [math.sqrt(self.n) * s]
        if self.gamma is not None:
            g = self.gamma
            out.append(math.sqrt(self.n) * (s + g * s * s / 3 + g * g * s**3 / 27
                                            + g / (6 * self.n)))
        return out

    def p_above(self, mu0: float) -> float:
        """One-sided p that mean d > mu0: every statistic must reject."""
        return max(stats.t_sf(v, self.df) for v in self.values(mu0))

    def p_below(self, mu0: float) -> float:
        """One-sided p that mean d < mu0."""
        return max(stats.t_cdf(v, self.df) for v in self.values(mu0))

    def _solve(self, value: float) -> list[float]:
        """The mu0 at which each statistic equals ``value`` (each is decreasing in mu0)."""
        out = [self.mean - self.sd * value / math.sqrt(self.n)]
        if self.gamma is not None:
            a = self.gamma / 3
            c = value / math.sqrt(self.n) - self.gamma / (6 * self.n)
            s = c if abs(a) < 1e-12 else (float(np.cbrt(1 + 3 * a * c)) - 1) / a
            out.append(self.mean - self.sd * s)
        return out

    def interval(self, level_alpha: float) -> tuple[float, float]:
        """The two-sided (1 - ``level_alpha``) interval of mean d: the union of the statistics'."""
        q = stats.t_ppf(1 - level_alpha / 2, self.df)
        return min(self._solve(q)), max(self._solve(-q))


def decide_pivot(pv: Pivot, *, alpha: float, min_effect: float
                 ) -> tuple[Verdict, float, float, float, float]:
    """:func:`decide` with every test taken by each statistic of ``pv`` (all must reject)."""
    delta = margin(min_effect)
    p = min(1.0, 2.0 * min(pv.p_above(0.0), pv.p_below(0.0)))
    p_slower = pv.p_below(-delta)
    p_faster = pv.p_above(delta)
    p_equivalent = max(pv.p_above(-delta), pv.p_below(delta))
    return _answer(alpha, p, p_slower, p_faster, p_equivalent)


def skewness(base: dict[int, np.ndarray], cand: dict[int, np.ndarray], common: list[int],
             d: np.ndarray) -> float:
    """The skewness of the per-round d_r = mean ln base_r - mean ln cand_r: each variant's third
    cumulant of log times from the runs within its blocks (unbiased per block of n >= 3:
    E sum (x - mean)^3 = k3 (n-1)(n-2)/n), pooled; that of a round's d_r is
    k3_base / n_base^2 - k3_cand / n_cand^2, averaged over rounds, over the larger of the variance
    of d_r the within-block noise explains and the d_r's own variance, to the power 3/2. With
    fewer than 3 runs in every block of a variant, the sample skewness of the d_r (0 with fewer
    than 3 rounds)."""
    k3: list[float] = []
    var: list[float] = []
    for g in (base, cand):
        s3 = w3 = s2 = w2 = 0.0
        for r in common:
            x = np.log(g[r])
            n = x.size
            dev = x - x.mean()
            s2 += float((dev * dev).sum())
            w2 += n - 1
            if n >= 3:
                s3 += float((dev**3).sum())
                w3 += (n - 1) * (n - 2) / n
        if w3 == 0:
            return _sample_skewness(d)
        k3.append(s3 / w3)
        var.append(s2 / w2)
    kd = float(np.mean([k3[0] / base[r].size**2 - k3[1] / cand[r].size**2 for r in common]))
    vw = float(np.mean([var[0] / base[r].size + var[1] / cand[r].size for r in common]))
    denom = max(vw, float(d.var(ddof=1)))
    return kd / denom**1.5 if denom > 0 else 0.0


def _cumulant_sums(g: dict[int, np.ndarray], common: list[int]) -> np.ndarray | None:
    """Per round of ``common`` (columns): sum (x - mean)^3, its weight (n-1)(n-2)/n (0 when
    n < 3), sum (x - mean)^2, its weight n - 1, and n, for the log times of one variant; None
    when no block has 3 runs or more."""
    n = np.array([g[r].size for r in common], dtype=float)
    x = np.log(np.concatenate([g[r] for r in common]))
    starts = np.concatenate(([0], np.cumsum(n[:-1]))).astype(int)
    dev = x - np.repeat(np.add.reduceat(x, starts) / n, n.astype(int))
    big = n >= 3
    out = np.stack([np.where(big, np.add.reduceat(dev**3, starts), 0.0),
                    np.where(big, (n - 1) * (n - 2) / n, 0.0),
                    np.add.reduceat(dev * dev, starts), n - 1, n])
    return out if big.any() else None


def _all_and_but_one(x: np.ndarray) -> np.ndarray:
    """The sum of ``x`` over every round, then over every round but the first, the second, ..."""
    return float(x.sum()) - np.concatenate(([0.0], x))


def skewness_jackknife(base: dict[int, np.ndarray], cand: dict[int, np.ndarray],
                       common: list[int], d: np.ndarray) -> float:
    """:func:`skewness` with its bias removed by the jackknife over rounds: R g - (R-1) mean
    g_(-r), g_(-r) the estimate without round r. The ratio k3 / var^(3/2) of the same runs is
    biased towards 0 when the runs are skewed (a long right tail raises both; under the shape
    model of benchmarks/stats_calibration.py a true -0.98 is estimated at -0.68 on average at 10
    rounds of 4, -0.76 at 20, -0.85 at 60) and so under-corrects; the jackknife takes out the
    bias of order 1/R. Without a jackknife (fewer than 3 rounds, or a leave-one-out set without a
    block of 3 runs or more): the estimate itself; with fewer than 3 runs in every block: the
    rounds' sample skewness."""
    parts = [_cumulant_sums(g, common) for g in (base, cand)]
    if parts[0] is None or parts[1] is None:
        return _sample_skewness(d)
    rounds = len(common)
    count = _all_and_but_one(np.ones(rounds))  # rounds in each set: R, then R - 1 each
    kd = vw = np.zeros(rounds + 1)
    jackknife = rounds >= 3
    for p, sign in ((parts[0], 1.0), (parts[1], -1.0)):
        w3, w2 = _all_and_but_one(p[1]), _all_and_but_one(p[3])
        jackknife = jackknife and bool((w3 > 0).all())
        k3 = _all_and_but_one(p[0]) / np.where(w3 > 0, w3, 1.0)
        var = _all_and_but_one(p[2]) / np.where(w2 > 0, w2, 1.0)
        kd = kd + sign * k3 * _all_and_but_one(1 / p[4] ** 2) / count
        vw = vw + var * _all_and_but_one(1 / p[4]) / count
    dev = d - d.mean()
    s1, s2 = _all_and_but_one(dev), _all_and_but_one(dev * dev)
    d_var = (s2 - s1 * s1 / count) / np.maximum(count - 1, 1.0)
    denom = np.maximum(vw, d_var)
    g = np.where(denom > 0, kd / np.where(denom > 0, denom, 1.0) ** 1.5, 0.0)
    if not jackknife:
        return float(g[0])
    return float(rounds * g[0] - (rounds - 1) * g[1:].mean())


def _sample_skewness(d: np.ndarray) -> float:
    n = d.size
    if n < 3:
        return 0.0
    dev = d - d.mean()
    m2 = float((dev * dev).mean())
    if m2 <= 0:
        return 0.0
    return float(float((dev**3).mean()) / m2**1.5 * math.sqrt(n * (n - 1)) / (n - 2))


def detectable(se: float, df: float, *, alpha: float, min_effect: float,
               power: float = POWER) -> float:
    """The smallest change (a fraction) that this rule finds with probability ``power`` at this
    standard error: the estimate must pass max(delta + t_{1-alpha} se, t_{1-alpha/2} se) and the
    true change lies t_power se beyond that (normal-theory approximation, the sd taken as known)."""
    threshold = max(margin(min_effect) + stats.t_ppf(1 - alpha, df) * se,
                    stats.t_ppf(1 - alpha / 2, df) * se)
    return math.expm1(threshold + stats.t_ppf(power, df) * se)


def sign_test(d: Sequence[float]) -> float:
    """Exact two-sided sign test that ``d`` is centred on 0 (zeros dropped)."""
    pos = sum(1 for x in d if x > 0)
    n = pos + sum(1 for x in d if x < 0)
    if n == 0:
        return 1.0
    k = min(pos, n - pos)
    return min(1.0, 2.0 * math.fsum(math.comb(n, i) for i in range(k + 1)) / 2.0**n)


def resolution(*groups: np.ndarray) -> float | None:
    """The clock's apparent resolution: the smallest positive gap between distinct times; None
    when every time is the same."""
    gaps = np.diff(np.unique(np.concatenate(groups)))
    if gaps.size == 0:
        return None
    return float(gaps.min())


def paired_verdict(
    base_times: Sequence[float], base_rounds: Sequence[int], cand_times: Sequence[float],
    cand_rounds: Sequence[int], *, alpha: float, min_effect: float,
    min_rounds: int = stats.MIN_ROUNDS, drift_threshold: float = stats.DRIFT_ALPHA,
    signs: Mapping[int, int] | None = None, seed: int = 0, unit: str = "s",
) -> PairedVerdict:
    """Compare two variants round by round by the live rule. ``*_rounds`` give each run's
    round number; rounds that only one variant has are left out. ``signs`` (:func:`neighbour_signs`, from the
    order the blocks ran in) say how the noise of neighbouring rounds enters their d_r; without
    them every boundary is taken as the worst case. ``seed``: the bootstrap of the 90th
    percentile's interval, when the shapes differ. ``unit``: the values' unit ("s" for times;
    "B" and "count" are exact quantities, which only matters when every round gives the same
    ratio: :func:`_zero_spread`)."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be between 0 and 0.5 (got {alpha})")
    if min_rounds < 2:
        raise ValueError(f"min_rounds must be at least 2 (got {min_rounds})")
    delta = margin(min_effect)
    base = stats._by_round(base_times, base_rounds, "baseline")
    cand = stats._by_round(cand_times, cand_rounds, "candidate")
    common = sorted(set(base) & set(cand))
    n = len(common)
    if n == 0:
        raise ValueError("no round has runs of both variants")
    lb = [np.log(base[r]).mean() for r in common]
    lc = [np.log(cand[r]).mean() for r in common]
    d = np.array(lb) - np.array(lc)
    e = np.exp(np.array(lc)) - np.exp(np.array(lb))  # seconds, candidate minus baseline
    mean, effect = float(d.mean()), float(e.mean())
    ci = eq = effect_ci = None
    p = p_slower = p_faster = p_eq = mde = res = None
    verdict = Verdict.INCONCLUSIVE
    note = ""
    if n >= 2:
        df = n - 1
        q = stats.t_ppf(1 - alpha / 2, df)
        sd_e = float(e.std(ddof=1))
        if sd_e > 0:
            se_e = sd_e / math.sqrt(n)
            effect_ci = (effect - q * se_e, effect + q * se_e)
        sd = float(d.std(ddof=1))
        if sd > 0:
            sd, dof = widened(d, common, signs)
            se = sd / math.sqrt(n)
            pv = Pivot(mean, sd, n, skewness_jackknife(base, cand, common, d), dof)
            lo, hi = pv.interval(alpha)
            ci = (math.exp(lo), math.exp(hi))
            lo2, hi2 = pv.interval(2 * alpha)
            eq = (math.exp(lo2), math.exp(hi2))
            verdict, p, p_slower, p_faster, p_eq = decide_pivot(pv, alpha=alpha,
                                                                min_effect=min_effect)
            mde = detectable(se, pv.df, alpha=alpha, min_effect=min_effect)
        else:
            verdict, p, ci, effect_ci, res, note = _zero_spread(
                base, cand, common, d, effect, alpha=alpha, delta=delta, unit=unit,
                enough=n >= min_rounds)
            p_slower = p if verdict is Verdict.SLOWER else None
            p_faster = p if verdict is Verdict.FASTER else None
            if unit != "s" and ci is not None:  # an exact quantity: its one-sided bounds too
                eq = ci
    also = None
    if res is None:
        # the effect in time from the ratio and the baseline's level, so that it agrees with the
        # ratio and its interval covers as the ratio's does (a mean of per-round differences of
        # geometric means carries each variant's small-sample bias exp(sigma^2 / 2n))
        level = float(np.exp(np.mean(np.concatenate([np.log(base[r]) for r in common]))))
        effect = level * math.expm1(-mean)
        effect_ci = (level * (1 / ci[1] - 1), level * (1 / ci[0] - 1)) if ci else None
        also = shapes(base, cand, common, alpha=alpha, signs=signs, seed=seed, ratio=ci)
    if n < min_rounds:
        verdict = Verdict.WITHHELD
        plural = "s" if n != 1 else ""
        note = (f"verdict withheld: {n} round{plural} with runs of both variants, "
                f"at least {min_rounds} needed for a round-paired verdict")
    return PairedVerdict(
        speedup=math.exp(mean), ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None,
        p_value=p, verdict=verdict, alpha=alpha, min_effect=min_effect, p_slower=p_slower,
        p_faster=p_faster, p_equivalent=p_eq, equivalence_low=eq[0] if eq else None,
        equivalence_high=eq[1] if eq else None, mde=mde, effect_s=effect,
        effect_ci_low_s=effect_ci[0] if effect_ci else None,
        effect_ci_high_s=effect_ci[1] if effect_ci else None, resolution_s=res, rounds=n,
        min_rounds=min_rounds, round_ids=tuple(common),
        round_ratios=tuple(float(x) for x in np.exp(d)),
        wilcoxon_p=stats.wilcoxon_signed_rank(d.tolist()) if n >= 6 else None,
        drift=drift_check(base, cand, common, drift_threshold), note=note, also=also,
    )


def neighbour_signs(order: Sequence[Sequence[str]], base: str, cand: str) -> dict[int, int]:
    """How the noise two neighbouring blocks share enters d_r and d_(r+1), for the rounds in
    which both ``base`` and ``cand`` ran (numbered 1, 2, ... in the order they ran, as the
    samples number them): +1 when the last block of round r and the first of round r+1 are of
    the same variant (the shared noise enters both d with the same sign: their covariance is
    positive), -1 when of the two different ones, 0 when a third cell is on either side. Keyed by
    r."""
    rows = [row for row in order if base in row and cand in row]
    sign = {base: 1, cand: -1}
    return {r: sign.get(rows[r - 1][-1], 0) * sign.get(rows[r][0], 0)
            for r in range(1, len(rows))}


def widened_sd(d: np.ndarray, ids: Sequence[int], signs: Mapping[int, int] | None) -> float:
    """:func:`widened`'s sd."""
    return widened(d, ids, signs)[0]


def widened(d: np.ndarray, ids: Sequence[int], signs: Mapping[int, int] | None
            ) -> tuple[float, float]:
    """An sd of the per-round d_r such that sd / sqrt(R) is the standard error of their mean
    allowing for noise that neighbouring rounds share, and the degrees of freedom of a t taken
    with it. The machine's state carries from the last block of one round into the first of the
    next: each pair of consecutive rounds adds s_r c to the covariance, s_r its sign
    (:func:`neighbour_signs`; +1 without an order) and c one shared covariance estimated from the
    signed products of neighbouring deviations over the boundaries that carry it (s_r not 0; with
    the bias that centring on the sample mean gives them taken out). The variance of the mean is
    V = s^2 / R + 2 c sum(s_r) / R^2, never below s^2 / R: a negative estimate or a design whose
    boundaries mostly cancel leaves the plain standard error. c comes from R - 1 products and is
    far noisier than s^2, so the t's degrees of freedom are cut by the widening:
    (R - 1) (s^2 / (R V))^3, at least 1 (R - 1 when nothing is added). Calibrated under AR(1) noise of the
    runs at rho 0.5 and 0.8 (docs/statistics.md): without the cut, the interval covered 93.4 %
    at rho 0.8 and 10 rounds."""
    n = d.size
    s2 = float(d.var(ddof=1))
    pairs = [(i, signs.get(ids[i], 0) if signs is not None else 1)
             for i in range(n - 1) if ids[i + 1] == ids[i] + 1]
    total = sum(s for _, s in pairs)
    if not pairs or total <= 0 or s2 <= 0:
        return math.sqrt(s2), float(n - 1)
    x = d - d.mean()
    shared = sum(abs(s) for _, s in pairs)  # the boundaries that carry the covariance
    c = (math.fsum(s * float(x[i] * x[i + 1]) for i, s in pairs) + total * s2 / n) / shared
    var = s2 + 2 * max(0.0, c) * total / n
    # at least 1; rounded down to 0.01 (a little wider, and t's quantiles cached)
    return math.sqrt(var), max(1.0, math.floor(100 * (n - 1) * (s2 / var) ** 3) / 100)


def shapes(base: dict[int, np.ndarray], cand: dict[int, np.ndarray], common: list[int], *,
           alpha: float, signs: Mapping[int, int] | None, seed: int,
           ratio: tuple[float, float] | None) -> Also | None:
    """:class:`Also` when the variants' within-round spreads of log time differ (by more than
    SHAPE_FACTOR in sd, and by an F test at SHAPE_ALPHA), else None. The ratio of means is judged
    round by round like the geometric means' (per-round log ratio of arithmetic means, the same
    widened t interval); the 90th percentiles' ratio is of the runs pooled, with a percentile
    bootstrap over rounds (rounds resampled whole, so block noise stays in)."""
    logs = [[np.log(g[r]) for r in common] for g in (base, cand)]
    dfs = [sum(b.size - 1 for b in blocks) for blocks in logs]
    if len(common) < 3 or min(dfs) < 2:
        return None
    var = [sum(float(((b - b.mean()) ** 2).sum()) for b in blocks) / df
           for blocks, df in zip(logs, dfs, strict=True)]
    if min(var) <= 0:
        return None
    f = var[1] / var[0]
    p = min(1.0, 2 * min(stats.f_sf(f, dfs[1], dfs[0]), stats.f_sf(1 / f, dfs[0], dfs[1])))
    sd_ratio = math.sqrt(f)
    if p >= SHAPE_ALPHA or 1 / SHAPE_FACTOR <= sd_ratio <= SHAPE_FACTOR:
        return None
    n = len(common)
    dm = np.array([math.log(float(base[r].mean()) / float(cand[r].mean())) for r in common])
    mean_ci = None
    sd, dof = widened(dm, common, signs) if dm.std(ddof=1) > 0 else (0.0, n - 1.0)
    if sd > 0:
        q = stats.t_ppf(1 - alpha / 2, dof) * sd / math.sqrt(n)
        mean_ci = (math.exp(dm.mean() - q), math.exp(dm.mean() + q))
    rng = np.random.default_rng([seed, n, 90])
    pick = rng.integers(0, n, (BOOTSTRAP, n))
    b_all = [base[r] for r in common]
    c_all = [cand[r] for r in common]
    p90 = _p90_ratio(b_all, c_all, range(n))
    if len({x.size for x in b_all}) == 1 and len({x.size for x in c_all}) == 1:
        # every round the same number of runs: each resample is a row of whole rounds
        bm, cm = np.stack(b_all), np.stack(c_all)
        boot = (np.quantile(bm[pick].reshape(BOOTSTRAP, -1), 0.9, axis=1)
                / np.quantile(cm[pick].reshape(BOOTSTRAP, -1), 0.9, axis=1))
    else:
        boot = np.array([_p90_ratio(b_all, c_all, row) for row in pick])
    lo, hi = (float(x) for x in np.quantile(boot, [alpha / 2, 1 - alpha / 2]))
    answers = {"geometric mean": ratio, "mean": mean_ci, "90th percentile": (lo, hi)}
    faster = [k for k, ci in answers.items() if ci is not None and ci[0] > 1]
    slower = [k for k, ci in answers.items() if ci is not None and ci[1] < 1]
    disagree = (f"the candidate is faster by its {' and '.join(faster)} but slower by its "
                f"{' and '.join(slower)}: which one matters is yours to say"
                if faster and slower else "")
    return Also(sd_ratio=sd_ratio, shape_p=p, mean_ratio=math.exp(float(dm.mean())),
                mean_ci_low=mean_ci[0] if mean_ci else None,
                mean_ci_high=mean_ci[1] if mean_ci else None, p90_ratio=p90, p90_ci_low=lo,
                p90_ci_high=hi, disagree=disagree)


def _p90_ratio(base: Sequence[np.ndarray], cand: Sequence[np.ndarray], rows: Any) -> float:
    """The 90th percentile of the baseline's runs of rounds ``rows`` over the candidate's."""
    idx = list(rows)
    b = np.concatenate([base[i] for i in idx])
    c = np.concatenate([cand[i] for i in idx])
    return float(np.quantile(b, 0.9) / np.quantile(c, 0.9))


def drift_check(base: dict[int, np.ndarray], cand: dict[int, np.ndarray], common: list[int],
                threshold: float) -> stats.DriftCheck | None:
    """The drift check of :class:`patchbench.analysis.stats.DriftCheck` without its assumption
    that both variants have the same within-block variance (it fired 1.8 % against a
    nominal 1 % at CV 2 % vs 20 %): each variant's within-block variance is pooled over its own
    blocks, the variance of e_r they explain is mean(1/n_base) s_base^2 + mean(1/n_cand)
    s_cand^2, and the F test's second degrees of freedom are Satterthwaite's (``df_within``
    records them rounded down; the p-value uses them unrounded). None with fewer than 2 rounds,
    a variant without a block of 2 or more runs, or no variation within blocks."""
    if len(common) < 2:
        return None
    logs = [[np.log(g[r]) for r in common] for g in (base, cand)]
    dfs = [sum(b.size - 1 for b in blocks) for blocks in logs]
    if min(dfs) < 1:
        return None
    s2 = [sum(float(((b - b.mean()) ** 2).sum()) for b in blocks) / df
          for blocks, df in zip(logs, dfs, strict=True)]
    weights = [float(np.mean([1 / g[r].size for r in common])) for g in (base, cand)]
    parts = [w * v for w, v in zip(weights, s2, strict=True)]
    expected = sum(parts)
    if expected <= 0:  # every block constant (a coarse clock): no noise to compare with
        return None
    df_within = expected**2 / sum(p * p / df for p, df in zip(parts, dfs, strict=True))
    e = np.array([lb.mean() - lc.mean() for lb, lc in zip(*logs, strict=True)])
    observed = float(e.var(ddof=1))
    df_between = len(common) - 1
    ratio = observed / expected
    p = stats.f_sf(ratio, df_between, df_within)
    flagged = p < threshold
    drift_sd = math.sqrt(max(0.0, observed - expected) / 2)
    if flagged:
        meaning = (f"The per-round ratios vary {math.sqrt(ratio):.1f}x more (in sd) than the noise "
                   f"within rounds explains (F test p = {p:.2g}, each variant's own noise): the "
                   f"machine's speed changed between blocks by about {drift_sd * 100:.1f} % (sd), "
                   "so the runs of one block are not independent; the round-paired CI includes "
                   "this, the pooled p-value and bootstrap CI do not.")
    else:
        meaning = (f"The per-round ratios vary no more than the noise within rounds explains "
                   f"(F test p = {p:.2g}, each variant's own noise): no sign of drift between "
                   "blocks.")
    return stats.DriftCheck(
        flagged=flagged, ratio=ratio, p_value=p, observed_sd=math.sqrt(observed),
        expected_sd=math.sqrt(expected), drift_sd=drift_sd, df_between=df_between,
        df_within=int(df_within), threshold=threshold, meaning=meaning,
    )


def _zero_spread(
    base: dict[int, np.ndarray], cand: dict[int, np.ndarray], common: list[int], d: np.ndarray,
    effect: float, *, alpha: float, delta: float, unit: str = "s", enough: bool = True,
) -> tuple[Verdict, float, tuple[float, float] | None, tuple[float, float] | None, float | None,
           str]:
    """Every round gave the same ratio: the sign test for p. A time (``unit`` "s") is known to
    within one tick of the clock, which bounds the interval; it is never "equivalent" (the ticks
    may hide a difference). An exact quantity (bytes, counts) is what it says: the interval is
    the ratio itself, "equivalent" (with ``enough`` rounds) when it lies inside the margin; one
    that gave the same value in every run of both variants did not change (ratio exactly 1)."""
    mean = float(d[0])
    p = sign_test(d.tolist())
    res = resolution(*(base[r] for r in common), *(cand[r] for r in common))
    exact = unit != "s"
    if res is None:  # every run of both variants gave the same value
        if exact:
            verdict = Verdict.EQUIVALENT if enough and delta > 0 else Verdict.INCONCLUSIVE
            same = _in_unit(_lowest(base, common), unit)
            return (verdict, 1.0, (1.0, 1.0), (0.0, 0.0), None,
                    f"every run of both variants gave the same value ({same}): no difference")
        return (Verdict.INCONCLUSIVE, p, None, None, None,
                "every run of both variants took the same time: the clock cannot tell them apart")
    tb = _lowest(base, common)
    tc = _lowest(cand, common)
    # the most one tick per run can move a round's log ratio; an exact quantity is what it says
    bound = 0.0 if exact else res / tb + res / tc
    ci = (math.exp(mean - bound), math.exp(mean + bound))
    effect_ci = (effect, effect) if exact else (effect - 2 * res, effect + 2 * res)
    verdict = Verdict.INCONCLUSIVE
    if p < alpha and mean - bound > delta:
        verdict = Verdict.FASTER
    elif p < alpha and mean + bound < -delta:
        verdict = Verdict.SLOWER
    elif exact and enough and -delta < mean - bound and mean + bound < delta:
        verdict = Verdict.EQUIVALENT
    if exact:
        note = (f"every round gave the same ratio, {math.exp(mean):.4f} (an exact quantity, no "
                f"spread for a t interval): the sign test gives p = {p:.2g}")
    else:
        note = (f"every round gave the same ratio (no spread for a t interval): the sign test "
                f"gives p = {p:.2g} and the clock's resolution ({_in_unit(res, unit)}) bounds "
                f"the ratio to [{ci[0]:.3f}, {ci[1]:.3f}]")
    return verdict, p, ci, effect_ci, res, note


def _lowest(g: dict[int, np.ndarray], common: list[int]) -> float:
    """The smallest value of ``g`` over the rounds ``common``."""
    return min(float(g[r].min()) for r in common)


def _in_unit(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1e3:.3g} ms"
    if unit == "B":
        return f"{value / 1024:.4g} KiB"
    return f"{value:.4g}"


@dataclass(frozen=True)
class SpeedupRatio:
    """Two runs' round-paired speedups of one candidate compared (``invoke diff``): ``ratio`` =
    speedup in run B / speedup in run A (above 1: the candidate gained against its baseline in
    B), from the per-round log ratios of each run, with a Welch t interval (each run its own
    variance, Satterthwaite's degrees of freedom). A drift that a run's variants share cancels
    within each run, so the ratio compares the code's effect rather than the two machines."""

    ratio: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    rounds_a: int
    rounds_b: int


def speedup_ratio(ratios_a: Sequence[float], ratios_b: Sequence[float], *, alpha: float
                  ) -> SpeedupRatio:
    """:class:`SpeedupRatio` of two runs' per-round ratios (baseline / candidate per round)."""
    la, lb = np.log(np.asarray(ratios_a, float)), np.log(np.asarray(ratios_b, float))
    if la.size == 0 or lb.size == 0:
        raise ValueError("a run without rounds of both variants has no speedup to compare")
    diff = float(lb.mean() - la.mean())
    ci = p = None
    if la.size >= 2 and lb.size >= 2:
        va, vb = float(la.var(ddof=1)) / la.size, float(lb.var(ddof=1)) / lb.size
        se = math.sqrt(va + vb)
        if se > 0:
            df = (va + vb) ** 2 / (va * va / (la.size - 1) + vb * vb / (lb.size - 1))
            q = stats.t_ppf(1 - alpha / 2, df)
            ci = (math.exp(diff - q * se), math.exp(diff + q * se))
            p = 2.0 * stats.t_sf(abs(diff) / se, df)
    return SpeedupRatio(ratio=math.exp(diff), ci_low=ci[0] if ci else None,
                        ci_high=ci[1] if ci else None, p_value=p, rounds_a=int(la.size),
                        rounds_b=int(lb.size))
