"""Charts of a saved run, drawn from results.json data alone as SVG written directly: readable on a
slide (1100 px wide, large type), crisp at any zoom, and without a plotting library, whose import
and rendering cost seconds per report. Among them ``metrics_chart``, a small multiple with one
panel per metric. Text from the data is escaped for XML, and marks carry a class (``run``,
``box``, ``median``, ``ci``, ``point``, ``bar``) so that a test can count them. What each chart
shows: docs/reports.md."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from patchbench.analysis import metrics as mx
from patchbench.analysis import stats
from patchbench.util.escape import xml_text

WIDTH, HEIGHT = 1100, 620  # px, 16:9-ish (the PNGs were 11 x 6.2 in at 100 dpi)
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif"
TITLE, LABEL, TICK, LEGEND = 17, 15, 13, 13  # font sizes, px
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
GRID = "#dddddd"
MAX_DOTS = 1500  # dots per cell in the distribution chart: beyond, evenly spaced quantiles
PANEL_DOTS = 120  # dots per cell in a small multiple's panel (metrics_chart)


def _n(v: float) -> str:
    """A coordinate, short."""
    return f"{v:.1f}".rstrip("0").rstrip(".") if math.isfinite(v) else "0"


def text_width(s: str, size: float) -> float:
    """An estimate of a text's width in px (no font metrics here): 0.6 em a character."""
    return 0.56 * size * len(s)


def _fit(s: str, size: float, width: float) -> str:
    """``s``, cut with an ellipsis to about ``width`` px."""
    if text_width(s, size) <= width:
        return s
    keep = max(1, int(width / (0.56 * size)) - 1)
    return s[:keep] + "…"


class Svg:
    """An SVG document being written: elements as strings, every text escaped."""

    def __init__(self, width: float, height: float, title: str) -> None:
        self.width, self.height = width, height
        self.parts: list[str] = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
            f'viewBox="0 0 {_n(width)} {_n(height)}" font-family="{FONT}" font-size="{TICK}">',
            f"<title>{xml_text(title)}</title>",
            f'<rect width="{_n(width)}" height="{_n(height)}" fill="#ffffff"/>',
        ]

    def add(self, element: str) -> None:
        self.parts.append(element)

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str = "#000000",
             width: float = 1.0, dash: str = "", cls: str = "") -> None:
        self.add(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" '
                 f'stroke="{color}" stroke-width="{_n(width)}"'
                 + (f' stroke-dasharray="{dash}"' if dash else "")
                 + (f' class="{cls}"' if cls else "") + "/>")

    def rect(self, x: float, y: float, w: float, h: float, *, fill: str = "none",
             stroke: str = "none", opacity: float = 1.0, cls: str = "", tip: str = "") -> None:
        attrs = (f'x="{_n(x)}" y="{_n(y)}" width="{_n(max(w, 0.0))}" height="{_n(max(h, 0.0))}" '
                 f'fill="{fill}" stroke="{stroke}"'
                 + (f' fill-opacity="{opacity:g}"' if opacity != 1.0 else "")
                 + (f' class="{cls}"' if cls else ""))
        self.add(f"<rect {attrs}><title>{xml_text(tip)}</title></rect>" if tip
                 else f"<rect {attrs}/>")

    def circle(self, x: float, y: float, r: float, color: str, opacity: float = 1.0,
               cls: str = "", tip: str = "") -> None:
        attrs = (f'cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}" fill="{color}"'
                 + (f' fill-opacity="{opacity:g}"' if opacity != 1.0 else "")
                 + (f' class="{cls}"' if cls else ""))
        self.add(f"<circle {attrs}><title>{xml_text(tip)}</title></circle>" if tip
                 else f"<circle {attrs}/>")

    def polyline(self, pts: Sequence[tuple[float, float]], color: str, width: float = 2.0,
                 dash: str = "") -> None:
        if len(pts) < 2:
            return
        self.add(f'<polyline points="{" ".join(f"{_n(x)},{_n(y)}" for x, y in pts)}" '
                 f'fill="none" stroke="{color}" stroke-width="{_n(width)}"'
                 + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")

    def diamond(self, x: float, y: float, r: float, color: str, cls: str = "") -> None:
        pts = f"{_n(x)},{_n(y - r)} {_n(x + r)},{_n(y)} {_n(x)},{_n(y + r)} {_n(x - r)},{_n(y)}"
        self.add(f'<polygon points="{pts}" fill="{color}"' + (f' class="{cls}"' if cls else "")
                 + "/>")

    def text(self, x: float, y: float, s: str, *, size: float = TICK, anchor: str = "start",
             weight: str = "", rotate: bool = False, color: str = "#000000",
             full: str = "") -> None:
        """``s`` at (x, y) (its baseline, vertically centred on y when ``anchor`` says so);
        ``full``: the whole text as a tooltip when ``s`` was cut."""
        attrs = (f'x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}" '
                 f'fill="{color}" dominant-baseline="middle"'
                 + (f' font-weight="{weight}"' if weight else "")
                 + (f' transform="rotate(-90 {_n(x)} {_n(y)})"' if rotate else ""))
        tip = f"<title>{xml_text(full)}</title>" if full and full != s else ""
        self.add(f"<text {attrs}>{tip}{xml_text(s)}</text>")

    def done(self) -> bytes:
        return ("\n".join([*self.parts, "</svg>"]) + "\n").encode()


@dataclass
class Scale:
    """Data to a fraction of an axis: linear, or logarithmic with ``base``."""

    lo: float
    hi: float
    log: bool = False

    def __call__(self, v: float) -> float:
        if self.log:
            lo, hi = math.log(self.lo), math.log(self.hi)
            v = math.log(max(v, 1e-300))
        else:
            lo, hi = self.lo, self.hi
        return (v - lo) / (hi - lo) if hi != lo else 0.5


def span(values: Sequence[float], *, log: bool = False, margin: float = 0.05,
         include: Sequence[float] = ()) -> Scale:
    """A scale over ``values`` (and ``include``) with a margin each side, as a plot shows it."""
    vals = [v for v in [*values, *include] if math.isfinite(v) and (v > 0 or not log)]
    if not vals:
        return Scale(1.0, 10.0, log) if log else Scale(0.0, 1.0)
    lo, hi = min(vals), max(vals)
    if log:
        a, b = math.log(lo), math.log(hi)
        d = (b - a) or math.log(2)
        return Scale(math.exp(a - margin * d), math.exp(b + margin * d), True)
    d = (hi - lo) or (abs(hi) * 0.1 or 1.0)
    return Scale(lo - margin * d, hi + margin * d)


def nice_ticks(scale: Scale, target: int = 6) -> list[tuple[float, str]]:
    """Round tick values within the scale and their labels (plain numbers, no powers of ten)."""
    if scale.log:
        out = []
        decades = math.log10(scale.hi) - math.log10(scale.lo)
        mults = [1.0] if decades > 3 else [1.0, 2.0, 5.0]
        for e in range(math.floor(math.log10(scale.lo)), math.ceil(math.log10(scale.hi)) + 1):
            for m in mults:
                v = m * 10.0 ** e
                if scale.lo <= v <= scale.hi:
                    out.append((v, f"{v:g}"))
        return out
    raw = (scale.hi - scale.lo) / target
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= 0.8 * raw)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if round(step / mag, 3) == 2.5
                                                              and step < 1 else 0)
    first = math.ceil(scale.lo / step - 1e-9)
    out = []
    for i in range(first, first + target * 3):
        v = i * step
        if v > scale.hi + 1e-12 * abs(step):
            break
        out.append((v, f"{v:.{decimals}f}"))
    return out


