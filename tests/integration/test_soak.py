"""The soak kind with real processes (go builds the launcher; no root): a candidate whose runs
hang now and then, leave a process behind and fail, against a well-behaved baseline. Hangs are
killed at their deadline with evidence, counted per variant and condition with Fisher's p, shown
in the report, and fail the gate; the baseline passes."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from patchbench import gate, pipeline, results
from patchbench.measure import hangs
from patchbench.scenarios.soak import SoakResult
from patchbench.util.workspace import Switches
from tests import support
from tests.support import Project, assert_nothing_left, processes_with

pytestmark = pytest.mark.integration


@pytest.fixture
def project(prebuilt_project: Project) -> Project:
    """The fixture project, its builds found cached after the first test (tests/conftest.py):
    these tests measure the builds and assert nothing about building them."""
    return prebuilt_project

CAND = "cand"
HANG_MARK = "31.5151"  # sleep durations no other process uses
ESCAPE_MARK = "32.5151"
RUNS, BLOCK = 8, 4
DEADLINE = 0.5  # each planted hang costs one; the other runs take milliseconds

# the candidate: run 1 of every block hangs (a zombie child under a sleeping parent), run 2 leaves
# a process behind, run 3 fails with exit 3; every run prints its GOMAXPROCS into {work}
SCRIPT = (
    "echo ${{GOMAXPROCS:-unset}} >> {work}/gomaxprocs-{variant}; "
    f"if [ {{variant}} = {CAND} ]; then "
    f"  case {{rep}} in 1) true & exec sleep {HANG_MARK};; 2) sleep {ESCAPE_MARK} & ;; 3) exit 3;; esac; "
    "fi; true"
)
SOAK: dict[str, Any] = {
    "name": "soak", "kind": "soak", "description": "a planted hang", "runs": RUNS,
    "block": BLOCK, "timeout": DEADLINE, "command": ["sh", "-c", SCRIPT],
    "conditions": [{"name": "default"}, {"name": "gomaxprocs-1", "env": {"GOMAXPROCS": "1"}}],
}


@pytest.fixture
def soak_run(project: Project) -> tuple[results.Results, Path]:
    project.write(candidates={CAND: ["greet"]}, scenarios=[SOAK])
    res, run_dir = support.compare(project.load(), project.options(), "fx", seed=3)
    assert run_dir is not None
    return results.parse(res, "test"), run_dir


def test_a_soak_counts_hangs_escapes_and_failures(soak_run: tuple[results.Results, Path],
                                                  project: Project) -> None:
    res, run_dir = soak_run
    (sc,) = res.scenarios
    assert isinstance(sc, SoakResult)
    assert (sc.deadline_s, sc.block) == (DEADLINE, BLOCK)
    assert [c.name for c in sc.conditions] == ["default", "gomaxprocs-1"]
    blocks = RUNS // BLOCK
    for cond in sc.conditions:
        assert cond.blocks == blocks and cond.stopped_by == "runs"
        base, cand = cond.per_variant["baseline"], cond.per_variant[CAND]
        assert (base.runs, base.hangs, base.failures) == (RUNS, 0, 0)
        assert base.leftovers == [] and base.escaped == [] and base.evidence == []
        assert (cand.runs, cand.hangs, cand.failures) == (RUNS, blocks, blocks)
        assert cand.failure_codes == {"3": blocks}
        assert cand.exit_codes == [0, hangs.HANG_EXIT_CODE, 0, 3] * blocks
        assert len(cand.escaped) == blocks and all(ESCAPE_MARK in e for e in cand.escaped)
        assert cand.lost_sigchld == blocks and len(cand.evidence) == blocks
        for name in cand.evidence:
            ev = hangs.load_evidence_file(run_dir / name)
            assert ev.lost_sigchld and ev.deadline_s == DEADLINE
            text = (run_dir / name).read_text()
            assert str(project.builds) not in text and str(project.root) not in text
        (t,) = cond.tests
        assert t.candidate == CAND and 0 < t.hang_p < 1
        # the run whose hang was killed took about the deadline; the others far less
        assert DEADLINE <= cand.times[1] < DEADLINE + 2
    # the condition reached the runs (and only its own); {work} is the run's working directory
    seen = sorted({line for p in (project.builds / "runs").glob("*/gomaxprocs-baseline")
                   for line in p.read_text().split()})
    assert seen == ["1", "unset"]
    # nothing hung or escaped is still running
    deadline = time.monotonic() + 10
    while (processes_with(HANG_MARK) or processes_with(ESCAPE_MARK)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(HANG_MARK) == [] and processes_with(ESCAPE_MARK) == []

    # the gate: the candidate fails under both conditions, the baseline's counts beside it
    failed = gate.failures(res)
    assert len(failed) == 2
    for f, cond in zip(failed, ["default", "gomaxprocs-1"], strict=True):
        assert f.startswith(f"soak [{cond}] {CAND}: hangs: {blocks} of {RUNS} (baseline 0 of {RUNS}")
        assert f"{blocks} escaped processes" in f
    # the report names the evidence and the lost-SIGCHLD signature
    md = (run_dir / "report.md").read_text()
    assert re.search(rf"\| gomaxprocs-1 +\| {CAND} +\| {blocks} of {RUNS} +\|", md)
    assert "lost-SIGCHLD" in md and cand_evidence_named(md, sc)
    assert sc.evidence_summary and hangs.LOST_SIGCHLD in (run_dir / sc.evidence_summary).read_text()
    saved = json.loads((run_dir / "results.json").read_text())
    assert saved["scenarios"][0]["kind"] == "soak"
    assert_nothing_left(project.builds, project.cache)


def cand_evidence_named(md: str, sc: SoakResult) -> bool:
    return all(f"]({n})" in md for c in sc.conditions for n in c.per_variant[CAND].evidence)


def test_a_clean_soak_passes_the_gate_and_a_budget_stops_it(project: Project) -> None:
    clean = {**SOAK, "command": ["true"], "runs": 40, "block": 4, "budget_s": 0.0001,
             "conditions": [{"name": "default"}]}
    project.write(candidates={CAND: ["greet"]}, scenarios=[clean])
    res, run_dir = support.compare(project.load(), project.options(), "fx", seed=1)
    parsed = results.parse(res, "test")
    (sc,) = parsed.scenarios
    assert isinstance(sc, SoakResult)
    (cond,) = sc.conditions
    # the budget is checked between rounds: one round of blocks ran, then it stopped
    assert cond.stopped_by == "budget" and cond.blocks == 1
    assert all(v.runs == 4 and v.hangs == 0 for v in cond.per_variant.values())
    assert gate.failures(parsed) == []
    assert run_dir is not None
    assert "Nothing was seen" in (run_dir / "report.md").read_text()


def test_a_soak_dry_run_plans_every_condition(project: Project) -> None:
    project.write(candidates={CAND: ["greet"]}, scenarios=[SOAK])
    _, lines, run_dir = pipeline.compare(project.load(), project.options(), "fx",
                                         Switches(dry_run=True))
    assert run_dir is None
    text = "\n".join(lines)
    assert "condition gomaxprocs-1: GOMAXPROCS=1" in text
    assert f"[{CAND}] {BLOCK} runs: launcher -deadline {DEADLINE:g}s -- sh -c" in text
