"""How a bisect or history step judges a kind's result, commit against commit.

A kind that can be bisected names its rule as ``step`` (the ``ScenarioKind`` interface); bisect
and history reach it through the registry and never ask which kind they measured. Two rules:

- :class:`ByTime`: the round-paired verdict of patchbench.analysis (the one ``compare`` uses),
  for a kind with cells (``results.TimedResult``): "faster" or "slower" differ, "no significant
  difference" is the same, "withheld" decides nothing.
- :class:`ByCount`: events the kind counts (hangs), summed over its conditions, by Fisher's exact
  test (two-sided): p < alpha differs, else the same.

A rule also says how a commit's value is shown: its text, and its point on the chart by commit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from patchbench.analysis import verdict
from patchbench.measure import hangs
from patchbench.results import ScenarioResult, TimedResult


@dataclass(frozen=True)
class Pair:
    """One commit against another, both measured in one interleaved measurement."""

    differs: bool | None  # None: no verdict (withheld)
    text: str  # "1.041x [1.031, 1.052], p 0.0003 (slower)" / "hangs 0 of 200 vs 12 of 200, ..."


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

    def value(self, result: ScenarioResult, variant: str) -> Value:
        """What ``variant`` measured in ``result``."""

    def pair(self, result: ScenarioResult, ref: str, other: str, *, alpha: float,
             min_effect: float, seed: int) -> Pair:
        """``other`` against ``ref``, both measured in ``result``."""

    def plot(self, value: Value) -> Plot:
        """Where ``value`` (also one read back from history.json) is drawn."""


class ByTime:
    """Time, by the round-paired verdict of each of the commit's cells against the reference's
    cell with the same parameters (one per condition)."""

    measures = "time"
    axis = "median (ms)"
    scales_rounds = True

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
        """Differs if any pair of cells does, withheld if any is."""
        assert isinstance(result, TimedResult)
        texts, differs = [], False
        for rc in (c for c in result.cells if c.variant == ref):
            oc = next((c for c in result.cells if c.variant == other and c.params == rc.params),
                      None)
            if oc is None or not set(rc.samples.rounds) & set(oc.samples.rounds):
                return Pair(None, "withheld: no round has finished runs of both")
            rec = verdict.record(rc.samples.times, rc.samples.rounds, oc.samples.times,
                                 oc.samples.rounds, alpha=alpha, min_effect=min_effect, seed=seed)
            if rec["verdict"] == "withheld":
                return Pair(None, f"withheld: {rec['note']}")
            differs = differs or rec["verdict"] in ("faster", "slower")
            # speedup = median(ref) / median(other): other's time relative to ref's is 1/speedup
            lo, hi = rec["ci_low"], rec["ci_high"]
            ci = f" [{1.0 / hi:.3f}, {1.0 / lo:.3f}]" if lo and hi else ""
            cond = dict(rc.params).get("condition")
            texts.append((f"{cond}: " if cond else "") + f"{1.0 / rec['speedup']:.3f}x{ci}, "
                         f"p {rec['p_value']:.2g} ({rec['verdict']})")
        if not texts:
            return Pair(None, f"withheld: {ref} was not measured")
        return Pair(differs, "; ".join(texts))

    def plot(self, value: Value) -> Plot:
        lo, hi = (value.ci[0] * 1e3, value.ci[1] * 1e3) if value.ci else (None, None)
        if value.median is None:
            return Plot(None, lo, hi, value.text)
        return Plot(value.median * 1e3, lo, hi, f"{value.median * 1e3:.2f} ms")


@dataclass
class ByCount:
    """Events a kind counts in every run (``counts(result, variant)``: events and runs), the
    commit's against the reference's by Fisher's exact test (two-sided)."""

    counts: Callable[[ScenarioResult, str], tuple[int, int]]
    measures: str = "hangs"  # the events, as the text names them: "hangs 3 of 40"
    axis: str = "hang rate"
    scales_rounds: bool = False

    def value(self, result: ScenarioResult, variant: str) -> Value:
        n, runs = self.counts(result, variant)
        return Value(f"{self.measures} {n} of {runs}", hangs=n, runs=runs)

    def pair(self, result: ScenarioResult, ref: str, other: str, *, alpha: float,
             min_effect: float, seed: int) -> Pair:
        (r, r_runs), (o, o_runs) = self.counts(result, ref), self.counts(result, other)
        assert r_runs and o_runs
        cmp = hangs.compare_hangs(hangs.HangCount(ref, r, r_runs),
                                  hangs.HangCount(other, o, o_runs))
        return Pair(cmp.p_value < alpha, f"{self.measures} {o} of {o_runs} vs {r} of {r_runs}, "
                    f"Fisher p {cmp.p_value:.2g}")

    def plot(self, value: Value) -> Plot:
        y = value.hangs / value.runs if value.hangs is not None and value.runs else None
        return Plot(y, None, None, f"{self.measures} {value.hangs} of {value.runs}")
