"""What a track run leaves in ``reports/track/NAME/``: ``changes.json`` (every confirmed change:
the commit, metric, direction, ratio with its CI, and the A/B and bisect runs behind it),
``summary.md`` and ``index.html``, a dashboard in the manner of asv's ``publish``: per scenario
and metric, the series (each commit against the reference, with its CI), its change points and
their culprits.

The summary and the dashboard are neutral report blocks (patchbench.report.blocks) formatted by
report.markdown and report.html; the series charts are drawn with report.charts' SVG pieces."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbench.analysis import metrics
from patchbench.report import charts, html, markdown
from patchbench.report.blocks import Block, Chart, Code, bullets, heading, table, text
from patchbench.track.database import ChangeRow, CommitRow, SeriesPoint, Track
from patchbench.track.walk import HANGS
from patchbench.util.files import write_json_atomic, write_text_atomic

SCHEMA_VERSION = 1  # of changes.json
RED, GREEN, GREY, BLUE = "#d62728", "#2ca02c", "#8c8c8c", "#1f77b4"
LATEST = 15  # commits in the table of the latest points


@dataclass(frozen=True)
class Dashboard:
    """Everything the outputs are made from."""

    track: Track
    comparison: str
    database: str  # as it may be shown (no password; a file relative to the reports folder)
    points: list[SeriesPoint]
    changes: list[ChangeRow]
    commits: dict[str, CommitRow]
    generated_at: str
    new: frozenset[int] = frozenset()  # ids of the changes this run found
    failed: dict[str, str] = field(default_factory=dict)  # sha -> why: no build, failing runs


def label(metric: str) -> str:
    if metric == HANGS:
        return "hangs"
    return metrics.METRICS[metric].label if metric in metrics.METRICS else metric


def where(ch: ChangeRow) -> str:
    """The scenario, with the series (a scan's value, a condition) when it has one."""
    return ch.scenario + (f" [{ch.series}]" if ch.series else "")


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "-"


def _ci(lo: Any, hi: Any) -> str:
    return f" [{lo:.3f}, {hi:.3f}]" if isinstance(lo, float) and isinstance(hi, float) else ""


def ab_text(ch: ChangeRow) -> str:
    """The A/B's figures in a few words: the ratio after / before with its CI, or the hangs."""
    ab = ch.ab
    if ab.get("ratio") is not None:
        ci = ab.get("ci") or [None, None]
        p = ab.get("p")
        return (f"{ab['ratio']:.3f}x{_ci(ci[0], ci[1])}" + (f", p {p:.2g}" if p is not None
                                                             else "") + f" ({ab.get('verdict')})")
    if ab.get("hangs") is not None:
        return (f"hangs {ab['hangs']} of {ab['runs']} vs {ab['before_hangs']} of "
                f"{ab['before_runs']}")
    return str(ab.get("text", "-"))


def culprit_text(ch: ChangeRow) -> str:
    if ch.culprit:
        return f"{ch.culprit[:12]} {ch.culprit_subject or ''}".strip()
    rng = ch.bisect.get("range")
    if rng:
        return "one of " + ", ".join(s[:12] for s in rng[:8])
    return f"between {ch.before_sha[:12]} and {ch.after_sha[:12]}"


def change_json(ch: ChangeRow) -> dict[str, Any]:
    """One change as changes.json lists it."""
    return {
        "commit": ch.culprit, "subject": ch.culprit_subject, "scenario": ch.scenario,
        "series": ch.series, "metric": ch.metric, "direction": ch.direction,
        "ratio": ch.ab.get("ratio"), "ci": ch.ab.get("ci"), "p": ch.ab.get("p"),
        "status": ch.status, "between": {"before": ch.before_sha, "after": ch.after_sha},
        "detected": {"p": ch.detect_p, "magnitude": ch.magnitude, "found_at": ch.found_at,
                     "run": ch.run_id},
        "ab": ch.ab, "bisect": ch.bisect, "why": ch.why}


def changes_document(d: Dashboard) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION, "kind": "track-changes", "track": d.track.name,
        "comparison": d.comparison, "target": d.track.target, "branch": d.track.branch,
        "reference": d.track.reference, "database": d.database, "generated_at": d.generated_at,
        "commits_measured": len({p.commit.sha for p in d.points}),
        "changes": [change_json(c) for c in d.changes if c.status == "confirmed"],
        "not_confirmed": [change_json(c) for c in d.changes if c.status != "confirmed"],
        "failing": [{"commit": sha, "why": why} for sha, why in sorted(d.failed.items())]}


# --- the series chart ---------------------------------------------------------------------------


def _groups(points: Sequence[SeriesPoint]) -> dict[tuple[str, str, str], list[SeriesPoint]]:
    out: dict[tuple[str, str, str], list[SeriesPoint]] = {}
    for p in points:
        out.setdefault((p.scenario, p.value.series, p.value.metric), []).append(p)
    return out


