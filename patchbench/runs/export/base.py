"""What every export format shares: the ``Exporter`` interface (hyperfine's ``Exporter`` trait),
the files an export writes, and the cells of a run that have timing samples."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

from patchbench.results import Cell, Results, TimedResult

Files = dict[str, str]  # a file's name, relative to the export folder -> its text


class Exporter(Protocol):
    """One export format, registered by name in ``patchbench.runs.export.FORMATS``."""

    # it exports timed cells: a run without any (a stress-only run) is refused before it is asked
    timed: bool

    def files(self, results: Results) -> Files:
        """The files this format writes for ``results``."""


def timed_cells(results: Results) -> Iterator[tuple[TimedResult, Cell]]:
    """Every cell with timing samples, with its scenario, in the run's order."""
    for sc in results.scenarios:
        if isinstance(sc, TimedResult):  # the kinds with cells (the others have no timing)
            for cell in sc.cells:
                yield sc, cell


def safe_name(name: str) -> str:
    """A file-name-safe spelling of a scenario or cell label."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", name).strip("_") or "_"
