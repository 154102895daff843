"""The soak kind's config and gate rule, from data alone (the runs themselves are in
tests/integration/test_soak.py)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from patchbench import scenarios
from patchbench.runs import document
from patchbench.scenarios.soak import SoakCondition, SoakConfig, SoakResult, SoakTest, SoakVariant


def cfg(**kw: Any) -> SoakConfig:
    return SoakConfig.model_validate({"name": "s", "command": ["true"], "runs": 40, **kw})


def test_the_config() -> None:
    c = cfg(block=10, timeout=2, conditions=[{"name": "default"}, {"name": "one", "cpus": [0]}])
    assert (c.kind, c.rounds, c.warmup, c.block) == ("soak", 1, 0, 10)
    assert "blocks of 10, deadline 2 s per run" in c.plan_detail()
    assert cfg().conditions[0].name == "default"
    assert scenarios.get("soak").config is SoakConfig
    for bad in [{"block": 7}, {"warmup": 3}, {"conditions": []},
                {"conditions": [{"name": "a"}, {"name": "a"}]}, {"budget_s": 0},
                {"conditions": [{"name": "x", "cores": [0]}]}]:
        with pytest.raises(ValidationError):
            cfg(**bad)


def variant(runs: int = 100, hangs: int = 0, failures: int = 0, **kw: Any) -> SoakVariant:
    return SoakVariant(runs=runs, hangs=hangs, failures=failures, failure_codes={},
                       leftovers=kw.get("leftovers", []), escaped=kw.get("escaped", []),
                       evidence=[], lost_sigchld=0, median_s=None, times=[], exit_codes=[])


def result(per_variant: dict[str, SoakVariant], tests: list[SoakTest]) -> SoakResult:
    cond = SoakCondition(name="one-core", summary="", applied={}, blocks=5, wall_s=1.0,
                         stopped_by="runs", per_variant=per_variant, tests=tests)
    return SoakResult(name="s", command="true", runs=100, rounds=1, warmup=0, deadline_s=2,
                      block=20, conditions=[cond])


def test_the_gate_rule() -> None:
    gate = scenarios.get("soak").gate
    t = SoakTest(candidate="fix", hang_p=1.0, hang_p_more=0.5, failure_p=1.0, failure_p_more=0.5)
    # the baseline's own hangs never fail the gate
    assert gate(result({"baseline": variant(hangs=3), "fix": variant()}, [t])) == []
    # one candidate hang does, with the baseline's count beside it
    (msg,) = gate(result({"baseline": variant(hangs=3), "fix": variant(hangs=1)}, [t]))
    assert msg == "s [one-core] fix: hangs: 1 of 100 (baseline 3 of 100, Fisher p 1)"
    (msg,) = gate(result({"baseline": variant(), "fix": variant(escaped=["1 sh"],
                                                                 leftovers=["x"])}, [t]))
    assert "1 leftovers" in msg and "1 escaped processes" in msg
    # failures fail it only when significantly more frequent than the baseline's
    assert gate(result({"baseline": variant(failures=2), "fix": variant(failures=3)}, [t])) == []
    worse = t.model_copy(update={"failure_p_more": 0.001})
    (msg,) = gate(result({"baseline": variant(), "fix": variant(failures=9)}, [worse]))
    assert "failures: 9 of 100 against the baseline's 0" in msg


def test_the_reference_soak_renders_with_its_evidence() -> None:
    from patchbench import gate, results
    from tests.support import REPO_ROOT

    run = REPO_ROOT / "reports" / "demo-soak" / "20261130T023834Z"
    res = results.load(run)
    (sc,) = res.scenarios
    assert isinstance(sc, SoakResult)
    bug = sc.conditions[0].per_variant["lost-wakeup"]
    assert bug.hangs > 0 and len(bug.evidence) == bug.hangs
    assert all((run / name).is_file() for name in bug.evidence)
    assert sc.evidence_summary and (run / sc.evidence_summary).is_file()
    assert gate.failures(res) == [
        f"start-4 [default] lost-wakeup: hangs: {bug.hangs} of 2000 (baseline 0 of 2000, "
        f"Fisher p {sc.conditions[0].tests[0].hang_p:.2g})"]
    page = document.html(res, gate=[])
    assert '<table class="soak">' in page and f'href="{bug.evidence[0]}"' in page
    assert "soak data" not in page  # a known kind: tables, not raw data
    assert document.markdown(res) == (run / "report.md").read_text()
