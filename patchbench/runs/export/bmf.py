"""``bmf``: Bencher Metric Format, ``{benchmark: {"latency": {value, lower_value, upper_value}}}``
in nanoseconds: the value is a cell's median, the bounds its 95% bootstrap CI (its min and max
when there were too few runs for a CI); every other metric recorded is a measure of its own
(``cpu-time`` in nanoseconds, ``peak-rss`` in bytes, ...: runs/export/exporter.py)."""

from __future__ import annotations

import json
from typing import Any

from patchbench.results import Results
from patchbench.runs.export import exporter
from patchbench.runs.export.exporter import Files, timed_cells


class BmfExporter:
    timed = True

    def files(self, results: Results) -> Files:
        out: dict[str, Any] = {}
        for sc, cell in timed_cells(results):
            s = cell.summary
            ci = s.median_ci or [s.min, s.max]
            params = "".join(f"/{k}={v}" for k, v in cell.params.items())
            out[f"{sc.name}{params}/{cell.variant}"] = {
                # whole picoseconds at most: 48728657.00000001 ns is float noise, not a digit
                "latency": {"value": round(s.median * 1e9, 3),
                            "lower_value": round(ci[0] * 1e9, 3),
                            "upper_value": round(ci[1] * 1e9, 3)},
                **exporter.bmf_measures(cell, results.seed),
            }
        return {"bmf.json": json.dumps(out, indent=2) + "\n"}


EXPORTER = BmfExporter()
