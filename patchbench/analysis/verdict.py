"""One baseline/candidate comparison as results.json records it, judged by the round-paired rule
of schema 5 (:func:`patchbench.analysis.paired.paired_verdict`), and the warnings it
raises (a withheld or inconclusive verdict, drift between blocks).

The record keeps the field names of schema 3 at the top (speedup, ci_low, ci_high, p_value,
verdict, alpha, min_effect, rounds, min_rounds, round_ids, round_ratios, wilcoxon_p, drift, note,
method) and adds schema 5's (p_slower, p_faster, p_equivalent, equivalence_low/high, mde,
effect_s with its interval, resolution_s). The pooled Mann-Whitney p and bootstrap CI stay, under
``pooled``, as descriptive figures only, labelled as assuming independent runs. Records of
schema 3 and 4 were judged by :func:`patchbench.analysis.stats.paired_rounds` (``method`` says
which) and are shown as they were judged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from patchbench.analysis import paired, stats

POOLED_ASSUMES = "independent runs (descriptive only: runs of one round are consecutive)"


def record(
    base_times: Sequence[float], base_rounds: Sequence[int], cand_times: Sequence[float],
    cand_rounds: Sequence[int], *, alpha: float, min_effect: float, seed: int,
    min_rounds: int = stats.MIN_ROUNDS, signs: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """The comparison record: the paired verdict at the top, the pooled figures under ``pooled``;
    ``signs``: how neighbouring rounds share noise (``paired.neighbour_signs``)."""
    judged = paired.paired_verdict(base_times, base_rounds, cand_times, cand_rounds, alpha=alpha,
                                   min_effect=min_effect, min_rounds=min_rounds, signs=signs,
                                   seed=seed)
    pooled = stats.compare(base_times, cand_times, alpha=alpha, min_effect=min_effect, seed=seed)
    return {**judged.as_dict(), "pooled": {**pooled.as_dict(), "assumes": POOLED_ASSUMES}}


def detectable_text(mde: float | None) -> str:
    """"this run could detect changes of ±X % or more" (empty without an estimate of noise)."""
    if mde is None:
        return ""
    return f"this run could detect changes of ±{mde:.1%} or more ({paired.POWER:.0%} power)"


def notes(name: str, rec: Mapping[str, Any]) -> list[str]:
    """Warnings for the printed report and report.md: a withheld verdict, an inconclusive one
    (schema 5: with what this run could detect), a note on zero spread, and drift."""
    out = []
    if rec["verdict"] == "withheld":
        out.append(f"{name}: {rec['note']}; the estimate is {rec['speedup']:.3f}× "
                   f"(run more rounds: --rounds {rec['min_rounds']} or more)")
    elif rec["verdict"] == paired.Verdict.INCONCLUSIVE:
        can = detectable_text(rec.get("mde"))
        out.append(f"{name}: inconclusive: neither a change beyond ±{rec['min_effect']:.0%} nor "
                   f"equivalence within it is shown" + (f"; {can}" if can else "")
                   + (f"; {rec['note']}" if rec.get("note") else ""))
    elif rec.get("note"):
        out.append(f"{name}: {rec['note']}")
    drift = rec.get("drift")
    if drift and drift["flagged"]:
        out.append(f"{name}: drift: {drift['meaning']}")
    also = rec.get("also")
    if also and also["disagree"]:
        out.append(f"{name}: the answers disagree: {also['disagree']}")
    return out
