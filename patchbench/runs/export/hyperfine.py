"""``hyperfine``: one hyperfine ``--export-json`` document per cell, every round merged."""

from __future__ import annotations

import json
from typing import Any

from patchbench.analysis import stats
from patchbench.errors import ReportError
from patchbench.results import Cell, Results, TimedResult
from patchbench.runs.export import exporter
from patchbench.runs.export.exporter import Files, safe_name, timed_cells


def hyperfine_cell(sc: TimedResult, cell: Cell) -> dict[str, Any]:
    """One cell as a hyperfine ``--export-json`` document, every round merged."""
    times = cell.samples.times
    if not times:
        raise ReportError(f"{sc.name} {cell.label}: no samples to export")
    summary = stats.summarize(times)
    # the command line as the scenario has it (placeholders such as {runc} unfilled: they name
    # this machine's paths); the variant and the cell's parameters are hyperfine "parameters"
    entry: dict[str, Any] = {
        "command": sc.command or f"{sc.name} {cell.label}",
        "mean": summary.mean,
        "stddev": summary.stdev if summary.n > 1 else None,  # hyperfine's null for one run
        "median": summary.median,
        "user": exporter.cpu_mean(cell.samples, "user"),
        "system": exporter.cpu_mean(cell.samples, "system"),
        "min": summary.min,
        "max": summary.max,
        "times": times,
        "exit_codes": cell.samples.exit_codes,
    }
    entry["parameters"] = {"variant": cell.variant, **cell.params}
    return {"results": [entry]}


class HyperfineExporter:
    timed = True

    def files(self, results: Results) -> Files:
        return {f"hyperfine/{safe_name(sc.name)}--{safe_name(cell.label)}.json":
                json.dumps(hyperfine_cell(sc, cell), indent=2) + "\n"
                for sc, cell in timed_cells(results)}


EXPORTER = HyperfineExporter()
