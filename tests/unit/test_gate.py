"""The A/B gate (`invoke compare NAME --gate`): what makes it fail, and its exit code. The gate
judges every comparison by the live rule (a record of an earlier one is judged again from its
samples), calling each gated metric against its margin (patchbench.analysis.gating)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from patchbench import gate, pipeline, results
from patchbench.cli import commands as cli
from patchbench.util.workspace import Switches, Workspace

SUMMARY = {"n": 3, "median": 0.1, "mean": 0.1, "stdev": 0.0, "min": 0.1, "max": 0.1, "cv": 0.0,
           "noisy": False}


def cell(label: str, factor: float = 1.0, rounds: int = 20, seed: int = 0,
         cv: float = 0.002) -> dict[str, Any]:
    """A cell of ``rounds`` rounds of 3 runs around 0.1 s times ``factor``."""
    rng = np.random.default_rng([seed, len(label)])
    times = (0.1 * factor * np.exp(rng.normal(0, cv, 3 * rounds))).tolist()
    return {"variant": label.split()[0], "label": label, "summary": SUMMARY,
            "samples": {"times": times, "rounds": [r for r in range(1, rounds + 1)
                                                    for _ in range(3)]}}


def verdict(candidate: str) -> dict[str, Any]:
    """A record of an earlier rule: the gate judges it again from the cells' runs."""
    return {"baseline": "baseline", "candidate": candidate, "candidate_variant": "fix",
            "speedup": 1.0, "ci_low": None, "ci_high": None, "p_value": None,
            "verdict": "no significant difference", "alpha": 0.05, "min_effect": 0.02}


def stress_build(hangs: int = 0, leftovers: int = 0) -> dict[str, Any]:
    return {"rounds": 1, "instances_killed": 8, "kill_errors": 0, "hangs": hangs,
            "leftovers": leftovers, "fresh_failures": 0, "list_latency_median_s": 0.01,
            "list_latency_max_s": 0.01, "outcomes": {}}


def make(factor: float = 0.8, verify_ok: bool = True, hangs: int = 0, leftovers: int = 0,
         baseline_leftovers: int = 0, rounds: int = 20,
         candidates: dict[str, float] | None = None) -> results.Results:
    """A run of one command scenario (the baseline and candidates ``name -> time factor``;
    default one candidate ``fix`` at ``factor``) and a stress scenario."""
    head = {"description": "", "command": "x", "runs": 3, "rounds": rounds, "warmup": 0}
    cands = candidates if candidates is not None else {"fix": factor}
    return results.parse({
        "schema_version": 2, "tool": "t", "comparison": "c", "target": "t", "url": "u",
        "ref": "r", "commit": "c", "seed": 1, "settings": {"alpha": 0.05, "min_effect": 0.02},
        "started_at": "s", "machine": {}, "builds": {},
        "scenarios": [
            {"name": "run", "kind": "command", **head,
             "cells": [cell("baseline", rounds=rounds),
                       *[cell(n, f, rounds, seed=i + 1) for i, (n, f) in
                         enumerate(cands.items())]],
             "comparisons": [verdict(n) for n in cands],
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


def test_an_unchanged_candidate_shown_within_the_margin_passes() -> None:
    assert gate.failures(make(1.0)) == []


def test_a_leftover_of_the_baseline_does_not_fail_the_candidate() -> None:
    assert gate.failures(make(baseline_leftovers=2)) == []


@pytest.mark.parametrize(("kw", "words"), [
    ({"factor": 1.25}, "run fix: slower than the gate's margin (+25.0% [+24.9%, +25.1%] against "
                       "a margin of +2.0%, one-sided at alpha 0.05)"),
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
                        lambda project, ws, name, sw: (make(1.25), [], tmp_path))
    ws = Workspace(root=tmp_path, matrix=tmp_path / "m.yaml", builds=tmp_path / "b",
                   reports=tmp_path / "r")
    assert cli.do_compare(ws, "x", Switches(gate=True)) == cli.GATE_FAILED_EXIT_CODE == 4
    assert "gate: FAILED" in capsys.readouterr().out
    assert cli.do_compare(ws, "x", Switches(gate=False)) == 0


def test_many_candidates_need_no_correction_every_one_must_pass() -> None:
    """An intersection-union test: six unchanged candidates all pass; one slower fails alone."""
    cands = {f"fix k={k}": 1.0 for k in (1, 2, 4, 8, 16, 32)}
    assert gate.failures(make(candidates=cands)) == []
    cands["fix k=8"] = 1.25
    (failed,) = gate.failures(make(candidates=cands))
    assert failed.startswith("run fix k=8: slower than the gate's margin")


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


# --- the gate fails closed on what it cannot call -------------------------------------------------


def test_a_withheld_or_undecided_verdict_fails_the_gate_unless_allowed() -> None:
    for res in (make(rounds=4), make(1.02, rounds=5)):
        (failed,) = gate.failures(res)
        assert "the gate fails closed (--gate-allow-inconclusive lets it pass)" in failed
        assert gate.failures(res, allow_inconclusive=True) == []
        assert len(gate.let_through(res)) == 1
    (why,) = gate.failures(make(rounds=4))
    assert why.startswith("run fix: verdict withheld (4 rounds, at least 5 needed)")


def test_the_switch_reaches_the_gate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    res = make(rounds=4)
    monkeypatch.setattr(pipeline, "load", lambda ws, **kw: None)
    monkeypatch.setattr(pipeline, "compare", lambda project, ws, name, sw: (res, [], tmp_path))
    ws = Workspace(root=tmp_path, matrix=tmp_path / "m.yaml", builds=tmp_path / "b",
                   reports=tmp_path / "r")
    assert cli.do_compare(ws, "x", Switches(gate=True)) == cli.GATE_FAILED_EXIT_CODE
    assert cli.do_compare(ws, "x", Switches(gate=True, gate_allow_inconclusive=True)) == 0
    assert "allowed (--gate-allow-inconclusive): run fix: verdict withheld" in capsys.readouterr().out
