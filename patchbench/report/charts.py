"""Charts of a saved run, drawn from results.json data alone, as PNG bytes (inlined by the HTML
report). Sized 16:9 with large type, so that they are readable on a slide.

- :func:`distribution_chart`: every run's time per cell, a box, and the median with its 95% CI;
- :func:`round_ratio_chart`: per round, median(baseline) / median(candidate), so drift is seen;
- :func:`burst_chart`: a burst scan: time against k and speedup against k, with 95% CI bars;
- :func:`stress_chart`: what happened to each launched instance in stress rounds, per build;
- :func:`merge_chart`: the speedup with its CI on every machine of a merged report.

Matplotlib is imported here only, and only when a chart is drawn."""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SIZE = (11.0, 6.2)  # inches at DPI: 1100 x 620 px, 16:9-ish
DPI = 100
STYLE: dict[str, Any] = {
    "font.size": 14, "axes.titlesize": 17, "axes.labelsize": 15, "legend.fontsize": 13,
    "xtick.labelsize": 13, "ytick.labelsize": 13, "axes.grid": True, "grid.alpha": 0.3,
    "axes.spines.top": False, "axes.spines.right": False,
}
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


@contextmanager
def _figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = SIZE) -> Iterator[Any]:
    import matplotlib  # heavy (~0.5 s with pyplot): only when a chart is drawn
    from matplotlib.figure import Figure  # heavy (~0.5 s with pyplot): only when a chart is drawn

    with matplotlib.rc_context(STYLE):  # type: ignore[arg-type]  # Literal keys in the stubs
        fig = Figure(figsize=size, dpi=DPI, layout="constrained")
        fig.subplots(nrows, ncols, squeeze=False)
        yield fig


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor="white")
    return buf.getvalue()


def _plain_ticks(axis: Any) -> None:
    """Tick labels of a log axis as plain numbers (50, 100, 200), not powers of ten."""
    from matplotlib.ticker import FuncFormatter  # heavy (~0.5 s with pyplot): only when a chart is drawn

    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _pos: f"{v:g}" if str(f"{v:g}")[0] in "25"
                                           else ""))


def time_unit(values: Sequence[float]) -> tuple[float, str]:
    """A scale and unit name that suits ``values`` (seconds): ms below one second."""
    top = max(values) if values else 0.0
    if top >= 1:
        return 1.0, "s"
    if top >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


def _variants(sc: dict[str, Any]) -> list[str]:
    seen: list[str] = []
    for c in sc.get("cells", []):
        if c["variant"] not in seen:
            seen.append(c["variant"])
    return seen


def distribution_chart(sc: dict[str, Any]) -> bytes | None:
    """Every run of every cell (dots), a box of the quartiles with lines to the minimum and
    maximum, and the median with its 95% CI."""
    import numpy as np  # ~60 ms: only when a chart is drawn

    cells = [c for c in sc.get("cells", []) if c.get("samples", {}).get("times")]
    if not cells:
        return None
    scale, unit = time_unit([t for c in cells for t in c["samples"]["times"]])
    variants = _variants(sc)
    height = max(3.6, min(12.0, 1.4 + 0.62 * len(cells)))
    with _figure(size=(SIZE[0], height)) as fig:
        ax = fig.axes[0]
        rng = np.random.default_rng(0)
        labels = []
        for y, c in enumerate(reversed(cells)):
            color = COLORS[variants.index(c["variant"]) % len(COLORS)]
            t = np.asarray(c["samples"]["times"]) * scale
            q1, med, q3 = np.percentile(t, [25, 50, 75])
            ax.barh([y], [q3 - q1], left=[q1], height=0.55, fill=False, edgecolor="black")
            ax.vlines([med], y - 0.275, y + 0.275, color=color, linewidth=2.5)
            ax.hlines([y, y], [t.min(), q3], [q1, t.max()], color="black", linewidth=1)
            ax.scatter(t, y + rng.uniform(-0.22, 0.22, t.size), s=12, alpha=0.45, color=color,
                       linewidths=0)
            s = c["summary"]
            ci = s.get("median_ci")
            if ci:
                ax.errorbar([s["median"] * scale], [y + 0.38],
                            xerr=[[(s["median"] - ci[0]) * scale], [(ci[1] - s["median"]) * scale]],
                            fmt="D", color="black", capsize=6, markersize=6, linewidth=2)
            labels.append(c["label"])
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xlabel(f"time per run ({unit})")
        ax.set_title(f"{sc['name']}: every run per cell; ◆ = median with its 95% CI")
        if max(c["summary"]["max"] for c in cells) / max(min(c["summary"]["min"] for c in cells),
                                                         1e-12) > 20:
            ax.set_xscale("log")
            _plain_ticks(ax.xaxis)
        return _png(fig)


