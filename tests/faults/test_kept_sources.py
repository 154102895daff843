"""The source cache under builds/sources/ is not trusted: CI restores it from a cache a pull
request can influence. What git would honour in it (a filter, fsmonitor, hooks, include.path,
attributes, replace refs, grafts, alternates, a commondir, links) is refused before git reads it,
and a planted object (a blob or the pinned commit itself) is found by hashing: each ends in one
line and exit 11, and nothing planted runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import REPO_ROOT, Project, git


def patchbench(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchbench", *args, "--project", str(project.root),
         "--builds", str(project.builds), "--reports", str(project.reports)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def check(project: Project) -> subprocess.CompletedProcess[str]:
    return patchbench(project, "patch", "--check", "--series", "greet")


@pytest.fixture
def cached(project: Project) -> Project:
    """The project with its source cached by a first, clean `patch --check`."""
    res = check(project)
    assert res.returncode == 0, res.stderr
    assert (project.cache / "HEAD").is_file()
    return project


def marker_of(project: Project) -> Path:
    return project.root.parent / "PWNED"


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def plant_filter(p: Project) -> None:
    append(p.cache / "config", f'[filter "x"]\n\tsmudge = touch {marker_of(p)}; cat\n'
                               f'\tclean = cat\n')
    (p.cache / "info" / "attributes").write_text("* filter=x\n")


def plant_filter_only_in_config(p: Project) -> None:  # the tree's own .gitattributes could name it
    append(p.cache / "config", f'[filter "x"]\n\tsmudge = touch {marker_of(p)}; cat\n')


def plant_fsmonitor(p: Project) -> None:
    append(p.cache / "config", f"[core]\n\tfsmonitor = touch {marker_of(p)}\n")


def plant_include(p: Project) -> None:
    other = p.root.parent / "included"
    other.write_text(f"[core]\n\tfsmonitor = touch {marker_of(p)}\n")
    append(p.cache / "config", f"[include]\n\tpath = {other}\n")


def plant_hooks_path(p: Project) -> None:
    hooks = p.root.parent / "hooks"
    executable(hooks / "post-checkout", f"#!/bin/sh\ntouch {marker_of(p)}\n")
    append(p.cache / "config", f"[core]\n\thooksPath = {hooks}\n")


def plant_hook(p: Project) -> None:
    executable(p.cache / "hooks" / "post-checkout", f"#!/bin/sh\ntouch {marker_of(p)}\n")


def plant_url_rewrite(p: Project) -> None:
    append(p.cache / "config", '[url "file:///nowhere/"]\n\tinsteadOf = /\n')


def plant_replace_ref(p: Project) -> None:
    # the pinned commit replaced by a later one: git would check out other code
    (p.cache / "refs" / "replace").mkdir(parents=True, exist_ok=True)
    git(p.cache, "fetch", "-q", str(p.upstream.path), f"{p.upstream.b}:refs/keep/b")
    git(p.cache, "update-ref", f"refs/replace/{p.upstream.a}", p.upstream.b)


def plant_packed_replace_ref(p: Project) -> None:
    plant_replace_ref(p)
    git(p.cache, "pack-refs", "--all")


def plant_grafts(p: Project) -> None:
    (p.cache / "info" / "grafts").write_text(f"{p.upstream.a}\n")


def plant_alternates(p: Project) -> None:
    (p.cache / "objects" / "info" / "alternates").write_text(
        str(p.upstream.path / ".git" / "objects") + "\n")


def plant_commondir(p: Project) -> None:
    (p.cache / "commondir").write_text(str(p.upstream.path / ".git") + "\n")


def plant_link(p: Project) -> None:
    info = p.cache / "info"
    shutil.rmtree(info)
    info.symlink_to(p.upstream.path / ".git" / "info")


def plant_remote(p: Project) -> None:
    (p.cache / "branches" / "origin").write_text("file:///nowhere\n")


HOSTILE: dict[str, Callable[[Project], None]] = {
    "a smudge filter and info/attributes": plant_filter,
    "a filter driver in config": plant_filter_only_in_config,
    "core.fsmonitor": plant_fsmonitor,
    "include.path": plant_include,
    "core.hooksPath": plant_hooks_path,
    "a post-checkout hook": plant_hook,
    "a url rewrite": plant_url_rewrite,
    "a replace ref of the pinned commit": plant_replace_ref,
    "a packed replace ref": plant_packed_replace_ref,
    "grafts": plant_grafts,
    "alternates": plant_alternates,
    "a commondir": plant_commondir,
    "a link": plant_link,
    "an old-style remote": plant_remote,
}


@pytest.mark.parametrize("plant", HOSTILE.values(), ids=list(HOSTILE))
def test_what_git_would_honour_is_refused_before_git_reads_it(
        cached: Project, plant: Callable[[Project], None]) -> None:
    plant(cached)
    res = check(cached)
    assert not marker_of(cached).exists(), "a command planted in the source cache ran"
    assert res.returncode == 11, res.stderr
    assert "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("patchbench: source error: the source "
                                                     "cache ") and "is not used" in errors[0]
    assert "rm -rf" in res.stderr  # the hint: remove it, and it is fetched again


def _explode(repo: Path) -> None:
    """Unpack the cache's packs into loose objects (a pack's objects are found before loose ones)."""
    packs = sorted((repo / "objects" / "pack").glob("*.pack"))
    for pack in packs:
        data = pack.read_bytes()
        for f in pack.parent.glob(pack.stem + ".*"):
            f.unlink()
        subprocess.run(["git", "unpack-objects", "-q"], input=data, cwd=repo, check=True)


def _forge(repo: Path, oid: str, kind: bytes, body: bytes) -> None:
    path = repo / "objects" / oid[:2] / oid[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(kind + b" %d\0" % len(body) + body))
    path.chmod(0o444)


def test_a_planted_blob_is_found_by_hashing_the_checkout(cached: Project) -> None:
    _explode(cached.cache)
    blob = git(cached.upstream.path, "rev-parse", f"{cached.upstream.a}:main.go")
    _forge(cached.cache, blob, b"blob", b"package main\n\nfunc main() { /* other code */ }\n")
    res = check(cached)
    assert res.returncode == 11, res.stderr
    assert "main.go as checked out is not the file of commit" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_planted_commit_object_is_refused(cached: Project) -> None:
    _explode(cached.cache)
    tree_b = git(cached.upstream.path, "rev-parse", f"{cached.upstream.b}^{{tree}}")
    _forge(cached.cache, cached.upstream.a, b"commit",
           f"tree {tree_b}\nauthor a <a> 1 +0000\ncommitter a <a> 1 +0000\n\nx\n".encode())
    res = check(cached)
    assert res.returncode == 11, res.stderr
    assert f"commit {cached.upstream.a}" in res.stderr and "does not hash to its name" in res.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the ownership rules hold as root")
@pytest.mark.parametrize("damage", ["mode 0666", "other owner"])
def test_as_root_a_file_another_user_may_change_is_refused(cached: Project, damage: str) -> None:
    config = cached.cache / "config"
    if damage == "mode 0666":
        config.chmod(0o666)
    else:
        os.chown(config, 1234, 1234)
    res = check(cached)
    assert res.returncode == 11, res.stderr
    assert "config is " in res.stderr and "Traceback" not in res.stderr


def test_a_cache_as_git_and_patchbench_leave_it_is_used(cached: Project) -> None:
    # a sparse checkout (a snapshot without some blobs) moves core.bare into config.worktree and
    # turns on extensions.worktreeConfig: both are git's own
    git(cached.cache, "config", "extensions.worktreeConfig", "true")
    git(cached.cache, "config", "--unset", "core.bare")
    (cached.cache / "config.worktree").write_text("[core]\n\tbare = true\n")
    res = check(cached)
    assert res.returncode == 0, res.stderr
