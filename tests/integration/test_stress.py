"""Stress rounds without root: plain shell commands stand in for a runtime whose instances are
files in {work}. A launch that leaves a file behind is a leftover, one that ignores SIGTERM and
never exits is a hang (and is killed), and a well-behaved one reports neither."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest

from patchbench import pipeline
from patchbench.measure import bench, hangs
from patchbench.measure.bench import Cell
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
HANG_MARK = "30.4242"  # a sleep duration no other process uses
HANG_DEADLINE = 0.5  # each round of the planted hang waits it out
ROUNDS, INSTANCES = 2, 2
INST = "{work}/{id}-{round}-{i}"  # one instance: a file named after the run, variant, round, i

COMMON: dict[str, Any] = {
    "kind": "stress", "rounds": ROUNDS, "runs": ROUNDS, "instances": INSTANCES,
    "delay": [0.0, 0.1], "list": ["ls", "{work}"], "fresh": ["true"],
}

SCENARIOS: list[dict[str, Any]] = [
    {
        # starts, is deleted (or runs to its end), and is gone either way
        "name": "clean", **COMMON, "timeout": 10, "actions": ["delete", "stop"],
        "launch": ["sh", "-c", f"touch {INST}; sleep 0.3; rm -f {INST}"],
        "kill": {"delete": ["rm", "-f", INST], "stop": ["rm", "-f", INST]},
    },
    {
        # the candidate's first instance of round 2 leaves something the delete cannot reach
        "name": "leaky", **COMMON, "timeout": 10, "actions": ["delete"],
        "launch": ["sh", "-c", f"touch {INST}; if [ {{variant}} = {CAND} ] && [ {{round}} = 2 ] "
                               f"&& [ {{i}} = 0 ]; then touch {INST}-orphan; fi; sleep 0.3; "
                               f"rm -f {INST}"],
        "kill": {"delete": ["rm", "-f", INST]},
    },
    {
        # the candidate's instances ignore SIGTERM and never exit; the baseline's exit on it
        "name": "hang", **COMMON, "timeout": HANG_DEADLINE, "actions": ["sigterm"],
        "launch": ["sh", "-c", f"if [ {{variant}} = {CAND} ]; then trap '' TERM INT; "
                               f"sleep {HANG_MARK}; fi; exec sleep 0.5"],
    },
]
LEAKY_INDEX = 1


def seed_with_baseline_last_in_round_2() -> int:
    """A seed whose leaky scenario lists the baseline after the candidate's leftover appeared,
    so that the listing the baseline sees contains the candidate's file."""
    for seed in range(100):
        order = bench.schedule([Cell("baseline"), Cell(CAND)], ROUNDS, seed + LEAKY_INDEX)
        if order[1] == [Cell(CAND), Cell("baseline")]:
            return seed
    raise AssertionError("no such seed")


@pytest.fixture
def stress_run(project: Project) -> tuple[dict[str, Any], Path]:
    project.write(candidates={CAND: ["greet"]}, scenarios=SCENARIOS)
    seed = seed_with_baseline_last_in_round_2()
    results, run_dir = support.compare(project.load(), project.options(), "fx", seed=seed)
    assert run_dir is not None
    return results, run_dir


def scenario(results: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in results["scenarios"] if s["name"] == name)


