"""How a bisect or history step judges a kind's result, commit against commit.
Details: docs/internals.md."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from patchbench.analysis import verdict
from patchbench.measure import hangs
from patchbench.results import ScenarioResult, TimedResult

# what a comparison shows of ``other`` against ``ref``: "more" (slower, or more hangs), "less"
# (faster, fewer hangs) or "same" (equivalent within min_effect)
Shift = Literal["more", "less", "same"]
Way = Literal["more", "less"]


@dataclass(frozen=True)
class Pair:
    """One commit against another, both measured in one interleaved measurement."""

    differs: bool | None  # two-sided, at the level given; None: no verdict (withheld)
    text: str  # "1.041x [1.031, 1.052], p 0.0003 (slower)" / "hangs 0 of 200 vs 12 of 200, ..."
    shift: Shift | None = None  # the verdict at that level; None: nothing (inconclusive)
    way: Way | None = None  # a difference of any size shown one-sided at that level
    p_way: float | None = None  # its one-sided p


@dataclass(frozen=True)
class Value:
    """What one commit measured, as history.json keeps it: its median (s) with the CI, or the
    events counted of its runs; ``text`` is how the tables show it."""

    text: str
    median: float | None = None
    ci: tuple[float, float] | None = None
    hangs: int | None = None  # the events a ByCount rule counts (history.json's name for them)
    runs: int | None = None


class Plot(NamedTuple):
    """A commit's point on the chart: its value on the axis (None: nothing to draw), its CI bar,
    and the value in a few words for the point's tooltip."""

    y: float | None
    lo: float | None
    hi: float | None
    short: str


class StepRule(Protocol):
    """How a bisect or history step judges one kind's result (variants are named by commit)."""

    measures: str  # what a step compares, in a word: "time", "hangs"
    axis: str  # the chart's y axis
    scales_rounds: bool  # a second look multiplies the rounds with the runs (False: no rounds)
    shows_same: bool  # it can show two commits the same (a test of equivalence)

    @property
    def ways(self) -> tuple[str, str]:
        """How "more" and "less" read: ("slower", "faster"), ("more hangs", "fewer hangs")."""

    def value(self, result: ScenarioResult, variant: str) -> Value:
        """What ``variant`` measured in ``result``."""

    def pair(self, result: ScenarioResult, ref: str, other: str, *, alpha: float,
             min_effect: float, seed: int) -> Pair:
        """``other`` against ``ref``, both measured in ``result``."""

    def plot(self, value: Value) -> Plot:
        """Where ``value`` (also one read back from history.json) is drawn."""

    def power(self, result: ScenarioResult, ref: str, other: str, runs: int, level: float
              ) -> float | None:
        """The chance that a comparison with ``runs`` runs of each commit, at ``level`` and one
        way, tells a commit like ``other`` from one like ``ref`` as they measured in ``result``;
        None when the rule does not estimate it."""


class ByTime:
    """Time, by the round-paired verdict of each of the commit's cells against the reference's
    cell with the same parameters (one per condition)."""

    measures = "time"
    axis = "median (ms)"
    scales_rounds = True
    shows_same = True
    ways = ("slower", "faster")

    def value(self, result: ScenarioResult, variant: str) -> Value:
        assert isinstance(result, TimedResult)
        cells = [c for c in result.cells if c.variant == variant]
        if not cells or not cells[0].summary.n:
            return Value("no timing")
        s = cells[0].summary
        ci = (s.median_ci[0], s.median_ci[1]) if s.median_ci else None
        shown = f" [{ci[0] * 1e3:.2f}, {ci[1] * 1e3:.2f}]" if ci else ""
        return Value(f"{s.median * 1e3:.2f} ms{shown}", median=s.median, ci=ci)

    def pair(self, result: ScenarioResult, ref: str, other: str, *, alpha: float,
             min_effect: float, seed: int) -> Pair:
        """Differs if any pair of cells does, withheld if any is; with several conditions each
        is judged at alpha / conditions (Bonferroni), so that alpha holds for the pair."""
        assert isinstance(result, TimedResult)
        refs = [c for c in result.cells if c.variant == ref]
        judged = []
        for rc in refs:
            oc = next((c for c in result.cells if c.variant == other and c.params == rc.params),
                      None)
            if oc is None or not set(rc.samples.rounds) & set(oc.samples.rounds):
                return Pair(None, "withheld: no round has finished runs of both")
            rec = verdict.record(rc.samples.times, rc.samples.rounds, oc.samples.times,
                                 oc.samples.rounds, alpha=alpha / len(refs),
                                 min_effect=min_effect, seed=seed)
            judged.append((dict(rc.params).get("condition"), rec))
        if not judged:
            return Pair(None, f"withheld: {ref} was not measured")
        return judged_pair(judged)

    def plot(self, value: Value) -> Plot:
        lo, hi = (value.ci[0] * 1e3, value.ci[1] * 1e3) if value.ci else (None, None)
        if value.median is None:
            return Plot(None, lo, hi, value.text)
        return Plot(value.median * 1e3, lo, hi, f"{value.median * 1e3:.2f} ms")

    def power(self, result: ScenarioResult, ref: str, other: str, runs: int, level: float
              ) -> float | None:
        return None


