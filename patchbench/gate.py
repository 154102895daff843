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
from patchbench.analysis import metrics as mx
from patchbench.analysis import stats
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
    return Judged(name, c.candidate, mx.WALL, c.verdict, c.p_slower, c.alpha, c.speedup, c.mde,
                  effect, c.rounds, c.min_rounds)


def _metric(name: str, c: Verdict, m: MetricVerdict) -> Judged:
    return Judged(name, f"{c.candidate} {m.metric}", m.metric, m.verdict, m.p_slower, m.alpha,
                  m.speedup, m.mde, fmt_effect_in(m.effect, m.metric), m.rounds, m.min_rounds)


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


def let_through(results: Results) -> list[str]:
    """What ``allow_inconclusive`` lets pass (to say so in the output)."""
    return [f"{j.scenario} {j.candidate}: {why}" for j, why in _undecided(gated(results))]


def failures(results: Results, *, allow_inconclusive: bool = False) -> list[str]:
    judged = gated(results)
    out = _slower_old(results) + _slower5(judged)
    if not allow_inconclusive:
        out += [f"{j.scenario} {j.candidate}: {why}: the gate fails closed ({ALLOW_HINT})"
                for j, why in _undecided(judged)]
    for scenario in results.scenarios:
        out += scenarios.get(scenario.kind).gate(scenario)
    out += [w for w in results.warnings if w.startswith(procguard.ESCAPED + ":")]
    return out
