"""The C toolchain and submodules, end to end on local fixtures (no network, no mirror): a tiny C
project whose library is a submodule with a submodule of its own, built with the host's gcc.

- two builds in different builds directories give the same sha256 (-ffile-prefix-map, the pinned
  flags and SOURCE_DATE_EPOCH), with ccache on and off;
- the submodules are checked out at their gitlinks; an omitted one is recorded, not fetched;
- an undeclared gitlink, a declared submodule without one, and a mirror lacking the pinned
  commit are refused, naming what is wrong.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from patchbench import build, config
from patchbench.errors import SourceError
from patchbench.util.workspace import Workspace
from tests import support
from tests.support import git

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="needs gcc and make")

MAIN_C = """\
#include <stdio.h>
#include "greetlib/greet.h"
#include "greetlib/words/words.h"

int main(void) {
    printf("%s %s (%s)\\n", GREETING, WORD, __FILE__);
    return 0;
}
"""
MAKEFILE = ("hello: main.o\n\t$(CC) $(CFLAGS) $(LDFLAGS) -o hello main.o\n"
            "main.o: main.c\n\t$(CC) $(CPPFLAGS) $(CFLAGS) -c -o main.o main.c\n")


def _repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", f"{path.name}")
    return git(path, "rev-parse", "HEAD")


def _gitlink(repo: Path, path: str, commit: str, url: str) -> str:
    """Record a submodule (a gitlink and .gitmodules) without `git submodule`, and commit."""
    modules = repo / ".gitmodules"
    old = modules.read_text() if modules.exists() else ""
    modules.write_text(old + f'[submodule "{path}"]\n\tpath = {path}\n\turl = {url}\n')
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{commit},{path}")
    git(repo, "add", ".gitmodules")
    git(repo, "commit", "-q", "-m", f"submodule {path}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture()
def fixture(tmp_path: Path) -> dict[str, Any]:
    up = tmp_path / "upstreams"
    words = _repo(up / "words", {"words.h": '#define WORD "world"\n'})
    _repo(up / "greetlib", {"greet.h": '#define GREETING "hello"\n'})
    greetlib = _gitlink(up / "greetlib", "words", words, "https://example.invalid/words")
    _repo(up / "extras", {"README": "not needed by the build\n"})
    extras = git(up / "extras", "rev-parse", "HEAD")
    _repo(up / "hello", {"main.c": MAIN_C, "Makefile": MAKEFILE})
    _gitlink(up / "hello", "greetlib", greetlib, "https://example.invalid/greetlib")
    hello = _gitlink(up / "hello", "extras", extras, "https://example.invalid/extras")
    return {"up": up, "hello": hello, "greetlib": greetlib, "words": words, "root": tmp_path}


def _cc_version() -> str:
    return subprocess.run(["gcc", "-dumpfullversion", "-dumpversion"], capture_output=True,
                          text=True, check=True).stdout.strip()


def _project(fx: dict[str, Any], *, ccache: bool = False,
             submodules: list[dict[str, Any]] | None = None) -> Path:
    root: Path = fx["root"] / "project"
    root.mkdir(exist_ok=True)
    up: Path = fx["up"]
    mods = submodules if submodules is not None else [
        {"name": "greetlib", "path": "greetlib", "url": str(up / "greetlib")},
        {"name": "words", "path": "greetlib/words", "url": str(up / "words")},
        {"name": "extras", "path": "extras", "url": "https://example.invalid/extras",
         "omit": "not needed by the build"},
    ]
    data = {"version": 1, "targets": {"hello": {
        "url": str(up / "hello"), "ref": fx["hello"], "commit": fx["hello"],
        "submodules": mods,
        "toolchain": {"kind": "c", "version": _cc_version(), "cflags": "-O2 -g",
                      "ccache": ccache},
        "build": {"commands": [["make", "hello"]], "artifacts": ["hello"], "timeout": 120},
    }}, "comparisons": {"fx": {"target": "hello", "candidates": {"same": []},
                              "scenarios": [{"name": "run", "command": ["{hello}"],
                                             "runs": 2, "rounds": 1}]}}}
    (root / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root / "matrix.yaml"


def _build(matrix: Path, builds: Path, sources: dict[str, str] | None = None) -> build.Built:
    ws = Workspace(root=matrix.parent, matrix=matrix, builds=builds,
                   reports=matrix.parent / "reports", sources=sources or {})
    project = config.load(matrix)
    built = support.build(project, ws, "hello", [build.Variant("baseline", ())], [])
    return built[0]


@pytest.mark.parametrize("ccache", [False, pytest.param(True, marks=pytest.mark.skipif(
    shutil.which("ccache") is None, reason="needs ccache"))])
def test_two_builds_in_different_directories_give_the_same_bytes(
        fixture: dict[str, Any], ccache: bool) -> None:
    matrix = _project(fixture, ccache=ccache)
    a = _build(matrix, fixture["root"] / "builds-a")
    b = _build(matrix, fixture["root"] / "b" / "another-builds-dir")
    assert not a.cached and not b.cached
    out = subprocess.run([str(a.bin / "hello")], capture_output=True, text=True, check=True)
    assert out.stdout == "hello world (main.c)\n"  # the submodules' headers; __FILE__ mapped
    assert a.manifest["artifacts"]["hello"]["sha256"] == b.manifest["artifacts"]["hello"]["sha256"]
    fp = a.manifest["fingerprint"]
    assert fp["kind"] == "c" and fp["cc"]["version"] == _cc_version()
    assert set(fp["programs"]) == {"cc1", "collect2", "as", "ld"}
    assert all(len(p["sha256"]) == 64 for p in fp["programs"].values())
    assert "-ffile-prefix-map=" in fp["flags"]["CFLAGS"]
    assert str(fixture["root"]) not in str(fp)  # no path of the build in the fingerprint
    assert build.toolchains.differing_keys(fp, b.manifest["fingerprint"]) == []
    subs = {s["path"]: s for s in a.manifest["submodules"]}
    assert subs["greetlib"]["commit"] == fixture["greetlib"]
    assert subs["greetlib/words"]["commit"] == fixture["words"]
    assert subs["greetlib/words"]["pinned_by"] == "greetlib"
    assert subs["extras"]["omitted"] == "not needed by the build"
    if ccache:  # the same variant built again warm, from ccache, gives the cold build's bytes
        caches = list((fixture["root"] / "builds-a" / "ccache").iterdir())
        assert len(caches) == 1
        shutil.rmtree(a.path)  # the artifact cache entry, not ccache
        warm = _build(matrix, fixture["root"] / "builds-a")
        assert not warm.cached
        assert warm.manifest["artifacts"]["hello"]["sha256"] == \
            a.manifest["artifacts"]["hello"]["sha256"]
        stats = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True,
                               env={**os.environ, "CCACHE_DIR": str(caches[0])}, check=True)
        hits = {k: int(v) for k, v in (ln.split("\t") for ln in stats.stdout.splitlines())
                if k in ("direct_cache_hit", "preprocessed_cache_hit")}
        assert sum(hits.values()) >= 1  # it was a hit


def test_an_undeclared_gitlink_is_refused(fixture: dict[str, Any]) -> None:
    matrix = _project(fixture, submodules=[
        {"name": "greetlib", "path": "greetlib", "url": str(fixture["up"] / "greetlib")},
        {"name": "extras", "path": "extras", "url": "https://example.invalid/x", "omit": "no"}])
    with pytest.raises(SourceError, match=r"submodule at greetlib/words .*does not declare"):
        _build(matrix, fixture["root"] / "builds")


def test_a_declared_submodule_without_a_gitlink_is_refused(fixture: dict[str, Any]) -> None:
    up = fixture["up"]
    matrix = _project(fixture, submodules=[
        {"name": "greetlib", "path": "greetlib", "url": str(up / "greetlib")},
        {"name": "words", "path": "greetlib/words", "url": str(up / "words")},
        {"name": "extras", "path": "extras", "url": "https://example.invalid/x", "omit": "no"},
        {"name": "ghost", "path": "vendor/ghost", "url": "https://example.invalid/ghost"}])
    with pytest.raises(SourceError, match="no gitlink for: vendor/ghost"):
        _build(matrix, fixture["root"] / "builds")


def test_a_mirror_lacking_the_pinned_commit_is_refused_naming_both(
        fixture: dict[str, Any]) -> None:
    matrix = _project(fixture)
    other = fixture["root"] / "other-words"
    _repo(other, {"words.h": '#define WORD "other"\n'})
    with pytest.raises(SourceError) as err:
        _build(matrix, fixture["root"] / "builds", sources={"words": str(other)})
    assert str(other) in err.value.message and fixture["words"] in err.value.message
    # the override is used for that submodule only; the right mirror builds
    built = _build(matrix, fixture["root"] / "builds",
                   sources={"words": str(fixture["up"] / "words")})
    assert {s["name"]: s.get("fetched_from") for s in built.manifest["submodules"]}["words"] \
        == "--source override"


def test_the_cache_key_holds_the_submodules_commits_not_where_they_came_from(
        fixture: dict[str, Any]) -> None:
    """The same commits from another copy (--source words=...) are the same build: cached, one
    entry; the manifest still says where the build's sources came from."""
    matrix = _project(fixture)
    builds = fixture["root"] / "builds"
    first = _build(matrix, builds)
    copy = fixture["root"] / "words-copy"
    git(fixture["root"], "clone", "-q", "--bare", str(fixture["up"] / "words"), str(copy))
    again = _build(matrix, builds, sources={"words": str(copy)})
    assert not first.cached and again.cached
    assert again.path == first.path
    assert again.manifest["cache_key"] == first.manifest["cache_key"]
    assert len(list((builds / "artifacts" / "hello").iterdir())) == 1


