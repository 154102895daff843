"""The A/B gate (`invoke compare NAME --gate`): what makes it fail, and its exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from patchbench import cli, pipeline


def results(verdict: str = "faster", verify_ok: bool = True, hangs: int = 0,
            leftovers: int = 0, baseline_leftovers: int = 0) -> dict[str, Any]:
    return {
        "warnings": [],
        "scenarios": [
            {"name": "run", "comparisons": [
                {"candidate": "fix", "verdict": verdict, "speedup": 0.8 if verdict == "slower"
                 else 1.2, "p_value": 0.001, "alpha": 0.05}],
             "verify": {"baseline": {"passed": True, "exit_code": 0},
                        "fix": {"passed": verify_ok, "exit_code": 0 if verify_ok else 1}}},
            {"name": "stress", "comparisons": [], "per_build": {
                "baseline": {"hangs": 0, "leftovers": baseline_leftovers, "fresh_failures": 0},
                "fix": {"hangs": hangs, "leftovers": leftovers, "fresh_failures": 0}}},
        ],
    }


def test_a_faster_correct_candidate_passes() -> None:
    assert pipeline.gate_failures(results()) == []


def test_no_significant_difference_passes() -> None:
    assert pipeline.gate_failures(results("no significant difference")) == []


def test_a_leftover_of_the_baseline_does_not_fail_the_candidate() -> None:
    assert pipeline.gate_failures(results(baseline_leftovers=2)) == []


@pytest.mark.parametrize(("kw", "words"), [
    ({"verdict": "slower"}, "run fix: slower (0.80×, Holm-adjusted p 0.001)"),
    ({"verify_ok": False}, "run fix: verify failed (exit 1)"),
    ({"hangs": 1}, "stress fix: 1 hangs, 0 leftovers, 0 failed fresh runs"),
    ({"leftovers": 3}, "stress fix: 0 hangs, 3 leftovers, 0 failed fresh runs"),
])
def test_what_fails_the_gate(kw: dict[str, Any], words: str) -> None:
    assert pipeline.gate_failures(results(**kw)) == [words]


def test_the_gate_exit_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(pipeline, "load", lambda opts: None)
    monkeypatch.setattr(pipeline, "compare",
                        lambda project, opts, name: (results("slower"), tmp_path))
    monkeypatch.setattr(cli.report, "summary_table", lambda res: "")
    opts = pipeline.Options(root=tmp_path, matrix=tmp_path / "m.yaml", builds=tmp_path / "b",
                            reports=tmp_path / "r", gate=True)
    assert cli.do_compare(opts, "x") == cli.GATE_FAILED_EXIT_CODE == 4
    assert "gate: FAILED" in capsys.readouterr().out
    opts.gate = False
    assert cli.do_compare(opts, "x") == 0


def test_many_comparisons_each_barely_slower_do_not_fail_the_gate() -> None:
    # six k values, each "slower" at p = 0.02: by Holm none survives alpha 0.05 (6 x 0.02 = 0.12)
    res = results()
    res["scenarios"][0]["comparisons"] = [
        {"candidate": f"fix k={k}", "verdict": "slower", "speedup": 0.9, "p_value": 0.02,
         "alpha": 0.05} for k in (1, 2, 4, 8, 16, 32)]
    assert pipeline.gate_failures(res) == []
    res["scenarios"][0]["comparisons"][3]["p_value"] = 0.001  # one clear regression survives
    assert pipeline.gate_failures(res) == ["run fix k=8: slower (0.90×, Holm-adjusted p 0.006)"]
