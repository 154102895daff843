"""Saved runs: ``reports/<comparison>/<UTC time>/`` with results.json (patchbench.results),
report.md, machine.json, one manifest per build, and the charts. A run folder is assembled aside
and renamed into place, so it exists whole or not at all."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from patchbench import results as results_mod
from patchbench.errors import ReportError
from patchbench.files import write_json_atomic, write_text_atomic
from patchbench.report.markdown import extra_blocks, fmt_time, render, summary_rows, summary_table
from patchbench.results import Results

__all__ = ["extra_blocks", "fmt_time", "latest_run", "load_run", "render", "save_run",
           "summary_rows", "summary_table"]


def save_run(reports: Path, comparison: str, results: Results,
             extra_files: dict[str, Path], gate_reasons: list[str] | None = None) -> Path:
    """Write reports/<comparison>/<UTC time>/ atomically: assembled aside, then renamed.
    ``gate_reasons`` (patchbench.gate.failures) go into report.html."""
    from patchbench.report import html
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    parent = reports / comparison
    parent.mkdir(parents=True, exist_ok=True)
    final = parent / stamp
    n = 1
    while final.exists():
        n += 1
        final = parent / f"{stamp}-{n}"
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes 0700; reports are meant to be shared
    try:
        results.run_dir = f"{comparison}/{final.name}"
        write_json_atomic(tmp / "results.json", results.dump())
        write_text_atomic(tmp / "report.md", render(results))
        write_text_atomic(tmp / "report.html", html.render_html(results, gate=gate_reasons))
        write_json_atomic(tmp / "machine.json", results.machine)
        for variant, man in results.builds.items():
            write_json_atomic(tmp / f"manifest-{variant}.json", man)
        for name, path in extra_files.items():
            shutil.copy2(path, tmp / name)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


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
