"""Blocks as one self-contained HTML page (report.html of a run, of merge, of bisect and history):
inline CSS, charts inlined as base64 images, data folded in ``<details>``. The one writer of
HTML pages; only formats. Every chart is an ``<img class="chart" data-chart=NAME>`` and every
table has its block's name as its class, so that a browser test can find them."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from typing import Any

from patchbench.report import blocks as rb

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


def verdict_class(verdict: str) -> str:
    if "faster" in verdict:
        return "verdict-faster"
    if "slower" in verdict:
        return "verdict-slower"
    return "verdict-none"


def cell_class(style: str, value: str) -> str:
    """A table cell's class from what its column holds (Table.styles)."""
    if style == "verdict":
        return verdict_class(value)
    if style == "agreement":
        return "verdict-slower" if value.startswith("NO") else ""
    return style


def _text(value: rb.Cell) -> str:
    return value.text if isinstance(value, rb.Escaped) else value


def table(t: rb.Table) -> str:
    """An HTML table; every value is escaped."""
    out = [f'<table class="{esc(t.name)}"><thead><tr>']
    out += [f"<th>{esc(_text(h))}</th>" for h in t.headers]
    out.append("</tr></thead><tbody>")
    for row in t.rows:
        out.append("<tr>")
        for j, v in enumerate(row):
            c = cell_class(t.styles[j], _text(v)) if j < len(t.styles) else ""
            out.append(f'<td class="{esc(c)}">{esc(_text(v))}</td>' if c
                       else f"<td>{esc(_text(v))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


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


def inline(parts: Sequence[rb.Inline]) -> str:
    out = []
    for p in parts:
        if isinstance(p, rb.Code):
            out.append(f"<code>{esc(p.text)}</code>")
        elif isinstance(p, rb.Strong):
            out.append(f"<b>{esc(p.text)}</b>")
        elif isinstance(p, rb.Link):
            out.append(f'<a href="{esc(p.href)}">{esc(p.label)}</a>')
        elif isinstance(p, rb.Output | rb.Escaped):
            out.append(esc(p.text))
        else:
            out.append(esc(p))
    return "".join(out)


def _gate(b: rb.Gate) -> str:
    items = "".join(f"<li>{esc(r)}</li>" for r in b.reasons)
    return (f'<div class="gate {"passed" if b.passed else "failed"}" id="gate">{esc(b.line)}'
            + (f": {esc(b.note)}" if b.note else "") + (f"<ul>{items}</ul>" if items else "")
            + "</div>")


def block(b: rb.Block) -> str:
    """One block as HTML (a chart with nothing to draw: nothing)."""
    if isinstance(b, rb.Text):
        return f"<p>{inline(b.parts)}</p>"
    if isinstance(b, rb.Heading):
        ident = f' id="{esc(b.id)}"' if b.id else ""
        return f"<h{b.level}{ident}>{inline(b.parts)}</h{b.level}>"
    if isinstance(b, rb.Bullets):
        items = "".join(f"<li>{inline(item)}</li>" for item in b.items)
        return f'<ul class="{esc(b.name)}">{items}</ul>' if b.name else f"<ul>{items}</ul>"
    if isinstance(b, rb.Table):
        return table(b)
    if isinstance(b, rb.Chart):
        return chart(b.draw(), b.name, b.caption)
    if isinstance(b, rb.Image):
        return f'<img src="{esc(b.src)}" alt="{esc(b.alt)}">'
    if isinstance(b, rb.Data):
        return details(b.title, json_block(b.value))
    if isinstance(b, rb.Pre):
        return f"<pre>{esc(b.text)}</pre>"
    if isinstance(b, rb.Gate):
        return _gate(b)
    if isinstance(b, rb.Fold):
        return details(b.title, blocks(b.blocks))
    if isinstance(b, rb.Section):
        if not b.name:
            return blocks(b.blocks)
        ident = f' id="{esc(b.id)}"' if b.id else ""
        return f'<div class="{esc(b.name)}"{ident}>{blocks(b.blocks)}</div>'
    if isinstance(b, rb.Across):
        return table(b.table())
    raise TypeError(f"not a report block: {b!r}")


def blocks(bs: Sequence[rb.Block]) -> str:
    """Blocks as HTML, one after the other."""
    return "".join(block(b) for b in bs)


def page(title: str, bs: Sequence[rb.Block]) -> str:
    """A whole page: each top-level block on a line of its own."""
    body = "\n".join(h for h in (block(b) for b in bs) if h)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")
