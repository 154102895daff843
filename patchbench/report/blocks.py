"""The one vocabulary of every report. Producers (each kind's ``blocks(result, view)``, a run's
report, merge, diff, the job summary, bisect) say what they show as Blocks; report.markdown and
report.html only format them. Frozen dataclasses, no markup.

Inline text is a tuple of pieces: a plain ``str`` (our own words: as they are in markdown,
escaped in HTML), ``Code``, ``Strong``, ``Link``, ``Output`` (a program's text: no live tag) and
``Escaped`` (text from a file on a line or in a table cell: no tag, no table split either)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


class View(enum.Enum):
    """Which report a producer's blocks are for."""

    REPORT = "report.md"
    BRIEF = "printed"  # report.md's part without round-paired details and hangs (compare prints it)
    PAGE = "report.html"
    SUMMARY = "job summary"  # a kind's table rows of a CI job summary, if any
    MERGE = "merge"  # a kind's cells of a merged report (Across), if any


MARKDOWN = (View.REPORT, View.BRIEF)  # report.md's part of a scenario, whole or brief


@dataclass(frozen=True)
class Span:
    """A piece of inline text of one style (the subclasses; pieces of two styles never equal)."""

    text: str


class Code(Span):
    pass


class Strong(Span):
    pass


class Output(Span):
    """A line a program printed (a process's command line, a container's name)."""


class Escaped(Span):
    """Text from a file (a name, a label, a gate's reason) on a line or in a table cell."""


@dataclass(frozen=True)
class Link:
    label: str
    href: str


Inline = str | Code | Strong | Link | Output | Escaped
Cell = str | Escaped


@dataclass(frozen=True)
class Text:
    """A paragraph."""

    parts: tuple[Inline, ...]


@dataclass(frozen=True)
class Heading:
    """A heading: level 1 titles a report, 2 a section, 3 a part of a scenario's section."""

    parts: tuple[Inline, ...]
    level: int = 3
    id: str = ""


@dataclass(frozen=True)
class Bullets:
    """A list; ``name`` names it for a browser test (the HTML class); ``depths``: each item's
    nesting (markdown)."""

    items: tuple[tuple[Inline, ...], ...]
    name: str = ""
    depths: tuple[int, ...] = ()


@dataclass(frozen=True)
class Table:
    """A table; ``name`` names it for a browser test (the HTML class). ``plain``: its cells are a
    program's text (a perf symbol), no markup in markdown either. ``styles``: what each column
    holds, for HTML ("num", "verdict", "agreement"). ``numbers``: markdown aligns numbers."""

    headers: tuple[Cell, ...]
    rows: tuple[tuple[Cell, ...], ...]
    name: str = ""
    plain: bool = False
    styles: tuple[str, ...] = ()
    numbers: bool = False


@dataclass(frozen=True)
class Image:
    """A chart file in the run folder (report.md links it)."""

    src: str
    alt: str


@dataclass(frozen=True)
class Chart:
    """A chart drawn when formatted (report.html inlines it): ``draw`` returns the SVG document
    (patchbench.report.charts), or None when there is nothing to draw."""

    name: str
    draw: Callable[[], bytes | None]
    caption: str


@dataclass(frozen=True)
class Pre:
    """A program's own output, shown as it is."""

    text: str


@dataclass(frozen=True)
class Data:
    """Data shown as it is (JSON), folded under a title."""

    title: str
    value: Any


@dataclass(frozen=True)
class Gate:
    """The gate's answer: ``line`` ("Gate: passed"), a note after it, the reasons it failed."""

    passed: bool
    line: str
    note: str = ""
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fold:
    """Blocks folded under a title (``<details>``)."""

    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Section:
    """Blocks that stand together: one element of a page (``name``: its box's class)."""

    blocks: tuple[Block, ...]
    name: str = ""
    id: str = ""


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

    def table(self) -> Table:
        return Table((*self.keys, ""), tuple((*k, v) for k, v in self.cells), self.name)


Block = (Text | Heading | Bullets | Table | Image | Chart | Data | Pre | Gate | Fold | Section
         | Across)


def text(*parts: Inline) -> Text:
    return Text(tuple(parts))


def heading(*parts: Inline, level: int = 3, id: str = "") -> Heading:
    return Heading(tuple(parts), level, id)


def table(headers: Sequence[Cell], rows: Sequence[Sequence[object]], name: str = "", *,
          plain: bool = False, styles: Sequence[str] = (), numbers: bool = False) -> Table:
    """A Table from any values (each shown as ``str(value)``, an Escaped one escaped)."""
    return Table(tuple(headers),
                 tuple(tuple(v if isinstance(v, Escaped) else str(v) for v in row)
                       for row in rows), name, plain, tuple(styles), numbers)


def escaped(values: Sequence[object]) -> list[Escaped]:
    """Every value as text from a file."""
    return [Escaped(str(v)) for v in values]


def bullets(items: Sequence[Sequence[Inline]], name: str = "",
            depths: Sequence[int] = ()) -> Bullets:
    return Bullets(tuple(tuple(item) for item in items), name, tuple(depths))
