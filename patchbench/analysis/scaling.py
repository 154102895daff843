"""How a metric grows with a parameter (a scan's value, a layer count): least-squares lines and
power laws, with intervals that respect the rounds.

``line(xs, ys)`` is the plain least-squares line (the ``layers`` kind's mount counts against L
use it). ``by_rounds`` fits each round on its own (every value of a scan is measured in every
round, interleaved, so a round is one replicate of the whole curve) and reports the mean of the
rounds' fits with a Student t interval over them (R − 1 degrees of freedom): load or drift that
moves a whole round moves its fit, and widens the interval, instead of passing for precision as
it would if every (value, round) point were taken as independent. The power law is the slope of
log(metric) against log(value) (values above 0 only): 1 means linear growth, 0 none. Two
variants' exponents "differ" only when their intervals do not overlap (``separate``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from patchbench.analysis import stats

LEVEL = 0.95  # the intervals' confidence level


@dataclass(frozen=True)
class Estimate:
    """A fitted figure, its interval (None with fewer than 2 rounds) and the rounds it is of."""

    value: float
    low: float | None
    high: float | None
    rounds: int


@dataclass(frozen=True)
class Fit:
    """One variant's growth: the power-law exponent (None without two values above 0), and the
    line's slope (metric per unit of the value) and intercept (the metric at 0)."""

    exponent: Estimate | None
    slope: Estimate
    intercept: Estimate


def line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """Least-squares slope and intercept of ys against xs (None with fewer than 2 distinct x)."""
    if len(set(xs)) < 2:
        return None
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return slope, my - slope * mx


def interval(values: Sequence[float], level: float = LEVEL) -> Estimate:
    """The mean of ``values`` with its Student t interval (none for a single value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return Estimate(mean, None, None, n)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = stats.t_ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n)


def by_rounds(points: Mapping[int, Mapping[float, float]], level: float = LEVEL) -> Fit | None:
    """``points``: round -> value -> the round's metric at that value (positive). Each round
    with at least two values is fitted alone; the fits' means with t intervals over the rounds.
    None when no round has two values."""
    slopes: list[float] = []
    intercepts: list[float] = []
    exponents: list[float] = []
    for per in points.values():
        xs = sorted(per)
        fitted = line(xs, [per[x] for x in xs])
        if fitted is None:
            continue
        slopes.append(fitted[0])
        intercepts.append(fitted[1])
        pos = [x for x in xs if x > 0 and per[x] > 0]
        logs = line([math.log(x) for x in pos], [math.log(per[x]) for x in pos])
        if logs is not None:
            exponents.append(logs[0])
    if not slopes:
        return None
    return Fit(exponent=interval(exponents, level) if exponents else None,
               slope=interval(slopes, level), intercept=interval(intercepts, level))


def separate(a: Estimate | None, b: Estimate | None) -> bool:
    """Whether two estimates' intervals do not overlap (False without both intervals)."""
    if a is None or b is None or None in (a.low, a.high, b.low, b.high):
        return False
    assert a.low is not None and a.high is not None and b.low is not None and b.high is not None
    return a.high < b.low or b.high < a.low


def geometric_mean(values: Sequence[float]) -> float:
    """A round's metric at one value: the geometric mean of its runs (the round-paired rule's
    per-round figure, patchbench.analysis.paired)."""
    return math.exp(sum(math.log(v) for v in values) / len(values))