def test_stress_rounds(stress_run: tuple[dict[str, Any], Path], project: Project) -> None:
    results, run_dir = stress_run
    assert [s["name"] for s in results["scenarios"]] == ["clean", "leaky", "hang"]
    for sc in results["scenarios"]:
        assert sc["kind"] == "stress" and sc["instances"] == INSTANCES
        assert len(sc["order"]) == ROUNDS
        assert len(sc["rounds_detail"]) == 2 * ROUNDS
        assert sorted(sc["per_build"]) == ["baseline", CAND]
        for pb in sc["per_build"].values():
            assert pb["rounds"] == ROUNDS and pb["instances_killed"] == ROUNDS * INSTANCES
            assert pb["fresh_failures"] == 0
            assert pb["list_latency_median_s"] >= 0
        for rd in sc["rounds_detail"]:
            assert 0.0 <= rd["delay_s"] <= 0.1
            assert len(rd["exit_codes"]) == INSTANCES

    # (c) well-behaved: nothing left, nothing hung
    clean = scenario(results, "clean")
    for pb in clean["per_build"].values():
        assert (pb["leftovers"], pb["hangs"], pb["kill_errors"]) == (0, 0, 0)
        assert pb["outcomes"] == {"exit 0": ROUNDS * INSTANCES}

    # (a) the planted leftover counts once, for the candidate only
    leaky = scenario(results, "leaky")
    assert leaky["per_build"][CAND]["leftovers"] == 1
    assert leaky["per_build"]["baseline"]["leftovers"] == 0
    assert leaky["per_build"][CAND]["hangs"] == leaky["per_build"]["baseline"]["hangs"] == 0
    (planted,) = [rd for rd in leaky["rounds_detail"] if rd["leftovers"]]
    assert (planted["variant"], planted["round"]) == (CAND, 2)
    (name,) = planted["leftovers"]
    assert name.startswith("instance pb-") and name.endswith(f"-{CAND}+-2-0-orphan")
    # the baseline listed it after the candidate's round, and did not take it for its own
    assert [rd["variant"] for rd in leaky["rounds_detail"][2:]] == [CAND, "baseline"]
    assert f"leaky {CAND}: 1 leftovers, 0 hangs, 0 failed fresh runs" in results["warnings"]

    # (b) the planted hang: every instance of the candidate, none of the baseline's
    hang = scenario(results, "hang")
    assert hang["per_build"][CAND]["hangs"] == ROUNDS * INSTANCES
    assert hang["per_build"][CAND]["outcomes"] == {"hang": ROUNDS * INSTANCES}
    assert hang["per_build"]["baseline"]["hangs"] == 0
    assert "hang" not in hang["per_build"]["baseline"]["outcomes"]
    for rd in hang["rounds_detail"]:
        assert rd["action"] == "sigterm"
        if rd["variant"] == CAND:
            assert rd["exit_codes"] == [None] * INSTANCES
            # each hang's evidence, saved before the kill, is in the report folder
            assert len(rd["evidence"]) == INSTANCES
            for name in rd["evidence"]:
                ev = hangs.load_evidence_file(run_dir / name)
                assert ev.deadline_s == HANG_DEADLINE and ev.elapsed_s >= HANG_DEADLINE
                assert [p.comm for p in ev.processes][:2] == ["sh", "sleep"]
                assert ev.processes[0].sig_ign and ev.processes[0].wchan
        else:
            assert rd["evidence"] == []
    assert (run_dir / hang["evidence_summary"]).is_file()
    assert f"hang {CAND}: 0 leftovers, {ROUNDS * INSTANCES} hangs, 0 failed fresh runs" in \
        results["warnings"]
    # and the hung processes were killed
    deadline = time.monotonic() + 10
    while processes_with(HANG_MARK) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(HANG_MARK) == []

    md = (run_dir / "report.md").read_text()
    assert "| build " in md and "leftovers" in md and "hangs" in md
    assert "Hung instances, with the evidence saved before the kill:" in md
    assert_nothing_left(project.builds, project.cache)


def test_a_stress_dry_run_shows_the_instance_names(project: Project, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    project = dataclasses.replace(project, builds=tmp_path / "dry-builds")  # not prebuilt
    project.write(candidates={CAND: ["greet"]}, scenarios=SCENARIOS[:1])
    _, lines, _ = pipeline.compare(project.load(), project.options(), "fx",
                                   Switches(dry_run=True))
    out = "\n".join(lines)
    for v in ("baseline", CAND):
        assert f"[{v}] launch:" in out
        assert f"-{v}+-{{round}}-{{i}}" in out
    assert not project.builds.exists()
