"""The A/B gate (``invoke compare NAME --gate``): what makes a run fail CI. "Slower" is judged over
every comparison of the run at once, Holm-adjusted, so more comparisons do not mean more false
alarms; by the rule of schema 5 the gate fails closed (a withheld or inconclusive verdict fails
it unless allowed). Which metrics are gated is a selection apart from the rule (:func:`gated`):
wall time unless the comparison's ``gate`` (or ``--gate-metric``) names others. Each kind adds
its own rule through its ``gate`` (a failed verify check, hangs, leftovers). Older records keep
their rule. docs/statistics.md ("The gate")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from patchbench import scenarios
from patchbench.analysis import gating, paired, stalls, stats
from patchbench.analysis import metrics as mx
from patchbench.report.numbers import fmt_effect_in
from patchbench.results import MetricVerdict, Results, TimedResult, Verdict
from patchbench.util import procguard

ALLOW_HINT = "--gate-allow-inconclusive lets it pass"


@dataclass(frozen=True)
class Judged:
    """One gated metric of one comparison, as the gate's rule reads it (wall time is the
    comparison's own verdict; another metric its ``MetricVerdict``)."""

    scenario: str
    candidate: str  # the candidate cell's label, with the metric when not wall time
    metric: str
    verdict: str
    p_slower: float | None
    alpha: float
    speedup: float
    mde: float | None
    effect: str  # the effect in the metric's unit ("+5.12 ms"), "" without one
    rounds: int | None
    min_rounds: int | None
    method: str = ""
    low: float | None = None  # the 1 - 2 alpha interval of the ratio: one-sided bounds at alpha
    high: float | None = None
    min_effect: float = 0.0
    stalls: stalls.Stalls | None = None  # the comparison's (judged apart: the gate's stall test)


def _timed(results: Results) -> list[tuple[str, Verdict]]:
    # every kind with timed comparisons is a TimedResult; the gate names no kind
    return [(sc.name, c) for sc in results.scenarios if isinstance(sc, TimedResult)
            for c in sc.comparisons]


def gated(results: Results) -> list[Judged]:
    """The selection: every schema-5 comparison's verdict of every metric whose "slower" fails the
    gate (``Results.gate_metrics``: the comparison's ``gate`` or ``--gate-metric``; wall time
    before those existed). A comparison that lacks a gated metric other than wall time (every
    run of a cell hung, or an older record) is judged on what it has."""
    out = []
    for name, c in _timed(results):
        if not c.rule5:
            continue
        for metric in results.gate_metrics or [mx.WALL]:
            if metric == mx.WALL:
                out.append(_wall(name, c))
            elif c.metrics is not None and metric in c.metrics:
                out.append(_metric(name, c, c.metrics[metric]))
    return out


def _wall(name: str, c: Verdict) -> Judged:
    effect = (f"{c.effect_s * 1e3:+.3g} ms" if c.effect_s is not None
              and not math.isnan(c.effect_s) else "")
    st = stalls.Stalls(**c.stalls.model_dump()) if c.stalls is not None else None
    if st is not None and st.speedup is not None:  # called on the runs that did not stall
        return Judged(name, c.candidate, mx.WALL, c.verdict, c.p_slower, c.alpha, st.speedup,
                      c.mde, effect, c.rounds, c.min_rounds, c.method, st.low, st.high,
                      c.min_effect, st)
    return Judged(name, c.candidate, mx.WALL, c.verdict, c.p_slower, c.alpha, c.speedup, c.mde,
                  effect, c.rounds, c.min_rounds, c.method, c.equivalence_low,
                  c.equivalence_high, c.min_effect, st)


def _metric(name: str, c: Verdict, m: MetricVerdict) -> Judged:
    return Judged(name, f"{c.candidate} {m.metric}", m.metric, m.verdict, m.p_slower, m.alpha,
                  m.speedup, m.mde, fmt_effect_in(m.effect, m.metric), m.rounds, m.min_rounds,
                  m.method, m.equivalence_low, m.equivalence_high, m.min_effect)


# --- the rule, per judged metric -------------------------------------------------------------


def _undecided(judged: list[Judged]) -> list[tuple[Judged, str]]:
    """Verdicts that neither pass nor fail on their own: (verdict, why)."""
    tested = [j for j in judged if j.verdict != "withheld"]
    adjusted = dict(zip((id(j) for j in tested), stats.holm(
        [j.p_slower if j.p_slower is not None else 1.0 for j in tested]), strict=True))
    out = []
    for j in judged:
        if j.verdict == "withheld":
            out.append((j, f"verdict withheld ({j.rounds} rounds, at least {j.min_rounds} "
                           "needed)"))
        elif j.verdict == "inconclusive":
            can = f", could detect ±{j.mde:.1%}" if j.mde is not None else ""
            out.append((j, f"inconclusive ({j.speedup:.2f}×{can})"))
        elif j.verdict == "slower" and adjusted[id(j)] >= j.alpha:
            out.append((j, f"slower ({j.speedup:.2f}×) but not after Holm (adjusted one-sided p "
                           f"{adjusted[id(j)]:.2g})"))
    return out


