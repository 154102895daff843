"""A self-contained ``report.html`` of one run: inline CSS, charts inlined as base64 SVG, the
summary table, the gate's reasons, per-scenario detail tables and charts, and the manifests and
machine info in collapsible ``<details>``. One entry point: :func:`render_html`. A scenario's own
part is its kind's ``page`` (patchbench.report.blocks), formatted here (``block``).

Every chart is an ``<img class="chart" data-chart=KIND>``; every table of results has a class
(``summary``, ``detail``, ...) so that a browser test can find them."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable, Sequence
from typing import Any

from patchbench.report.blocks import (
    Block,
    Bullets,
    Chart,
    Code,
    Data,
    Heading,
    Image,
    Inline,
    Link,
    Output,
    Pre,
    Strong,
    Table,
    Text,
)
from patchbench.report.markdown import statistics_line, summary_headers, summary_rows
from patchbench.report.numbers import fmt_aa, fmt_series, fmt_time
from patchbench.results import Results, RunInput, ScenarioResult, TimedResult, as_results
from patchbench.scenarios import KINDS

CSS = """
:root { color-scheme: light; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg2: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); background: #fff; margin: 0 auto; padding: 24px 32px; max-width: 1240px; }
h1 { font-size: 28px; margin: 0 0 8px; } h2 { font-size: 22px; margin-top: 36px;
     border-bottom: 1px solid var(--line); padding-bottom: 4px; } h3 { font-size: 18px; }
