"""The A/B gate (``invoke compare NAME --gate``): what makes a run fail CI. The rule is one, in
patchbench.analysis.gating (non-inferiority against a margin: pass, fail, or undecided and failed
closed unless allowed; wall time called on the runs that did not stall, a candidate that stalls
more often failing); this module selects what it judges (:func:`gated`: every gated metric of
every comparison; wall time unless the comparison's ``gate`` or ``--gate-metric`` names others)
and adds each kind's own checks (a failed verify check, hangs, leftovers) and escaped processes.
The gate passes only when every judged metric passes: an intersection-union test, which needs no
multiplicity correction and applies none. docs/statistics.md ("The gate")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from patchbench import scenarios
from patchbench.analysis import gating, stalls
from patchbench.analysis import metrics as mx
from patchbench.analysis.rejudge import rejudge
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
    # wall time: the bounds are of the runs that did not stall when any did


def _timed(results: Results) -> list[tuple[str, Verdict]]:
    # every kind with timed comparisons is a TimedResult; the gate names no kind
    return [(sc.name, c) for sc in results.scenarios if isinstance(sc, TimedResult)
            for c in sc.comparisons]


def gated(results: Results) -> list[Judged]:
    """The selection: every comparison's verdict of every gated metric (``Results.gate_metrics``:
    the comparison's ``gate`` or ``--gate-metric``; wall time before those existed). A
    comparison that lacks a gated metric other than wall time (every run of a cell hung, or an
    older record) is judged on what it has. A record of an earlier rule is judged again by the
    live one first (patchbench.analysis.rejudge)."""
    out = []
    for name, c in _timed(rejudge(results)):
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


# --- the rule (patchbench.analysis.gating), per judged metric ---------------------------------


def margin_of(results: Results, j: Judged) -> float | None:
    """The margin the gate calls a metric of a comparison against: the run's ``gate_margin``,
    else the metric's own ``min_effect`` (None when that is 0: no margin to call against)."""
    return results.settings.gate_margin or j.min_effect or None


def _calls(results: Results) -> list[tuple[Judged, gating.Call, str]]:
    out = []
    for j in gated(results):
        call, why = gating.decide(gating.Gated(
            j.verdict, j.speedup, j.low, j.high, margin_of(results, j), j.alpha, j.rounds,
            j.min_rounds, j.stalls if j.metric == mx.WALL else None))
        out.append((j, call, why))
    return out


def let_through(results: Results) -> list[str]:
    """What ``allow_inconclusive`` lets pass (to say so in the output)."""
    return [f"{j.scenario} {j.candidate}: {why}" for j, call, why in _calls(results)
            if call is gating.Call.UNDECIDED]


def failures(results: Results, *, allow_inconclusive: bool = False) -> list[str]:
    out = []
    for j, call, why in _calls(results):
        if call is gating.Call.FAIL:
            out.append(f"{j.scenario} {j.candidate}: {why}")
        elif call is gating.Call.UNDECIDED and not allow_inconclusive:
            out.append(f"{j.scenario} {j.candidate}: {why}: the gate fails closed ({ALLOW_HINT})")
    for scenario in results.scenarios:
        out += scenarios.get(scenario.kind).gate(scenario)
    out += [w for w in results.warnings if w.startswith(procguard.ESCAPED + ":")]
    return out
