"""invoke diff and invoke merge on the committed reference runs (and altered copies of them):
the same statistics as inside a run, refusals of runs of different comparisons, agreement across
machines, and the build check (same inputs must give the same artifacts)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from patchbench import results as results_mod
from patchbench.analysis import stats
from patchbench.cli.runs import failed_machines, find_runs
from patchbench.errors import ReportError
from patchbench.runs import diff as rundiff
from patchbench.runs import merge, summary
from tests.support import REPO_ROOT

REPORTS = REPO_ROOT / "reports"
DEMO, DEMO_AA = "demo/20261129T225457Z", "demo/20261129T225510Z"
STRESS_OLD, STRESS_NEW = "runc-stress/20261129T223430Z", "runc-stress/20261129T231914Z"
SIGNAL = "runc-signal/20261129T223940Z"


def load(key: str) -> dict[str, Any]:
    # as every command reads a saved run: through the loader (schema 1 files upgraded)
    return results_mod.load(REPORTS / key / "results.json").dump()


def no_gate(results: dict[str, Any]) -> list[str]:
    return []


# --- diff -------------------------------------------------------------------------------------

def test_diff_compares_the_shared_cells_with_the_runs_statistics() -> None:
    a, b = load(DEMO), load(DEMO_AA)
    d = rundiff.diff_runs(a, b, name_a="A", name_b="B")
    assert [(c.scenario, c.cell) for c in d.cells] == [("start-8", "baseline")]
    (c,) = d.cells
    ta = a["scenarios"][0]["cells"][0]["samples"]["times"]
    tb = b["scenarios"][0]["cells"][0]["samples"]["times"]
    expected = stats.compare(ta, tb, alpha=0.05, min_effect=0.02, seed=a["seed"])
    assert c.comparison == expected
    assert c.median_a == stats.summarize(ta).median and c.n_a == len(ta)
    assert c.build == "same build"  # same baseline sha256 in both runs
    assert d.only_a == ["start-8 per-sandbox-lock"] and d.only_b == ["start-8 baseline-again"]
    text = rundiff.render_diff(d)
    assert "| start-8" in text and "only in A: start-8 per-sandbox-lock" in text


def test_diff_of_a_run_with_itself_finds_no_difference() -> None:
    a = load("lima-log-sync/20261129T225449Z")
    d = rundiff.diff_runs(a, copy.deepcopy(a))
    assert len(d.cells) == 4
    for c in d.cells:
        assert c.comparison.speedup == 1.0
        assert c.verdict == "no significant difference"
        assert c.comparison.ci_low is not None and c.comparison.ci_low <= 1.0 <= c.comparison.ci_high


def test_diff_says_which_side_is_faster_and_that_the_build_changed() -> None:
    a = load(DEMO)
    b = copy.deepcopy(a)
    for c in b["scenarios"][0]["cells"]:
        c["samples"]["times"] = [t * 0.5 for t in c["samples"]["times"]]
    b["builds"]["baseline"]["artifacts"]["slowstart"]["sha256"] = "0" * 64
    d = rundiff.diff_runs(a, b)
    assert {c.verdict for c in d.cells} == {"B faster"}
    assert all(c.comparison.speedup == pytest.approx(2.0) for c in d.cells)
    assert d.cells[0].build == "different build: slowstart"
    assert d.cells[1].build == "same build"


def test_diff_statistics_are_one_swappable_call(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int]] = []

    def fake(a: Any, b: Any, **kw: Any) -> stats.Comparison:
        seen.append((len(a), len(kw["rounds_a"])))
        return stats.Comparison(1.5, 1.4, 1.6, 0.001, "faster", 0.05, 0.02)

    monkeypatch.setattr(rundiff, "compare_samples", fake)
    d = rundiff.diff_runs(load(DEMO), load(DEMO))
    assert seen == [(40, 40), (40, 40)]
    assert {c.verdict for c in d.cells} == {"B faster"}


def test_diff_refuses_runs_of_different_comparisons() -> None:
    with pytest.raises(ReportError, match="different comparisons") as exc:
        rundiff.diff_runs(load(DEMO), load(SIGNAL), name_a="x", name_b="y")
    assert "'demo'" in exc.value.message and "'runc-signal'" in exc.value.message


# --- merge ------------------------------------------------------------------------------------

def test_merge_of_two_machines_that_agree() -> None:
    a = load(DEMO)
    b = copy.deepcopy(a)
    b["machine"]["cpu_model"] = "Other CPU"
    m = merge.merge_runs([("m1", a), ("m2", b)], gate=no_gate)
    assert m.labels == ["m1", "m2"]
    (row,) = m.rows
    assert row.agreement == "yes: faster" and row.agrees
    assert m.identical_builds == {"baseline": True, "per-sandbox-lock": True}
    assert not m.build_differences
    md = merge.render_markdown(m)
    # read through the live rule: the pooled record of 2026-11-29 judged again round by round
    assert "| start-8 per-sandbox-lock | 7.05× [6.83, 7.22], -107.80 ms faster" in md
    assert "Other CPU" in md and "Intel(R) Xeon(R) Processor" in md
    assert "The verdicts agree on every machine." in md


def test_merge_says_when_verdicts_disagree() -> None:
    a = load(DEMO)
    b = copy.deepcopy(a)
    cells = b["scenarios"][0]["cells"]  # on m2 the candidate ran as the baseline did
    cells[1]["samples"] = copy.deepcopy(cells[0]["samples"])
    m = merge.merge_runs([("m1", a), ("m2", b)], gate=no_gate)
    assert m.rows[0].agreement == "NO: faster on m1, inconclusive on m2"
    assert "0 of 1 comparisons agree" in merge.render_markdown(m)


def test_merge_refuses_same_inputs_with_different_artifacts() -> None:
    a = load(DEMO)
    b = copy.deepcopy(a)
    b["builds"]["per-sandbox-lock"]["artifacts"]["slowstart"]["sha256"] = "f" * 64
    with pytest.raises(ReportError, match="builds differ") as exc:
        merge.merge_runs([("m1", a), ("m2", b)], gate=no_gate)
    assert "per-sandbox-lock: m1 vs m2: same inputs, different artifacts" in str(exc.value.detail)
    assert "artifacts.slowstart.sha256" in str(exc.value.detail)
    m = merge.merge_runs([("m1", a), ("m2", b)], gate=no_gate, allow_differing_builds=True)
    (d,) = m.build_differences
    assert d.same_inputs and d.variant == "per-sandbox-lock"
    assert m.identical_builds["per-sandbox-lock"] is False
    md = merge.render_markdown(m)
    assert md.index("## ⚠ Builds differ") < md.index("## Summary")


def test_merge_names_the_inputs_that_differ() -> None:
    a = load(DEMO)
    b = copy.deepcopy(a)
    for man in b["builds"].values():
        man["fingerprint"]["go_sha256"] = "1" * 64
        man["artifacts"]["slowstart"]["sha256"] = "2" * 64
    m = merge.merge_runs([("m1", a), ("m2", b)], gate=no_gate)  # not refused: other inputs
    assert {d.variant for d in m.build_differences} == {"baseline", "per-sandbox-lock"}
    for d in m.build_differences:
        assert not d.same_inputs
        assert any(f.startswith("fingerprint.go_sha256: ") for f in d.fields)
        assert not any(f.startswith(("built_at", "duration_s", "log")) for f in d.fields)


def test_merge_of_the_two_stress_runs_shows_the_changed_series_and_the_gate() -> None:
    m = merge.merge_runs([("old", load(STRESS_OLD)), ("new", load(STRESS_NEW))])
    assert not m.rows  # stress-only: no timing comparisons
    (d,) = m.build_differences
    assert d.variant == "async-signal-notify" and not d.same_inputs
    assert any(f.startswith("series[0].digest") for f in d.fields)
    assert [bool(r.gate) for r in m.runs] == [True, False] and m.gate_failed
    text = merge.summary_markdown(m)
    assert "**old: gate FAILED**" in text and "signal-mid-start | async-signal-notify" in text
    assert "0 / 1 / 0" in text


def test_merge_refuses_different_comparisons_and_duplicate_labels() -> None:
    with pytest.raises(ReportError, match="different comparisons"):
        merge.merge_runs([("a", load(DEMO)), ("b", load(SIGNAL))], gate=no_gate)
    with pytest.raises(ReportError, match="same label"):
        merge.merge_runs([("a", load(DEMO)), ("a", load(DEMO))], gate=no_gate)


def test_merged_html_has_the_tables_and_the_chart() -> None:
    a = load(DEMO)
    m = merge.merge_runs([("m1", a), ("m2", copy.deepcopy(a))], gate=no_gate)
    page = merge.render_html(m)
    assert page.count('<img class="chart" data-chart="merge"') == 1
    for cls in ("summary", "medians", "machines", "builds"):
        assert f'<table class="{cls}">' in page


def test_find_runs_labels_ci_artifact_folders(tmp_path: Path) -> None:
    for machine in ("patchbench-hosted", "patchbench-metal"):
        run = tmp_path / "runs" / machine / "demo" / "20260101T000000Z"
        run.mkdir(parents=True)
        (run / "results.json").write_text("{}")
        (tmp_path / "runs" / machine / f"exit-code-{machine[11:]}").write_text("0\n")
    found = find_runs(str(tmp_path / "runs"), tmp_path)
    assert [label for label, _ in found] == ["patchbench-hosted", "patchbench-metal"]
    assert find_runs(f"x={tmp_path / 'runs' / 'patchbench-metal'}", tmp_path)[0][0] == "x"
    assert failed_machines([str(tmp_path / "runs")], tmp_path) == []
    (tmp_path / "runs" / "patchbench-metal" / "exit-code-metal").write_text("14\n")
    assert failed_machines([str(tmp_path / "runs")], tmp_path) == [
        "metal: invoke compare exited 14 (an error, not a gate verdict; see that job's log)"]
    with pytest.raises(ReportError, match="no saved run"):
        find_runs(str(tmp_path / "nothing"), tmp_path)


# --- job summary ------------------------------------------------------------------------------

def test_append_summary_appends_the_table_and_the_gate(tmp_path: Path) -> None:
    target = tmp_path / "step-summary.md"
    target.write_text("earlier step\n")
    summary.append_summary(load(DEMO), [], target)
    summary.append_summary(load(DEMO_AA), ["start-8 baseline-again: slower (1.10×)"], target)
    text = target.read_text()
    assert text.startswith("earlier step\n")
    assert text.count("### patchbench `demo`") == 2
    assert "| start-8    | per-sandbox-lock | 125.63 ms" in text
    assert "**Gate: passed**" in text
    assert "**Gate: FAILED**\n\n- start-8 baseline-again: slower (1.10×)" in text
    assert "**A/A run**" in text


def test_summary_of_a_stress_run_lists_the_builds(tmp_path: Path) -> None:
    target = tmp_path / "s.md"
    summary.append_summary(load(STRESS_OLD), ["x"], target)
    text = target.read_text()
    assert "| signal-mid-start | async-signal-notify | 0       | 1" in text
    assert "speedup" not in text  # no empty timing table


def test_summary_path_prefers_the_option_then_github() -> None:
    assert summary.summary_path("f.md", {"GITHUB_STEP_SUMMARY": "/gh"}) == Path("f.md")
    assert summary.summary_path(None, {"GITHUB_STEP_SUMMARY": "/gh"}) == Path("/gh")
    assert summary.summary_path(None, {}) is None


# --- diff: the ratio of the two runs' round-paired speedups -------------------------------------

def test_a_machine_that_is_slower_everywhere_changes_no_speedup() -> None:
    """The same binaries, one run on a slower machine. The pooled per-cell
    figures say "B slower" (and, now, that it is the machine's); the speedups' ratio is 1."""
    a = load(DEMO)
    b = copy.deepcopy(a)
    for c in b["scenarios"][0]["cells"]:
        c["samples"]["times"] = [t * 1.3 for t in c["samples"]["times"]]
    d = rundiff.diff_runs(a, b)
    assert {c.verdict for c in d.cells} == {"B slower"}
    (s,) = d.speedups
    assert s.candidate == "per-sandbox-lock" and s.builds == "same builds"
    assert s.ratio.ratio == pytest.approx(1.0, rel=1e-12)
    assert s.ratio.ci_low is not None and s.ratio.ci_low <= 1.0 <= s.ratio.ci_high
    text = rundiff.render_diff(d)
    assert "the same build in both runs, so the difference is the machine's" in text
    assert "| start-8    | per-sandbox-lock |" in text and "B/A [95% CI]" in text


def test_a_candidate_that_gained_shows_in_the_speedups_ratio() -> None:
    a = load(DEMO)
    b = copy.deepcopy(a)
    for c in b["scenarios"][0]["cells"]:
        if c["variant"] == "per-sandbox-lock":
            c["samples"]["times"] = [t * 0.8 for t in c["samples"]["times"]]
    (s,) = rundiff.diff_runs(a, b).speedups
    assert s.ratio.ratio == pytest.approx(1.25, rel=1e-9)
    assert s.ratio.p_value is not None and s.ratio.p_value < 1e-6


def test_the_speedups_ratio_is_welch_t_on_the_per_round_logs() -> None:
    import math

    import numpy as np
    from scipy import stats as sps

    from patchbench.analysis import paired

    rng = np.random.default_rng(3)
    ra, rb = np.exp(rng.normal(0.1, 0.02, 8)), np.exp(rng.normal(0.13, 0.05, 12))
    r = paired.speedup_ratio(ra.tolist(), rb.tolist(), alpha=0.05)
    want = sps.ttest_ind(np.log(rb), np.log(ra), equal_var=False)
    assert r.p_value == pytest.approx(float(want.pvalue), rel=1e-9)
    assert math.log(r.ratio) == pytest.approx(float(np.log(rb).mean() - np.log(ra).mean()))
    assert r.ci_low is not None and r.ci_high is not None
    ci = want.confidence_interval(0.95)
    assert (math.log(r.ci_low), math.log(r.ci_high)) == pytest.approx((ci.low, ci.high), rel=1e-9)