ul.meta { color: var(--muted); padding-left: 20px; }
code, pre { font: 13px/1.45 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { background: var(--bg2); padding: 12px; overflow-x: auto; border-radius: 6px; }
table { border-collapse: collapse; margin: 12px 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: 6px 10px; text-align: left; vertical-align: top; }
th { background: var(--bg2); }
td.num { text-align: right; white-space: nowrap; }
.verdict-faster { background: #dafbe1; font-weight: 600; }
.verdict-slower { background: #ffebe9; font-weight: 600; }
.verdict-none { color: var(--muted); }
.gate { padding: 12px 16px; border-radius: 6px; margin: 16px 0; font-weight: 600; }
.gate.passed { background: #dafbe1; border: 1px solid #4ac26b; }
.gate.failed { background: #ffebe9; border: 1px solid #ff8182; }
.gate ul { font-weight: 400; margin: 6px 0 0; }
.alert { background: #fff8c5; border: 1px solid #d4a72c; padding: 4px 16px 12px; border-radius: 6px; }
.alert h2 { margin-top: 8px; border: 0; }
figure { margin: 16px 0; } img.chart { max-width: 100%; height: auto; border: 1px solid var(--line);
       border-radius: 6px; } figcaption { color: var(--muted); font-size: 14px; }
details { margin: 8px 0; } summary { cursor: pointer; font-weight: 600; }
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], cls: str,
          cell_class: Callable[[int, int, object], str] | None = None) -> str:
    """An HTML table; every value is escaped. ``cell_class(row, col, value)`` adds a class."""
    out = [f'<table class="{esc(cls)}"><thead><tr>']
    out += [f"<th>{esc(h)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(rows):
        out.append("<tr>")
        for j, v in enumerate(row):
            c = cell_class(i, j, v) if cell_class else ""
            out.append(f'<td class="{esc(c)}">{esc(v)}</td>' if c else f"<td>{esc(v)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def verdict_class(verdict: str) -> str:
    if "faster" in verdict:
        return "verdict-faster"
    if "slower" in verdict:
        return "verdict-slower"
    return "verdict-none"


def chart(image: bytes | None, kind: str, caption: str) -> str:
    """A chart (SVG, or PNG as older code drew them) inlined as a data URI in an ``<img>``: in
    an image, an SVG's scripts and links never run, and its ids cannot clash with the page's."""
    if image is None:
        return ""
    mime = "image/png" if image.startswith(b"\x89PNG") else "image/svg+xml"
    data = base64.b64encode(image).decode()
    return (f'<figure><img class="chart" data-chart="{esc(kind)}" alt="{esc(caption)}" '
            f'src="data:{mime};base64,{data}"><figcaption>{esc(caption)}</figcaption></figure>')


def details(title: str, body: str) -> str:
    return f"<details><summary>{esc(title)}</summary>{body}</details>"


def json_block(data: Any) -> str:
    return f"<pre>{esc(json.dumps(data, indent=2, ensure_ascii=False))}</pre>"


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")


def gate_block(reasons: Sequence[str]) -> str:
    if not reasons:
        return ('<div class="gate passed" id="gate">Gate: passed: no candidate significantly '
                "slower, every check passed.</div>")
    items = "".join(f"<li>{esc(r)}</li>" for r in reasons)
    return f'<div class="gate failed" id="gate">Gate: FAILED<ul>{items}</ul></div>'


def summary_section(model: Results) -> str:
    rows = summary_rows(model)
    if not rows:
        return ""
    headers = summary_headers(model)
    verdict_col = headers.index("verdict")
    body = table(headers, rows, "summary",
                 lambda i, j, v: verdict_class(str(v)) if j == verdict_col
                 else ("num" if 2 <= j <= 5 else ""))
    return f'<h2 id="summary">Summary</h2>{body}'


def builds_section(results: Results) -> str:
    rows = []
    for name, man in results.builds.items():  # the manifests as the run recorded them
        fp = man["fingerprint"]
        rows.append([name, man["built_commit"][:12],
                     fmt_series(man["series"], upstream=results.report_format >= 3),
                     fp.get("version") or fp.get("swift", ""),
                     ", ".join(f"{k} {v['sha256'][:12]}" for k, v in man["artifacts"].items())])
    manifests = "".join(details(f"manifest of {name}", json_block(man))
                        for name, man in results.builds.items())
    return ('<h2 id="builds">Builds</h2>'
            + table(["variant", "built commit", "series", "toolchain", "artifacts (sha256)"],
                    rows, "builds") + manifests)


def _ci(ci: Sequence[float] | None) -> str:
    return f"[{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else "-"


def detail_rows(sc: TimedResult) -> list[list[str]]:
    rows = []
    hung = has_hangs(sc)
    for c in sc.cells:
        s = c.summary
        h = c.hangs
        rows.append([c.label, str(s.n), fmt_time(s.median), _ci(s.median_ci),
                     f"{fmt_time(s.mean)} ± {fmt_time(s.stdev)}", fmt_time(s.min),
                     fmt_time(s.max),
                     *([f"{h.hangs} of {h.runs}" if h else "-"] if hung else []),
                     "noisy" if s.noisy else ""])
    return rows


def has_hangs(sc: TimedResult) -> bool:
    """Whether the cells were measured with per-run deadlines (results version 4)."""
    return any(c.hangs is not None for c in sc.cells)


def inline(parts: Sequence[Inline]) -> str:
    out = []
    for p in parts:
        if isinstance(p, Code):
            out.append(f"<code>{esc(p.text)}</code>")
        elif isinstance(p, Strong):
            out.append(f"<b>{esc(p.text)}</b>")
        elif isinstance(p, Link):
            out.append(f'<a href="{esc(p.href)}">{esc(p.label)}</a>')
        elif isinstance(p, Output):
            out.append(esc(p.text))
        else:
            out.append(esc(p))
    return "".join(out)


def block(b: Block) -> str:
    """One block as HTML (a chart with nothing to draw: nothing)."""
    if isinstance(b, Text):
        return f"<p>{inline(b.parts)}</p>"
    if isinstance(b, Heading):
        return f"<h3>{esc(b.text)}</h3>"
    if isinstance(b, Bullets):
        items = "".join(f"<li>{inline(item)}</li>" for item in b.items)
        return f'<ul class="{esc(b.name)}">{items}</ul>' if b.name else f"<ul>{items}</ul>"
    if isinstance(b, Table):
        return table(b.headers, b.rows, b.name)
    if isinstance(b, Chart):
        return chart(b.draw(), b.name, b.caption)
    if isinstance(b, Image):
        return f'<img src="{esc(b.src)}" alt="{esc(b.alt)}">'
    if isinstance(b, Data):
        return details(b.title, json_block(b.value))
    if isinstance(b, Pre):
        return f"<pre>{esc(b.text)}</pre>"
    raise TypeError(f"not a report block: {b!r}")


def blocks(bs: Sequence[Block]) -> str:
    return "".join(block(b) for b in bs)


def scenario_section(sc: ScenarioResult) -> str:
    """One scenario: its command, its cells' detail table (a timed kind), then its kind's
    ``page``."""
    parts = [f'<h2 id="scenario-{esc(sc.name)}">Scenario <code>{esc(sc.name)}</code> '
             f"({esc(sc.kind)})</h2>"]
    if sc.description:
        parts.append(f"<p>{esc(sc.description)}</p>")
    parts.append(f"<p>Command: <code>{esc(sc.command)}</code></p>")
    if isinstance(sc, TimedResult) and sc.cells:
        parts.append(f"<p>{esc(sc.runs)} runs per cell in {esc(sc.rounds)} interleaved "
                     f"rounds, warmup {esc(sc.warmup)}.</p>")
        parts.append(table(["cell", "n", "median", "95% CI of median", "mean ± σ", "min", "max",
                            *(["hangs"] if has_hangs(sc) else []), ""], detail_rows(sc),
                           "detail", lambda i, j, v: "num" if 1 <= j <= 6 else ""))
    parts.append(blocks(KINDS[sc.kind].page(sc)))
    return "".join(parts)


def machine_summary(m: dict[str, Any]) -> str:
    return (f"{m.get('cpu_model')}, {m.get('cpu_count')} cores, kernel {m.get('kernel')}, "
            f"load {', '.join(f'{x:.2f}' for x in m.get('load_avg', []))} at start"
            + (f", {m['virtualization']}" if m.get("virtualization") else ""))


def aa_html(model: Results) -> str:
    """Which A/A a run did (runs since --aa-layout; "" before)."""
    if model.aa_build is None:
        return ""
    label, why = fmt_aa(model.aa_build)
    return f" — <b>A/A run, {esc(label)}</b> ({esc(why)})"


def render_html(results: RunInput, *, gate: Sequence[str] | None = None) -> str:
    """The whole report of one run as one HTML document (no external resources).
    ``gate``: the gate's reasons (``patchbench.gate.failures``); None: not shown."""
    model = as_results(results)
    title = f"{model.comparison}: {model.description or ''}".rstrip(": ")
    meta = [
        f"target <code>{esc(model.target)}</code> {esc(model.url)} at "
        f"<code>{esc(model.ref)}</code> (<code>{esc(model.commit)}</code>)",
        f"run {esc(model.started_at)} → {esc(model.finished_at)}, seed "
        f"{esc(model.seed)}"
        + (" — <b>A/A run</b> (baseline against itself: the noise floor)" if model.aa
           and model.aa_build is None else "") + aa_html(model),
        f"machine: {esc(machine_summary(model.machine))}",
    ]
    timed = any(sc.comparisons for sc in model.scenarios if isinstance(sc, TimedResult))
    if timed or model.report_format < 2:  # format 2: no timing line for a soak or stress run
        meta.append(esc(statistics_line(model).removeprefix("- ")))
    body = [f"<h1>{esc(title)}</h1>", '<ul class="meta">'
            + "".join(f"<li>{m}</li>" for m in meta) + "</ul>",
            gate_block(gate) if gate is not None else "", summary_section(model)]
    body += [scenario_section(sc) for sc in model.scenarios]
    if model.warnings:
        body.append('<h2 id="warnings">Warnings</h2><ul class="warnings">'
                    + "".join(f"<li>{esc(w)}</li>" for w in model.warnings) + "</ul>")
    body.append(builds_section(model))
    body.append('<h2 id="machine">Machine</h2>' + details("machine.json",
                                                          json_block(model.machine)))
    body.append(details("settings, seed and round order", json_block({
        "settings": model.settings.model_dump(mode="json", exclude_none=True), "seed": model.seed,
        "order": {sc.name: sc.order for sc in model.scenarios}})))
    return page(title, "\n".join(b for b in body if b))
