"""``html``: the self-contained ``report.html`` with the run's gate (for runs saved before the
report folder held one)."""

from __future__ import annotations

from patchbench import gate
from patchbench.results import Results
from patchbench.runs import document
from patchbench.runs.export.exporter import Files


class HtmlExporter:
    timed = False  # every run has a report, timed cells or not

    def files(self, results: Results) -> Files:
        return {"report.html": document.html(results, gate=gate.failures(results))}


EXPORTER = HtmlExporter()
