"""Hangs in the timed kinds (command, burst), without running anything: splitting hyperfine's
runs into timed and hung ones, the results records (version 4, and version 3 files read as runs
without deadlines), the gate rule, the report's hang section, and the config rules."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from patchbench import gate, results
from patchbench.measure import bench, hangs
from patchbench.runs import document
from patchbench.scenarios.burst import BurstConfig
from patchbench.scenarios.command import CommandConfig, CommandResult

SUMMARY = {"n": 4, "median": 0.1, "mean": 0.1, "stdev": 0.0, "min": 0.1, "max": 0.1, "cv": 0.0,
           "noisy": False}


def run2(wall: float, user: float, system: float, code: int | None) -> dict[str, Any]:
    """One run as hyperfine 2's JSON export has it."""
    def v(x: float, unit: str = "second") -> dict[str, Any]:
        return {"value": x, "unit": unit}
    return {"time_wall_clock": v(wall), "time_cpu": v(user + system), "time_user": v(user),
            "time_system": v(system), "memory_peak_resident": v(3e6, "byte"), "exit_code": code}


def test_samples_keep_hung_runs_apart_from_the_timing() -> None:
    s = bench.Samples()
    runs = [run2(0.1, 0.01, 0.1, 0), run2(1.2, 0.02, 0.2, 124), run2(0.11, 0.03, 0.3, 0),
            run2(0.3, 0.04, 0.4, 3)]
    failed = s.add({"command": "x", "measurements": runs}, 2, metrics=("wall", "user", "system"))
    assert failed == [3]
    assert s.times == [0.1, 0.11, 0.3] and s.exit_codes == [0, 0, 3] and s.rounds == [2, 2, 2]
    assert s.metrics == {"user": [0.01, 0.03, 0.04], "system": [0.1, 0.3, 0.4]}
    assert s.hung_times == [1.2] and s.hung_rounds == [2]
    assert s.runs == 4 and len(s.hyperfine) == 1
    assert s.add({"times": [0.2], "exit_codes": [None]}, 3) == [-1]  # killed: no exit code


def cell(variant: str, n: int, hung: int) -> dict[str, Any]:
    return {"variant": variant, "label": variant, "summary": SUMMARY,
            "samples": {"times": [0.1] * n, "rounds": [1] * n, "hung_times": [1.0] * hung,
                        "hung_rounds": [1] * hung},
            "hangs": {"hangs": hung, "runs": n + hung, "deadline_s": 1.0,
                      "evidence": [f"e{i}.json" for i in range(hung)]}}


def doc(base_hung: int, cand_hung: int, version: int = 4) -> dict[str, Any]:
    test = {"hangs": cand_hung, "runs": 10, "baseline_hangs": base_hung, "baseline_runs": 10,
            "p_value": 0.5, "p_more": 0.25}
    return {
        "schema_version": version, "tool": "t", "comparison": "c", "target": "t", "url": "u",
        "ref": "r", "commit": "c", "seed": 1, "settings": {"alpha": 0.05, "min_effect": 0.02},
        "started_at": "s", "machine": {}, "builds": {},
        "scenarios": [{
            "name": "run", "kind": "command", "command": "x", "runs": 10, "rounds": 1,
            "warmup": 0, "deadline_s": 1.0,
            "cells": [cell("baseline", 10 - base_hung, base_hung),
                      cell("fix", 10 - cand_hung, cand_hung)],
            "comparisons": [{"baseline": "baseline", "candidate": "fix",
                             "candidate_variant": "fix", "speedup": 1.0, "ci_low": 0.9,
                             "ci_high": 1.1, "p_value": 0.9,
                             "verdict": "no significant difference", "alpha": 0.05,
                             "min_effect": 0.02, "hangs": test}]}]}


def gated(res: results.Results) -> list[str]:
    """The gate's reasons besides the times' (one round: the time's verdict is withheld)."""
    return gate.failures(res, allow_inconclusive=True)


