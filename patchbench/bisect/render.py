"""The bisect and history reports: report.md (tables in plain markdown, by ``tabulate``) and a
self-contained report.html with an inline SVG chart (value by commit, CI bars)."""

from __future__ import annotations

import html
from dataclasses import dataclass

from tabulate import tabulate

from patchbench.bisect.record import Bisect, History, MeasurementRec, step_rule
from patchbench.scenarios.steps import StepRule, Value
from patchbench.util.escape import xml_text

COLOURS = {"good": "#2e7d32", "bad": "#c62828", "undecided": "#f9a825", "skipped": "#9e9e9e",
           "": "#1565c0"}


@dataclass(frozen=True)
class Point:
    label: str  # the x axis: a short SHA
    y: float | None
    lo: float | None = None
    hi: float | None = None
    colour: str = COLOURS[""]
    title: str = ""


def chart(points: list[Point], y_label: str, title: str) -> str:
    """An SVG chart: one point per commit, in order, with its CI bar; a point without a value is
    drawn as a grey cross on the axis. Its text (a commit's subject from a saved record) is
    escaped for XML: the chart is well-formed whatever it holds."""
    w, h, left, right, top, bottom = 760, 320, 70, 20, 30, 90
    ys = [v for p in points for v in (p.y, p.lo, p.hi) if v is not None]
    y0, y1 = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if y1 - y0 < 1e-12:
        y0, y1 = y0 - 0.5 * abs(y0 or 1), y1 + 0.5 * abs(y1 or 1)
    pad = (y1 - y0) * 0.08
    y0, y1 = y0 - pad, y1 + pad
    n = max(1, len(points) - 1)

    def sx(i: int) -> float:
        return left + (w - left - right) * (i / n if len(points) > 1 else 0.5)

    def sy(v: float) -> float:
        return top + (h - top - bottom) * (1 - (v - y0) / (y1 - y0))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">',
           f'<text x="{w / 2}" y="16" text-anchor="middle" font-size="13">{xml_text(title)}'
           "</text>",
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" '
           'stroke="#444"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#444"/>',
           f'<text x="14" y="{(top + h - bottom) / 2}" transform="rotate(-90 14 '
           f'{(top + h - bottom) / 2})" text-anchor="middle">{xml_text(y_label)}</text>']
    for k in range(5):
        v = y0 + (y1 - y0) * k / 4
        out.append(f'<text x="{left - 4}" y="{sy(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>')
        out.append(f'<line x1="{left}" y1="{sy(v):.1f}" x2="{w - right}" y2="{sy(v):.1f}" '
                   'stroke="#ddd"/>')
    line = [f"{sx(i):.1f},{sy(p.y):.1f}" for i, p in enumerate(points) if p.y is not None]
    if len(line) > 1:
        out.append(f'<polyline points="{" ".join(line)}" fill="none" stroke="#90a4ae"/>')
    for i, p in enumerate(points):
        x = sx(i)
        tip = f"<title>{xml_text(p.title or p.label)}</title>"
        if p.lo is not None and p.hi is not None:
            out.append(f'<line x1="{x:.1f}" y1="{sy(p.lo):.1f}" x2="{x:.1f}" y2="{sy(p.hi):.1f}" '
                       f'stroke="{p.colour}" stroke-width="2"/>')
        if p.y is None:
            out.append(f'<text x="{x:.1f}" y="{h - bottom - 3}" text-anchor="middle" '
                       f'fill="{COLOURS["skipped"]}">×{tip}</text>')
        else:
            out.append(f'<circle cx="{x:.1f}" cy="{sy(p.y):.1f}" r="4" fill="{p.colour}">{tip}'
                       "</circle>")
        out.append(f'<text x="{x:.1f}" y="{h - bottom + 12}" transform="rotate(45 {x:.1f} '
                   f'{h - bottom + 12})" font-family="monospace" font-size="10">'
                   f"{xml_text(p.label[:8])}</text>")
    out.append("</svg>")
    return "\n".join(out)


def _page(title: str, md_tables: list[tuple[str, list[list[str]], list[str]]], svg: str,
          paragraphs: list[str]) -> str:
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
             "padding:3px 6px;text-align:left}code{font-size:12px}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    parts += [f"<p>{html.escape(p)}</p>" for p in paragraphs]
    parts.append(svg)
    for caption, rows, headers in md_tables:
        parts.append(f"<h2>{html.escape(caption)}</h2><table><tr>"
                     + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>"
                  for r in rows]
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# --- bisect -------------------------------------------------------------------------------------


