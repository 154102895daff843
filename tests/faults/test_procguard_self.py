"""While guarding, patchbench itself is in the run's cgroup (procguard.join_self), so what it starts
is inside from its fork without a join per command; it is never counted as an escape, it leaves the
cgroup before the cgroup is frozen or killed (and comes back), and it is home again once the guard
is done. On the real cgroup file system (root)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from patchbench.util import cleanup, cmd, procguard

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="per-run cgroups need root")


def my_cgroup(guard: procguard.ProcGuard) -> Path:
    assert guard.kind is not None and guard.path is not None
    return procguard.own_cgroup(guard.kind, guard.path.parent.parent)


def test_the_guard_holds_patchbench_and_what_it_starts_then_lets_it_go() -> None:
    guard = procguard.activate("self-" + cleanup.cgroup_tag())
    assert guard.available and guard.path is not None
    home = guard.home
    try:
        assert home is not None and home != guard.path
        assert my_cgroup(guard) == guard.path and os.getpid() in guard.pids()
        out = cmd.run(["sh", "-c", "cat /proc/$$/cgroup"]).stdout  # no join of its own
        assert any(line.endswith(":/" + str(guard.path.relative_to(guard.path.parents[1])))
                   for line in out.splitlines()), out
        assert guard.survivors() == [] and procguard.check_active("a step") is None
        # something escapes: it is found and killed; patchbench was not frozen or killed with it
        cmd.run(["sh", "-c", "setsid sleep 61.31 >/dev/null 2>&1 < /dev/null &"])
        found = procguard.check_active("the escaping step")
        assert found is not None and found.killed
        assert [s.cmdline.removeprefix("setsid ") for s in found.survivors] == ["sleep 61.31"]
        assert my_cgroup(guard) == guard.path  # back inside after the kill
        assert (guard.path / "freezer.state").read_text().strip() in ("THAWED", "") \
            if guard.kind == "v1-freezer" else True
    finally:
        warnings = procguard.deactivate(guard)
    assert my_cgroup(guard) == home and not guard.path.exists()
    assert len(warnings) == 1 and "the escaping step" in warnings[0]


def test_an_exempt_service_goes_where_patchbench_came_from() -> None:
    guard = procguard.activate("self-exempt-" + cleanup.cgroup_tag())
    assert guard.available and guard.home is not None
    proc = subprocess.Popen(["sleep", "61.32"], start_new_session=True)
    try:
        assert proc.pid in guard.pids()
        assert procguard.exempt(proc.pid)
        deadline = time.monotonic() + 5
        while proc.pid in guard.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.pid not in guard.pids()
        assert (guard.home / "cgroup.procs").read_text().split().count(str(proc.pid)) == 1
        assert procguard.check_active("with the service running") is None
    finally:
        procguard.deactivate(guard)
        proc.kill()
        proc.wait()


def test_a_process_still_exiting_when_its_step_ends_is_no_escape() -> None:
    guard = procguard.activate("self-settle-" + cleanup.cgroup_tag())
    assert guard.available
    try:
        # told to go as its step ends, it takes 50 ms to do so (a run killed at its deadline
        # may still be exiting when hyperfine returns); within SETTLE it is no escape
        going = subprocess.Popen(["sh", "-c", "trap 'sleep 0.05; exit 0' TERM; "
                                  "while :; do sleep 0.01; done"], start_new_session=True)
        time.sleep(0.2)
        going.terminate()
        assert procguard.check_active("a step whose last run was killed") is None
        going.wait()
        # one that stays is still found, after the same wait
        staying = subprocess.Popen(["sleep", "61.33"], start_new_session=True)
        found = procguard.check_active("a step that left a sleep")
        assert found is not None and [s.cmdline for s in found.survivors] == ["sleep 61.33"]
        staying.wait()
    finally:
        procguard.deactivate(guard)
