"""Conditions with real processes: affinity and environment reach the command, CPU hogs run
during the cells and are gone after, and a cgroup v1/v2 CPU quota throttles a busy loop (root)."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from pathlib import Path

import pytest

from patchbench.errors import RequirementError
from patchbench.measure import conditions
from patchbench.measure.conditions import Condition
from tests.support import processes_with

pytestmark = pytest.mark.integration


def test_affinity_and_environment_reach_the_command() -> None:
    cond = Condition(name="one-core", cpus=[0], env={"GOMAXPROCS": "1"})
    with conditions.apply(cond) as applied:
        argv = applied.wrap(["sh", "-c", "echo $GOMAXPROCS; grep Cpus_allowed_list /proc/self/status"])
        out = subprocess.run(argv, env=applied.environ(), capture_output=True, text=True,
                             check=True).stdout.split()
    assert out == ["1", "Cpus_allowed_list:", "0"]


def test_hogs_run_during_the_cells_and_nothing_is_left() -> None:
    cond = Condition(name="busy", hogs=2, cpus=[0])
    with conditions.apply(cond) as applied:
        markers = [h.argv[-1] for h in applied.hogs]
        assert all(m.startswith(conditions.HOG_MARKER) for m in markers)
        assert all(len(processes_with(m)) == 1 for m in markers)
        pid = applied.hogs[0].proc.pid
        status = Path(f"/proc/{pid}/status").read_text()
        assert "Cpus_allowed_list:\t0\n" in status  # the hogs compete on the condition's cores
        t0 = float(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11])
        time.sleep(0.5)
        t1 = float(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11])
        assert t1 > t0  # it burns CPU (user ticks grow)
    time.sleep(0.1)
    assert [m for m in markers if processes_with(m)] == []


@pytest.mark.root
def test_a_cpu_quota_throttles_a_busy_loop() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for cgroups")
    try:
        conditions.cgroup_version()
    except RequirementError:
        pytest.skip("no cgroup CPU controller")
    cond = Condition(name="quota", cpu_quota=0.2, cpu_period_us=100_000)
    busy = ["timeout", "1", "sh", "-c", "while :; do :; done"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with conditions.apply(cond) as applied:
        assert applied.cgroup is not None
        cg = applied.cgroup.path
        subprocess.run(applied.wrap(busy), check=False)
        stat = (cg / "cpu.stat").read_text()
        quota = (cg / ("cpu.max" if applied.cgroup.version == 2 else "cpu.cfs_quota_us")).read_text()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 0.45, cpu  # 1 s of wall time at 0.2 CPU: about 0.2 s, never a whole second
    assert quota.split()[0] == "20000"
    # the loop ran inside the cgroup (periods with runnable tasks were counted); on a busy machine
    # it may get less than its quota and never be throttled, so nr_throttled is not asserted
    assert int(dict(line.split() for line in stat.splitlines())["nr_periods"]) > 0
    assert not cg.exists() and applied.leftovers == []


@pytest.mark.root
def test_hogs_in_a_guarded_run_are_not_escapes_and_keep_running() -> None:
    """The hogs join the run's cgroup like every command; the check after each measured command
    must neither report them as escaped nor kill them (it did: the loaded condition was loaded
    only until the first cell's check), while a real escape is still found and killed."""
    from patchbench.util import cmd, procguard

    guard = procguard.activate(f"test-hogs-{os.getpid()}")
    if not guard.available:
        procguard.deactivate(guard)
        pytest.skip(f"no cgroup for the guard: {guard.reason}")
    try:
        with conditions.apply(Condition(name="busy", hogs=2)) as applied:
            hogs = [h.proc.pid for h in applied.hogs]
            cmd.run(["true"], timeout=10)
            assert procguard.check_active("a cell", "fix") is None
            assert all(Path(f"/proc/{pid}").exists() for pid in hogs)
            cmd.run(["sh", "-c", "sleep 30 >/dev/null 2>&1 &"], timeout=10)
            found = procguard.check_active("an escaping cell", "fix")
            assert found is not None and found.killed
            assert [s.cmdline for s in found.survivors] == ["sleep 30"]
            assert all(Path(f"/proc/{pid}").exists() for pid in hogs)  # still running
    finally:
        warnings = procguard.deactivate(guard)
    assert len(warnings) == 1 and "an escaping cell" in warnings[0]
