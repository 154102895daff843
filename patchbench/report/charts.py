"""Charts (PNG, matplotlib imported only when one is drawn)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def burst(path: Path, ks: list[int], variants: list[str],
          medians: dict[tuple[str, int], float], title: str) -> None:
    """Median time until the last of k instances exits, against k, with the k × single line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for v in variants:
        ax.plot(ks, [medians[(v, k)] for k in ks], marker="o", label=v)
    single = medians[(variants[0], min(ks))] / min(ks)
    ax.plot(ks, [single * k for k in ks], linestyle="--", color="grey",
            label=f"k × single ({single * 1e3:.1f} ms)")
    ax.set_xlabel("instances launched at once (k)")
    ax.set_ylabel("seconds until the last one exits (median)")
    ax.set_title(title)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def round_ratios(path: Path, series: Mapping[str, Mapping[str, Any]], title: str) -> None:
    """A chart of the per-round ratios of one or more comparisons (label -> record), with each
    comparison's paired estimate and CI as a band, and 1 (no difference) as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    values = [x for rec in series.values() for x in rec["round_ratios"]]
    values += [x for rec in series.values() for x in (rec.get("ci_low"), rec.get("ci_high"))
               if x is not None]
    for i, (label, rec) in enumerate(series.items()):
        color = f"C{i % 10}"
        ax.plot(rec["round_ids"], rec["round_ratios"], marker="o", linestyle="-", color=color,
                label=f"{label}: {rec['speedup']:.3f}× ({rec['verdict']})")
        if rec.get("ci_low") is not None:
            ax.axhspan(rec["ci_low"], rec["ci_high"], color=color, alpha=0.12)
        ax.axhline(rec["speedup"], color=color, linestyle=":", linewidth=1)
    if min(values) / 1.25 <= 1.0 <= max(values) * 1.25:  # else it would squash the rounds
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="no difference")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round")
    ax.set_ylabel("median baseline / median candidate")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
