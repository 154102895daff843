"""What a report is made of, independent of markup: a scenario kind describes its part of a report
as a list of Blocks (``ScenarioKind.report`` for report.md, ``ScenarioKind.page`` for report.html,
``summary`` and ``across`` for the job summary and ``merge``), and report.markdown and report.html
only format Blocks (one table formatter each). Frozen dataclasses; no formatting here.

Inline text is a tuple of pieces: a plain ``str`` (written as it is in markdown, escaped in HTML),
``Code``, ``Strong``, ``Link`` or ``Output`` (a program's text, escaped in both). A program's text
of several lines is a ``Pre`` block (a fence its text cannot close, or ``<pre>``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Strong:
    text: str


@dataclass(frozen=True)
class Link:
    label: str
    href: str


@dataclass(frozen=True)
class Output:
    """A line of text a program printed (a process's command line, a container's name): shown as
    text, never as markup, in every format."""

    text: str


Inline = str | Code | Strong | Link | Output


@dataclass(frozen=True)
class Text:
    """A paragraph."""

    parts: tuple[Inline, ...]


@dataclass(frozen=True)
class Heading:
    """A heading inside a scenario's section."""

    text: str


@dataclass(frozen=True)
class Bullets:
    """A list; ``name`` names it for a browser test (the HTML class)."""

    items: tuple[tuple[Inline, ...], ...]
    name: str = ""


@dataclass(frozen=True)
class Table:
    """A table of text; ``name`` names it for a browser test (the HTML class). ``plain``: its
    cells are a program's text (a perf symbol), escaped in markdown too, not markup. ``text``:
    its headers and cells hold names from a trace or a saved run (a syscall, a cell label),
    escaped in markdown as text (no tag, no link, no column added; a name's underscores kept)."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    name: str = ""
    plain: bool = False
    text: bool = False


@dataclass(frozen=True)
class Image:
    """A chart file in the run folder (report.md links it)."""

    src: str
    alt: str


@dataclass(frozen=True)
class Chart:
    """A chart drawn from the results when formatted (report.html inlines it): ``draw`` returns
    the SVG document (patchbench.report.charts), or None when there is nothing to draw."""

    name: str
    draw: Callable[[], bytes | None]
    caption: str


@dataclass(frozen=True)
class Data:
    """Data shown as it is (JSON), folded under a title."""

    title: str
    value: Any


@dataclass(frozen=True)
class Pre:
    """A program's own output, shown as it is (a fence its content cannot close; <pre>)."""

    text: str


Block = Text | Heading | Bullets | Table | Image | Chart | Data | Pre


@dataclass(frozen=True)
class Across:
    """One kind's figures per row of a merged report, to be put side by side for several runs:
    ``cells`` maps a row (its values under ``keys``) to the text of one run's cell; ``name``
    names the table (the HTML class)."""

    name: str
    title: str
    keys: tuple[str, ...]
    note: str
    cells: tuple[tuple[tuple[str, ...], str], ...]


def text(*parts: Inline) -> Text:
    return Text(tuple(parts))


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], name: str = "", *,
          plain: bool = False, text: bool = False) -> Table:
    """A Table from any values (each shown as ``str(value)``)."""
    return Table(tuple(headers), tuple(tuple(str(v) for v in row) for row in rows), name, plain,
                 text)


def bullets(items: Sequence[Sequence[Inline]], name: str = "") -> Bullets:
    return Bullets(tuple(tuple(item) for item in items), name)
