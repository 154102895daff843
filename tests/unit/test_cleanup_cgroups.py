"""Cgroups of dead runs (killed with SIGKILL before their cleanup) are found by the owner tag in
their names, emptied and removed; a live run's, and cgroups that are not patchbench's, are left.
A plain directory tree stands in for /sys/fs/cgroup here."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from patchbench.util import cleanup

DEAD = f"p999999999s1n{cleanup.pid_namespace()}"  # no such process, in our PID namespace
OTHER_NS = f"p999999999s1n{cleanup.pid_namespace() + 1}"  # a tag another namespace wrote


def cgroup(path: Path, pids: str = "") -> Path:
    path.mkdir(parents=True)
    (path / "cgroup.procs").write_text(pids)
    return path


def fake_root(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "cgroup"
    cgroup(root / "pids")
    cgroup(root / "freezer")
    (root / "cpu,cpuacct").mkdir()
    (root / "cpu,cpuacct" / "cgroup.procs").write_text("")
    os.symlink("cpu,cpuacct", root / "cpu")  # v1 names one hierarchy twice
    live = cleanup.cgroup_tag()
    return {
        "dead run": cgroup(root / "pids" / "patchbench" / f"demo-20261130T0000-1-ab12-{DEAD}-77"),
        "dead condition": cgroup(root / "cpu,cpuacct" / f"patchbench-cond-{DEAD}-0a1b2c3d"),
        "live run": cgroup(root / "freezer" / "patchbench" / f"demo-x-{live}-{os.getpid()}"),
        "live condition": cgroup(root / "cpu,cpuacct" / f"patchbench-cond-{live}-0a1b2c3e"),
        "untagged": cgroup(root / "pids" / "patchbench" / "demo-20261129-4242"),
        "old tag": cgroup(root / "pids" / "patchbench" / "demo-20261129-p999999999s1-4242"),
        "other namespace": cgroup(root / "pids" / "patchbench" / f"demo-y-{OTHER_NS}-5"),
        "not ours": cgroup(root / "pids" / "system.slice"),
    }


def test_only_the_cgroups_of_dead_runs_are_stale(tmp_path: Path) -> None:
    cgs = fake_root(tmp_path)
    assert sorted(cleanup.stale_cgroups(tmp_path / "cgroup")) == sorted(
        [cgs["dead run"], cgs["dead condition"]])


def test_sweeping_removes_them_and_says_so(tmp_path: Path) -> None:
    cgs = fake_root(tmp_path)
    said = cleanup.sweep_cgroups(tmp_path / "cgroup", remove=shutil.rmtree)
    assert sorted(said) == sorted(f"removed cgroup {cgs[k]}" for k in ("dead run", "dead condition"))
    assert [k for k, p in cgs.items() if not p.exists()] == ["dead run", "dead condition"]
    assert cleanup.sweep_cgroups(tmp_path / "cgroup", remove=shutil.rmtree) == []


def test_a_cgroup_that_cannot_go_is_named_and_left(tmp_path: Path) -> None:
    cgs = fake_root(tmp_path)

    def refuse(path: Path) -> None:
        raise PermissionError(1, "Operation not permitted")

    said = cleanup.sweep_cgroups(tmp_path / "cgroup", remove=refuse, wait=0.1)
    assert f"cgroup {cgs['dead run']} of a dead run could not be removed: Operation not " \
           "permitted" in said
    assert cgs["dead run"].exists()


def test_without_a_cgroup_file_system_nothing_happens(tmp_path: Path) -> None:
    assert cleanup.sweep_cgroups(tmp_path / "missing") == []
    assert cleanup.sweep_all(tmp_path / "builds", tmp_path / "missing") == []


def test_a_cgroup_with_a_process_of_another_pid_namespace_is_left_alone(tmp_path: Path) -> None:
    # cgroup.procs lists such a process as 0; os.kill(0) would hit our own process group
    cgroup(tmp_path / "cgroup" / "pids")
    cg = cgroup(tmp_path / "cgroup" / "pids" / "patchbench" / f"demo-z-{DEAD}-9", pids="0\n")
    said = cleanup.sweep_cgroups(tmp_path / "cgroup", remove=shutil.rmtree)
    assert said == [f"cgroup {cg} of a dead run could not be removed: it holds processes of "
                    "another PID namespace"]
    assert cg.exists()


def test_on_cgroup_v2_only_the_root_is_a_hierarchy(tmp_path: Path) -> None:
    root = cgroup(tmp_path / "cgroup")
    (root / "cgroup.controllers").write_text("cpu pids\n")
    dead = cgroup(root / "patchbench" / f"demo-v2-{DEAD}-1")
    cgroup(root / "system.slice" / "patchbench" / f"demo-v2-{DEAD}-2")  # not a hierarchy
    assert cleanup.stale_cgroups(root) == [dead]
