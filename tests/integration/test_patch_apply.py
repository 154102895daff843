"""Applying series in worktrees of the cached commit: all or nothing, and a conflict names the
series, the patch file, the file and the hunk while the cache stays pristine."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchbench import pipeline
from patchbench.build import Variant
from patchbench.errors import PatchError
from tests import support
from tests.integration.test_patching import ESCAPES
from tests.support import (
    TARGET,
    Project,
    assert_nothing_left,
    cache_state,
    git,
    patch_file,
    write_series,
)

pytestmark = pytest.mark.integration

ALL = {"greet": ["greet"], "two": ["two"], "conflict": ["conflict"]}
CONFLICT = ("series 'conflict', patch 0002-conflict.patch: main.go: hunk #2 "
            "(@@ -22,7 +22,7 @@) does not apply")


def test_patch_check_ok(project: Project) -> None:
    project.write(candidates={"greet": ["greet"], "two": ["two"]})
    rows = pipeline.patch_check(project.load(), project.options(), ["greet", "two"])
    assert rows == [("greet", TARGET, "ok (1 patch)"), ("two", TARGET, "ok (2 patches)")]
    assert_nothing_left(project.builds, project.cache)


def test_patch_check_conflict(project: Project) -> None:
    project.write(candidates=ALL)
    opts = project.options()
    support.fetch(project.load(), opts, TARGET)
    before = cache_state(project.cache)
    with pytest.raises(PatchError) as info:
        pipeline.patch_check(project.load(), opts, [])
    err = info.value
    assert err.exit_code == 12
    assert err.message == "1 series did not apply"
    assert err.detail is not None
    assert f"conflict  {TARGET}  FAILED: {CONFLICT}" in err.detail
    assert f"greet  {TARGET}  ok (1 patch)" in err.detail
    assert f"two  {TARGET}  ok (2 patches)" in err.detail
    # "broken" is in patches/ but used by no comparison: checked against the only target
    assert f"broken  {TARGET}  ok (1 patch)" in err.detail
    assert cache_state(project.cache) == before
    assert_nothing_left(project.builds, project.cache)


def test_a_conflict_during_a_build_leaves_nothing(project: Project) -> None:
    project.write(candidates={"conflict": ["conflict"]})
    opts = project.options()
    proj = project.load()
    support.build(proj, opts, TARGET, [Variant("baseline", ())], [])
    before = cache_state(project.cache)
    artifacts = sorted((project.builds / "artifacts" / TARGET).iterdir())
    with pytest.raises(PatchError) as info:
        support.build(proj, opts, TARGET, [Variant("baseline", ()),
                                                     Variant("conflict", ("conflict",))], [])
    err = info.value
    assert err.message == CONFLICT
    assert err.hint is not None and "rebase the patch" in err.hint
    assert cache_state(project.cache) == before
    assert sorted((project.builds / "artifacts" / TARGET).iterdir()) == artifacts
    assert_nothing_left(project.builds, project.cache)


@pytest.mark.parametrize("name", ["dotdot everywhere", "absolute", "into .git", "with a space"])
def test_an_escaping_patch_is_refused_before_anything_is_written(
    project: Project, tmp_path: Path, name: str
) -> None:
    text = ESCAPES[name](project.upstream.patches["greet"])
    write_series(project.root, "evil", [(patch_file(1, "evil"), text)])
    project.write(candidates={"evil": ["evil"]})
    opts = project.options()
    with pytest.raises(PatchError, match="outside the tree; refused before anything was written"):
        support.build(project.load(), opts, TARGET,
                                [Variant("baseline", ()), Variant("evil", ("evil",))], [])
    # refused before any worktree or build existed
    assert not (project.builds / "tmp").exists()
    assert not (project.builds / "artifacts").exists()
    assert not (project.builds / "logs").exists()
    assert list(tmp_path.rglob("evil.go")) == []
    assert list(tmp_path.rglob("post-checkout")) == []
    assert_nothing_left(project.builds, project.cache)


def test_apply_series_in_a_worktree(project: Project, tmp_path: Path) -> None:
    """apply_series directly: commits with fixed dates (the same commit every time), and after a
    conflict no am state, no .rej and no change in the worktree."""
    from patchbench.source import cache as source
    from patchbench.source import patching

    co = support.fetch(project.load(), project.options(), TARGET)
    heads = []
    for i in range(2):
        wt = tmp_path / f"wt{i}"
        source.add_worktree(co, wt, project.builds)
        try:
            applied = patching.apply_series(
                wt, [patching.load_series(project.root, "two")], co.commit_epoch())
            assert applied == ["0001-greet.patch", "0002-farewell.patch"]
            heads.append(git(wt, "rev-parse", "HEAD"))
            assert git(wt, "log", "-1", "--format=%s%n%an%n%cn") == \
                "hello: a longer farewell\nFixture Author\npatchbench"
            assert git(wt, "status", "--porcelain") == ""
        finally:
            source.remove_worktree(co, wt, project.builds)
    assert heads[0] == heads[1]

    wt = tmp_path / "wt-conflict"
    source.add_worktree(co, wt, project.builds)
    try:
        with pytest.raises(PatchError, match="hunk #2"):
            patching.apply_series(wt, [patching.load_series(project.root, "conflict")],
                                  co.commit_epoch())
        assert git(wt, "status", "--porcelain") == ""
        assert not Path(git(wt, "rev-parse", "--absolute-git-dir"), "rebase-apply").exists()
        assert list(wt.rglob("*.rej")) == [] and list(wt.rglob("*.orig")) == []
    finally:
        source.remove_worktree(co, wt, project.builds)
    assert_nothing_left(project.builds, project.cache)


def test_an_overlay_adds_files_to_every_variant(project: Project) -> None:
    ov = project.root / "overlays" / "extra"
    ov.mkdir(parents=True)
    (ov / "extra_test.go").write_text("package main\n")
    data = project.root / "matrix.yaml"
    data.write_text(data.read_text().replace("  fx:\n", "  fx:\n    overlays: [extra]\n"))
    built = support.build(project.load(), project.options(), TARGET,
                                    [Variant("baseline", ()), Variant("greet", ("greet",))],
                                    ["extra"])
    for b in built:
        (overlay,) = b.manifest["overlays"]
        assert overlay["name"] == "extra" and overlay["files"] == ["extra_test.go"]
        assert b.manifest["built_commit"] != project.upstream.a
    assert_nothing_left(project.builds, project.cache)


def test_an_overlay_may_not_replace_an_upstream_file(project: Project) -> None:
    ov = project.root / "overlays" / "clobber"
    ov.mkdir(parents=True)
    (ov / "main.go").write_text("package main\n\nfunc main() {}\n")
    with pytest.raises(PatchError, match=r"main\.go already exists in the tree"):
        support.build(project.load(), project.options(), TARGET,
                                [Variant("baseline", ())], ["clobber"])
    assert not (project.builds / "artifacts").exists()
    assert_nothing_left(project.builds, project.cache)
