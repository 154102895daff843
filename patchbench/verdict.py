"""One baseline/candidate comparison as results.json records it, judged by the round-paired rule
(issue 9), plus what the report shows of it: the per-round ratios, the drift warning, a withheld
verdict, and a chart of the per-round ratios.

The record keeps today's field names at the top (speedup, ci_low, ci_high, p_value, verdict,
alpha, min_effect), now from :func:`patchbench.stats.paired_rounds`, and adds the paired details
(rounds, min_rounds, round_ids, round_ratios, wilcoxon_p, drift, note, method). The pooled
Mann-Whitney p and bootstrap CI stay, under ``pooled``, as descriptive figures only, labelled as
assuming independent runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from patchbench import stats

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


def gate_p_values(comparisons: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """The p-values that go into the gate's Holm step, one per comparison: None for a withheld
    verdict (it never fails the gate and does not count as a test), 1.0 when there is no p."""
    return [None if c["verdict"] == "withheld"
            else (c["p_value"] if c["p_value"] is not None else 1.0) for c in comparisons]


def holm_with_withheld(comparisons: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """Holm-adjusted p-values over the comparisons that have a verdict; None for withheld ones."""
    ps = gate_p_values(comparisons)
    tested = [p for p in ps if p is not None]
    adjusted = iter(stats.holm(tested))
    return [None if p is None else next(adjusted) for p in ps]


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


def round_ratio_markdown(name: str, rec: Mapping[str, Any]) -> str:
    """The per-round ratios as a markdown table, with the drift check below it."""
    ids, ratios = rec["round_ids"], rec["round_ratios"]
    lines = [f"Per-round ratios, {name} (median baseline / median candidate in each round; "
             "the verdict is the t interval on their logs):", "",
             "| round | " + " | ".join(str(r) for r in ids) + " |",
             "|---|" + "---|" * len(ids),
             "| ratio | " + " | ".join(f"{x:.3f}" for x in ratios) + " |"]
    drift = rec.get("drift")
    if drift:
        lines += ["", f"Drift check: {drift['meaning']}"]
    if rec.get("wilcoxon_p") is not None:
        lines += ["", f"Exact Wilcoxon signed-rank p on the per-round log ratios (descriptive): "
                  f"{rec['wilcoxon_p']:.2g}."]
    return "\n".join(lines)


def draw_round_ratios(path: Path, series: Mapping[str, Mapping[str, Any]], title: str) -> None:
    """A chart of the per-round ratios of one or more comparisons (label -> record), with each
    comparison's paired estimate and CI as a band, and 1 (no difference) as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for i, (label, rec) in enumerate(series.items()):
        color = f"C{i % 10}"
        ax.plot(rec["round_ids"], rec["round_ratios"], marker="o", linestyle="-", color=color,
                label=f"{label}: {rec['speedup']:.3f}× ({rec['verdict']})")
        if rec.get("ci_low") is not None:
            ax.axhspan(rec["ci_low"], rec["ci_high"], color=color, alpha=0.12)
        ax.axhline(rec["speedup"], color=color, linestyle=":", linewidth=1)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="no difference")
    ax.set_xlabel("round")
    ax.set_ylabel("median baseline / median candidate")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
