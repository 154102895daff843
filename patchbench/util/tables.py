"""tabulate, imported without its optional wcwidth until a table needs it.

tabulate imports wcwidth, when installed, to measure East Asian wide characters, emoji and
combining marks; wcwidth's import reads its Unicode tables (10-15 ms of every command that
prints a table, and of every comparison's report; issue 21). patchbench's tables are ASCII and
one-column symbols (± – × → ≥ …, ``ONE_COLUMN``) whose width is their length, so tabulate is
imported with wcwidth hidden, and wcwidth is handed to it on the first table holding any other
character (a description in another script, an emoji, a control character): every table is
aligned exactly as tabulate with wcwidth aligns it. While tabulate is imported here, another
thread importing wcwidth would find none; patchbench imports tabulate only through this module
and wcwidth nowhere else."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

_HIDE = "wcwidth" not in sys.modules
if _HIDE:
    sys.modules["wcwidth"] = None  # type: ignore[assignment]  # "no such module", for tabulate
try:
    import tabulate as _tabulate
finally:
    if _HIDE:
        del sys.modules["wcwidth"]


# the characters patchbench's own tables hold beyond printable ASCII, each one column wide in
# every Unicode version wcwidth knows (a test checks them against wcwidth)
ONE_COLUMN = frozenset("±–—−×→←≥≤…·µ°Δσ√≈≠")


def _narrow(ch: str) -> bool:
    """Whether tabulate measures ``ch`` by its length exactly as with wcwidth."""
    return " " <= ch <= "~" or ch in ONE_COLUMN


def _texts(rows: Sequence[Any] | Mapping[Any, Any], headers: Any) -> Iterator[str]:
    if isinstance(headers, str):
        yield headers
    elif isinstance(headers, Iterable):
        yield from (str(h) for h in headers)
    columns = rows.items() if isinstance(rows, Mapping) else rows  # a dict: its keys, columns
    for row in columns:
        if isinstance(row, Iterable) and not isinstance(row, str | bytes):
            for cell in row:
                if isinstance(cell, Iterable) and not isinstance(cell, str | bytes):
                    yield from (str(c) for c in cell)  # a dict's column
                else:
                    yield str(cell)
        else:
            yield str(row)


def _wide(rows: Sequence[Any] | Mapping[Any, Any], headers: Any) -> bool:
    """Whether a cell or header holds a character other than printable ASCII and ONE_COLUMN
    (anything else, a control character too, is measured by wcwidth)."""
    return any(not _narrow(ch) for text in _texts(rows, headers) for ch in text)


def tabulate(rows: Any, headers: Any = (), **kwargs: Any) -> str:
    """``tabulate.tabulate``; with wcwidth (when installed) once a table needs it."""
    if not isinstance(rows, Sequence | Mapping):  # an iterator: read once, here
        rows = list(rows)
    if getattr(_tabulate, "wcwidth", None) is None and _wide(rows, headers):
        try:
            import wcwidth
        except ImportError:  # not installed: tabulate measures by length, as it would
            pass
        else:
            setattr(_tabulate, "wcwidth", wcwidth)  # noqa: B010  # what its import would set
            _tabulate.WIDE_CHARS_MODE = True
    return str(_tabulate.tabulate(rows, headers, **kwargs))
