"""Rendering saved runs: report.md (``render``), report.html (``html``), charts, and reading a
run back (``load_run``, ``latest_run``). Writing a report folder is patchbench.runs.store's
``publish``: assembled aside and renamed into place, so it exists whole or not at all."""

from __future__ import annotations

from pathlib import Path

from patchbench import results as results_mod
from patchbench.errors import ReportError
from patchbench.report.markdown import extra_blocks, fmt_time, render, summary_rows, summary_table
from patchbench.results import Results

__all__ = ["extra_blocks", "fmt_time", "latest_run", "load_run", "render",
           "summary_rows", "summary_table"]


def load_run(path: Path) -> Results:
    """A saved run (its folder or its results.json), of any results version patchbench knows."""
    return results_mod.load(path)


def latest_run(reports: Path, comparison: str | None) -> Path:
    dirs = [p.parent for p in reports.glob(("*" if comparison is None else comparison)
                                              + "/*/results.json")]
    if not dirs:
        raise ReportError(f"no saved runs under {reports}" +
                          (f"/{comparison}" if comparison else ""))
    return max(dirs, key=lambda p: p.name)
