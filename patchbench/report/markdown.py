"""Blocks as markdown (report.md, the printed summary, the job summary, merge and diff): the one
writer of markdown tables. Only formats: what a report holds is its producer's."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tabulate import tabulate

from patchbench.report.blocks import (
    Across,
    Block,
    Bullets,
    Cell,
    Chart,
    Code,
    Data,
    Escaped,
    Fold,
    Gate,
    Heading,
    Image,
    Inline,
    Link,
    Output,
    Pre,
    Section,
    Strong,
    Table,
    Text,
)
from patchbench.util.escape import md_cell, md_code, md_fence, md_plain, md_text


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]], fmt: str = "github",
             *, numparse: bool = False) -> str:
    """The one markdown table: GitHub's pipes (``fmt``: tabulate's other formats, for a
    terminal); cells as they are unless ``numparse`` (numbers aligned as numbers)."""
    return tabulate(rows, headers=list(headers), tablefmt=fmt, disable_numparse=not numparse)


def inline(parts: Sequence[Inline]) -> str:
    out = []
    for p in parts:
        if isinstance(p, Code):
            out.append(md_code(p.text))  # a backtick in it cannot close the span
        elif isinstance(p, Output):
            out.append(md_text(p.text))
        elif isinstance(p, Escaped):
            out.append(md_cell(p.text))
        elif isinstance(p, Strong):
            out.append(f"**{md_cell(p.text)}**")
        elif isinstance(p, Link):
            out.append(f"[{p.label}]({p.href})")
        else:
            out.append(p)
    return "".join(out)


def _text(value: Cell) -> str:
    return value.text if isinstance(value, Escaped) else value


def cell(value: Cell, plain: bool = False) -> str:
    if plain:  # a program's text: no markup, nothing that splits the table
        return md_plain(_text(value))
    return md_cell(value.text) if isinstance(value, Escaped) else value


def table(t: Table, fmt: str = "github") -> str:
    return md_table([md_cell(_text(h)) if t.plain or isinstance(h, Escaped) else h
                     for h in t.headers],
                    [[cell(c, t.plain) for c in row] for row in t.rows], fmt, numparse=t.numbers)


def block(b: Block) -> str | None:
    """One block as markdown; None: it has no markdown form (a chart drawn for report.html)."""
    if isinstance(b, Text):
        return inline(b.parts)
    if isinstance(b, Heading):
        return "#" * b.level + " " + inline(b.parts)
    if isinstance(b, Bullets):
        depths = b.depths or (0,) * len(b.items)
        return "\n".join(f"{'  ' * d}- {inline(item)}"
                         for d, item in zip(depths, b.items, strict=True))
    if isinstance(b, Table):
        return table(b)
    if isinstance(b, Image):
        return f"![{b.alt}]({b.src})"
    if isinstance(b, Data):
        return f"{b.title}:\n\n```json\n{json.dumps(b.value, indent=2, ensure_ascii=False)}\n```"
    if isinstance(b, Chart):
        return None
    if isinstance(b, Pre):  # a fence its content cannot close
        return md_fence(b.text)
    if isinstance(b, Gate):
        head = f"**{b.line}**" + (f" — {b.note}" if b.note else "")
        return head + ("\n\n" + "\n".join(f"- {md_cell(r)}" for r in b.reasons)
                       if b.reasons else "")
    if isinstance(b, Fold):
        return f"<details><summary>{b.title}</summary>\n\n{document(b.blocks, '')}\n\n</details>"
    if isinstance(b, Section):
        return document(b.blocks, "") or None
    if isinstance(b, Across):
        return table(b.table())
    raise TypeError(f"not a report block: {b!r}")


def blocks(bs: Sequence[Block]) -> list[str]:
    """Blocks as markdown, one string each (a document puts an empty line between them)."""
    return [m for m in (block(b) for b in bs) if m is not None]


def document(bs: Sequence[Block], end: str = "\n") -> str:
    """A whole markdown document: the blocks with an empty line between them, then ``end``."""
    return "\n\n".join(blocks(bs)) + end
