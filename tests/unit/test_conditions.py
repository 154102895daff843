"""Conditions: the config model, and applying one around cells with a stand-in cgroup tree (no
hogs or affinity here: those run real processes, see tests/integration/test_conditions.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from patchbench.errors import ConfigError, RequirementError
from patchbench.measure import conditions
from patchbench.measure.conditions import Condition


def test_the_model_refuses_what_it_does_not_know() -> None:
    c = Condition.model_validate({"name": "one-core", "cpus": [1, 0], "env": {"GOMAXPROCS": "1"}})
    assert c.cpus == [0, 1] and not c.is_default
    assert c.summary() == "GOMAXPROCS=1, cpus 0,1"
    assert conditions.DEFAULT.is_default and conditions.DEFAULT.summary() == "as the machine is"
    bad = [
        {"name": "x", "cpu": [0]},  # unknown key
        {"name": "One Core"},
        {"name": "x", "cpus": []},
        {"name": "x", "cpus": [0, 0]},
        {"name": "x", "cpus": [-1]},
        {"name": "x", "env": {"NOT-A-NAME": "1"}},
        {"name": "x", "hogs": -1},
        {"name": "x", "cpu_quota": 0},
        {"name": "x", "cpu_quota": 0.001},  # 100 us per 100 ms period: below the kernel's minimum
    ]
    for data in bad:
        with pytest.raises(ValidationError):
            Condition.model_validate(data)


def test_conditions_from_config() -> None:
    assert conditions.parse_conditions(None) == [conditions.DEFAULT]
    got = conditions.parse_conditions([{"name": "default"}, {"name": "busy", "hogs": 2}])
    assert [c.name for c in got] == ["default", "busy"] and got[1].summary() == "2 CPU hogs"
    with pytest.raises(ConfigError, match="busy listed twice"):
        conditions.parse_conditions([{"name": "busy"}, {"name": "busy", "hogs": 1}])


def fake_v1(root: Path) -> Path:
    (root / "cpu").mkdir(parents=True)
    (root / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    return root


def test_cgroup_version_is_detected(tmp_path: Path) -> None:
    assert conditions.cgroup_version(fake_v1(tmp_path / "v1")) == 1
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    assert conditions.cgroup_version(v2) == 2
    with pytest.raises(RequirementError):
        conditions.cgroup_version(tmp_path / "none")


def test_a_quota_condition_on_a_v1_tree(tmp_path: Path) -> None:
    root = fake_v1(tmp_path)
    cond = Condition(name="quota", cpu_quota=0.25, env={"GOMAXPROCS": "1"})
    with conditions.apply(cond, cgroup_root=root) as applied:
        assert applied.cgroup is not None and applied.cgroup.version == 1
        cg = applied.cgroup.path
        assert cg.parent == root / "cpu" and cg.name.startswith(conditions.CGROUP_PREFIX)
        assert (cg / "cpu.cfs_period_us").read_text() == "100000\n"
        assert (cg / "cpu.cfs_quota_us").read_text() == "25000\n"
        argv = applied.wrap(["runc", "run", "x"])
        assert argv == ["sh", "-c", conditions.ENTER_CGROUP, str(cg / "cgroup.procs"),
                        "runc", "run", "x"]
        env = applied.environ({"PATH": "/bin", "GOMAXPROCS": "8"})
        assert env == {"PATH": "/bin", "GOMAXPROCS": "1"}
        rec = applied.record()
        assert rec["cgroup_version"] == 1 and rec["cpu_quota"] == 0.25 and rec["hogs"] == 0
    assert not cg.exists()  # removed on the way out
    assert applied.leftovers == []


def test_a_quota_condition_on_a_v2_tree_and_removal_after_an_error(tmp_path: Path) -> None:
    root = tmp_path / "v2"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu\n")
    cond = Condition(name="quota", cpu_quota=1.5, cpu_period_us=50_000)
    with pytest.raises(RuntimeError), conditions.apply(cond, cgroup_root=root) as applied:
        assert applied.cgroup is not None
        assert (applied.cgroup.path / "cpu.max").read_text() == "75000 50000\n"
        raise RuntimeError("a cell failed")
    assert [p.name for p in root.iterdir()] == ["cgroup.controllers"]


def test_the_default_condition_changes_nothing(tmp_path: Path) -> None:
    with conditions.apply(conditions.DEFAULT, cgroup_root=tmp_path) as applied:
        assert applied.wrap(["true"]) == ["true"]
        assert applied.environ({"A": "1"}) == {"A": "1"}
        assert applied.hogs == [] and applied.cgroup is None


def test_a_cpu_this_machine_lacks_is_refused_before_anything_starts() -> None:
    with pytest.raises(RequirementError, match="no CPU 4095"):
        conditions.check(Condition(name="far", cpus=[4095]))
