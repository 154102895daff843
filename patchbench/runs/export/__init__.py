"""Exports of a saved run for tools people already use, one module per format behind one
interface, as hyperfine's ``src/export/`` has them: each format is an :class:`Exporter`
(``base.py``) registered by name in :data:`FORMATS`; :func:`export` gives a run's files
(``{relative file name: text}``) and :func:`write_export` writes them.

- ``hyperfine``: one hyperfine-format JSON per cell, merged over rounds;
- ``csv``: one row per measured run;
- ``benchstat``: Go's benchmark text format, one file per variant;
- ``bmf``: Bencher Metric Format (latency in nanoseconds, the median with its 95% CI);
- ``html``: the self-contained ``report.html`` (for runs saved before it existed);
- ``syscalls``: every traced run's syscalls, phases and each scan's fits.

Adding a format is one module and one line here; the command line's ``--format`` choices
(patchbench/cli/spec.py) list the same names, which a test checks.
"""

from __future__ import annotations

from pathlib import Path

from patchbench.errors import ReportError
from patchbench.results import RunInput, as_results
from patchbench.runs.export import benchstat, bmf, csv, html, hyperfine, syscalls
from patchbench.runs.export.base import Exporter, Files, timed_cells
from patchbench.util.files import write_text_atomic

FORMATS: dict[str, Exporter] = {
    "hyperfine": hyperfine.EXPORTER,
    "csv": csv.EXPORTER,
    "benchstat": benchstat.EXPORTER,
    "bmf": bmf.EXPORTER,
    "html": html.EXPORTER,
    "syscalls": syscalls.EXPORTER,
}


def export(run: RunInput, fmt: str) -> Files:
    """The files of ``run`` in the format ``fmt``."""
    exporter = FORMATS.get(fmt)
    if exporter is None:
        raise ReportError(f"unknown export format {fmt!r}", hint=f"one of: {', '.join(FORMATS)}")
    results = as_results(run)
    if exporter.timed and not any(True for _ in timed_cells(results)):
        raise ReportError(f"{results.run_dir or 'this run'}: no measured cells to export "
                          "(a stress-only run has no timing samples)")
    return exporter.files(results)


def write_export(results: RunInput, fmt: str, out_dir: Path) -> list[Path]:
    """Write the export's files under ``out_dir``; return their paths."""
    written = []
    for rel, text in export(results, fmt).items():
        path = out_dir / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, text)
        except OSError as exc:
            raise ReportError(f"cannot write the export {path}: {exc.strerror or exc}") from None
        written.append(path)
    return written
