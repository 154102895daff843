"""Safety class 9 (docs/safety.md): a command that starts a ``setsid`` child leaves it running once
it returns (today the run ends with exit 0 and the child lives on). Under ProcGuard the child is in
the run's cgroup: it is found, reported with its command line, killed, and the run can be flagged."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from patchbench import gate, results
from patchbench.util import cmd, procguard
from patchbench.util.procguard import ProcGuard
from tests.support import Project, compare, processes_with

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or procguard._hierarchy(procguard.CGROUP_ROOT) is None,
    reason="needs root and a cgroup hierarchy")


def escaping(marker: str) -> list[str]:
    """Starts a child in a new session (out of reach of process-group kills) and returns."""
    return ["sh", "-c", f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & exit 0"]


def unique() -> str:
    return f"{time.time_ns() % 10**7}.5"


def wait_for(marker: str) -> list[str]:
    deadline = time.monotonic() + 5
    while not (found := processes_with(f"sleep {marker}")) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


def kill_marker(marker: str) -> None:
    for line in processes_with(f"sleep {marker}"):
        os.kill(int(line.split(":")[0]), 9)


def test_without_a_guard_the_setsid_child_survives() -> None:
    """The class itself: cmd.run's process-group kill cannot reach it."""
    marker = unique()
    try:
        res = cmd.run(escaping(marker))
        assert res.returncode == 0
        assert wait_for(marker), "the escaped child should still run"
    finally:
        kill_marker(marker)


def test_the_guard_finds_reports_and_kills_it() -> None:
    marker = unique()
    try:
        with ProcGuard("test-escape") as guard:
            assert guard.available, guard.reason
            res = cmd.run(guard.wrap(escaping(marker)))
            assert res.returncode == 0
            assert wait_for(marker)
            found = guard.check("scenario s baseline round 1/1")
            assert found is not None
            assert len(found.survivors) == 1
            assert found.survivors[0].cmdline.endswith(f"sleep {marker}")
            assert found.killed
            report = guard.report()
            assert report["checked"] is True and report["count"] == 1
            deadline = time.monotonic() + 5
            while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
                time.sleep(0.02)
            assert processes_with(f"sleep {marker}") == []
            path = guard.path
        assert path is not None and not path.exists()  # the cgroup is removed
    finally:
        kill_marker(marker)


def test_a_well_behaved_command_leaves_nothing() -> None:
    with ProcGuard("test-clean") as guard:
        cmd.run(guard.wrap(["sh", "-c", "sleep 0.05 & wait"]))
        assert guard.check("clean") is None
        assert guard.report()["count"] == 0


def test_the_guard_kills_whatever_is_left_on_exit() -> None:
    marker = unique()
    try:
        with ProcGuard("test-exit") as guard:
            cmd.run(guard.wrap(escaping(marker)))
            assert wait_for(marker)
        deadline = time.monotonic() + 5
        while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert processes_with(f"sleep {marker}") == []
    finally:
        kill_marker(marker)


def test_a_forking_storm_is_killed(tmp_path: Path) -> None:
    """Processes that keep forking while being killed (the freezer stops them first)."""
    script = tmp_path / "storm.sh"
    script.write_text("while :; do setsid sh -c 'sleep 100' & sleep 0.01; done\n")
    with ProcGuard("test-storm") as guard:
        bg = cmd.Background(guard.wrap(["setsid", "sh", str(script)]))
        time.sleep(0.3)
        bg.stop()
        assert guard.survivors()
        guard.kill_all()
        assert guard.pids() == []


def test_without_cgroups_the_guard_says_so(tmp_path: Path) -> None:
    with ProcGuard("x", root=tmp_path) as guard:
        assert not guard.available
        assert guard.wrap(["true"]) == ["true"]
        assert guard.report() == {"checked": False, "how": f"no cgroup hierarchy under {tmp_path}",
                                  "escaped": [], "count": 0}


@pytest.mark.integration
def test_a_comparison_finds_kills_and_flags_an_escaped_child(project: Project) -> None:
    """End to end: the measured command starts a setsid child and exits 0.
    The run completes, says what escaped, killed it, and the gate fails on it."""
    marker = unique()
    project.write(scenarios=[{
        "name": "run", "warmup": 0, "runs": 2, "rounds": 1, "timeout": 10,
        "command": ["sh", "-c", f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & {{hello}}"],
    }])
    try:
        res, run_dir = compare(project.load(), project.options(), "fx")
        assert run_dir is not None
        escaped = [w for w in res["warnings"] if w.startswith(procguard.ESCAPED)]
        assert escaped and f"sleep {marker}" in escaped[0] and "were killed" in escaped[0]
        assert processes_with(f"sleep {marker}") == []
        failures = gate.failures(results.parse(res, "results"))
        assert any(f.startswith(procguard.ESCAPED) for f in failures)
        assert procguard.active() is None
    finally:
        kill_marker(marker)
