"""Overlays on the fixture upstream with the real git and go: the same added files land in
every variant, their hash is in both manifests and in the cache key, and an overlay that would
overwrite an upstream file or holds a symlink is refused, leaving nothing behind."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from patchbench import build, pipeline
from patchbench.errors import PatchError
from patchbench.source import patching
from tests.support import TARGET, Project, assert_nothing_left, git, matrix_data, write_matrix

pytestmark = pytest.mark.integration

EXTRA_GO = """\
package main

// overlayNote is added by the overlay: measuring code upstream lacks.
func overlayNote() string { return "from the overlay" }
"""


def with_overlay(project: Project, files: dict[str, str]) -> Path:
    """overlays/ov/ holding ``files``, a comparison using it, and a recipe that copies the
    overlay's data file into the artifacts."""
    ov = project.root / "overlays" / "ov"
    for rel, text in files.items():
        (ov / rel).parent.mkdir(parents=True, exist_ok=True)
        (ov / rel).write_text(text)
    data: dict[str, Any] = matrix_data(project.upstream, project.go_version, commands=[
        ["go", "build", "-o", "hello", "."],
        ["sh", "-c", "if [ -e data/extra.txt ]; then cp data/extra.txt extra.txt; "
                     "else echo no-overlay > extra.txt; fi"],
    ])
    data["targets"][TARGET]["build"]["artifacts"] = ["hello", "extra.txt"]
    data["comparisons"]["fx"]["overlays"] = ["ov"]
    write_matrix(project.root, data)
    return ov


def build_both(project: Project) -> list[build.Built]:
    return pipeline.build_for_patch(project.load(), project.options(), "greet")


def hello(b: build.Built) -> str:
    return subprocess.run([str(b.bin / "hello")], capture_output=True, text=True,
                          check=True).stdout


def test_an_overlay_lands_in_every_variant(project: Project) -> None:
    ov = with_overlay(project, {"data/extra.txt": "overlay v1\n", "extra.go": EXTRA_GO})
    base, greet = build_both(project)
    assert (base.variant.name, greet.variant.name) == ("baseline", "greet")
    for b in (base, greet):
        assert (b.bin / "extra.txt").read_text() == "overlay v1\n"
    assert hello(base) == "hello\nbye\n"  # the overlay adds, it changes nothing upstream
    assert hello(greet) == "hello, patched\nbye\n"
    expected = patching.load_overlay(project.root, "ov")
    entry = {"name": "ov", "sha256": expected.digest, "files": ["data/extra.txt", "extra.go"]}
    assert base.manifest["overlays"] == greet.manifest["overlays"] == [entry]
    # committed on top of the pinned commit (and, for the candidate, of its patch)
    up = project.upstream
    assert base.manifest["built_commit"] != up.a
    for b in (base, greet):
        sha = b.manifest["built_commit"]
        assert git(project.cache, "show", "-s", "--format=%s", sha) == "patchbench overlay: ov"
        assert git(project.cache, "diff", "--name-status", f"{sha}~1", sha).splitlines() == [
            "A\tdata/extra.txt", "A\textra.go"]
    assert git(project.cache, "rev-parse", f"{base.manifest['built_commit']}~1") == up.a
    assert_nothing_left(project.builds, project.cache)

    # the same again: cached
    again = build_both(project)
    assert [b.cached for b in again] == [True, True]

    # new overlay content: a new hash, a cache miss for both variants, the new file in both
    (ov / "data" / "extra.txt").write_text("overlay v2\n")
    base2, greet2 = build_both(project)
    assert (base2.cached, greet2.cached) == (False, False)
    assert base2.path != base.path and greet2.path != greet.path
    h2 = base2.manifest["overlays"][0]["sha256"]
    assert h2 == greet2.manifest["overlays"][0]["sha256"]
    assert h2 != entry["sha256"]
    assert h2 == patching.load_overlay(project.root, "ov").digest
    for b in (base2, greet2):
        assert (b.bin / "extra.txt").read_text() == "overlay v2\n"
    assert (base.path / build.STAMP).is_file()  # the old entries stay valid for their keys
    assert_nothing_left(project.builds, project.cache)


def test_an_overlay_may_not_overwrite_an_upstream_file(project: Project) -> None:
    with_overlay(project, {"data/extra.txt": "fine\n", "main.go": "package main\n"})
    with pytest.raises(PatchError) as info:
        build_both(project)
    err = info.value
    assert err.exit_code == 12
    assert err.message.startswith("overlay 'ov': main.go already exists in the tree; overlays "
                                  "may only add files")
    artifacts = project.builds / "artifacts"
    assert not artifacts.exists() or list(artifacts.rglob("*")) == []
    assert_nothing_left(project.builds, project.cache)


def test_a_symlink_in_an_overlay_is_refused(project: Project) -> None:
    ov = with_overlay(project, {"data/extra.txt": "fine\n"})
    os.symlink("../../../matrix.yaml", ov / "data" / "link.txt")
    with pytest.raises(PatchError) as info:
        build_both(project)
    assert info.value.message == "overlay 'ov': data/link.txt is a symlink; refused"
    assert not (project.builds / "artifacts").exists()
    assert_nothing_left(project.builds, project.cache)


def test_a_dangling_symlink_in_an_overlay_is_refused(project: Project) -> None:
    ov = with_overlay(project, {"data/extra.txt": "fine\n"})
    os.symlink("/nonexistent/target", ov / "dangling")
    with pytest.raises(PatchError, match=r"^overlay 'ov': dangling is a symlink; refused$"):
        patching.load_overlay(project.root, "ov")
