"""``hyperfine``: one hyperfine ``--export-json`` document per cell, every round merged."""

from __future__ import annotations

import json
from typing import Any

from patchbench.analysis import stats
from patchbench.errors import ReportError
from patchbench.results import Cell, Results, Samples, TimedResult
from patchbench.runs.export.base import Files, safe_name, timed_cells


def cpu_time(samples: Samples, key: str) -> float | None:
    """Mean user or system time over every run: the per-run values when recorded, else
    hyperfine's per-round means weighted by the runs of each round."""
    values = samples.user if key == "user" else samples.system
    if values:
        return stats.summarize(values).mean
    # hyperfine's own JSON of each round (kept as hyperfine wrote it), read by its own keys
    rounds = [h for h in samples.hyperfine if h.get(key) is not None]
    n = sum(len(h["times"]) for h in rounds)
    if not n:
        return None
    return float(sum(h[key] * len(h["times"]) for h in rounds) / n)


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
        "user": cpu_time(cell.samples, "user"),
        "system": cpu_time(cell.samples, "system"),
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