def test_the_dry_run_names_a_submodule_that_cannot_be_fetched_and_a_machine_requirement(
        fixture: dict[str, Any]) -> None:
    """Read from the local clone's pinned tree: greetlib's gitlink, then words' inside it, whose
    URL cannot be reached; a requirement the machine lacks. Nothing is fetched (no builds/)."""
    from tests.faults.scaffold_support import run_cli

    up = fixture["up"]
    matrix = _project(fixture, submodules=[
        {"name": "greetlib", "path": "greetlib", "url": str(up / "greetlib")},
        {"name": "words", "path": "greetlib/words", "url": "https://example.invalid/words"},
        {"name": "extras", "path": "extras", "url": "https://example.invalid/x", "omit": "no"}])
    data = yaml.safe_load(matrix.read_text())
    data["targets"]["hello"]["requires"] = ["macos"]
    matrix.write_text(yaml.safe_dump(data, sort_keys=False))
    builds = fixture["root"] / "builds"
    argv = ["--project", str(matrix.parent), "compare", "fx", "--dry-run", "--builds",
            str(builds)]
    code, out, err = run_cli(argv)
    assert code == 0, err
    stops = [line for line in out.splitlines() if line.startswith("blocker ")]
    assert len(stops) == 2, out
    assert stops[0].startswith("blocker machine: ") and "macOS" in stops[0]
    assert f"submodule words (greetlib/words): {fixture['words'][:12]} is not cached" in stops[1]
    assert "https://example.invalid/words cannot be reached" in stops[1]
    assert "--source words=DIR" in stops[1]
    assert "the plan names 2 blockers" in err
    assert not builds.exists()
    # a local clone that lacks the gitlink's commit is named as such; the right one clears it
    other = fixture["root"] / "other-words"
    _repo(other, {"words.h": '#define WORD "other"\n'})
    code, out, _ = run_cli([*argv, "--source", f"words={other}"])
    assert f"blocker source: submodule words (greetlib/words): {other} lacks commit " \
           f"{fixture['words']}" in out
    data["targets"]["hello"]["requires"] = []
    matrix.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out, err = run_cli([*argv, "--source", f"words={up / 'words'}"])
    assert code == 0 and "blockers: none seen" in out, out