def round_ratios(sc: dict[str, Any], comp: dict[str, Any]) -> list[tuple[int, float]]:
    """Per round: median of the baseline's runs in it / median of the candidate's runs in it."""
    import numpy as np  # ~60 ms: only when a chart is drawn

    cells = {c["label"]: c for c in sc.get("cells", [])}
    base = cells[comp["baseline"]].get("samples", {})
    cand = cells[comp["candidate"]].get("samples", {})
    out = []
    for r in sorted(set(base.get("rounds") or []) & set(cand.get("rounds") or [])):
        b = [t for t, rr in zip(base["times"], base["rounds"], strict=True) if rr == r]
        c = [t for t, rr in zip(cand["times"], cand["rounds"], strict=True) if rr == r]
        if b and c:
            out.append((int(r), float(np.median(b) / np.median(c))))
    return out


def round_ratio_chart(sc: dict[str, Any]) -> bytes | None:
    """The speedup measured within each round: a drift across rounds shows as a slope."""
    series = [(comp, round_ratios(sc, comp)) for comp in sc.get("comparisons", [])]
    series = [(comp, rr) for comp, rr in series if len(rr) >= 2]
    if not series:
        return None
    with _figure() as fig:
        ax = fig.axes[0]
        for i, (comp, rr) in enumerate(series):
            color = COLORS[(i + 1) % len(COLORS)]
            xs, ys = [r for r, _ in rr], [v for _, v in rr]
            label = comp["candidate"]
            ax.plot(xs, ys, marker="o", color=color, linewidth=2, markersize=7,
                    label=f"{label}: overall {comp['speedup']:.2f}×")
            if comp.get("ci_low") is not None and len(series) <= 2:
                ax.axhspan(comp["ci_low"], comp["ci_high"], color=color, alpha=0.12,
                           label=f"{label}: 95% CI of the overall speedup")
        values = [v for _, rr in series for _, v in rr]
        span = max(values) - min(values) or 0.05
        if min(values) - span <= 1.0 <= max(values) + span:
            ax.axhline(1.0, color="grey", linestyle="--", linewidth=1.5, label="1× (no difference)")
        else:  # 1× far away would flatten the rounds into a line and hide the drift
            ax.plot([], [], " ", label=f"(1× = no difference is {'below' if min(values) > 1 else 'above'}"
                                      " this scale)")
        ax.set_xlabel("round")
        ax.set_ylabel("baseline median / candidate median")
        ax.set_title(f"{sc['name']}: speedup within each round (above 1 = candidate faster)")
        rounds = sorted({r for _, rr in series for r, _ in rr})
        ax.set_xticks(rounds, [str(r) for r in rounds])
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False,
                  ncols=2 if len(series) > 1 else 1)
        return _png(fig)


def burst_chart(sc: dict[str, Any]) -> bytes | None:
    """Left: seconds until the last of k instances exits, per build, with 95% CI bars.
    Right: the speedup per k with its 95% CI."""
    ks = [int(k) for k in sc.get("k", [])]
    if not ks or not sc.get("cells", []):
        return None
    cells = {(c["variant"], int(c["params"]["k"])): c for c in sc.get("cells", [])}
    variants = _variants(sc)
    scale, unit = time_unit([c["summary"]["max"] for c in sc.get("cells", [])])
    with _figure(1, 2) as fig:
        left, right = fig.axes
        for i, v in enumerate(variants):
            pts = [(k, cells[(v, k)]["summary"]) for k in ks if (v, k) in cells]
            med = [s["median"] * scale for _, s in pts]
            lo = [(s["median"] - (s.get("median_ci") or [s["median"]] * 2)[0]) * scale
                  for _, s in pts]
            hi = [((s.get("median_ci") or [s["median"]] * 2)[1] - s["median"]) * scale
                  for _, s in pts]
            left.errorbar([k for k, _ in pts], med, yerr=[lo, hi], marker="o", capsize=5,
                          linewidth=2, color=COLORS[i % len(COLORS)], label=v)
        left.set_xscale("log", base=2)
        left.set_xticks(ks, [str(k) for k in ks])
        left.set_xlabel("instances launched at once (k)")
        left.set_ylabel(f"until the last one exits ({unit}), median")
        left.set_title("time per burst (95% CI bars)")
        left.legend(loc="upper left")
        by_label = {c["label"]: c for c in sc.get("cells", [])}
        for i, v in enumerate(variants[1:], start=1):
            pts2 = sorted(((int(by_label[c["candidate"]]["params"]["k"]), c)
                           for c in sc.get("comparisons", []) if c["candidate_variant"] == v),
                          key=lambda kc: kc[0])
            xs = [k for k, _ in pts2]
            ys = [c["speedup"] for _, c in pts2]
            lo = [c["speedup"] - (c["ci_low"] if c.get("ci_low") is not None else c["speedup"])
                  for _, c in pts2]
            hi = [(c["ci_high"] if c.get("ci_high") is not None else c["speedup"]) - c["speedup"]
                  for _, c in pts2]
            right.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=5, linewidth=2,
                           color=COLORS[i % len(COLORS)], label=v)
        right.axhline(1.0, color="grey", linestyle="--", linewidth=1.5)
        right.set_xscale("log", base=2)
        right.set_xticks(ks, [str(k) for k in ks])
        right.set_xlabel("instances launched at once (k)")
        right.set_ylabel("speedup, baseline / candidate (>1 = faster)")
        right.set_title("speedup per k (95% CI bars)")
        if len(variants) > 1:
            right.legend(loc="best")
        fig.suptitle(f"{sc['name']}: burst scan", fontsize=18)
        return _png(fig)