def series_chart(title: str, pts: Sequence[SeriesPoint], changes: Sequence[ChangeRow]
                 ) -> bytes | None:
    """The series by commit (commit / reference, with its CI bar; hangs: the commit's rate
    beside the reference's), a vertical line before each change point (red: a confirmed
    regression, green: a confirmed improvement, grey dashed: not confirmed), its culprit named."""
    hang = bool(pts) and pts[0].value.metric == HANGS
    ys: list[tuple[float, float | None, float | None]] = []
    for p in pts:
        v = p.value
        if hang:
            y = v.rate
            ys.append((y if y is not None else math.nan, None, None))
        else:
            ys.append((v.ratio if v.ratio is not None else math.nan, v.ci_low, v.ci_high))
    if not any(math.isfinite(y) for y, _, _ in ys):
        return None
    svg = charts.Svg(charts.WIDTH, charts.HEIGHT, title)
    vals = [x for y, lo, hi in ys for x in (y, lo, hi) if x is not None and math.isfinite(x)]
    refs = [v.ref_hangs / v.ref_runs for v in (p.value for p in pts)
            if hang and v.ref_hangs is not None and v.ref_runs]
    yscale = charts.span(vals + refs, include=[] if hang else [1.0])
    yt = charts.nice_ticks(yscale)
    left = max(96.0, charts.text_width(max((t for _, t in yt), key=len, default=""), 13) + 70)
    legend_h = 40
    panel = charts.Panel(svg, left, 60, charts.WIDTH - left - 28,
                         charts.HEIGHT - 60 - 96 - legend_h,
                         charts.span([0.0, float(max(len(pts) - 1, 1))], margin=0.03), yscale)
    shorts = [p.commit.short[:8] for p in pts]
    xt = [(float(i), s) for i, s in enumerate(shorts)]
    every = max(1, math.ceil(len(xt) * 80 / panel.w))
    panel.axes(xticks=xt[::every], yticks=yt, xlabel="commit (oldest first)",
               ylabel="hang rate" if hang else "commit / reference", title=title,
               ylabel_gap=left - 22)
    if not hang:
        panel.hline(1.0)
    index = {p.commit.sha: i for i, p in enumerate(pts)}
    items = [("line", BLUE, "hang rate of the commit" if hang else
              "commit / reference (95% CI)")]
    for ch in changes:
        if ch.after_sha not in index:
            continue
        x = index[ch.after_sha] - 0.5
        color = (GREY if ch.status != "confirmed" else RED if ch.direction == "regression"
                 else GREEN)
        panel.vline(x, color, "" if ch.status == "confirmed" else "6,4", 2.5)
        name = ch.culprit[:8] if ch.culprit else "?"
        svg.text(panel.px(x) + 4, panel.y + 12, name if ch.status == "confirmed" else
                 "not confirmed", color=color, size=12)
    pairs = [(float(i), y) for i, (y, _, _) in enumerate(ys) if math.isfinite(y)]
    if hang:
        panel.series(pairs, BLUE)
        if refs:
            ref_pts = [(float(i), p.value.ref_hangs / p.value.ref_runs) for i, p in enumerate(pts)
                       if p.value.ref_hangs is not None and p.value.ref_runs]
            panel.series(ref_pts, GREY, line=True, marker="diamond", dash="4,3")
            items.append(("dash", GREY, "hang rate of the reference"))
    else:
        keep = [i for i, (y, _, _) in enumerate(ys) if math.isfinite(y)]
        lo = [ys[i][0] if (b := ys[i][1]) is None else b for i in keep]
        hi = [ys[i][0] if (b := ys[i][2]) is None else b for i in keep]
        panel.series(pairs, BLUE, lo=lo, hi=hi)
        items.append(("dash", "#808080", "1x: the reference"))
    items += [("line", RED, "regression (culprit named)"), ("line", GREEN, "improvement"),
              ("dash", GREY, "candidate not confirmed")]
    charts.legend(svg, items, charts.WIDTH / 2, charts.HEIGHT - legend_h - 6, ncols=3,
                  frame=False, anchor="middle")
    return svg.done()


# --- the blocks ---------------------------------------------------------------------------------


def _change_rows(chs: Sequence[ChangeRow]) -> list[list[str]]:
    return [[where(c), label(c.metric), c.direction,
             culprit_text(c), ab_text(c),
             f"{c.magnitude:.3f}x, p {c.detect_p:.2g}" if math.isfinite(c.magnitude)
             else f"p {c.detect_p:.2g}",
             str(c.bisect.get("outcome", "-")) + (f" ({c.bisect['report']})"
                                                  if c.bisect.get("report") else "")]
            for c in chs]


