"""The A/B gate (`invoke compare NAME --gate`): what makes it fail, and its exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from patchbench import gate, pipeline, results
from patchbench.cli import commands as cli
from patchbench.util.workspace import Switches, Workspace

SUMMARY = {"n": 3, "median": 0.1, "mean": 0.1, "stdev": 0.0, "min": 0.1, "max": 0.1, "cv": 0.0,
           "noisy": False}


def cell(label: str) -> dict[str, Any]:
    return {"variant": label.split()[0], "label": label, "summary": SUMMARY,
            "samples": {"times": [0.1] * 3}}


def verdict(candidate: str, v: str, speedup: float, p: float) -> dict[str, Any]:
    return {"baseline": "baseline", "candidate": candidate, "candidate_variant": "fix",
            "speedup": speedup, "ci_low": None, "ci_high": None, "p_value": p, "verdict": v,
            "alpha": 0.05, "min_effect": 0.02}


def stress_build(hangs: int = 0, leftovers: int = 0) -> dict[str, Any]:
    return {"rounds": 1, "instances_killed": 8, "kill_errors": 0, "hangs": hangs,
            "leftovers": leftovers, "fresh_failures": 0, "list_latency_median_s": 0.01,
            "list_latency_max_s": 0.01, "outcomes": {}}


def make(v: str = "faster", verify_ok: bool = True, hangs: int = 0, leftovers: int = 0,
         baseline_leftovers: int = 0, comparisons: list[dict[str, Any]] | None = None,
         ) -> results.Results:
    head = {"description": "", "command": "x", "runs": 3, "rounds": 1, "warmup": 0}
    return results.parse({
        "schema_version": 2, "tool": "t", "comparison": "c", "target": "t", "url": "u",
        "ref": "r", "commit": "c", "seed": 1, "settings": {"alpha": 0.05, "min_effect": 0.02},
        "started_at": "s", "machine": {}, "builds": {},
        "scenarios": [
            {"name": "run", "kind": "command", **head,
             "cells": [cell("baseline"), cell("fix")],
             "comparisons": comparisons if comparisons is not None else [
                 verdict("fix", v, 0.8 if v == "slower" else 1.2, 0.001)],
             "verify": {"baseline": {"command": "c", "passed": True, "exit_code": 0, "output": ""},
                        "fix": {"command": "c", "passed": verify_ok,
                                "exit_code": 0 if verify_ok else 1, "output": ""}}},
            {"name": "stress", "kind": "stress", **head, "rounds_detail": [], "instances": 8,
             "delay": [0, 1], "actions": ["delete"],
             "per_build": {"baseline": stress_build(leftovers=baseline_leftovers),
                           "fix": stress_build(hangs, leftovers)}},
        ]}, "test")


def test_a_faster_correct_candidate_passes() -> None:
    assert gate.failures(make()) == []


def test_no_significant_difference_passes() -> None:
    assert gate.failures(make("no significant difference")) == []


def test_a_leftover_of_the_baseline_does_not_fail_the_candidate() -> None:
    assert gate.failures(make(baseline_leftovers=2)) == []


@pytest.mark.parametrize(("kw", "words"), [
    ({"v": "slower"}, "run fix: slower (0.80×, Holm-adjusted p 0.001)"),
    ({"verify_ok": False}, "run fix: verify failed (exit 1)"),
    ({"hangs": 1}, "stress fix: 1 hangs, 0 leftovers, 0 failed fresh runs"),
    ({"leftovers": 3}, "stress fix: 0 hangs, 3 leftovers, 0 failed fresh runs"),
])
def test_what_fails_the_gate(kw: dict[str, Any], words: str) -> None:
    assert gate.failures(make(**kw)) == [words]


def test_the_gate_exit_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(pipeline, "load", lambda ws, **kw: None)
    monkeypatch.setattr(pipeline, "compare",
                        lambda project, ws, name, sw: (make("slower"), [], tmp_path))
    ws = Workspace(root=tmp_path, matrix=tmp_path / "m.yaml", builds=tmp_path / "b",
                   reports=tmp_path / "r")
    assert cli.do_compare(ws, "x", Switches(gate=True)) == cli.GATE_FAILED_EXIT_CODE == 4
    assert "gate: FAILED" in capsys.readouterr().out
    assert cli.do_compare(ws, "x", Switches(gate=False)) == 0


def test_many_comparisons_each_barely_slower_do_not_fail_the_gate() -> None:
    # six k values, each "slower" at p = 0.02: by Holm none survives alpha 0.05 (6 x 0.02 = 0.12)
    comps = [verdict(f"fix k={k}", "slower", 0.9, 0.02) for k in (1, 2, 4, 8, 16, 32)]
    assert gate.failures(make(comparisons=comps)) == []
    comps[3]["p_value"] = 0.001  # one clear regression survives
    assert gate.failures(make(comparisons=comps)) == [
        "run fix k=8: slower (0.90×, Holm-adjusted p 0.006)"]


def test_a_withheld_verdict_never_fails_the_gate_nor_counts_in_holm() -> None:
    assert gate.failures(make("withheld")) == []
    # two slower comparisons at p = 0.02 fail Holm together (2 x 0.02 < 0.05); a third one,
    # withheld for too few rounds, does not count as a test, so they still fail
    comps = [verdict("fix k=1", "slower", 0.9, 0.02), verdict("fix k=2", "slower", 0.9, 0.02),
             verdict("fix k=4", "withheld", 0.5, 0.0001)]
    assert gate.failures(make(comparisons=comps)) == [
        "run fix k=1: slower (0.90×, Holm-adjusted p 0.04)",
        "run fix k=2: slower (0.90×, Holm-adjusted p 0.04)"]


def test_an_escape_of_the_baseline_is_reported_but_fails_no_candidate() -> None:
    from patchbench.util import procguard

    res = make()
    res.warnings.append(f"{procguard.ESCAPED_BASELINE}: run baseline round 1/5: 1 process "
                        "outlived the command and were killed: sleep 9 (pid 1)")
    assert gate.failures(res) == []
    res.warnings.append(f"{procguard.ESCAPED}: run fix round 1/5: 1 process outlived the "
                        "command and were killed: sleep 9 (pid 2)")
    assert gate.failures(res) == [res.warnings[-1]]


def test_the_baseline_s_escapes_get_their_own_prefix() -> None:
    from patchbench.util import procguard

    class Guard:  # what deactivate reads of a ProcGuard that found two escapes
        available = True
        found: ClassVar[list[procguard.Found]] = [
            procguard.Found("run baseline round 1/5", [procguard.Survivor(1, "sleep 9")],
                            killed=True, variant="baseline"),
            procguard.Found("run fix round 1/5", [procguard.Survivor(2, "sleep 9")],
                            killed=True, variant="fix")]

        def check(self, step: str) -> None:
            pass

        def close(self) -> None:
            pass

    warnings = procguard.deactivate(Guard())  # type: ignore[arg-type]
    assert warnings[0].startswith(procguard.ESCAPED_BASELINE + ": run baseline round 1/5")
    assert warnings[1].startswith(procguard.ESCAPED + ": run fix round 1/5")


# --- the rule of schema 5: one-sided p under Holm, and the gate fails closed ---------------------

def verdict5(candidate: str, v: str, speedup: float, p_slower: float | None,
             rounds: int = 10) -> dict[str, Any]:
    return {**verdict(candidate, v, speedup, 0.001), "method": results.PAIRED5_METHOD,
            "rounds": rounds, "min_rounds": 5, "p_slower": p_slower, "mde": 0.04,
            "effect_s": 0.005}


def test_a_withheld_or_inconclusive_verdict_fails_the_gate_unless_allowed() -> None:
    for rec in (verdict5("fix", "withheld", 0.8, 0.001, rounds=4),
                verdict5("fix", "inconclusive", 0.97, 0.3)):
        res = make(comparisons=[rec])
        (failed,) = gate.failures(res)
        assert "the gate fails closed (--gate-allow-inconclusive lets it pass)" in failed
        assert gate.failures(res, allow_inconclusive=True) == []
        assert len(gate.let_through(res)) == 1
    (why,) = gate.failures(make(comparisons=[verdict5("fix", "withheld", 0.8, 0.001, 4)]))
    assert why.startswith("run fix: verdict withheld (4 rounds, at least 5 needed)")


def test_equivalent_and_faster_pass_the_closed_gate() -> None:
    comps = [verdict5("fix k=1", "equivalent", 1.0, 0.9), verdict5("fix k=2", "faster", 1.2, 1.0)]
    assert gate.failures(make(comparisons=comps)) == []


def test_the_closed_gate_uses_the_one_sided_p_under_holm() -> None:
    # two "slower" at one-sided p = 0.02: Holm keeps both (2 x 0.02 < 0.05); the old rule's
    # two-sided p of the same evidence (0.04 each) would have given 0.08 and passed them
    comps = [verdict5("fix k=1", "slower", 0.9, 0.02), verdict5("fix k=2", "slower", 0.9, 0.02)]
    assert gate.failures(make(comparisons=comps)) == [
        "run fix k=1: slower (0.90×, +5 ms, Holm-adjusted one-sided p 0.04)",
        "run fix k=2: slower (0.90×, +5 ms, Holm-adjusted one-sided p 0.04)"]
    # three at 0.02: none survives Holm (3 x 0.02), and each is then undecided: closed, it fails
    comps.append(verdict5("fix k=4", "slower", 0.9, 0.02))
    failed = gate.failures(make(comparisons=comps))
    assert len(failed) == 3 and all("but not after Holm" in f for f in failed)
    assert gate.failures(make(comparisons=comps), allow_inconclusive=True) == []


def test_the_switch_reaches_the_gate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    res = make(comparisons=[verdict5("fix", "withheld", 0.8, 0.001, rounds=4)])
    monkeypatch.setattr(pipeline, "load", lambda ws, **kw: None)
    monkeypatch.setattr(pipeline, "compare", lambda project, ws, name, sw: (res, [], tmp_path))
    ws = Workspace(root=tmp_path, matrix=tmp_path / "m.yaml", builds=tmp_path / "b",
                   reports=tmp_path / "r")
    assert cli.do_compare(ws, "x", Switches(gate=True)) == cli.GATE_FAILED_EXIT_CODE
    assert cli.do_compare(ws, "x", Switches(gate=True, gate_allow_inconclusive=True)) == 0
    assert "allowed (--gate-allow-inconclusive): run fix: verdict withheld" in capsys.readouterr().out