STEP_HEADERS = ["step", "commit", "subject", "value", "vs good", "vs bad", "classification",
                "runs x"]


def _looks(factors: list[int]) -> str:
    return "/".join(f"{f}x" for f in factors)


def levels_lines(rec: Bisect) -> list[str]:
    """Schema 2: how alpha was spent, and the power of a step's first look when estimated."""
    sp = rec.spending
    if sp is None:
        return []
    out = f"levels: alpha {rec.alpha:g} for the ends, at {sp.ends_level:.2g} per look " \
          f"({_looks(sp.ends_looks)})"
    if sp.step_level is not None:
        each = (f"each of a look's {sp.comparisons} comparisons" if sp.comparisons > 1
                else "a look's comparison")
        out += (f"; then alpha {rec.alpha:g} for the steps: {sp.planned_steps} planned and one "
                f"share held back, looks {_looks(sp.step_looks)}, {each} at "
                f"{sp.step_level:.2g}; a wrong answer has probability at most {rec.alpha:g}")
    return [out] + ([f"power: {sp.power}"] if sp.power else [])


def headline(rec: Bisect) -> list[str]:
    out = [f"bisect {rec.target} with {rec.comparison}:{rec.scenario} ({rec.scenario_kind}): "
           f"good {rec.good.sha[:12]}, bad {rec.bad.sha[:12]}, {rec.chain} commits on the "
           f"first-parent chain (at most {rec.expected_steps} steps without skips)",
           f"ends: bad against good: {rec.ends}", *levels_lines(rec)]
    if rec.outcome == "underpowered":
        out.append(f"refused before the first step: {rec.why}")
    elif rec.outcome == "found" and rec.first_bad is not None:
        c = rec.first_bad
        out.append(f"first bad commit: {c.sha} {c.subject!r} ({c.author_date})")
        if rec.descended:
            out.append("found on the merged branch of " + " -> ".join(
                f"{m.sha[:12]} {m.subject!r}" for m in rec.descended))
        if rec.why:
            out.append(rec.why)
    elif rec.outcome == "no-difference":
        out.append(f"no bisect: {rec.why}")
    else:
        out.append(f"not found: {rec.why}; the first bad commit is one of "
                   + ", ".join(c.sha[:12] for c in rec.range))
    if rec.skipped:
        out.append("skipped (did not build): " + ", ".join(
            f"{c.sha[:12]} ({rec.build_failures.get(c.sha, '')})" for c in rec.skipped))
    out.append(f"builds: {len(rec.builds)} variants ({rec.built_fresh} built now, the rest "
               f"cached), {len(rec.measurements)} measurements")
    return out


def step_rows(rec: Bisect) -> list[list[str]]:
    return [[str(s.step), s.commit.sha[:12],
             s.commit.subject[:60] + (f" ({s.branch})" if s.branch else ""), s.value, s.vs_good,
             s.vs_bad,
             s.classification + (f" ({s.skipped_reason or s.reason})"
                                 if s.skipped_reason or s.reason else ""),
             "/".join(str(f) for f in s.factors) or "-"] for s in rec.steps]


def bisect_points(rec: Bisect) -> tuple[list[Point], str]:
    """good, every step's commit and bad, in chain order."""
    rule = step_rule(rec.scenario_kind)
    seen: dict[int, Point] = {}
    for m in rec.measurements:  # the ends from their first measurement
        for sha in m.commits:
            for idx, c, cls in ((0, rec.good, "good"), (rec.chain - 1, rec.bad, "bad")):
                if sha == c.sha and idx not in seen:
                    seen[idx] = _point(rule, m, sha, cls)
    for s in rec.steps:
        if s.measurements:
            seen[s.index] = _point(rule, rec.measurements[s.measurements[-1]], s.commit.sha,
                                   s.classification)
        else:
            seen[s.index] = Point(s.commit.sha[:12], None, colour=COLOURS["skipped"],
                                  title=f"{s.commit.sha[:12]} skipped")
    return [seen[i] for i in sorted(seen)], rule.axis


def _point(rule: StepRule, m: MeasurementRec, sha: str, cls: str) -> Point:
    name = sha[:12]
    y, lo, hi, short = rule.plot(rule.value(m.result, name))
    return Point(name, y, lo, hi, COLOURS[cls], f"{name} {cls}: {short}")


