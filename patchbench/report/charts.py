"""Charts (PNG, matplotlib imported only when one is drawn)."""

from __future__ import annotations

from pathlib import Path


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


def layers_time(path: Path, layers: list[int], ks: list[int], variants: list[str],
                medians: dict[tuple[str, int, int], float], title: str) -> None:
    """Median time until all k containers exited, against L, one line per (variant, k)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    styles = ["-", "--", ":", "-."]
    for i, v in enumerate(variants):
        for k in ks:
            ax.plot(layers, [medians[(v, n, k)] for n in layers], marker="o",
                    linestyle=styles[i % len(styles)], label=f"{v} k={k}")
    ax.set_xlabel("image layers (L)")
    ax.set_ylabel("seconds until the last container exits (median)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def layers_mounts(path: Path, layers: list[int], counts: dict[str, dict[str, dict[str, int]]],
                  syscalls: tuple[str, ...], title: str) -> None:
    """Mount syscalls of one container start against L, per variant (sum of ``syscalls``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for v, per_l in counts.items():
        ax.plot(layers, [sum(per_l[str(n)][s] for s in syscalls) for n in layers], marker="o",
                label=v)
    ax.set_xlabel("image layers (L)")
    ax.set_ylabel(" + ".join(syscalls) + " per start")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
