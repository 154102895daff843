"""Builds see no more than they need: a recipe that looks for patchbench's secrets through
/proc/<pid>/environ (also after unmounting its own /proc) finds none, a proxy setting reaches it
without its password, Go writes no telemetry under the user's config folder, and a ccache or
cargo configuration planted under builds/ (it can name commands to run) is not used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchbench.build.toolchains import c, rust
from patchbench.config import CToolchain
from patchbench.errors import BuildError
from tests.support import REPO_ROOT, TARGET, Project, matrix_data, write_matrix

SECRET = "hunter2-patchbench-test-secret"
LOOK = ("umount /proc 2>/dev/null; "
        "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done "
        f"| grep -c {SECRET} > found.txt; env > env.txt; true")


def build(project: Project, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    data = matrix_data(project.upstream, project.go_version, commands=[
        ["sh", "-c", LOOK], ["go", "build", "-o", "hello", "."]])
    data["targets"][TARGET]["build"]["artifacts"] = ["hello", "found.txt", "env.txt"]
    write_matrix(project.root, data)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PATCHBENCH_TEST_TOKEN": SECRET,
           "https_proxy": f"http://user:{SECRET}@proxy.invalid:3128",
           "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    return subprocess.run(
        [sys.executable, "-m", "patchbench", "build", "--target", TARGET, "--project",
         str(project.root), "--builds", str(project.builds), "--reports", str(project.reports)],
        capture_output=True, text=True, timeout=300, check=False, env=env)


def test_a_build_cannot_read_the_secrets_of_patchbench(project: Project, tmp_path: Path) -> None:
    res = build(project, tmp_path)
    assert res.returncode == 0, res.stderr
    [found] = list(project.builds.glob("artifacts/*/*/bin/found.txt"))
    assert found.read_text().strip() == "0", "the build read patchbench's environment"
    env = found.with_name("env.txt").read_text()
    assert SECRET not in env
    assert "https_proxy=http://proxy.invalid:3128" in env  # the proxy, without its password
    assert "GOTELEMETRY=off" in env
    assert not (tmp_path / "xdg" / "go" / "telemetry").exists(), "Go wrote telemetry"


def test_a_ccache_conf_in_builds_is_not_read(tmp_path: Path) -> None:
    tc = CToolchain(kind="c", cc="gcc", version="12", ccache=True)
    env = c.tree_env(tc, c.env(tc), tmp_path / "tree", tmp_path / "builds", {"kind": "c"})
    # a ccache.conf planted in the cache folder (prefix_command = a command) is never consulted
    assert env["CCACHE_CONFIGPATH"] == os.devnull


@pytest.mark.parametrize("where", ["sources/cargo-home/config.toml", ".cargo", "tmp/.cargo"])
def test_a_cargo_config_planted_under_builds_is_refused(tmp_path: Path, where: str) -> None:
    builds = tmp_path / "builds"
    tree = builds / "tmp" / "k-p1s2-x" / "src"
    tree.mkdir(parents=True)
    (tree / "Cargo.lock").write_text("# a lock\n")
    planted = builds / where
    planted.parent.mkdir(parents=True, exist_ok=True)
    if where.endswith(".toml"):
        planted.write_text('[build]\nrustc-wrapper = "/tmp/pwn"\n')
    else:
        planted.mkdir()
        (planted / "config.toml").write_text('[build]\nrustc-wrapper = "/tmp/pwn"\n')
    with pytest.raises(BuildError) as info:
        rust.tree_env(None, None, {}, tree, builds, {})  # type: ignore[arg-type]
    assert str(planted) in info.value.message and info.value.exit_code == 14
