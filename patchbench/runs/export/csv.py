"""``csv``: one row per measured run (scenario, cell, variant, params, round, run, time, exit
code, and a column for each other metric the run recorded), every cell of the run in one file."""

from __future__ import annotations

import csv
import io

from patchbench.results import Results
from patchbench.runs.export import exporter
from patchbench.runs.export.exporter import Files, timed_cells
from patchbench.util.escape import csv_cell

COLUMNS = ["scenario", "cell", "variant", "params", "round", "run", "time_s", "exit_code"]


class CsvExporter:
    timed = True

    def files(self, results: Results) -> Files:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        extra = exporter.run_metrics(results)
        w.writerow(COLUMNS + exporter.csv_headers(extra))
        for sc, cell in timed_cells(results):
            s = cell.samples
            params = ";".join(f"{k}={v}" for k, v in sorted(cell.params.items()))
            rounds: list[int | None] = [*s.rounds] or [None] * len(s.times)
            for i, (t, code, r) in enumerate(zip(s.times, s.exit_codes, rounds, strict=True)):
                w.writerow([csv_cell(sc.name), csv_cell(cell.label), csv_cell(cell.variant),
                            csv_cell(params), "" if r is None else r, i + 1, repr(float(t)),
                            code, *exporter.csv_values(cell, extra, i)])
        return {"results.csv": buf.getvalue()}


EXPORTER = CsvExporter()
