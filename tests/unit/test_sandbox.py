"""The build sandbox's pieces without running a build (util/sandbox.py, build/sandboxing.py): the
uid builds run as, the environment a build sees (PATH kept to what exists inside, toolchain
folders remapped, HOME and TMPDIR its own, git trusting a worktree of another uid), the host path
of a path inside, the unconfined switch, and how an artifact is copied out of the tree a build
wrote (never through a link, never a FIFO, never setuid)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbench import build
from patchbench.build import sandboxing
from patchbench.errors import RequirementError
from patchbench.util import sandbox
from patchbench.util.sandbox import Bind


@pytest.fixture
def fresh_mode() -> Iterator[None]:
    sandbox.mode.cache_clear()
    yield
    sandbox.mode.cache_clear()


@pytest.mark.parametrize("value, ids", [("", (65533, 65533)), ("1234", (1234, 1234)),
                                        ("1234:99", (1234, 99))])
def test_the_build_uid(monkeypatch: pytest.MonkeyPatch, value: str, ids: tuple[int, int]) -> None:
    monkeypatch.setenv(sandbox.UID_VARIABLE, value)
    monkeypatch.delenv("SUDO_UID", raising=False)
    assert sandbox.build_ids() == ids


@pytest.mark.parametrize("value", ["0", "0:5", "5:0", "root", "-1", "1000"])
def test_a_build_never_runs_as_root_or_the_sudo_user(monkeypatch: pytest.MonkeyPatch,
                                                     value: str) -> None:
    monkeypatch.setenv(sandbox.UID_VARIABLE, value)
    monkeypatch.setenv("SUDO_UID", "1000")
    with pytest.raises(RequirementError):
        sandbox.build_ids()


def test_the_environment_a_build_sees(tmp_path: Path) -> None:
    tool = tmp_path / "home" / ".cargo" / "bin"
    tool.mkdir(parents=True)
    goenv = tmp_path / "home" / ".config" / "go" / "env"
    goenv.parent.mkdir(parents=True)
    goenv.write_text("GOFLAGS=-mod=mod\n")
    tree = tmp_path / "builds" / "tmp" / "src"
    env = {"PATH": f"{tool}:{tmp_path}/home/.pyenv/shims:/usr/bin:{tree}/bin",
           "GOENV": str(goenv), "SSL_CERT_FILE": str(tmp_path / "missing.pem"),
           "HOME": "/root", "TMPDIR": "/var/tmp/x", "GIT_CONFIG_COUNT": "1",
           "GIT_CONFIG_KEY_0": "core.abbrev", "GIT_CONFIG_VALUE_0": "7"}
    inside, shown = sandbox.view(env, binds=[Bind(tree, writable=True)], tools=[tool])
    # the toolchain's folder remapped; a folder not shown (pyenv's shims) left out
    assert inside["PATH"] == f"{sandbox.TOOLS}/0:/usr/bin:{tree}/bin"
    assert shown[0] == (tool, sandbox.TOOLS / "0")
    # a file a variable names (the user's go env): its own read-only bind; a missing one: unset
    assert inside["GOENV"] == f"{sandbox.TOOLS}/1" and shown[1] == (goenv, sandbox.TOOLS / "1")
    assert "SSL_CERT_FILE" not in inside
    assert (inside["HOME"], inside["TMPDIR"]) == ("/tmp", "/tmp")
    assert (inside["GIT_CONFIG_COUNT"], inside["GIT_CONFIG_KEY_1"],
            inside["GIT_CONFIG_VALUE_1"]) == ("2", "safe.directory", "*")
    assert inside["GIT_CONFIG_KEY_0"] == "core.abbrev"


def test_a_path_inside_names_its_host_file() -> None:
    w = sandbox.Wrapped([], {}, [(Path("/patchbench/tool/0"), Path("/root/.rustup")),
                                 (Path("/b/cache"), Path("/b/tmp/k/caches/0-cache"))])
    assert w.host_path("/patchbench/tool/0/toolchains/x/bin/rustc") == \
        Path("/root/.rustup/toolchains/x/bin/rustc")
    assert w.host_path("/b/cache/ab/cd") == Path("/b/tmp/k/caches/0-cache/ab/cd")
    assert w.host_path("/usr/bin/gcc") == Path("/usr/bin/gcc")


def test_unconfined_only_when_asked_and_said(monkeypatch: pytest.MonkeyPatch, fresh_mode: None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(sandbox.SWITCH, "off")
    w = sandbox.wrap(["true"], env={"PATH": "/usr/bin"}, cwd=None)
    assert w.argv[0].endswith("/true")
    assert "runs unconfined" in capsys.readouterr().err
    assert sandbox.describe(False) == {"sandbox": "none", "why": f"{sandbox.SWITCH}=off"}


def test_only_the_toolchains_own_folders_are_shown(tmp_path: Path) -> None:
    bindir = tmp_path / "cargo" / "bin"
    bindir.mkdir(parents=True)
    for name in ("cargo", "rustc", "rustup", "go"):
        (bindir / name).write_text("#!/bin/sh\n")
        (bindir / name).chmod(0o755)
    env = {"PATH": str(bindir), "HOME": str(tmp_path)}
    assert sandboxing.tool_dirs(env) == []  # neither a Go nor a Rust environment
    assert sandboxing.tool_dirs({**env, "RUSTUP_AUTO_INSTALL": "0"}) == [bindir]
    assert "RUSTUP_HOME" not in sandboxing.with_toolchain_homes({**env, "RUSTUP_HOME": "/x"})


def test_a_go_fetch_tries_the_users_module_cache_and_shows_a_folder_proxy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "mod"
    (mine / "cache" / "download").mkdir(parents=True)
    proxy = tmp_path / "proxy"
    proxy.mkdir()
    monkeypatch.setenv("GOMODCACHE", str(mine))
    env, binds = sandboxing.fetch_env({"GOPATH": "/b/sources/go",
                                       "GOPROXY": f"file://{proxy},https://proxy.golang.org|off"})
    assert env["GOPROXY"] == (f"file://{sandboxing.HOST_MODULES},file://{sandboxing.FILE_PROXIES}"
                              "/0,https://proxy.golang.org|off")
    assert binds == [Bind(proxy, inside=sandboxing.FILE_PROXIES / "0"),
                     Bind(mine / "cache" / "download", inside=sandboxing.HOST_MODULES)]
    assert not any(b.writable for b in binds)
    assert sandboxing.fetch_env({"GOPROXY": "off"}) == ({"GOPROXY": "off"}, [])  # not Go


# --- the artifacts: copied out of the tree the build wrote -------------------------------------


def test_an_artifact_that_is_a_link_is_not_there(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "out").mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.write_text("root's")
    (tree / "runc").symlink_to(secret)
    (tree / "dir").symlink_to(tmp_path)
    assert not build._copy_artifact(tree, "runc", tmp_path / "a")
    assert not build._copy_artifact(tree, "dir/secret", tmp_path / "b")
    assert not build._copy_artifact(tree, "../secret", tmp_path / "c")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_an_artifact_that_is_a_fifo_is_not_opened(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    os.mkfifo(tree / "runc")
    assert not build._copy_artifact(tree, "runc", tmp_path / "a")  # returns: never blocks


def test_an_artifact_loses_setuid_setgid_and_group_write(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "root" / "bin").mkdir(parents=True)
    for p in (tree / "runc", tree / "root" / "bin" / "tool"):
        p.write_text("#!/bin/sh\n")
        p.chmod(0o6775)
    os.mkfifo(tree / "root" / "bin" / "fifo")
    (tree / "root" / "bin" / "link").symlink_to("tool")
    assert build._copy_artifact(tree, "runc", tmp_path / "runc")
    assert stat.S_IMODE((tmp_path / "runc").stat().st_mode) == 0o755
    assert build._copy_artifact(tree, "root/", tmp_path / "root")
    assert stat.S_IMODE((tmp_path / "root" / "bin" / "tool").stat().st_mode) == 0o755
    assert (tmp_path / "root" / "bin" / "link").is_symlink()
    assert not (tmp_path / "root" / "bin" / "fifo").exists()