@dataclass
class Panel:
    """A plot area of ``svg`` at (x, y) sized (w, h) in px, with its two scales."""

    svg: Svg
    x: float
    y: float
    w: float
    h: float
    xs: Scale
    ys: Scale
    invert_y: bool = False  # categories top down
    legend: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, color, label)

    def px(self, v: float) -> float:
        return self.x + self.xs(v) * self.w

    def py(self, v: float) -> float:
        f = self.ys(v)
        return self.y + (f if self.invert_y else 1.0 - f) * self.h

    def axes(self, *, xticks: Sequence[tuple[float, str]] | None = None,
             yticks: Sequence[tuple[float, str]] | None = None, xlabel: str = "",
             ylabel: str = "", title: str = "", ylabel_gap: float = 0.0) -> None:
        """Grid, frame (left and bottom), ticks with labels, axis labels and the title."""
        s = self.svg
        xt = list(xticks) if xticks is not None else nice_ticks(self.xs)
        yt = list(yticks) if yticks is not None else nice_ticks(self.ys)
        for v, label in xt:
            x = self.px(v)
            s.line(x, self.y, x, self.y + self.h, GRID)
            s.line(x, self.y + self.h, x, self.y + self.h + 5)
            s.text(x, self.y + self.h + 16, label, anchor="middle")
        for v, label in yt:
            y = self.py(v)
            s.line(self.x, y, self.x + self.w, y, GRID)
            s.line(self.x - 5, y, self.x, y)
            room = self.x - 14 - (34 if ylabel else 0)
            s.text(self.x - 8, y, _fit(label, TICK, room), anchor="end", full=label)
        s.line(self.x, self.y, self.x, self.y + self.h)
        s.line(self.x, self.y + self.h, self.x + self.w, self.y + self.h)
        if xlabel:
            s.text(self.x + self.w / 2, self.y + self.h + 40, _fit(xlabel, LABEL, self.w),
                   size=LABEL, anchor="middle", full=xlabel)
        if ylabel:
            s.text(self.x - (ylabel_gap or 58), self.y + self.h / 2,
                   _fit(ylabel, LABEL, self.h), size=LABEL, anchor="middle", rotate=True,
                   full=ylabel)
        if title:
            s.text(self.x + self.w / 2, self.y - 22, _fit(title, TITLE, self.w + self.x - 10),
                   size=TITLE, anchor="middle", full=title)

    def hline(self, v: float, color: str = "#808080", dash: str = "6,4", width: float = 1.5) -> None:
        y = self.py(v)
        if self.y <= y <= self.y + self.h:
            self.svg.line(self.x, y, self.x + self.w, y, color, width, dash)

    def vline(self, v: float, color: str = "#808080", dash: str = "6,4", width: float = 1.5) -> None:
        x = self.px(v)
        if self.x <= x <= self.x + self.w:
            self.svg.line(x, self.y, x, self.y + self.h, color, width, dash)

    def series(self, pts: Sequence[tuple[float, float]], color: str, *,
               lo: Sequence[float] | None = None, hi: Sequence[float] | None = None,
               horizontal: bool = False, line: bool = True, marker: str = "circle",
               dash: str = "") -> None:
        """Points (``class="point"``) joined by a line, with error bars to ``lo``/``hi`` (along
        y, or along x when ``horizontal``)."""
        xy = [(self.px(x), self.py(y)) for x, y in pts]
        if line:
            self.svg.polyline(xy, color, 2.0, dash)
        for i, (x, y) in enumerate(pts):
            if lo is not None and hi is not None:
                a, b = lo[i], hi[i]
                if horizontal:
                    y0 = self.py(y)
                    x1, x2 = self.px(a), self.px(b)
                    self.svg.line(x1, y0, x2, y0, color, 2.0, cls="ci")
                    self.svg.line(x1, y0 - 5, x1, y0 + 5, color, 2.0)
                    self.svg.line(x2, y0 - 5, x2, y0 + 5, color, 2.0)
                else:
                    x0 = self.px(x)
                    y1, y2 = self.py(a), self.py(b)
                    self.svg.line(x0, y1, x0, y2, color, 2.0, cls="ci")
                    self.svg.line(x0 - 5, y1, x0 + 5, y1, color, 2.0)
                    self.svg.line(x0 - 5, y2, x0 + 5, y2, color, 2.0)
            if marker == "circle":
                self.svg.circle(self.px(x), self.py(y), 4.5, color, cls="point")
            elif marker == "diamond":
                self.svg.diamond(self.px(x), self.py(y), 6.0, color, cls="point")


