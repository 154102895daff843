"""One verdict across the hosts of a class of machines (``merge``): the host is the unit, the
rounds sit within hosts.

Each host h measured the comparison in its own rounds, and its per-round log ratios d_h,r
(baseline over candidate, the verdict rule's) have a mean m_h. A change that is the same on
every host moves every m_h alike; a host of its own (its cache sizes, its layout, its noise)
moves its m_h by an offset u_h of its own. Pooling every round of every host as one sample takes
the rounds for independent draws of one effect and leaves the offsets out of the interval: an
A/A over hosts with offsets is then called different far more often than alpha. So:

- **Do the hosts disagree?** A one-way analysis of variance of the d_h,r with the hosts as
  groups: the spread of the m_h against what each host's own rounds explain (each host's
  variance widened for noise its neighbouring rounds share, as the verdict rule's; an F test
  with H - 1 and sum(R_h - 1) degrees of freedom).
- **The change on this class:** the mean over hosts of m_h with a t interval on H - 1 degrees
  of freedom from the spread of the m_h themselves (each host one value), judged like a
  comparison (:func:`patchbench.analysis.paired.decide`: faster, slower, equivalent within
  ±min_effect, or inconclusive). The offsets are in that spread, so the interval holds whatever
  they are; with few hosts it is wide, by design.

The answer is **host-dependent** when the hosts disagree beyond their noise (the F test at
p < alpha) by more than the comparison's margin (the hosts' offsets, estimated from the two
mean squares, spread by at least ln(1 + min_effect) in sd): each host's own verdict is then the
answer for that host, and the class's estimate is shown beside it. Otherwise it is the class's,
with a note when the hosts differ beyond their noise by less than that. A false "faster" or
"slower" needs the class's t test to err (at most alpha, whatever the offsets); a false
"host-dependent" needs the F test to (at most alpha when the hosts agree).

Fewer than 2 hosts: withheld (the one host's own verdict is its answer). Classes are never
pooled: each is judged on its own hosts. Calibrated in benchmarks/hosts_calibration.py;
docs/statistics.md ("Verdicts across machines")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from patchbench.analysis import paired, stats

HOST_DEPENDENT = "host-dependent"
MIN_HOSTS = 2


@dataclass(frozen=True)
class HostMean:
    """One host's mean log ratio as a speedup, with the t interval of its own rounds (widened
    as the verdict rule's)."""

    host: str
    rounds: int
    speedup: float
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class ClassVerdict:
    """The answer for one class of machines: ``verdict`` is faster, slower, equivalent,
    inconclusive, host-dependent or withheld; ``speedup`` the mean over hosts of their mean log
    ratios as a ratio (above 1: the candidate is faster), its (1 - alpha) interval over hosts;
    ``heterogeneity_p`` the F test of the hosts' agreement, ``between_sd`` the sd of the hosts'
    offsets it implies (log scale, 0 when their means vary no more than their noise)."""

    verdict: str
    hosts: tuple[HostMean, ...]
    speedup: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    heterogeneity_p: float | None
    between_sd: float | None
    alpha: float
    min_effect: float
    note: str


def _host(name: str, ratios: Sequence[float], alpha: float
          ) -> tuple[HostMean, np.ndarray, float | None]:
    d = np.log(np.asarray(ratios, float))
    n = d.size
    lo = hi = var = None
    if n >= 2 and float(d.std(ddof=1)) > 0:
        sd, dof = paired.widened(d, list(range(1, n + 1)), None)
        var = sd * sd
        q = stats.t_ppf(1 - alpha / 2, dof) * sd / math.sqrt(n)
        lo, hi = math.exp(float(d.mean()) - q), math.exp(float(d.mean()) + q)
    return HostMean(name, n, math.exp(float(d.mean())), lo, hi), d, var


def across(hosts: Mapping[str, Sequence[float]], *, alpha: float, min_effect: float
           ) -> ClassVerdict:
    """:class:`ClassVerdict` of ``hosts``: host name -> the per-round ratios (baseline /
    candidate) of its comparison, every run of that host's rounds together."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be between 0 and 0.5 (got {alpha})")
    parts = [_host(h, r, alpha) for h, r in hosts.items() if len(r) > 0]
    shown = tuple(p[0] for p in parts)
    if len(parts) < MIN_HOSTS:
        return ClassVerdict("withheld", shown, shown[0].speedup if shown else math.nan, None,
                            None, None, None, None, alpha, min_effect,
                            f"{len(parts)} host: at least {MIN_HOSTS} needed for a verdict "
                            "across hosts (its own verdict is its answer)")
    means = np.array([float(d.mean()) for _, d, _ in parts])
    h = means.size
    mean = float(means.mean())
    het_p = between = None
    within = [(d.size - 1, v) for _, d, v in parts if v is not None]
    df_within = sum(df for df, _ in within)
    if df_within > 0:
        ms_within = sum(df * v for df, v in within) / df_within
        sizes = np.array([d.size for _, d, _ in parts], float)
        grand = float((sizes * means).sum() / sizes.sum())
        ms_between = float((sizes * (means - grand) ** 2).sum()) / (h - 1)
        het_p = stats.f_sf(ms_between / ms_within, h - 1, df_within) if ms_within > 0 else None
        n0 = (sizes.sum() - (sizes**2).sum() / sizes.sum()) / (h - 1)  # rounds per host
        between = math.sqrt(max(0.0, (ms_between - ms_within) / n0))
    sd = float(means.std(ddof=1))
    ci = p = None
    verdict = str(paired.Verdict.INCONCLUSIVE)
    note = ""
    if sd > 0:
        se = sd / math.sqrt(h)
        answer, p, *_ = paired.decide(mean, se, h - 1, alpha=alpha, min_effect=min_effect)
        verdict = str(answer)
        q = stats.t_ppf(1 - alpha / 2, h - 1) * se
        ci = (math.exp(mean - q), math.exp(mean + q))
    else:
        note = "every host gave the same mean ratio: no spread over hosts for an interval"
    if het_p is not None and het_p < alpha:
        spread = (f"F test p = {het_p:.2g}; their offsets spread about "
                  f"{between * 100 if between else 0:.1f} % in sd")
        if between is not None and between >= paired.margin(min_effect):
            note = (f"the hosts disagree beyond their noise, by more than ±{min_effect:.0%} "
                    f"({spread}; over the class: {verdict}): each host's own verdict is its "
                    "answer")
            verdict = HOST_DEPENDENT
        else:
            note = (f"{verdict} on this class; the hosts differ beyond their noise by less than "
                    f"±{min_effect:.0%} ({spread})")
    return ClassVerdict(verdict, shown, math.exp(mean), ci[0] if ci else None,
                        ci[1] if ci else None, p, het_p, between, alpha, min_effect, note)
