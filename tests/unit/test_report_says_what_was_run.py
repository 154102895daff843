"""Reports say what was run: the gate appears in report.md, report.html and the job summary only
for a run made with --gate; runs saved before the field was recorded render as they always did."""

from __future__ import annotations

from pathlib import Path

from patchbench import gate, report, results
from patchbench.report.html import render_html
from patchbench.runs.summary import summary_markdown
from tests.support import REPO_ROOT

RUN = REPO_ROOT / "reports" / "demo" / "20261129T225457Z" / "results.json"


def _with(**update: object) -> results.Results:
    return results.load(RUN).model_copy(update=update)


def _html(res: results.Results) -> str:
    return render_html(res, gate=res.gate_reasons(gate.failures))


def test_without_gate_no_report_shows_one() -> None:
    res = _with(gate=False)
    assert res.gate_reasons(gate.failures) is None
    assert "## Gate" not in report.render(res, gate=None)
    assert "Gate:" not in _html(res)
    assert "Gate:" not in summary_markdown(res.dump(), None)


def test_with_gate_every_report_shows_it() -> None:
    res = _with(gate=True)
    reasons = res.gate_reasons(gate.failures)
    assert reasons is not None
    md = report.render(res, gate=reasons)
    assert "## Gate" in md
    assert ("**passed**" in md) == (not reasons)
    assert "Gate:" in _html(res)
    assert "Gate:" in summary_markdown(res.dump(), reasons)


def test_an_old_run_renders_as_before(tmp_path: Path) -> None:
    res = results.load(RUN)
    assert res.gate is None and "gate" not in res.dump()
    assert report.render(res) == (RUN.parent / "report.md").read_text()
    assert "Gate:" in _html(res)  # shown, as it always was for these runs