def bisect_markdown(rec: Bisect) -> str:
    lines = [f"# bisect: {rec.target}, {rec.comparison}:{rec.scenario}", ""]
    lines += [f"- {line}" for line in headline(rec)]
    table = (tabulate(step_rows(rec), STEP_HEADERS, tablefmt="github") if rec.steps else
             "No steps: " + ("the ends do not differ." if rec.outcome == "no-difference"
                             else "the runs cannot tell the ends apart."
                             if rec.outcome == "underpowered"
                             else "nothing lies between the ends."))
    lines += ["", "## Steps", "", table, "",
              "Each step measured its commit interleaved with both ends; `vs good` and `vs bad` "
              "are the commit against each end (time: its time relative to the end's, the "
              "round-paired CI and verdict; hangs: its hangs against the end's, Fisher's exact "
              "p). `runs x` are the multipliers of the scenario's runs and rounds tried.", ""]
    if rec.spending is not None:
        lines += ["A step is like good only when shown the same as good or different from bad "
                  "the way good differs from it, like bad the other way round, and not both "
                  "(the evidence is in brackets); an inconclusive comparison shows nothing. "
                  "Each comparison is judged at the level in `levels` above (docs/bisect.md).",
                  ""]
    lines += ["The chart (value by commit along the chain) is in report.html.", ""]
    return "\n".join(lines)


def bisect_html(rec: Bisect) -> str:
    points, y_label = bisect_points(rec)
    svg = chart(points, y_label, f"{rec.comparison}:{rec.scenario} along "
                f"{rec.good.sha[:8]}..{rec.bad.sha[:8]}")
    return _page(f"bisect: {rec.target}, {rec.comparison}:{rec.scenario}",
                 [("Steps", step_rows(rec), STEP_HEADERS)], svg, headline(rec))


# --- history ------------------------------------------------------------------------------------


POINT_HEADERS = ["#", "commit", "subject", "author date", "value", "vs first"]


def point_rows(rec: History) -> list[list[str]]:
    return [[str(i), p.commit.sha[:12], p.commit.subject[:60], p.commit.author_date[:10],
             p.value if not p.skipped_reason else f"skipped ({p.skipped_reason})", p.vs_first]
            for i, p in enumerate(rec.points)]


def history_points(rec: History) -> tuple[list[Point], str]:
    rule = step_rule(rec.scenario_kind)
    out = []
    for i, p in enumerate(rec.points):
        colour = COLOURS["bad"] if p.differs else COLOURS[""] if i else COLOURS["good"]
        value = Value(p.value, p.median, (p.ci[0], p.ci[1]) if p.ci else None, p.hangs, p.runs)
        y, lo, hi, _ = rule.plot(value)
        # releases labelled by their tag
        out.append(Point(p.tag or p.commit.sha[:12], y, lo, hi, colour, p.value))
    return out, rule.axis


def history_headline(rec: History) -> list[str]:
    first = rec.points[0].commit
    differ = [p.commit.sha[:12] for p in rec.points[1:] if p.differs]
    return [f"history of {rec.target} with {rec.comparison}:{rec.scenario} "
            f"({rec.scenario_kind}): {len(rec.points)} commits measured interleaved, each "
            f"against the first ({first.sha[:12]})",
            "differ from the first: " + (", ".join(differ) or "none")]


def history_markdown(rec: History) -> str:
    lines = [f"# history: {rec.target}, {rec.comparison}:{rec.scenario}", ""]
    lines += [f"- {line}" for line in history_headline(rec)]
    lines += ["", tabulate(point_rows(rec), POINT_HEADERS, tablefmt="github"), "",
              "`vs first`: the commit against the first, round-paired (time: its time relative "
              "to the first's with the CI and verdict; hangs: Fisher's exact p). The timeline "
              "chart is in report.html.", ""]
    return "\n".join(lines)


def history_html(rec: History) -> str:
    points, y_label = history_points(rec)
    svg = chart(points, y_label, f"{rec.comparison}:{rec.scenario} by commit (CI bars)")
    return _page(f"history: {rec.target}, {rec.comparison}:{rec.scenario}",
                 [("Commits", point_rows(rec), POINT_HEADERS)], svg, history_headline(rec))
