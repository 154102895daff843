"""The runc runtime drives any OCI runtime CLI (crun, youki): the CLI is chosen from the target's
artifacts (or the build's files), {runtime} and {runc} name it, teardown calls it; crun's refusal
of a hybrid cgroup setup whose v2 hierarchy has controllers is no refusal of patchbench's: the
plan and the check say that the run hides them (tests/integration/test_crun_hybrid.py does it)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from patchbench.runtimes import runc
from patchbench.runtimes.runc import RuncRuntime
from tests.unit.test_runc_runtime import (
    calls,
    comparison,
    fake_runc,
    linux_root,
    make_tree,
    plant,
    runtime_with_run,
    target,
)

__all__ = ["linux_root"]  # the fixture, imported for the tests below


def oci_target(cli: str) -> object:
    return target(build={"commands": [["true"]], "artifacts": [cli]})


def fake_cli(tmp_path: Path, name: str) -> tuple[Path, Path]:
    exe, log = fake_runc(tmp_path)
    return exe.rename(exe.with_name(name)), log


@pytest.mark.parametrize(("artifacts", "cli"), [
    (["runc"], "runc"), (["crun"], "crun"), (["target/release/youki"], "youki"),
    (["bin/containerd", "bin/ctr"], "runc"), (["libexec/", "crun"], "crun")])
def test_the_cli_is_the_oci_runtime_among_the_artifacts(artifacts: list[str], cli: str) -> None:
    assert runc.oci_cli([Path(a.rstrip("/")).name for a in artifacts]) == cli


def test_placeholders_and_teardown_use_the_crun_of_the_build(tmp_path: Path) -> None:
    exe, log = fake_cli(tmp_path, "crun")
    rt = runtime_with_run(tmp_path)
    (tmp_path / "cgroup").mkdir()
    make_tree(tmp_path / "rootfs-src")
    rt.prepare(rt.workdir, SimpleNamespace(root=tmp_path),  # type: ignore[arg-type]
               comparison(rootfs="rootfs-src"), dry_run=False, bin_dir=exe.parent)
    assert (rt.workdir / "bundle" / "config.json").is_file()  # from `crun spec`
    assert "spec" in calls(log)
    assert rt.cli == "crun"
    ph = rt.placeholders("baseline", exe.parent)
    assert ph["runtime"] == ph["runc"] == str(exe)
    assert "crun spec" in " ".join(rt.plan_notes())
    mine = f"{rt.prefix}-baseline+"
    plant(rt.state_root("baseline"), f"{mine}-run")
    log.write_text("")
    assert rt.cleanup("baseline", exe.parent) == [f"container {mine}-run"]
    assert f"--root {rt.state_root('baseline')} delete -f {mine}-run" in calls(log)
    assert rt.leftovers("baseline", exe.parent) == []


def test_crun_on_hybrid_cgroups_with_v2_controllers_is_run_with_them_hidden_not_refused(
        linux_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unified = linux_root / "unified"
    unified.mkdir()
    (unified / "cgroup.controllers").write_text("hugetlb\n")
    rt = RuncRuntime(cgroup_base=linux_root)
    rt.check(None, comparison(target="crun"), oci_target("crun"))  # type: ignore[arg-type]
    said = capsys.readouterr().err
    assert "crun refuses hybrid cgroups" in said and "hugetlb" in said
    assert "mount namespace of its own" in said
    assert any("cgroup.controllers is an empty file" in n for n in rt.plan_notes())
    # runc is told nothing; neither is crun once the v2 hierarchy has no controller
    RuncRuntime(cgroup_base=linux_root).check(None, comparison(), oci_target("runc"))  # type: ignore[arg-type]
    (unified / "cgroup.controllers").write_text("")
    quiet = RuncRuntime(cgroup_base=linux_root)
    quiet.check(None, comparison(target="crun"), oci_target("crun"))  # type: ignore[arg-type]
    assert "hybrid" not in capsys.readouterr().err
    assert not any("hybrid" in n for n in quiet.plan_notes())


def test_container_ids_of_runc_crun_and_youki_listings() -> None:
    assert runc.container_ids("pb-1-a+-run\npb-1-a+-k1-0\n\n") == ["pb-1-a+-run", "pb-1-a+-k1-0"]
    # youki ignores -q: its table, header and all, also when it lists nothing
    header = "ID                        PID   STATUS   BUNDLE        CREATED                    CREATOR\n"
    assert runc.container_ids(header) == []
    assert runc.container_ids(
        header + "pb-89f122-baseline+-r1-3  8042  Stopped  /run/bundle  2026-12-01T12:16:00+00:00  root\n"
    ) == ["pb-89f122-baseline+-r1-3"]
    assert runc.container_ids("") == []
