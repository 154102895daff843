"""Reports say what was run: the gate appears in report.md, report.html and the job summary only
for a run made with --gate; runs saved before the field was recorded render as they always did."""

from __future__ import annotations

from pathlib import Path

from patchbench import gate, results
from patchbench.analysis.rejudge import rejudge
from patchbench.runs import document
from patchbench.runs.document import job_summary
from tests.support import REPO_ROOT

RUN = REPO_ROOT / "reports" / "demo" / "20261129T225457Z" / "results.json"
SOAK = REPO_ROOT / "reports" / "demo-soak" / "20261130T023834Z" / "results.json"


def _with(**update: object) -> results.Results:
    return results.load(RUN).model_copy(update=update)


def _html(res: results.Results) -> str:
    return document.html(res, gate=res.gate_reasons(gate.failures))


def test_without_gate_no_report_shows_one() -> None:
    res = _with(gate=False)
    assert res.gate_reasons(gate.failures) is None
    assert "## Gate" not in document.markdown(res, gate=None)
    assert "Gate:" not in _html(res)
    assert "Gate:" not in job_summary(res.dump(), None)


def test_with_gate_every_report_shows_it() -> None:
    res = _with(gate=True)
    reasons = res.gate_reasons(gate.failures)
    assert reasons is not None
    md = document.markdown(res, gate=reasons)
    assert "## Gate" in md
    assert ("**passed**" in md) == (not reasons)
    assert "Gate:" in _html(res)
    assert "Gate:" in job_summary(res.dump(), reasons)


def test_an_old_run_renders_as_before(tmp_path: Path) -> None:
    res = rejudge(results.load(RUN))  # read through the live rule, as every saved run is
    assert res.gate is None and "gate" not in res.dump()
    assert document.markdown(res) == (RUN.parent / "report.md").read_text()
    assert "Gate:" in _html(res)  # shown, as it always was for these runs


def test_new_runs_escape_free_text_and_old_ones_render_as_before() -> None:
    from patchbench.util.escape import md_text

    assert md_text("a <b>x</b> & `pb-<variant>`") == "a &lt;b&gt;x&lt;/b&gt; &amp; `pb-<variant>`"
    hostile = "<img src=x onerror=alert(1)> | `<kept>`"
    new = _with(report_format=2, description=hostile, warnings=[hostile])
    md = document.markdown(new)
    assert "<img" not in md and "&lt;img src=x" in md and "`<kept>`" in md
    old = _with(description=hostile)
    assert "<img" in document.markdown(old)  # format 1: as it always rendered


def test_a_run_without_timed_comparisons_has_no_timing_statistics_line() -> None:
    res = results.load(SOAK)
    assert "- statistics:" in document.markdown(res)  # format 1, as committed
    assert "- statistics:" not in document.markdown(res.model_copy(update={"report_format": 2}))


def test_the_html_of_a_new_soak_run_has_no_timing_line() -> None:
    res = results.load(SOAK)
    assert "statistics:" in document.html(res)
    assert "statistics:" not in document.html(res.model_copy(update={"report_format": 2}))


def test_format_2_shows_exact_p_values() -> None:
    from patchbench.report.numbers import fmt_p

    assert fmt_p(4.1e-35) == "<1e-4" and fmt_p(4.1e-35, exact=True) == "4.1e-35"
    assert "<1e-4" in document.summary_text(_with(), "github")  # format 1, as committed
    assert "<1e-4" not in document.summary_text(_with(report_format=2), "github")
