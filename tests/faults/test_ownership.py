"""Safety class 4 (docs/safety.md): as root, a world-writable or foreign-owned matrix.yaml,
patches/, overlays/ or builds/ (or a parent directory of them) is refused, naming the path and the
fix, the way ssh's StrictModes does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from patchbench import pipeline
from patchbench.errors import ConfigError
from patchbench.util import ownership
from patchbench.util.workspace import Workspace
from tests.support import REPO_ROOT, invoke_argv

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="ownership is checked as root only")
OTHER = 54321  # a uid and gid nobody on this machine uses


def project(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "p"
    (root / "patches" / "s").mkdir(parents=True)
    (root / "patches" / "s" / "series").write_text("0001-x.patch\n")
    (root / "overlays" / "ov" / "sub").mkdir(parents=True)
    (root / "overlays" / "ov" / "sub" / "a.go").write_text("package a\n")
    matrix = root / "matrix.yaml"
    matrix.write_text(yaml.safe_dump({"version": 1, "targets": {}, "comparisons": {}}))
    builds = tmp_path / "builds"
    (builds / "sources").mkdir(parents=True)
    return matrix, root, builds


def refused(matrix: Path, root: Path, builds: Path, **kw: object) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        ownership.check_project(matrix, root, builds, environ={}, **kw)  # type: ignore[arg-type]
    assert info.value.exit_code == 10
    return info.value


def test_a_safe_project_passes(tmp_path: Path) -> None:
    ownership.check_project(*project(tmp_path), environ={})


@pytest.mark.parametrize("rel", ["p/matrix.yaml", "p/patches", "p/patches/s/series",
                                 "p/overlays/ov/sub", "p/overlays/ov/sub/a.go", "builds",
                                 "builds/sources", "p"])
def test_world_writable_is_refused(tmp_path: Path, rel: str) -> None:
    matrix, root, builds = project(tmp_path)
    path = tmp_path / rel
    path.chmod(path.stat().st_mode | 0o002)
    err = refused(matrix, root, builds)
    assert err.message.startswith(f"{path} is writable by every user")
    assert err.hint == f"fix: chmod go-w {path}"


@pytest.mark.parametrize("rel", ["p/matrix.yaml", "p/patches/s", "p/patches/s/series",
                                 "p/overlays/ov/sub/a.go", "builds", "builds/sources"])
def test_foreign_owned_is_refused(tmp_path: Path, rel: str) -> None:
    matrix, root, builds = project(tmp_path)
    path = tmp_path / rel
    os.chown(path, OTHER, OTHER)
    err = refused(matrix, root, builds)
    assert err.message.startswith(f"{path} is owned by uid {OTHER}, not root")
    assert err.hint is not None and f"chown root:root {path}" in err.hint


def test_group_writable_by_another_group_is_refused(tmp_path: Path) -> None:
    matrix, root, builds = project(tmp_path)
    os.chown(matrix, 0, OTHER)
    matrix.chmod(0o664)
    assert f"is writable by group {OTHER}" in refused(matrix, root, builds).message
    os.chown(matrix, 0, 0)
    ownership.check_project(matrix, root, builds, environ={})


def test_the_user_who_ran_sudo_is_trusted(tmp_path: Path) -> None:
    matrix, root, builds = project(tmp_path)
    os.chown(matrix, OTHER, OTHER)
    ownership.check_project(matrix, root, builds,
                            environ={"SUDO_UID": str(OTHER), "SUDO_GID": str(OTHER)})


def test_a_sticky_world_writable_parent_is_fine_a_plain_one_is_not(tmp_path: Path) -> None:
    matrix, root, builds = project(tmp_path)
    tmp_path.chmod(0o1777)
    ownership.check_project(matrix, root, builds, environ={})
    tmp_path.chmod(0o777)
    err = refused(matrix, root, builds)
    assert err.message.startswith(f"{tmp_path} is writable by every user")
    assert "a parent directory of" in err.message
    tmp_path.chmod(0o755)


def test_nothing_is_checked_without_root(tmp_path: Path) -> None:
    matrix, root, builds = project(tmp_path)
    matrix.chmod(0o666)
    ownership.check_project(matrix, root, builds, euid=1000, environ={})


def test_every_command_checks_at_load(tmp_path: Path) -> None:
    matrix, root, builds = project(tmp_path)
    (root / "patches" / "s" / "series").chmod(0o666)
    opts = Workspace(root=root, matrix=matrix, builds=builds, reports=tmp_path / "r")
    with pytest.raises(ConfigError, match="writable by every user"):
        pipeline.load(opts)
    env = {k: v for k, v in os.environ.items() if k not in ("SUDO_UID", "SUDO_GID")}
    res = subprocess.run(invoke_argv("fetch", "hello", "--matrix", str(matrix), "--builds", str(builds)),
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=env,
                         check=False)
    assert res.returncode == 10, res.stderr
    assert f"{root / 'patches' / 's' / 'series'} is writable by every user" in res.stderr
    assert f"fix: chmod go-w {root / 'patches' / 's' / 'series'}" in res.stderr
