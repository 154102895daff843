"""Exports of a saved run for tools people already use, as hyperfine's ``src/export/`` has them:
each format is a module with an :class:`Exporter` (exporter.py), registered by name in
:data:`FORMATS` (the ``--format`` choices list the same names, which a test checks).
"""

from __future__ import annotations

from pathlib import Path

from patchbench.errors import ReportError
from patchbench.results import RunInput, as_results
from patchbench.runs.export import benchstat, bmf, csv, hyperfine, page, traced
from patchbench.runs.export.exporter import Exporter, Files, timed_cells
from patchbench.util.files import write_text_atomic

FORMATS: dict[str, Exporter] = {
    "hyperfine": hyperfine.EXPORTER,
    "csv": csv.EXPORTER,
    "benchstat": benchstat.EXPORTER,
    "bmf": bmf.EXPORTER,
    "html": page.EXPORTER,
    "syscalls": traced.EXPORTER,
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