def _slower5(judged: list[Judged]) -> list[str]:
    tested = [j for j in judged if j.verdict != "withheld"]
    adjusted = stats.holm([j.p_slower if j.p_slower is not None else 1.0 for j in tested])
    out = []
    for j, p_adj in zip(tested, adjusted, strict=True):
        if j.verdict == "slower" and p_adj < j.alpha:
            effect = f", {j.effect}" if j.effect else ""
            out.append(f"{j.scenario} {j.candidate}: slower ({j.speedup:.2f}×{effect}, "
                       f"Holm-adjusted one-sided p {p_adj:.2g})")
    return out


def _slower_old(results: Results) -> list[str]:
    # a withheld verdict (too few rounds) never fails the gate and is not one of Holm's tests
    comps = [(n, c) for n, c in _timed(results) if not c.rule5 and c.verdict != "withheld"]
    adjusted = stats.holm([c.p_value if c.p_value is not None else 1.0 for _, c in comps])
    return [f"{name} {c.candidate}: slower ({c.speedup:.2f}×, Holm-adjusted p {p_adj:.2g})"
            for (name, c), p_adj in zip(comps, adjusted, strict=True)
            if c.verdict == "slower" and p_adj < c.alpha]


# --- the rule of results version 6: non-inferiority against a margin (analysis/gating.py) -----


def margin_of(results: Results, j: Judged) -> float | None:
    """The margin the gate calls a metric of a comparison of the current rule against: the
    run's ``gate_margin``, else the metric's own ``min_effect`` (None when that is 0: no margin
    to call against, so the rule of schema 5 judges it)."""
    return results.settings.gate_margin or j.min_effect or None


def _by_margin(results: Results, judged: list[Judged]) -> tuple[list[Judged], list[Judged]]:
    """The judged metrics the margin rule calls (comparisons of the current rule with a margin),
    and the others (older rules: p_slower under Holm)."""
    called = [j for j in judged if j.method == paired.METHOD and margin_of(results, j)]
    return called, [j for j in judged if j not in called]


def _called(results: Results, judged: list[Judged]) -> list[tuple[Judged, gating.GateCall]]:
    out = []
    for j in judged:
        m = margin_of(results, j)
        if j.verdict != "withheld" and m is not None:
            out.append((j, gating.call(j.speedup, j.low, j.high, m)))
    return out


def _margin_failures(results: Results, judged: list[Judged]) -> list[str]:
    out = [f"{j.scenario} {j.candidate}: stalls more often than the baseline ({j.stalls.text()})"
           for j in judged if j.metric == mx.WALL and j.stalls is not None
           and gating.stalls_more(j.stalls, j.alpha)]
    return out + [f"{j.scenario} {j.candidate}: slower than the gate's margin ({c.text()}, "
                  f"one-sided at alpha {j.alpha:.2g})" for j, c in _called(results, judged)
                  if c.call is gating.Call.FAIL]


def _margin_undecided(results: Results, judged: list[Judged]) -> list[tuple[Judged, str]]:
    out = [(j, f"verdict withheld ({j.rounds} rounds, at least {j.min_rounds} needed)")
           for j in judged if j.verdict == "withheld"]
    for j, c in _called(results, judged):
        if c.call is gating.Call.UNDECIDED:
            out.append((j, f"not shown within the gate's margin in {j.rounds} rounds "
                           f"({c.text()})"))
    return out


def let_through(results: Results) -> list[str]:
    """What ``allow_inconclusive`` lets pass (to say so in the output)."""
    by_margin, older = _by_margin(results, gated(results))
    undecided = _undecided(older) + _margin_undecided(results, by_margin)
    return [f"{j.scenario} {j.candidate}: {why}" for j, why in undecided]


def failures(results: Results, *, allow_inconclusive: bool = False) -> list[str]:
    by_margin, judged = _by_margin(results, gated(results))
    out = _slower_old(results) + _slower5(judged) + _margin_failures(results, by_margin)
    undecided = _undecided(judged) + _margin_undecided(results, by_margin)
    if not allow_inconclusive:
        out += [f"{j.scenario} {j.candidate}: {why}: the gate fails closed ({ALLOW_HINT})"
                for j, why in undecided]
    for scenario in results.scenarios:
        out += scenarios.get(scenario.kind).gate(scenario)
    out += [w for w in results.warnings if w.startswith(procguard.ESCAPED + ":")]
    return out