CHANGE_HEADERS = ("scenario", "metric", "direction", "culprit", "A/B (after / before)",
                  "detected (ratio of means, p)", "bisect")


def blocks(d: Dashboard, *, charts_too: bool = True) -> list[Block]:
    """The dashboard's blocks (the summary's are the same, its charts left out by markdown)."""
    t = d.track
    confirmed = [c for c in d.changes if c.status == "confirmed"]
    other = [c for c in d.changes if c.status != "confirmed"]
    shas = {p.commit.sha for p in d.points}
    out: list[Block] = [bullets([
        ("target ", Code(t.target), f" on branch {t.branch}, each commit measured interleaved "
         "with the reference build ", Code(t.reference[:12]), " (every point: commit / "
         "reference, round-paired)"),
        (f"{len(shas)} commits measured; database {d.database}; updated {d.generated_at}",),
        (f"{len(confirmed)} change(s) confirmed"
         + (f", {len([c for c in confirmed if c.direction == 'regression'])} regression(s)"
            if confirmed else "")
         + (f"; {len(other)} candidate(s) not confirmed" if other else ""),)], name="meta"),
        heading("Confirmed changes")]
    if confirmed:
        out.append(table(CHANGE_HEADERS, _change_rows(confirmed), "changes", text=True))
    else:
        out.append(text("No change confirmed."))
    if other:
        out += [heading("Candidates not confirmed"),
                table(CHANGE_HEADERS, _change_rows(other), "not-confirmed", text=True)]
    groups = _groups(d.points)
    if charts_too:
        for (scenario, series, metric), pts in groups.items():
            title = f"{scenario}{f' [{series}]' if series else ''}: {label(metric)}"
            chs = [c for c in d.changes if (c.scenario, c.series, c.metric) ==
                   (scenario, series, metric)]

            def draw(title: str = title, pts: list[SeriesPoint] = pts,
                     chs: list[ChangeRow] = chs) -> bytes | None:
                return series_chart(title, pts, chs)

            out += [heading(title),
                    Chart(f"track-{scenario}-{metric}", draw,
                          f"{title}, by commit, against the reference "
                          f"{t.reference[:12]}")]
    out += [heading("Latest commits"), table(*_latest(d, groups), "latest", text=True)]
    if d.failed:
        rows = [[sha[:12], d.commits[sha].subject[:60] if sha in d.commits else "", why[:300]]
                for sha, why in sorted(d.failed.items(), key=lambda kv: (
                    d.commits[kv[0]].depth if kv[0] in d.commits else 0, kv[0]))]
        out += [heading("Failing commits"),
                text("They do not build with the pinned toolchain, or their runs fail: each is "
                     "recorded and skipped by later runs."),
                table(("commit", "subject", "why"), rows, "failed", text=True)]
    return out


def _latest(d: Dashboard, groups: dict[tuple[str, str, str], list[SeriesPoint]]
            ) -> tuple[list[str], list[list[str]]]:
    keys = [k for k in groups if k[2] in (metrics.WALL, HANGS)]
    by_commit: dict[str, dict[tuple[str, str, str], SeriesPoint]] = {}
    order: list[CommitRow] = []
    for k in keys:
        for p in groups[k]:
            if p.commit.sha not in by_commit:
                by_commit[p.commit.sha] = {}
                order.append(p.commit)
            by_commit[p.commit.sha][k] = p
    order.sort(key=lambda c: (c.depth, c.author_date))
    headers = ["commit", "subject", "author date",
               *(f"{k[0]}{f' [{k[1]}]' if k[1] else ''}: {label(k[2])}" for k in keys)]
    rows = []
    for c in reversed(order[-LATEST:]):
        cells = []
        for k in keys:
            got = by_commit[c.sha].get(k)
            v = got.value if got else None
            cells.append("-" if v is None else
                         f"hangs {v.hangs} of {v.runs}" if k[2] == HANGS else
                         f"{v.ratio:.3f}x{_ci(v.ci_low, v.ci_high)} ({v.verdict})"
                         if v.ratio is not None else v.verdict)
        rows.append([c.short, c.subject[:60], c.author_date[:10], *cells])
    return headers, rows


def title(d: Dashboard) -> str:
    return f"track {d.track.name}: {d.track.target} commit by commit"


def markdown_summary(d: Dashboard) -> str:
    return markdown.document([
        heading(title(d), level=1), *blocks(d, charts_too=False),
        text("The series charts, with each change point and its culprit, are in index.html.")])


def html_page(d: Dashboard) -> str:
    return html.page(title(d), [heading(title(d), level=1), *blocks(d)])


def write(folder: Path, d: Dashboard) -> None:
    """changes.json, summary.md and index.html, each written whole or not at all."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / "changes.json", changes_document(d))
    write_text_atomic(folder / "summary.md", markdown_summary(d))
    write_text_atomic(folder / "index.html", html_page(d))
