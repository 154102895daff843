"""Run folders: written atomically, loaded with a schema check, rendered; paths redacted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchbench import redact
from patchbench import results as results_mod
from patchbench.analysis.rejudge import rejudge
from patchbench.errors import ReportError
from patchbench.report import numbers
from patchbench.results import Results
from patchbench.runs import document
from patchbench.runs import store as runstore


def results() -> Results:
    fp = {"kind": "go", "version": "go1.22.1"}
    man = {"built_commit": "a" * 40, "series": [], "fingerprint": fp,
           "artifacts": {"hello": {"path": "hello", "sha256": "b" * 64, "bytes": 10}}}
    cell = {"n": 4, "median": 0.2, "mean": 0.2, "stdev": 0.01, "min": 0.19, "max": 0.21,
            "cv": 0.05, "noisy": False}
    samples = {"times": [0.19, 0.2, 0.2, 0.21], "rounds": [1, 1, 2, 2]}
    return results_mod.parse({
        "schema_version": 2, "tool": "patchbench test", "comparison": "fx", "description": "d",
        "target": "hello", "url": "/u", "ref": "v1", "commit": "a" * 40, "aa": False,
        "seed": 1, "settings": {"alpha": 0.05, "min_effect": 0.02},
        "started_at": "s", "finished_at": "f",
        "machine": {"cpu_model": "cpu", "cpu_count": 2, "kernel": "k", "load_avg": [0.1] * 3},
        "builds": {"baseline": man, "greet": {**man, "series": [{"name": "greet"}]}},
        "scenarios": [{
            "name": "run", "kind": "command", "description": "", "command": "hello",
            "runs": 4, "rounds": 2, "warmup": 0, "rate": None,
            "cells": [{"variant": "baseline", "label": "baseline", "summary": cell,
                       "samples": samples},
                      {"variant": "greet", "label": "greet", "summary": {**cell, "median": 0.1},
                       "samples": samples}],
            "comparisons": [{"baseline": "baseline", "candidate": "greet",
                             "candidate_variant": "greet", "params": "", "speedup": 2.0,
                             "ci_low": 1.9, "ci_high": 2.1, "p_value": 0.001,
                             "verdict": "faster", "alpha": 0.05, "min_effect": 0.02}],
        }],
        "warnings": ["w1"],
    }, "test")


def save_run(reports: Path, res: Results) -> Path:
    """What a run does: its complete results into its run directory, then the report folder."""
    run_dir = reports.parent / "runs" / f"run-{len(list(reports.parent.glob('runs/*')))}"
    return runstore.publish(runstore.save_complete(run_dir, res, {}), reports)


def test_publish_writes_a_complete_folder(tmp_path: Path) -> None:
    tmp_path = tmp_path / "reports"
    run = save_run(tmp_path, results())
    assert run.parent == tmp_path / "fx"
    assert sorted(p.name for p in run.iterdir()) == [
        "machine.json", "manifest-baseline.json", "manifest-greet.json", "report.html", "report.md",
        "results.json"]
    data = runstore.load_run(run)
    assert data.run_dir == f"fx/{run.name}"
    # read through the live rule (patchbench.analysis.rejudge), as every saved run is
    assert data == rejudge(results().model_copy(update={"run_dir": f"fx/{run.name}"}))
    assert runstore.latest_run(tmp_path, "fx") == run
    assert [p.name for p in (tmp_path / "fx").iterdir()] == [run.name]


def test_two_runs_in_one_second_get_two_folders(tmp_path: Path) -> None:
    a = save_run(tmp_path / "reports", results())
    b = save_run(tmp_path / "reports", results())
    assert a != b
    assert (a / "results.json").is_file() and (b / "results.json").is_file()


def test_a_failed_write_leaves_no_partial_folder(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runstore, "write_text_atomic", boom)
    with pytest.raises(ReportError, match="the disk is full"):
        save_run(tmp_path / "reports", results())
    assert list((tmp_path / "reports").glob("fx/*")) == []


def test_an_interrupted_write_leaves_no_partial_folder(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    real = runstore.write_json_atomic
    calls = []

    def interrupted(path: Path, data: Any) -> None:
        calls.append(path.name)
        if path.name.startswith("manifest-"):
            raise KeyboardInterrupt
        real(path, data)

    monkeypatch.setattr(runstore, "write_json_atomic", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_run(tmp_path / "reports", results())
    assert "results.json" in calls
    assert list((tmp_path / "reports" / "fx").iterdir()) == []  # neither partial nor reserved


def test_load_run_refuses_another_schema(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(ReportError, match="results schema 99"):
        runstore.load_run(tmp_path)
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(ReportError, match="cannot read"):
        runstore.load_run(tmp_path)


def test_latest_run_without_runs(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no saved runs"):
        runstore.latest_run(tmp_path, "fx")


def test_markdown_and_table() -> None:
    md = document.markdown(results())
    assert md.startswith("# fx: d")
    assert "2.00× [1.90, 2.10]" in md
    assert "faster" in md
    assert "- w1" in md
    table = document.summary_text(results())
    assert "200.00 ms" in table and "100.00 ms" in table


@pytest.mark.parametrize(("seconds", "text"), [
    (None, "-"), (float("nan"), "-"), (1.5, "1.500 s"), (0.0123, "12.30 ms"),
    (0.0000123, "12.3 µs"), (-1.5, "-1.500 s"), (-0.0123, "-12.30 ms"),
    (-0.0000123, "-12.3 µs"), (0.0, "0.0 µs"),
])
def test_fmt_time(seconds: float | None, text: str) -> None:
    assert numbers.fmt_time(seconds) == text


def test_redact_replaces_paths_everywhere() -> None:
    data = {"a": "/tmp/b/runs/x/file", "l": ["/tmp/b/artifacts/h", 3, None],
            "n": {"k": "run /tmp/b/runs/x and /proj/p"}}
    out = redact.paths(data, {"/tmp/b/runs/x": "<run>", "/tmp/b": "<builds>",
                                 "/proj": "<project>"})
    assert out == {"a": "<run>/file", "l": ["<builds>/artifacts/h", 3, None],
                   "n": {"k": "run <run> and <project>/p"}}


def test_load_run_refuses_a_damaged_file_with_its_key_path(tmp_path: Path) -> None:
    data = results().dump()
    data["scenarios"][0]["cells"][0]["summary"]["median"] = "fast"
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(ReportError, match=r"scenarios\.0\.command\.cells\.0\.summary\.median"):
        runstore.load_run(tmp_path)


def test_a_stress_only_run_has_no_empty_summary() -> None:
    res = results()
    res.scenarios = []
    assert "## Summary" not in document.markdown(res)
    assert "## Summary" in document.markdown(results())


def paired_results() -> Results:
    """A version-3 run: its comparison judged by the round-paired rule (patchbench.analysis.verdict)."""
    from patchbench.analysis import verdict

    base = results().dump()
    rng_times = {1: [0.200, 0.210, 0.205], 2: [0.202, 0.199, 0.201], 3: [0.204, 0.206, 0.2],
                 4: [0.201, 0.203, 0.202]}
    bt = [t for r in rng_times for t in rng_times[r]]
    br = [r for r in rng_times for _ in rng_times[r]]
    ct = [t / 2 for t in bt]
    rec = verdict.record(bt, br, ct, br, alpha=0.05, min_effect=0.02, seed=1)
    sc = base["scenarios"][0]
    sc["comparisons"] = [{"baseline": "baseline", "candidate": "greet",
                          "candidate_variant": "greet", "params": "", **rec}]
    base["schema_version"] = 3
    return results_mod.parse(base, "test")


def test_a_paired_run_shows_rounds_drift_and_pooled_figures() -> None:
    res = paired_results()
    (comp,) = res.scenarios[0].comparisons  # type: ignore[union-attr]
    assert comp.paired and comp.verdict == "withheld" and comp.rounds == 4
    text = document.markdown(res)
    assert "p (paired t)" in text and "p (MWU)" not in document.summary_text(res)
    assert "round-paired" in text and "no verdict with fewer than 5 rounds" in text
    assert "| greet       | 4        | 2.000 2.000 2.000 2.000 |" in text
    assert "Pooled figures assume independent runs: descriptive only." in text
    assert "withheld" in document.summary_text(res)
    # an older run keeps its pooled statistics line and header
    old = document.markdown(results())
    assert "p (MWU)" in old and "Mann–Whitney U two-sided" in old and "round-paired" not in old


def test_the_html_report_of_a_paired_run_says_how_it_was_judged() -> None:

    page = document.html(paired_results())
    assert "round-paired" in page and "p (paired t)" in page and "withheld" in page
    old = document.html(results())
    assert "Mann–Whitney U two-sided" in old and "p (MWU)" in old
