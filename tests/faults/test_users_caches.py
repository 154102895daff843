"""A build never writes the user's own caches. patchbench hands what a build may write to the
build's uid (util/sandbox.give); once, the Go caches a user's environment names (GOCACHE,
GOPATH) reached a C build's environment and were handed over with it: a C build of a pull
request could then write the user's Go build cache (poison it) and the user's caches ended up
owned by uid 65533. Now a C or Rust build gets none of the caller's Go caches, and ``give``
refuses (exit 10) a home, a cache under it, a cache the environment names, anything in one or a
folder holding one; a project in the home, even in a GOPATH's src/, is patchbench's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from patchbench import build, config
from patchbench.errors import ConfigError
from patchbench.util import sandbox
from patchbench.util.workspace import Workspace
from tests import support
from tests.support import git

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="give hands folders over as root only"),
]


def _owner(path: Path) -> tuple[int, int]:
    st = path.lstat()
    return st.st_uid, st.st_gid


def _users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Go caches of 'the user' (folders in tmp_path, root's), named by the environment."""
    caches = {k: tmp_path / "user" / k.lower() for k in ("GOCACHE", "GOPATH")}
    caches["GOMODCACHE"] = caches["GOPATH"] / "pkg" / "mod"
    for key, path in caches.items():
        path.mkdir(parents=True, exist_ok=True)
        (path / "entry").write_text("the user's\n")
        monkeypatch.setenv(key, str(path))
    return caches


def test_give_refuses_the_users_caches_and_what_holds_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"  # this test's own: it hands folders in it to the build uid
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SUDO_USER", raising=False)
    caches = _users(tmp_path, monkeypatch)
    (home / ".cache" / "go-build").mkdir(parents=True)
    (home / "go" / "pkg" / "mod").mkdir(parents=True)
    link = tmp_path / "a-link-to-the-cache"
    link.symlink_to(caches["GOCACHE"])
    refused = [caches["GOCACHE"], caches["GOPATH"], caches["GOPATH"] / "pkg",
               caches["GOCACHE"] / "entry", tmp_path / "user", home, home / ".cache",
               home / ".cache" / "go-build", home / "go", home / "go" / "pkg" / "mod", link,
               Path(str(caches["GOCACHE"]) + "/"), tmp_path]
    for path in refused:
        for walk in (True, False):
            with pytest.raises(ConfigError, match="the user's own"):
                sandbox.give([path], walk=walk)
    assert all(_owner(p) == (0, 0) for c in caches.values() for p in (c, c / "entry"))
    # patchbench's own: its builds/ (also in the home, also in a GOPATH's src/) and its cache
    # folder beside the user's under ~/.cache
    given = [tmp_path / "builds" / "go-cache", home / "project" / "builds" / "worktree",
             home / "go" / "src" / "example.com" / "bench" / "builds" / "tmp",
             caches["GOPATH"] / "src" / "bench" / "builds", home / ".cache" / "patchbench-go"]
    for path in given:
        path.mkdir(parents=True)
        sandbox.give([path])
        assert _owner(path) == sandbox.build_ids(), path


MAIN_C = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n'
MAKEFILE = ("hello: main.c\n\t$(CC) $(CFLAGS) $(LDFLAGS) -o hello main.c\n"
            "\tenv > seen.txt\n")


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None
                    or shutil.which("bwrap") is None, reason="needs gcc, make and bubblewrap")
def test_a_c_build_gets_none_of_the_callers_go_caches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caches = _users(tmp_path, monkeypatch)
    up = tmp_path / "hello"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    (up / "main.c").write_text(MAIN_C)
    (up / "Makefile").write_text(MAKEFILE)
    commit = support._commit_all(up, "hello").strip()
    cc = subprocess.run(["gcc", "-dumpfullversion", "-dumpversion"], capture_output=True,
                        text=True, check=True).stdout.strip()
    root = tmp_path / "project"
    root.mkdir()
    data = {"version": 1, "targets": {"hello": {
        "url": str(up), "ref": commit, "commit": commit,
        "toolchain": {"kind": "c", "version": cc, "cflags": "-O2"},
        "build": {"commands": [["make", "hello"]], "artifacts": ["hello", "seen.txt"],
                  "timeout": 120},
    }}, "comparisons": {"fx": {"target": "hello", "candidates": {"same": []},
                              "scenarios": [{"name": "run", "command": ["{hello}"],
                                             "runs": 2, "rounds": 1}]}}}
    (root / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    ws = Workspace(root=root, matrix=root / "matrix.yaml", builds=tmp_path / "builds",
                   reports=root / "reports", sources={})
    [built] = support.build(config.load(root / "matrix.yaml"), ws, "hello",
                            [build.Variant("baseline", ())], [])
    seen = (built.bin / "seen.txt").read_text()
    for key in caches:
        assert f"{key}=" not in seen, f"the C build was given the caller's {key}"
    for path in caches.values():
        assert _owner(path) == (0, 0) and _owner(path / "entry") == (0, 0), path