def legend(svg: Svg, items: Sequence[tuple[str, str, str]], x: float, y: float, *,
           ncols: int = 1, frame: bool = True, anchor: str = "start") -> float:
    """Legend entries (kind ``line``, ``dash``, ``band``, ``bar``, ``none``; colour; label) in
    ``ncols`` columns from (x, y) (``anchor`` middle: centred on x); returns its height."""
    if not items:
        return 0.0
    row_h = LEGEND + 8
    col_w = max(text_width(label, LEGEND) for _, _, label in items) + 44
    col_w = min(col_w, (svg.width - 40) / ncols)
    rows = math.ceil(len(items) / ncols)
    width, height = col_w * ncols + 8, rows * row_h + 8
    left = x - width / 2 if anchor == "middle" else (x - width if anchor == "end" else x)
    if frame:
        svg.rect(left, y, width, height, fill="#ffffff", stroke="#cccccc", opacity=0.85)
    for i, (kind, color, label) in enumerate(items):
        cx = left + 8 + (i % ncols) * col_w
        cy = y + 4 + row_h * (i // ncols) + row_h / 2
        if kind == "line":
            svg.line(cx, cy, cx + 26, cy, color, 2.0)
            svg.circle(cx + 13, cy, 4.0, color)
        elif kind == "dash":
            svg.line(cx, cy, cx + 26, cy, color, 1.5, "6,4")
        elif kind in ("band", "bar"):
            svg.rect(cx, cy - 6, 26, 12, fill=color, opacity=0.25 if kind == "band" else 1.0)
        svg.text(cx + (34 if kind != "none" else 0), cy, _fit(label, LEGEND, col_w - 40),
                 size=LEGEND, full=label)
    return height


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


def _left_margin(labels: Sequence[str], *, axis_label: bool, cap: float = 380.0) -> float:
    """Room for the y tick labels (and the rotated axis label)."""
    widest = max((text_width(s, TICK) for s in labels), default=0.0)
    return min(cap, widest + 18) + (34 if axis_label else 0) + 12


def thinned(values: Sequence[float], most: int = MAX_DOTS) -> list[float]:
    """``values``, or, when there are more than ``most``, ``most`` evenly spaced quantiles of
    them (the smallest and the largest among them): the same shape, in a document whose size
    does not grow with the runs (a dot is about 90 bytes of SVG)."""
    if len(values) <= most:
        return list(values)
    v = sorted(values)
    return [v[round(i * (len(v) - 1) / (most - 1))] for i in range(most)]


def distribution_chart(sc: dict[str, Any]) -> bytes | None:
    """Every run of every cell (dots; a cell of more than MAX_DOTS runs: that many evenly spaced
    quantiles of them, and the chart says so), a box of the quartiles with lines to the minimum
    and maximum, and the median with its 95% CI."""
    cells = [c for c in sc.get("cells", []) if c.get("samples", {}).get("times")]
    if not cells:
        return None
    scale, unit = time_unit([t for c in cells for t in c["samples"]["times"]])
    variants = _variants(sc)
    n = len(cells)
    height = max(360.0, min(1200.0, 140 + 62 * n))
    title = f"{sc['name']}: every run per cell; ◆ = median with its 95% CI"
    svg = Svg(WIDTH, height, title)
    labels = [str(c["label"]) for c in cells]
    left = _left_margin(labels, axis_label=False)
    lows = [c["summary"]["min"] for c in cells]
    log = max(c["summary"]["max"] for c in cells) / max(min(lows), 1e-12) > 20
    values = [t * scale for c in cells for t in c["samples"]["times"]]
    for c in cells:  # the CI bars, too
        ci = c["summary"].get("median_ci")
        if ci:
            values += [ci[0] * scale, ci[1] * scale]
    panel = Panel(svg, left, 56, WIDTH - left - 28, height - 56 - 62, span(values, log=log),
                  Scale(-0.6, n - 0.4), invert_y=True)
    most = max(len(c["samples"]["times"]) for c in cells)
    thin = f"; dots: {MAX_DOTS} evenly spaced quantiles of a cell's runs" if most > MAX_DOTS else ""
    panel.axes(yticks=[(i, label) for i, label in enumerate(labels)],
               xlabel=f"time per run ({unit}){thin}", title=title)
    rng = random.Random(0)
    band = panel.h / (n + 0.2)  # px per category
    for i, c in enumerate(cells):  # the first cell at the top
        color = COLORS[variants.index(c["variant"]) % len(COLORS)]
        t = [x * scale for x in c["samples"]["times"]]
        q1, med, q3 = (float(q) for q in np.percentile(t, [25, 50, 75]))
        y = panel.py(i)
        half = 0.275 * band
        svg.rect(panel.px(q1), y - half, panel.px(q3) - panel.px(q1), 2 * half,
                 stroke="#000000", cls="box",
                 tip=f"{c['label']}: quartiles {q1:.4g}–{q3:.4g} {unit}")
        svg.line(panel.px(min(t)), y, panel.px(q1), y)
        svg.line(panel.px(q3), y, panel.px(max(t)), y)
        svg.line(panel.px(med), y - half, panel.px(med), y + half, color, 2.5, cls="median")
        for v in thinned(t):
            svg.circle(panel.px(v), y + rng.uniform(-0.22, 0.22) * band, 3.0, color, 0.45,
                       cls="run")
        s = c["summary"]
        ci = s.get("median_ci")
        if ci:
            yc = y - 0.38 * band
            x1, x2 = panel.px(ci[0] * scale), panel.px(ci[1] * scale)
            xm = panel.px(s["median"] * scale)
            svg.line(x1, yc, x2, yc, "#000000", 2.0, cls="ci")
            svg.line(x1, yc - 6, x1, yc + 6, "#000000", 2.0)
            svg.line(x2, yc - 6, x2, yc + 6, "#000000", 2.0)
            svg.diamond(xm, yc, 6.0, "#000000")
    return svg.done()


def _memory_unit(values: Sequence[float]) -> tuple[float, str]:
    top = max(values) if values else 0.0
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if top >= size:
            return 1 / size, unit
    return 1.0, "B"


def _count_unit(values: Sequence[float]) -> tuple[float, str]:
    top = max(values) if values else 0.0
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if top >= size:
            return 1 / size, unit
    return 1.0, ""


def metrics_chart(sc: dict[str, Any]) -> bytes | None:
    """A small multiple, one panel per metric (wall time first, then every metric the cells
    recorded): every run of every cell (dots; beyond PANEL_DOTS, that many evenly spaced
    quantiles) and its mean (a bar), each panel on its own linear scale in its own unit."""
    cells = [c for c in sc.get("cells", []) if c.get("samples", {}).get("times")]
    if not cells:
        return None
    names = ["wall"] + [n for n in cells[0]["samples"].get("metrics", {})
                        if all(len(c["samples"].get("metrics", {}).get(n, []))
                               == len(c["samples"]["times"]) for c in cells)]
    if len(names) < 2:
        return None
    labels = [str(c["label"]) for c in cells]
    ncols = 2 if len(names) <= 4 else 3
    rows = math.ceil(len(names) / ncols)
    band = 34.0
    panel_h = band * len(cells) + 20
    left_labels = _left_margin(labels, axis_label=False, cap=220)
    col_w = (WIDTH - 20) / ncols
    height = 40 + rows * (panel_h + 96)
    title = f"{sc['name']}: every metric per cell (dots: runs; bar: mean)"
    svg = Svg(WIDTH, height, title)
    svg.text(WIDTH / 2, 22, _fit(title, TITLE, WIDTH - 20), size=TITLE, anchor="middle",
             full=title)
    variants = _variants(sc)
    rng = random.Random(0)
    for k, name in enumerate(names):
        known = mx.METRICS.get(name)
        label, quantity = (known.label, known.quantity) if known else (name, "count")
        per = [c["samples"]["times"] if name == "wall" else c["samples"]["metrics"][name]
               for c in cells]
        flat = [v for vs in per for v in vs]
        scale, unit = (time_unit(flat) if quantity == "time" else
                       _memory_unit(flat) if quantity == "memory" else _count_unit(flat))
        x0 = 10 + (k % ncols) * col_w
        y0 = 40 + (k // ncols) * (panel_h + 96) + 36
        left = left_labels if k % ncols == 0 else 18.0
        panel = Panel(svg, x0 + left, y0, col_w - left - 22, panel_h,
                      span([v * scale for v in flat], include=[0.0]),
                      Scale(-0.6, len(cells) - 0.4), invert_y=True)
        ticks = [(i, lab) for i, lab in enumerate(labels)] if k % ncols == 0 else [
            (i, "") for i in range(len(cells))]
        panel.axes(yticks=ticks, xticks=nice_ticks(panel.xs, 4),
                   xlabel=f"{label} ({unit})" if unit else label, title=label)
        for i, (c, vs) in enumerate(zip(cells, per, strict=True)):
            color = COLORS[variants.index(c["variant"]) % len(COLORS)]
            y = panel.py(i)
            for v in thinned(vs, PANEL_DOTS):
                svg.circle(panel.px(v * scale), y + rng.uniform(-0.25, 0.25) * band, 2.2, color,
                           0.4, cls="run")
            mean = sum(vs) / len(vs)
            svg.line(panel.px(mean * scale), y - 0.4 * band, panel.px(mean * scale),
                     y + 0.4 * band, "#000000", 2.5, cls="median")
    return svg.done()


def round_ratios(sc: dict[str, Any], comp: dict[str, Any]) -> list[tuple[int, float]]:
    """Per round: median of the baseline's runs in it / median of the candidate's runs in it."""
    cells = {c["label"]: c for c in sc.get("cells", [])}
    base = cells[comp["baseline"]].get("samples", {})
    cand = cells[comp["candidate"]].get("samples", {})
    out = []
    for r in sorted(set(base.get("rounds") or []) & set(cand.get("rounds") or [])):
        b = [t for t, rr in zip(base["times"], base["rounds"], strict=True) if rr == r]
        c = [t for t, rr in zip(cand["times"], cand["rounds"], strict=True) if rr == r]
        if b and c:
            out.append((int(r), stats.median(b) / stats.median(c)))
    return out


def _int_ticks(values: Sequence[int], room: float, size: float = TICK) -> list[tuple[float, str]]:
    """Every value as a tick, or every k-th when their labels would not fit in ``room`` px."""
    if not values:
        return []
    widest = max(text_width(str(v), size) for v in values) + 12
    every = max(1, math.ceil(len(values) * widest / max(room, 1.0)))
    return [(float(v), str(v)) for i, v in enumerate(values) if i % every == 0]


def round_ratio_chart(sc: dict[str, Any]) -> bytes | None:
    """The speedup measured within each round: a drift across rounds shows as a slope."""
    series = [(comp, round_ratios(sc, comp)) for comp in sc.get("comparisons", [])]
    series = [(comp, rr) for comp, rr in series if len(rr) >= 2]
    if not series:
        return None
    items: list[tuple[str, str, str]] = []
    bands: list[tuple[float, float, str]] = []
    for i, (comp, _rr) in enumerate(series):
        color = COLORS[(i + 1) % len(COLORS)]
        label = comp["candidate"]
        items.append(("line", color, f"{label}: overall {comp['speedup']:.2f}×"))
        if comp.get("ci_low") is not None and len(series) <= 2:
            bands.append((comp["ci_low"], comp["ci_high"], color))
            items.append(("band", color, f"{label}: 95% CI of the overall speedup"))
    values = [v for _, rr in series for _, v in rr]
    spread = max(values) - min(values) or 0.05
    one = min(values) - spread <= 1.0 <= max(values) + spread
    if one:
        items.append(("dash", "#808080", "1× (no difference)"))
    else:  # 1× far away would flatten the rounds into a line and hide the drift
        items.append(("none", "", f"(1× = no difference is {'below' if min(values) > 1 else 'above'}"
                                  " this scale)"))
    ncols = 2 if len(series) > 1 else 1
    legend_h = math.ceil(len(items) / ncols) * (LEGEND + 8) + 8
    title = f"{sc['name']}: speedup within each round (above 1 = candidate faster)"
    svg = Svg(WIDTH, HEIGHT, title)
    ys = span(values, include=[v for lo, hi, _ in bands for v in (lo, hi)] + ([1.0] if one else []))
    yt = nice_ticks(ys)
    left = _left_margin([label for _, label in yt], axis_label=True)
    rounds = sorted({r for _, rr in series for r, _ in rr})
    bottom = 62 + legend_h + 12
    panel = Panel(svg, left, 56, WIDTH - left - 28, HEIGHT - 56 - bottom,
                  span([float(r) for r in rounds]), ys)
    panel.axes(xticks=_int_ticks(rounds, panel.w), yticks=yt, xlabel="round",
               ylabel="baseline median / candidate median", title=title, ylabel_gap=left - 22)
    for lo, hi, color in bands:
        y1, y2 = panel.py(hi), panel.py(lo)
        svg.rect(panel.x, y1, panel.w, y2 - y1, fill=color, opacity=0.12)
    if one:
        panel.hline(1.0)
    for i, (_comp, rr) in enumerate(series):
        panel.series([(float(r), v) for r, v in rr], COLORS[(i + 1) % len(COLORS)])
    legend(svg, items, WIDTH / 2, HEIGHT - legend_h - 8, ncols=ncols, frame=False,
           anchor="middle")
    return svg.done()


def _ci_of(s: dict[str, Any]) -> tuple[float, float]:
    ci = s.get("median_ci") or [s["median"]] * 2
    return float(ci[0]), float(ci[1])


def burst_chart(sc: dict[str, Any]) -> bytes | None:
    """Left: seconds until the last of k instances exits, per build, with 95% CI bars.
    Right: the speedup per k with its 95% CI."""
    ks = [int(k) for k in sc.get("k", [])]
    if not ks or not sc.get("cells", []):
        return None
    cells = {(c["variant"], int(c["params"]["k"])): c for c in sc.get("cells", [])}
    variants = _variants(sc)
    scale, unit = time_unit([c["summary"]["max"] for c in sc.get("cells", [])])
    title = f"{sc['name']}: burst scan"
    svg = Svg(WIDTH, HEIGHT, title)
    svg.text(WIDTH / 2, 20, _fit(title, 18, WIDTH - 20), size=18, anchor="middle", full=title)
    xs = span([float(k) for k in ks], log=True, include=[])
    kt = [(float(k), str(k)) for k in ks]
    half = (WIDTH - 20) / 2
    # left: time per burst
    lines = []
    for i, v in enumerate(variants):
        pts = [(k, cells[(v, k)]["summary"]) for k in ks if (v, k) in cells]
        lines.append((v, COLORS[i % len(COLORS)], pts))
    tvals = [x * scale for _, _, pts in lines for _, s in pts
             for x in (s["median"], *_ci_of(s)) if math.isfinite(x)]
    ys = span(tvals)
    yt = nice_ticks(ys)
    left = _left_margin([label for _, label in yt], axis_label=True, cap=120)
    p1 = Panel(svg, left, 80, half - left - 16, HEIGHT - 80 - 62, xs, ys)
    p1.axes(xticks=kt, yticks=yt, xlabel="instances launched at once (k)",
            ylabel=f"until the last one exits ({unit}), median",
            title="time per burst (95% CI bars)", ylabel_gap=left - 22)
    for _v, color, pts in lines:
        ok = [(k, s) for k, s in pts if math.isfinite(s["median"])]
        p1.series([(float(k), s["median"] * scale) for k, s in ok], color,
                  lo=[_ci_of(s)[0] * scale for _, s in ok], hi=[_ci_of(s)[1] * scale for _, s in ok])
    legend(svg, [("line", color, v) for v, color, _ in lines], p1.x + 10, p1.y + 8)
    # right: speedup per k
    by_label = {c["label"]: c for c in sc.get("cells", [])}
    speed = []
    for i, v in enumerate(variants[1:], start=1):
        pts2 = sorted(((int(by_label[c["candidate"]]["params"]["k"]), c)
                       for c in sc.get("comparisons", []) if c["candidate_variant"] == v),
                      key=lambda kc: kc[0])
        speed.append((v, COLORS[i % len(COLORS)], pts2))
    svals = [1.0] + [x for _, _, pts2 in speed for _, c in pts2
                     for x in (c["speedup"], c.get("ci_low"), c.get("ci_high"))
                     if x is not None and math.isfinite(x)]
    ys2 = span(svals)
    yt2 = nice_ticks(ys2)
    left2 = _left_margin([label for _, label in yt2], axis_label=True, cap=120)
    p2 = Panel(svg, half + 20 + left2, 80, half - left2 - 28, HEIGHT - 80 - 62, xs, ys2)
    p2.axes(xticks=kt, yticks=yt2, xlabel="instances launched at once (k)",
            ylabel="speedup, baseline / candidate (>1 = faster)",
            title="speedup per k (95% CI bars)", ylabel_gap=left2 - 22)
    p2.hline(1.0)
    for _v, color, pts2 in speed:
        p2.series([(float(k), c["speedup"]) for k, c in pts2], color,
                  lo=[c["ci_low"] if c.get("ci_low") is not None else c["speedup"] for _, c in pts2],
                  hi=[c["ci_high"] if c.get("ci_high") is not None else c["speedup"]
                      for _, c in pts2])
    if len(variants) > 1:
        legend(svg, [("line", color, v) for v, color, _ in speed], p2.x + p2.w - 10, p2.y + 8,
               anchor="end")
    return svg.done()


def _stacked(panel: Panel, rows: Sequence[str], parts: Sequence[str],
             value: Callable[[str, str], float], tip: Callable[[str, str, float], str],
             label: Callable[[str, float], str]) -> None:
    """One horizontal bar per row, stacked from its parts (class ``bar``, coloured by part),
    with ``label(row, its end)`` after it."""
    band = panel.h / (len(rows) + 0.2)
    for y_i, r in enumerate(rows):
        at, y = 0.0, panel.py(y_i)
        for i, p in enumerate(parts):
            v = value(r, p)
            if v > 0:
                panel.svg.rect(panel.px(at), y - 0.4 * band, panel.px(at + v) - panel.px(at),
                               0.8 * band, fill=COLORS[i % len(COLORS)], cls="bar",
                               tip=tip(r, p, v))
            at += v
        x = panel.px(at) + 8
        text = label(r, at)
        panel.svg.text(x, y, _fit(text, 11, WIDTH - x - 4), size=11, full=text)


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
    legend_h = len(outcomes) * (LEGEND + 8) + 8
    height = min(1000.0, max(400.0, 240 + 90 * len(builds) + 35 * len(outcomes)))
    title = f"{sc['name']}: how each launched instance ended"
    svg = Svg(WIDTH, height, title)
    totals = [float(sum(per_build[b].get("outcomes", {}).get(o, 0) for o in outcomes))
              for b in builds]
    left = _left_margin([str(b) for b in builds], axis_label=False)
    xs = Scale(0.0, max(totals) * 2.1 if max(totals) else 1.0)
    panel = Panel(svg, left, 56, WIDTH - left - 28, height - 56 - 62 - legend_h - 12, xs,
                  Scale(-0.6, len(builds) - 0.4), invert_y=True)
    panel.axes(yticks=[(i, str(b)) for i, b in enumerate(builds)], xlabel="launched instances",
               title=title)
    _stacked(panel, builds, outcomes, lambda b, o: float(per_build[b].get("outcomes", {}).get(o, 0)),
             lambda b, o, v: f"{b}: {o} {v:g}",
             lambda b, _: f"hangs {per_build[b]['hangs']}, leftovers {per_build[b]['leftovers']}, "
             f"fresh failed {per_build[b]['fresh_failures']}, kill errors "
             f"{per_build[b]['kill_errors']}")
    legend(svg, [("bar", COLORS[i % len(COLORS)], str(o)) for i, o in enumerate(outcomes)],
           WIDTH / 2, height - legend_h - 8, frame=False, anchor="middle")
    return svg.done()


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
    height = max(380.0, min(1200.0, 180 + 50 * len(rows) * max(1, len(machines))))
    title = "speedup on each machine (above 1 = candidate faster)"
    svg = Svg(WIDTH, height, title)
    labels = [str(r[0]) for r in rows]
    left = _left_margin(labels, axis_label=False)
    values = [1.0]
    for _, per in rows:
        for _m, c in per:
            if c:
                values += [x for x in (c["speedup"], c.get("ci_low"), c.get("ci_high"))
                           if x is not None and math.isfinite(x)]
    n = len(rows)
    panel = Panel(svg, left, 56, WIDTH - left - 28, height - 56 - 62, span(values),
                  Scale(-0.6, n - 0.4))
    panel.axes(yticks=[(n - 1 - i, label) for i, label in enumerate(labels)],
               xlabel="speedup, baseline median / candidate median (95% CI)", title=title)
    panel.vline(1.0)
    step = 0.8 / max(1, len(machines))
    for j, m in enumerate(machines):
        pts, lo, hi = [], [], []
        for i, (_, per) in enumerate(rows):
            c = dict(per).get(m)
            if not c:
                continue
            pts.append((c["speedup"], n - 1 - i + 0.4 - step * (j + 0.5)))
            lo.append(c["ci_low"] if c.get("ci_low") is not None else c["speedup"])
            hi.append(c["ci_high"] if c.get("ci_high") is not None else c["speedup"])
        panel.series(pts, COLORS[j % len(COLORS)], lo=lo, hi=hi, horizontal=True, line=False)
    legend(svg, [("line", COLORS[j % len(COLORS)], m) for j, m in enumerate(machines)],
           panel.x + panel.w - 10, panel.y + 8, anchor="end")
    return svg.done()


COMMIT_COLORS = {"good": "#2e7d32", "bad": "#c62828", "undecided": "#f9a825",
                 "skipped": "#9e9e9e", "first": "#2e7d32", "differs": "#c62828", "": "#1565c0"}


@dataclass(frozen=True)
class CommitPoint:
    """One commit of a bisect or a history: its label, value and interval, its class (a key of
    COMMIT_COLORS) and its tooltip."""

    label: str
    y: float | None
    lo: float | None = None
    hi: float | None = None
    kind: str = ""
    title: str = ""


def commit_chart(points: Sequence[CommitPoint], y_label: str, title: str) -> bytes | None:
    """Bisect and history: the value at each commit, in chain order, with its interval; a commit
    without a value is a grey cross on the axis."""
    if not points:
        return None
    height = 470.0
    svg = Svg(WIDTH, height, title)
    ys = span([v for p in points for v in (p.y, p.lo, p.hi) if v is not None])
    yt = nice_ticks(ys)
    left = _left_margin([label for _, label in yt], axis_label=True, cap=100)
    panel = Panel(svg, left, 56, WIDTH - left - 28, height - 56 - 110,
                  Scale(-0.5, len(points) - 0.5), ys)
    panel.axes(xticks=[], yticks=yt, ylabel=y_label, title=title, ylabel_gap=left - 22)
    svg.polyline([(panel.px(i), panel.py(p.y)) for i, p in enumerate(points) if p.y is not None],
                 "#90a4ae", 1.5)
    bottom = panel.y + panel.h
    for i, p in enumerate(points):
        x, color = panel.px(i), COMMIT_COLORS.get(p.kind, COMMIT_COLORS[""])
        if p.lo is not None and p.hi is not None:
            svg.line(x, panel.py(p.lo), x, panel.py(p.hi), color, 2.0, cls="ci")
        if p.y is None:
            svg.text(x, bottom - 8, "×", anchor="middle", color=COMMIT_COLORS["skipped"])
        else:
            svg.circle(x, panel.py(p.y), 5.0, color, cls="point", tip=p.title or p.label)
        svg.text(x, bottom + 10, _fit(p.label, TICK, 120), anchor="end", rotate=True,
                 full=p.label)
    kinds = list(dict.fromkeys(p.kind for p in points if p.kind))
    legend(svg, [("bar", COMMIT_COLORS.get(k, COMMIT_COLORS[""]), k) for k in kinds],
           panel.x + panel.w - 10, panel.y + 8, anchor="end")
    return svg.done()


def _lines_file(path: Path, xs_values: Sequence[float], lines: Sequence[tuple[str, str, str,
                Sequence[float]]], *, title: str, xlabel: str, ylabel: str, log2: bool,
                xticks: Sequence[tuple[float, str]] | None = None) -> None:
    """A small line chart written to ``path`` (``lines``: label, colour, dash, y per x)."""
    w, h = 704.0, 462.0  # the PNGs were 6.4 x 4.2 in at 110 dpi
    svg = Svg(w, h, title)
    ys = span([v for *_, vals in lines for v in vals])
    yt = nice_ticks(ys)
    left = _left_margin([label for _, label in yt], axis_label=True, cap=100)
    panel = Panel(svg, left, 50, w - left - 20, h - 50 - 60, span(list(xs_values), log=log2), ys)
    panel.axes(xticks=xticks, yticks=yt, xlabel=xlabel, ylabel=ylabel, title=title,
               ylabel_gap=left - 22)
    for _label, color, dash, vals in lines:
        panel.series([(x, y) for x, y in zip(xs_values, vals, strict=True) if math.isfinite(y)],
                     color, dash=dash)
    legend(svg, [("dash" if dash else "line", color, label) for label, color, dash, _ in lines],
           panel.x + 10, panel.y + 8)
    path.write_bytes(svg.done())


def burst(path: Path, ks: list[int], variants: list[str],
          medians: dict[tuple[str, int], float], title: str) -> None:
    """Median time until the last of k instances exits, against k, with the k × single line."""
    single = medians[(variants[0], min(ks))] / min(ks)
    lines = [(v, COLORS[i % len(COLORS)], "", [medians[(v, k)] for k in ks])
             for i, v in enumerate(variants)]
    lines.append((f"k × single ({single * 1e3:.1f} ms)", "#808080", "6,4",
                  [single * k for k in ks]))
    _lines_file(path, [float(k) for k in ks], lines, title=title,
                xlabel="instances launched at once (k)",
                ylabel="seconds until the last one exits (median)", log2=True,
                xticks=[(float(k), str(k)) for k in ks])


def layers_time(path: Path, layers: list[int], ks: list[int], variants: list[str],
                medians: dict[tuple[str, int, int], float], title: str) -> None:
    """Median time until all k containers exited, against L, one line per (variant, k)."""
    dashes = ["", "6,4", "2,3", "8,3,2,3"]
    lines = [(f"{v} k={k}", COLORS[(i * len(ks) + j) % len(COLORS)], dashes[i % len(dashes)],
              [medians[(v, n, k)] for n in layers])
             for i, v in enumerate(variants) for j, k in enumerate(ks)]
    _lines_file(path, [float(n) for n in layers], lines, title=title, xlabel="image layers (L)",
                ylabel="seconds until the last container exits (median)", log2=False)


def layers_mounts(path: Path, layers: list[int], counts: dict[str, dict[str, dict[str, int]]],
                  syscalls: tuple[str, ...], title: str) -> None:
    """Mount syscalls of one container start against L, per variant (sum of ``syscalls``)."""
    lines = [(v, COLORS[i % len(COLORS)], "",
              [float(sum(per_l[str(n)][s] for s in syscalls)) for n in layers])
             for i, (v, per_l) in enumerate(counts.items())]
    _lines_file(path, [float(n) for n in layers], lines, title=title, xlabel="image layers (L)",
                ylabel=" + ".join(syscalls) + " per start", log2=False)



def phases_chart(medians: dict[str, dict[str, float]], phases: list[str]) -> bytes | None:
    """One stacked bar per cell (variant): the median of each phase of its start, in order."""
    if not medians:
        return None
    cells = list(medians)
    legend_h = LEGEND + 16
    height = min(900.0, max(320.0, 200 + 70 * len(cells)))
    title = "phases of the start under the tracer (medians)"
    svg = Svg(WIDTH, height, title)
    totals = [sum(medians[c].get(p, 0.0) for p in phases) for c in cells]
    scale, unit = time_unit(totals)
    left = _left_margin(cells, axis_label=False)
    xs = Scale(0.0, max(totals) * scale * 1.15 if max(totals) > 0 else 1.0)
    panel = Panel(svg, left, 56, WIDTH - left - 28, height - 56 - 62 - legend_h, xs,
                  Scale(-0.6, len(cells) - 0.4), invert_y=True)
    panel.axes(yticks=[(i, c) for i, c in enumerate(cells)], xlabel=f"time ({unit})",
               title=title)
    _stacked(panel, cells, phases, lambda c, p: medians[c].get(p, 0.0) * scale,
             lambda c, p, v: f"{c}: {p} {v:.3g} {unit}", lambda c, at: f"{at:.3g} {unit}")
    legend(svg, [("bar", COLORS[i % len(COLORS)], p) for i, p in enumerate(phases)],
           WIDTH / 2, height - legend_h - 4, ncols=len(phases), frame=False, anchor="middle")
    return svg.done()


def scan_chart(name: str, param: str, points: dict[str, list[tuple[float, float, float, float]]]
               ) -> bytes | None:
    """A scan: the metric (median seconds per run) against the scanned value, one line per
    variant with its 95% CI as a band (``points``: variant -> (value, median, low, high)).
    Log-log when every value is above 0 and they span a factor of 8 or more (a power law is
    then a straight line), else linear."""
    pts = {v: [p for p in ps if math.isfinite(p[1])] for v, ps in points.items()}
    pts = {v: ps for v, ps in pts.items() if ps}
    if not pts:
        return None
    xs_all = [p[0] for ps in pts.values() for p in ps]
    log = min(xs_all) > 0 and max(xs_all) >= 8 * min(xs_all)
    scale, unit = time_unit([p[3] for ps in pts.values() for p in ps])
    title = f"{name}: time against {param}"
    svg = Svg(WIDTH, HEIGHT, title)
    ys = span([y * scale for ps in pts.values() for p in ps for y in p[1:] if y > 0], log=log)
    xs = span(xs_all, log=log)
    yt = nice_ticks(ys)
    left = _left_margin([label for _, label in yt], axis_label=True, cap=120)
    panel = Panel(svg, left, 60, WIDTH - left - 28, HEIGHT - 60 - 70, xs, ys)
    xt = [(x, f"{x:g}") for x in sorted(set(xs_all))]
    panel.axes(xticks=xt, yticks=yt, xlabel=param + (" (log)" if log else ""),
               ylabel=f"median per run ({unit})" + (", log" if log else ""), title=title,
               ylabel_gap=left - 22)
    items = []
    for i, (v, ps) in enumerate(pts.items()):
        color = COLORS[i % len(COLORS)]
        ps = sorted(ps)
        upper = [(panel.px(x), panel.py(hi * scale)) for x, _, _, hi in ps]
        lower = [(panel.px(x), panel.py(lo * scale)) for x, _, lo, _ in reversed(ps)]
        outline = " ".join(f"{_n(x)},{_n(y)}" for x, y in [*upper, *lower])
        svg.add(f'<polygon points="{outline}" fill="{color}" fill-opacity="0.18" '
                'stroke="none" class="band"/>')
        panel.series([(x, m * scale) for x, m, _, _ in ps], color)
        items.append(("line", color, v))
    legend(svg, items, panel.x + 10, panel.y + 8)
    return svg.done()


@dataclass
class _Node:
    name: str
    count: float = 0.0  # the candidate's samples through this frame
    base: float = 0.0  # the baseline's share through the same path, scaled to the candidate's
    kids: dict[str, _Node] = field(default_factory=dict)


def flame_diff(base: dict[str, int], cand: dict[str, int], title: str) -> bytes | None:
    """A differential flame graph (Brendan Gregg's): the candidate's stacks (``comm;outer;...;
    inner`` -> samples) as a flame graph, each frame coloured by how its share of the samples
    changed against the baseline's at the same path: red grew, blue shrank, white the same."""
    tc, tb = sum(cand.values()), sum(base.values())
    if not tc:
        return None
    root = _Node("all")
    for stacks, total, attr in ((cand, tc, "count"), (base, tb, "base")):
        if not total:
            continue
        for key, n in stacks.items():
            node = root
            setattr(node, attr, getattr(node, attr) + n * tc / total)
            for frame in key.split(";"):
                if frame not in node.kids:
                    if attr == "base":
                        break  # a path the candidate never took: nothing to draw
                    node.kids[frame] = _Node(frame)
                node = node.kids[frame]
                setattr(node, attr, getattr(node, attr) + n * tc / total)
    depth = 0

    def deepest(n: _Node, d: int) -> None:
        nonlocal depth
        depth = max(depth, d)
        for k in n.kids.values():
            deepest(k, d + 1)

    deepest(root, 0)
    row = 17.0
    depth = min(depth, 80)
    height = 90 + row * (depth + 1)
    svg = Svg(WIDTH, height, title)
    svg.text(WIDTH / 2, 20, _fit(title, TITLE, WIDTH - 20), size=TITLE, anchor="middle",
             full=title)
    svg.text(WIDTH / 2, 44, "width: the candidate's samples; red: a larger share than the "
             "baseline's, blue: smaller", size=LEGEND, anchor="middle")
    scale = (WIDTH - 20) / tc

    def draw(n: _Node, x: float, d: int) -> None:
        w = n.count * scale
        if w < 0.5 or d > depth:
            return
        y = height - 20 - row * (d + 1)
        delta = (n.count - n.base) / tc  # the change of its share, -1 .. 1
        mag = min(1.0, abs(delta) * 10)
        shade = int(255 - 175 * mag)
        color = (f"#ff{shade:02x}{shade:02x}" if delta > 0 else
                 f"#{shade:02x}{shade:02x}ff" if delta < 0 else "#f2f2f2")
        tip = (f"{n.name}: {n.count / tc * 100:.1f} % of the candidate's samples, "
               f"{n.base / tc * 100:.1f} % of the baseline's")
        svg.rect(10 + x, y, w - 0.5, row - 1, fill=color, stroke="#ffffff", cls="frame", tip=tip)
        if w > 30:
            svg.text(10 + x + 3, y + row / 2, _fit(n.name, 11, w - 6), size=11, full=n.name)
        at = x
        for k in sorted(n.kids.values(), key=lambda k: k.name):
            draw(k, at, d + 1)
            at += k.count * scale

    draw(root, 0.0, 0)
    return svg.done()
