"""One live rule: a saved run whose comparisons were judged by an earlier rule (results version
1 to 7: the pooled rule, the round-paired medians of schema 3-4, the rules of schema 5 to 7) is
read through :func:`rejudge`, which judges every comparison again from its raw samples by the
live rule (:func:`patchbench.analysis.verdict.judge`), as if it had been measured today. Every
report, ``diff``, ``merge`` and the gate therefore see one rule; what each earlier rule said is
in git history (docs/statistics.md, "Earlier rules") and benchmarks/results/rejudged_reports.md
lists what changed for the committed reports.

The run's own settings are kept: each comparison's alpha (a stopped run's per-look level),
min_effect and min_rounds, the scenario's seed (the run's seed plus the scenario's index, as the
measurement gave it) and the order its rounds ran in. Metrics are judged again where the record
had them (results version 6 on); the hang test is kept as it was. A comparison without a round of
both variants keeps its record."""

from __future__ import annotations

from typing import Any

from patchbench.analysis import metrics as mx
from patchbench.analysis import paired, stats, verdict
from patchbench.results import MetricVerdict, Results, TimedResult, Verdict


def stale(res: Results) -> bool:
    """Whether any comparison of ``res`` was judged by a rule other than the live one."""
    return any(c.method != paired.METHOD for sc in res.scenarios if isinstance(sc, TimedResult)
               for c in sc.comparisons)


def rejudge(res: Results) -> Results:
    """``res`` with every comparison judged by an earlier rule judged again by the live one
    (a new object; ``res`` is left as it is). A run of the live rule is returned as it is."""
    if not stale(res):
        return res
    out = res.model_copy(deep=True)
    gated = tuple(res.gate_metrics or (mx.WALL,))
    for i, sc in enumerate(out.scenarios):
        if not isinstance(sc, TimedResult):
            continue
        cells = {c.label: c for c in sc.cells}
        order = getattr(sc, "order", None) or []
        sc.comparisons = [
            c if c.method == paired.METHOD else _again(c, cells, order, res.seed + i, gated)
            for c in sc.comparisons]
    return out


def _again(c: Verdict, cells: dict[str, Any], order: list[list[str]], seed: int,
           gated: tuple[str, ...]) -> Verdict:
    b, k = cells[c.baseline].samples, cells[c.candidate].samples
    if not set(b.rounds) & set(k.rounds):
        return c
    signs = paired.neighbour_signs(order, c.baseline, c.candidate) if order else None
    chosen = ({n: m.min_effect for n, m in c.metrics.items()} if c.metrics is not None
              else None)
    j = verdict.judge(b, k, alpha=c.alpha, min_effect=c.min_effect, seed=seed,
                      min_rounds=c.min_rounds or stats.MIN_ROUNDS, signs=signs,
                      metrics=chosen, gated=gated)
    keep = {"baseline": c.baseline, "candidate": c.candidate,
            "candidate_variant": c.candidate_variant, "params": c.params, "hangs": c.hangs}
    mets = ({n: MetricVerdict(**m) for n, m in j.metrics.items()} if chosen is not None
            else None)
    return Verdict.model_validate({**keep, **j.record, "metrics": mets})
