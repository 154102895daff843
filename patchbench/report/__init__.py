"""Rendering saved runs: report.md (``render``), report.html (``html``), charts, and reading a
run back (``load_run``, ``latest_run``). Writing a report folder is patchbench.runs.store's
``publish``: assembled aside and renamed into place, so it exists whole or not at all.

Layers (pyproject.toml): blocks, numbers and charts sit below patchbench.scenarios (a kind builds
its report from them); the formatters markdown and html sit above it (they reach each kind's
``report`` through the registry). So this package's own module imports neither formatter when it
is imported: ``render``, ``fmt_time``, ``summary_rows`` and ``summary_table`` are fetched from
report.markdown on first use."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchbench import results as results_mod
from patchbench.errors import ReportError
from patchbench.results import Results

if TYPE_CHECKING:
    from patchbench.report.markdown import fmt_time, render, summary_rows, summary_table

__all__ = ["fmt_time", "latest_run", "load_run", "render", "summary_rows", "summary_table"]
FROM_MARKDOWN = ("fmt_time", "render", "summary_rows", "summary_table")


def __getattr__(name: str) -> Any:
    if name in FROM_MARKDOWN:  # not at import: a kind imports report.blocks through here
        from patchbench.report import markdown

        return getattr(markdown, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_run(path: Path) -> Results:
    """A saved run (its folder or its results.json), of any results version patchbench knows,
    every comparison judged by the live rule (patchbench.analysis.rejudge)."""
    # the registry of the kinds' result models; not at import: a kind imports report.blocks
    # through this package
    from patchbench import scenarios  # noqa: F401
    from patchbench.analysis.rejudge import rejudge

    return rejudge(results_mod.load(path))


def latest_run(reports: Path, comparison: str | None) -> Path:
    dirs = [p.parent for p in reports.glob(("*" if comparison is None else comparison)
                                              + "/*/results.json")]
    if not dirs:
        raise ReportError(f"no saved runs under {reports}" +
                          (f"/{comparison}" if comparison else ""))
    return max(dirs, key=lambda p: p.name)