SHIFTS: dict[str, Shift] = {"slower": "more", "faster": "less", "equivalent": "same"}


def judged_pair(judged: Sequence[tuple[str | None, Mapping[str, Any]]]) -> Pair:
    """The pair from the verdict record of each condition (``verdict.record``'s dict, or
    ``PairedVerdict.as_dict()``; the condition's name or None): withheld if any is; the verdict
    "more" or "less" when some condition shows it and none the other way, "same" when every one
    is equivalent; the way likewise, from each record's one-sided p (half its two-sided p, on the
    side of its estimate) below its ``alpha``, or from its verdict when the clock's resolution
    bounds it (zero spread)."""
    texts, shifts, ways = [], [], []
    for cond, rec in judged:
        if rec["verdict"] == "withheld":
            return Pair(None, f"withheld: {rec['note']}")
        shifts.append(SHIFTS.get(rec["verdict"]))
        # speedup = median(ref) / median(other): other's time relative to ref's is 1/speedup;
        # a metric without a ratio (none, or 0: a metric that was 0 in every run) has none
        sp, p = _positive(rec.get("speedup")), _finite(rec.get("p_value"))
        lo, hi = _positive(rec.get("ci_low")), _positive(rec.get("ci_high"))
        ci = f" [{1.0 / hi:.3f}, {1.0 / lo:.3f}]" if lo and hi else ""
        texts.append((f"{cond}: " if cond else "")
                     + (f"{1.0 / sp:.3f}x{ci}" if sp else "no ratio")
                     + (f", p {p:.2g}" if p is not None else "") + f" ({rec['verdict']})")
        if rec.get("resolution_s") is not None:
            if shifts[-1] in ("more", "less") and p is not None:
                ways.append((shifts[-1], p / 2))
        elif p is not None and sp and p / 2 < rec["alpha"] and sp != 1.0:
            ways.append(("more" if sp < 1.0 else "less", p / 2))
    return Pair(any(x in ("more", "less") for x in shifts), "; ".join(texts),
                _one(shifts, all(x == "same" for x in shifts)), *_way(ways))


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _positive(x: Any) -> float | None:
    f = _finite(x)
    return f if f is not None and f > 0 else None


def _one(shown: Sequence[Shift | None], same: bool) -> Shift | None:
    """"more" or "less" when shown one way and not the other, else "same" if ``same``."""
    ways = {x for x in shown if x in ("more", "less")}
    if len(ways) == 1:
        return "more" if "more" in ways else "less"
    return "same" if same and not ways else None


def _way(ways: Sequence[tuple[Shift | None, float]]) -> tuple[Way | None, float | None]:
    """The way the conditions show, and its smallest one-sided p; (None, None) if both ways."""
    way = _one([w for w, _ in ways], False)
    if way not in ("more", "less"):
        return None, None
    return way, min(p for w, p in ways if w == way)


@dataclass
class ByCount:
    """Events a kind counts in every run (``counts(result, variant)``: events and runs), the
    commit's against the reference's by Fisher's exact test: two-sided for ``differs``, one-sided
    for the way it shows (its ``shift`` and its ``way``)."""

    counts: Callable[[ScenarioResult, str], tuple[int, int]]
    measures: str = "hangs"  # the events, as the text names them: "hangs 3 of 40"
    axis: str = "hang rate"
    scales_rounds: bool = False
    shows_same: bool = False

    @property
    def ways(self) -> tuple[str, str]:
        return f"more {self.measures}", f"fewer {self.measures}"

    def value(self, result: ScenarioResult, variant: str) -> Value:
        n, runs = self.counts(result, variant)
        return Value(f"{self.measures} {n} of {runs}", hangs=n, runs=runs)

    def pair(self, result: ScenarioResult, ref: str, other: str, *, alpha: float,
             min_effect: float, seed: int) -> Pair:
        (r, r_runs), (o, o_runs) = self.counts(result, ref), self.counts(result, other)
        assert r_runs and o_runs
        cmp = hangs.compare_hangs(hangs.HangCount(ref, r, r_runs),
                                  hangs.HangCount(other, o, o_runs))
        way: Way | None = ("more" if cmp.p_more < alpha else
                           "less" if cmp.p_less < alpha else None)
        return Pair(cmp.p_value < alpha, f"{self.measures} {o} of {o_runs} vs {r} of {r_runs}, "
                    f"Fisher p {cmp.p_value:.2g} (one-sided: more {cmp.p_more:.2g}, fewer "
                    f"{cmp.p_less:.2g})", way, way,
                    None if way is None else cmp.p_more if way == "more" else cmp.p_less)

    def plot(self, value: Value) -> Plot:
        y = value.hangs / value.runs if value.hangs is not None and value.runs else None
        return Plot(y, None, None, f"{self.measures} {value.hangs} of {value.runs}")

    def power(self, result: ScenarioResult, ref: str, other: str, runs: int, level: float
              ) -> float | None:
        """From the two commits' rates in ``result`` (the one that hangs more is ``other`` or
        ``ref``): one-sided Fisher, ``runs`` runs of each (:func:`hangs.fisher_power`)."""
        (r, r_runs), (o, o_runs) = self.counts(result, ref), self.counts(result, other)
        low, high = sorted((r / r_runs, o / o_runs))
        return hangs.fisher_power(runs, low, high, level)