def stress_chart(sc: dict[str, Any]) -> bytes | None:
    """Per build, how every launched instance ended, as stacked bars (``sc``: a stress
    scenario, as results.json holds it)."""
    per_build: dict[str, Any] = sc.get("per_build") or {}
    if not per_build:
        return None
    builds = list(per_build)
    outcomes = sorted({o for pb in per_build.values() for o in pb.get("outcomes", {})},
                      key=lambda o: -sum(pb.get("outcomes", {}).get(o, 0)
                                         for pb in per_build.values()))
    height = max(4.0, 2.4 + 0.9 * len(builds) + 0.35 * len(outcomes))
    with _figure(size=(SIZE[0], min(height, 10.0))) as fig:
        ax = fig.axes[0]
        left = [0.0] * len(builds)
        for i, o in enumerate(outcomes):
            vals = [float(per_build[b].get("outcomes", {}).get(o, 0)) for b in builds]
            ax.barh(builds, vals, left=left, color=COLORS[i % len(COLORS)], label=o)
            left = [a + v for a, v in zip(left, vals, strict=True)]
        for y, b in enumerate(builds):
            pb = per_build[b]
            ax.annotate(f"hangs {pb['hangs']}, leftovers {pb['leftovers']}, "
                        f"fresh failed {pb['fresh_failures']}, kill errors {pb['kill_errors']}",
                        (left[y], y), xytext=(8, 0), textcoords="offset points", va="center",
                        fontsize=11)
        ax.set_xlim(0, max(left) * 2.1 if max(left) else 1)
        ax.invert_yaxis()
        ax.set_xlabel("launched instances")
        ax.set_title(f"{sc['name']}: how each launched instance ended")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=1, frameon=False)
        return _png(fig)


def merge_chart(rows: Sequence[tuple[str, Sequence[tuple[str, dict[str, Any] | None]]]]) -> bytes | None:
    """A forest plot: for each comparison (row), the speedup and its CI on every machine."""
    rows = [r for r in rows if any(c for _, c in r[1])]
    if not rows:
        return None
    machines: list[str] = []
    for _, per in rows:
        for m, _c in per:
            if m not in machines:
                machines.append(m)
    height = max(3.8, min(12.0, 1.8 + 0.5 * len(rows) * max(1, len(machines))))
    with _figure(size=(SIZE[0], height)) as fig:
        ax = fig.axes[0]
        step = 0.8 / max(1, len(machines))
        for j, m in enumerate(machines):
            xs, ys, lo, hi = [], [], [], []
            for i, (_, per) in enumerate(rows):
                c = dict(per).get(m)
                if not c:
                    continue
                y = len(rows) - 1 - i + 0.4 - step * (j + 0.5)
                xs.append(c["speedup"])
                ys.append(y)
                lo.append(c["speedup"] - (c["ci_low"] if c.get("ci_low") is not None
                                          else c["speedup"]))
                hi.append((c["ci_high"] if c.get("ci_high") is not None else c["speedup"])
                          - c["speedup"])
            ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", capsize=5, linewidth=2, markersize=7,
                        color=COLORS[j % len(COLORS)], label=m)
        ax.axvline(1.0, color="grey", linestyle="--", linewidth=1.5)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_yticks([len(rows) - 1 - i for i in range(len(rows))], [r[0] for r in rows])
        ax.set_xlabel("speedup, baseline median / candidate median (95% CI)")
        ax.set_title("speedup on each machine (above 1 = candidate faster)")
        ax.legend(loc="best")
        return _png(fig)


def burst(path: Path, ks: list[int], variants: list[str],
          medians: dict[tuple[str, int], float], title: str) -> None:
    """Median time until the last of k instances exits, against k, with the k × single line."""
    import matplotlib  # heavy (~0.5 s with pyplot): only when a chart is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy (~0.5 s with pyplot): only when a chart is drawn

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
    import matplotlib  # heavy (~0.5 s with pyplot): only when a chart is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy (~0.5 s with pyplot): only when a chart is drawn

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
    import matplotlib  # heavy (~0.5 s with pyplot): only when a chart is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy (~0.5 s with pyplot): only when a chart is drawn

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
