"""One baseline/candidate comparison as results.json records it, judged by the round-paired rule
(issue 9), and the warnings it raises (a withheld verdict, drift between blocks).

The record keeps today's field names at the top (speedup, ci_low, ci_high, p_value, verdict,
alpha, min_effect), now from :func:`patchbench.analysis.stats.paired_rounds`, and adds the paired details
(rounds, min_rounds, round_ids, round_ratios, wilcoxon_p, drift, note, method). The pooled
Mann-Whitney p and bootstrap CI stay, under ``pooled``, as descriptive figures only, labelled as
assuming independent runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from patchbench.analysis import stats

POOLED_ASSUMES = "independent runs (descriptive only: runs of one round are consecutive)"


def record(
    base_times: Sequence[float], base_rounds: Sequence[int], cand_times: Sequence[float],
    cand_rounds: Sequence[int], *, alpha: float, min_effect: float, seed: int,
    min_rounds: int = stats.MIN_ROUNDS,
) -> dict[str, Any]:
    """The comparison record: the paired verdict at the top, the pooled figures under ``pooled``."""
    paired = stats.paired_rounds(base_times, base_rounds, cand_times, cand_rounds, alpha=alpha,
                                 min_effect=min_effect, min_rounds=min_rounds)
    pooled = stats.compare(base_times, cand_times, alpha=alpha, min_effect=min_effect, seed=seed)
    return {**paired.as_dict(), "pooled": {**pooled.as_dict(), "assumes": POOLED_ASSUMES}}


def notes(name: str, rec: Mapping[str, Any]) -> list[str]:
    """Warnings for the printed report and report.md: a withheld verdict, and drift."""
    out = []
    if rec["verdict"] == "withheld":
        out.append(f"{name}: {rec['note']}; the estimate is {rec['speedup']:.3f}× "
                   f"(run more rounds: --rounds {rec['min_rounds']} or more)")
    drift = rec.get("drift")
    if drift and drift["flagged"]:
        out.append(f"{name}: drift: {drift['meaning']}")
    return out
