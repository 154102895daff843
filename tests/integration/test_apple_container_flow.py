"""apple/container on a machine that cannot run it: fetch, check the series, then stop (exit 16)
with nothing built; the dry run prints the whole plan. Uses a fixture upstream (real git)."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any

import pytest

from patchbench import pipeline
from patchbench.errors import PatchError, RequirementError
from patchbench.runtimes import apple_container
from tests import support
from tests.support import (
    REPO_ROOT,
    TARGET,
    Project,
    assert_nothing_left,
    invoke,
    matrix_data,
    write_matrix,
)

# --- a fixture target that needs a Mac --------------------------------------------------------

needs_linux_host = pytest.mark.skipif(apple_container.on_apple_silicon(),
                                      reason="this machine could build apple/container")


def write_mac_matrix(project: Project, candidates: dict[str, list[str]]) -> None:
    data: dict[str, Any] = matrix_data(project.upstream, project.go_version,
                                       candidates=candidates, scenarios=[{
                                           "name": "burst", "kind": "burst",
                                           "command": ["{container}", "run", "--rm", "--name",
                                                       "{id}-k{k}-{i}", "{image}", "true"],
                                           "k": [1, 8], "warmup": 0, "runs": 2, "rounds": 2,
                                           "timeout": 60}])
    data["targets"][TARGET]["requires"] = ["macos", "apple-silicon"]
    data["targets"][TARGET]["runtime"] = "apple-container"
    write_matrix(project.root, data)


def dirs(project: Project) -> list[str]:
    return ["--matrix", str(project.matrix), "--builds", str(project.builds),
            "--reports", str(project.reports)]


def assert_not_built(project: Project) -> None:
    artifacts = project.builds / "artifacts"
    assert not artifacts.exists() or list(artifacts.rglob("*")) == []
    assert not (project.builds / "logs").exists()
    assert not project.reports.exists()
    assert_nothing_left(project.builds, project.cache)


@pytest.mark.integration
@needs_linux_host
def test_build_fetches_checks_the_patch_then_stops(project: Project) -> None:
    write_mac_matrix(project, {"greet": ["greet"]})
    res = invoke("build", "--patch", "greet", *dirs(project), cwd=project.root)
    assert res.returncode == 16, res.stderr
    err = res.stderr
    assert "Traceback" not in err
    a = project.upstream.a[:12]
    assert f"patchbench: {TARGET}: fetched {a}" in err  # the fetch ran
    assert (f"patchbench: requirement not met: {TARGET}: fetched v1 ({a}); the series greet apply "
            f"to {a}; but building and measuring stop here: this comparison needs macOS, Apple "
            f"silicon; this machine is {platform.system()} {platform.machine()}") in err
    assert "hint: run it on a Mac (macOS 15 or newer)" in err
    assert project.cache.is_dir()
    assert_not_built(project)


@pytest.mark.integration
@needs_linux_host
def test_a_patch_that_does_not_apply_is_reported_first(project: Project) -> None:
    write_mac_matrix(project, {"conflict": ["conflict"]})
    res = invoke("build", "--patch", "conflict", *dirs(project), cwd=project.root)
    assert res.returncode == 12, res.stderr
    assert "patchbench: patch error: 1 series did not apply" in res.stderr
    assert "0002-conflict.patch: main.go: hunk #2" in res.stderr
    assert "macOS" not in res.stderr
    assert_not_built(project)


@pytest.mark.integration
@needs_linux_host
def test_compare_stops_the_same_way_in_process(project: Project) -> None:
    write_mac_matrix(project, {"two": ["two"]})
    with pytest.raises(RequirementError) as info:
        support.compare(project.load(), project.options(), "fx", seed=1)
    msg = info.value.message
    assert f"the series two apply to {project.upstream.a[:12]}" in msg
    assert msg.endswith(f"this machine is {platform.system()} {platform.machine()}"
                        + (" as root" if os.geteuid() == 0 else ""))
    assert "needs macOS, Apple silicon" in msg
    assert_not_built(project)
    # the same stop from build_for_patch, where no comparison's runtime is consulted
    with pytest.raises(RequirementError, match="the series two apply to"):
        pipeline.build_for_patch(project.load(), project.options(), "two")
    write_mac_matrix(project, {"broken": ["conflict"]})
    with pytest.raises(PatchError, match="1 series did not apply"):
        support.compare(project.load(), project.options(), "fx", seed=1)
    assert_not_built(project)


@pytest.mark.integration
def test_a_dry_run_of_the_fixture_prints_the_plan(project: Project) -> None:
    write_mac_matrix(project, {"greet": ["greet"]})
    res = invoke("compare", "fx", "--dry-run", *dirs(project), cwd=project.root)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    a = project.upstream.a
    assert f"fetch   {TARGET}: {project.upstream.path} ref v1 -> must be {a}" in out
    assert "require macos, apple-silicon" in out
    assert f"variant baseline: worktree at {a[:12]}, apply as commits (no patches)" in out
    assert f"variant greet: worktree at {a[:12]}, apply as commits patches/greet/" in out
    assert out.count("  build (host): go build -o hello .") == 2
    assert "scenario burst (burst): 2 runs per cell in 2 interleaved rounds, warmup 0, " \
           "timeout 60 s per run, k = [1, 8]" in out
    for v in ("baseline", "greet"):
        m = re.search(rf"\[{v}\] measure:  '?{re.escape(str(project.builds))}/artifacts/{TARGET}/"
                      rf"<{v}>/bin/bin/container'? run --rm --name '?pb-[0-9a-f]{{6}}-{v}-k1-\{{i\}}'? "
                      rf"docker.io/library/alpine:3.20 true", out)
        assert m, out
    assert "note: needs macOS 15+ on Apple silicon" in out
    assert not project.builds.exists() and not project.reports.exists()


@pytest.mark.integration
def test_a_dry_run_of_per_vm_lock_prints_the_plan(tmp_path: Path) -> None:
    builds, reports = tmp_path / "builds", tmp_path / "reports"
    res = invoke("compare", "per-vm-lock", "--dry-run", "--builds", str(builds), "--reports",
                 str(reports), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "fetch   apple-container: https://github.com/apple/container ref" in out
    assert "variant per-vm-lock: " in out and "apply as commits patches/per-vm-lock/" in out
    assert out.count("build (host): make all BUILD_CONFIGURATION=release") == 2
    assert "scenario burst (burst): " in out and "scenario stress (stress): " in out
    assert "[per-vm-lock] launch:" in out and "[baseline] kill/delete:" in out
    assert not builds.exists() and not reports.exists()
    assert (REPO_ROOT / "matrix.yaml").is_file()