def test_a_candidate_hang_fails_the_gate_and_a_baseline_hang_does_not() -> None:
    assert gated(results.parse(doc(0, 2), "t")) == [
        "run fix: hangs: 2 of 10 (baseline 0 of 10; Fisher p 0.5)"]
    assert gated(results.parse(doc(3, 0), "t")) == []
    assert gated(results.parse(doc(0, 0), "t")) == []


def test_a_version_3_file_reads_as_runs_without_deadlines() -> None:
    old = doc(0, 0, version=3)
    sc = old["scenarios"][0]
    del sc["deadline_s"]
    for c in sc["cells"]:
        del c["hangs"], c["samples"]["hung_times"], c["samples"]["hung_rounds"]
    del sc["comparisons"][0]["hangs"]
    res = results.parse(old, "t")
    assert res.schema_version == results.SCHEMA_VERSION == 8
    (rsc,) = res.scenarios
    assert isinstance(rsc, CommandResult)
    assert rsc.deadline_s is None and all(c.hangs is None for c in rsc.cells)
    assert rsc.comparisons[0].hangs is None
    # and its report shows neither a hangs column nor a hangs section
    md = document.markdown(res.model_copy(update={"machine": MACHINE}))
    assert "hangs" not in md and "deadline" not in md


MACHINE = {"cpu_model": "cpu", "cpu_count": 2, "kernel": "k", "load_avg": [0.0, 0.0, 0.0]}


def test_the_report_shows_hangs_per_cell_with_fisher_p_and_the_evidence() -> None:
    res = results.parse({**doc(0, 2), "machine": MACHINE}, "t")
    md = document.markdown(res)
    assert "| hangs" in md and "| 2 of 10" in md and "| 0 of 10" in md
    assert "Each run had a 1 s deadline" in md
    assert "[e0.json](e0.json), [e1.json](e1.json)" in md
    quiet = document.markdown(results.parse({**doc(0, 0), "machine": MACHINE}, "t"))
    assert "No run hung." in quiet and "What was seen" not in quiet


def test_the_hang_exit_code_is_the_launchers() -> None:
    assert hangs.HANG_EXIT_CODE == 124 and hangs.KILL_SLACK > 10  # the launcher's 10 s grace


def test_conditions_in_command_and_burst_configs() -> None:
    cfg = CommandConfig.model_validate({"name": "s", "command": ["x"], "conditions": [
        {"name": "default"}, {"name": "one", "cpus": [0]}]})
    assert cfg.conditioned and "conditions default, one" in cfg.plan_detail()
    assert not CommandConfig.model_validate({"name": "s", "command": ["x"]}).conditioned
    with pytest.raises(ValidationError, match="condition names must be unique"):
        CommandConfig.model_validate({"name": "s", "command": ["x"], "conditions": [
            {"name": "a"}, {"name": "a", "hogs": 1}]})
    with pytest.raises(ValidationError, match="a burst scan takes no 'conditions'"):
        BurstConfig.model_validate({"name": "s", "command": ["x"], "k": [1], "conditions": [
            {"name": "busy", "hogs": 1}]})


def test_a_candidate_whose_warmup_hung_fails_the_gate_too() -> None:
    data = doc(0, 0)
    cand = data["scenarios"][0]["cells"][1]
    cand["hangs"]["warmup_hangs"] = 1
    res = results.parse({**data, "machine": MACHINE}, "t")
    assert gated(res) == ["run fix: 1 warmup run hung"]
    md = document.markdown(res)
    assert "0 of 10 (+1 in warmup)" in md and "No run hung." not in md
    # the baseline's warmup hang fails nothing
    data = doc(0, 0)
    data["scenarios"][0]["cells"][0]["hangs"]["warmup_hangs"] = 2
    assert gated(results.parse(data, "t")) == []


def test_without_a_deadline_exit_124_is_a_failure_not_a_hang() -> None:
    s = bench.Samples()
    assert s.add({"times": [0.1, 0.2], "exit_codes": [0, 124]}, 1, deadline=False) == [124]
    assert s.hung_times == [] and s.exit_codes == [0, 124]
