"""Blocks as markdown (report.md, the printed summary, the job summary, merge and diff): the one
writer of markdown tables. Only formats: what a report holds is its producer's."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tabulate import tabulate

from patchbench.report import blocks as rb
from patchbench.util.escape import md_cell, md_code, md_fence, md_plain, md_text


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]], fmt: str = "github",
             *, numparse: bool = False, widths: Sequence[int] | None = None) -> str:
    """The one table writer: GitHub's pipes (``fmt``: tabulate's other formats, for a
    terminal); cells as they are unless ``numparse`` (numbers aligned as numbers); ``widths``:
    the most characters of each column (longer cells wrap)."""
    return tabulate(rows, headers=list(headers), tablefmt=fmt, disable_numparse=not numparse,
                    maxcolwidths=list(widths) if widths else None)


def inline(parts: Sequence[rb.Inline]) -> str:
    out = []
    for p in parts:
        if isinstance(p, rb.Code):
            out.append(md_code(p.text))  # a backtick in it cannot close the span
        elif isinstance(p, rb.Output):
            out.append(md_text(p.text))
        elif isinstance(p, rb.Escaped):
            out.append(md_cell(p.text))
        elif isinstance(p, rb.Strong):
            out.append(f"**{md_cell(p.text)}**")
        elif isinstance(p, rb.Link):
            out.append(f"[{p.label}]({p.href})")
        else:
            out.append(p)
    return "".join(out)


def _text(value: rb.Cell) -> str:
    return value.text if isinstance(value, rb.Escaped) else value


def cell(value: rb.Cell, plain: bool = False) -> str:
    if plain:  # a program's text: no markup, nothing that splits the table
        return md_plain(_text(value))
    return md_cell(value.text) if isinstance(value, rb.Escaped) else value


def table(t: rb.Table, fmt: str = "github") -> str:
    return md_table([md_cell(_text(h)) if t.plain or isinstance(h, rb.Escaped) else h
                     for h in t.headers],
                    [[cell(c, t.plain) for c in row] for row in t.rows], fmt, numparse=t.numbers)


def block(b: rb.Block) -> str | None:
    """One block as markdown; None: it has no markdown form (a chart drawn for report.html)."""
    if isinstance(b, rb.Text):
        return inline(b.parts)
    if isinstance(b, rb.Heading):
        return "#" * b.level + " " + inline(b.parts)
    if isinstance(b, rb.Bullets):
        depths = b.depths or (0,) * len(b.items)
        return "\n".join(f"{'  ' * d}- {inline(item)}"
                         for d, item in zip(depths, b.items, strict=True))
    if isinstance(b, rb.Table):
        return table(b)
    if isinstance(b, rb.Image):
        return f"![{b.alt}]({b.src})"
    if isinstance(b, rb.Data):
        return f"{b.title}:\n\n```json\n{json.dumps(b.value, indent=2, ensure_ascii=False)}\n```"
    if isinstance(b, rb.Chart):
        return None
    if isinstance(b, rb.Pre):  # a fence its content cannot close
        return md_fence(b.text)
    if isinstance(b, rb.Gate):
        head = f"**{b.line}**" + (f" — {b.note}" if b.note else "")
        return head + ("\n\n" + "\n".join(f"- {md_cell(r)}" for r in b.reasons)
                       if b.reasons else "")
    if isinstance(b, rb.Fold):
        return f"<details><summary>{b.title}</summary>\n\n{document(b.blocks, '')}\n\n</details>"
    if isinstance(b, rb.Section):
        return document(b.blocks, "") or None
    if isinstance(b, rb.Across):
        return table(b.table())
    raise TypeError(f"not a report block: {b!r}")


def blocks(bs: Sequence[rb.Block]) -> list[str]:
    """Blocks as markdown, one string each (a document puts an empty line between them)."""
    return [m for m in (block(b) for b in bs) if m is not None]


def document(bs: Sequence[rb.Block], end: str = "\n") -> str:
    """A whole markdown document: the blocks with an empty line between them, then ``end``."""
    return "\n\n".join(blocks(bs)) + end
