"""Fetching pinned commits: moved tags, missing refs and commits, unreachable sources, and the
cache that makes a second fetch work offline. Each failure leaves the cache as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from patchbench.errors import SourceError
from patchbench.source import cache as source
from tests import support
from tests.support import TARGET, Project, assert_nothing_left, cache_state, git

pytestmark = pytest.mark.integration


def fetch(project: Project, **opts: object) -> source.Checkout:
    return support.fetch(project.load(), project.options(**opts), TARGET)


def test_fetch_then_cached(project: Project) -> None:
    first = fetch(project)
    assert (first.from_cache, first.commit, first.ref, first.overridden) == \
        (False, project.upstream.a, "v1", False)
    assert first.repo == project.cache
    assert git(project.cache, "rev-parse", f"refs/patchbench/pinned/{project.upstream.a}") == \
        project.upstream.a
    assert git(project.cache, "rev-parse", "refs/tags/v1^{commit}") == project.upstream.a
    second = fetch(project)
    assert second.from_cache and second.repo == first.repo
    assert first.commit_epoch() == 1735787045  # FIXED_DATE of the fixture commits
    assert_nothing_left(project.builds, project.cache)


def test_moved_tag_is_refused_naming_ref_and_both_shas(project: Project) -> None:
    up = project.upstream
    up.move_tag("v1", up.b)
    with pytest.raises(SourceError) as info:
        fetch(project)
    err = info.value
    assert err.exit_code == 11
    assert err.message == f"{TARGET}: ref 'v1' now points at {up.b}, but matrix.yaml pins {up.a}"
    assert not project.cache.exists()
    assert_nothing_left(project.builds)


def test_moved_tag_with_the_pinned_commit_cached(project: Project) -> None:
    up = project.upstream
    fetch(project)
    before = cache_state(project.cache)
    up.move_tag("v1", up.b)
    again = fetch(project)
    assert again.from_cache and again.commit == up.a
    assert cache_state(project.cache) == before
    # still usable: the pinned tree is there
    assert 'return "hello"' in git(project.cache, "show", f"{up.a}:main.go")
    assert_nothing_left(project.builds, project.cache)


def test_a_refused_fetch_leaves_an_existing_cache_unchanged(project: Project) -> None:
    up = project.upstream
    fetch(project)
    before = cache_state(project.cache)
    git(up.path, "tag", "v2", up.a)
    project.write(ref="v2", commit=up.b)
    with pytest.raises(SourceError, match=f"ref 'v2' now points at {up.a}, but matrix.yaml "
                                          f"pins {up.b}"):
        fetch(project)
    assert cache_state(project.cache) == before
    assert_nothing_left(project.builds, project.cache)


def test_a_second_commit_joins_an_existing_cache(project: Project) -> None:
    up = project.upstream
    fetch(project)
    git(up.path, "tag", "v2", up.b)
    project.write(ref="v2", commit=up.b)
    co = fetch(project)
    assert not co.from_cache and co.commit == up.b
    for sha in (up.a, up.b):
        assert git(project.cache, "rev-parse", f"refs/patchbench/pinned/{sha}") == sha
    assert_nothing_left(project.builds, project.cache)


def test_a_missing_ref(project: Project) -> None:
    project.write(ref="v9")
    with pytest.raises(SourceError) as info:
        fetch(project)
    assert info.value.message == f"{TARGET}: ref 'v9' does not exist at {project.upstream.path}"
    assert not project.cache.exists()
    assert_nothing_left(project.builds)


def test_a_pinned_commit_that_is_not_in_the_repository(project: Project) -> None:
    bogus = "1234567890abcdef1234567890abcdef12345678"
    project.write(commit=bogus)
    with pytest.raises(SourceError) as info:
        fetch(project)
    assert bogus in info.value.message and project.upstream.a in info.value.message
    assert "'v1'" in info.value.message
    assert not project.cache.exists()
    assert_nothing_left(project.builds)


def test_a_commit_missing_after_the_fetch(project: Project, tmp_path: Path) -> None:
    """The last check of a fetch: the pinned commit itself must have arrived."""
    import git as gitpython

    repo = tmp_path / "incoming.git"
    gitpython.Repo.init(repo, bare=True)
    bogus = "1234567890abcdef1234567890abcdef12345678"
    with pytest.raises(SourceError) as info:
        source._fetch_into(repo, str(project.upstream.path), "v1", bogus, TARGET)
    assert info.value.message == f"{TARGET}: commit {bogus} is missing from {project.upstream.path}"


@pytest.mark.parametrize("url", ["/nonexistent/hello", "file:///nonexistent/hello",
                                 "relative/missing"])
def test_an_unreachable_source(project: Project, url: str) -> None:
    project.write(url=url)
    with pytest.raises(SourceError) as info:
        fetch(project)
    err = info.value
    assert err.message.startswith(f"cannot reach the source of '{TARGET}' (")
    assert "nonexistent/hello" in err.message or "relative/missing" in err.message
    assert err.hint is not None and f"--source {TARGET}=" in err.hint
    assert f"PATCHBENCH_SOURCE_{TARGET.upper()}" in err.hint
    assert not project.cache.exists()
    assert_nothing_left(project.builds)


def test_an_override_that_does_not_exist(project: Project, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=f"--source {TARGET}=") as info:
        fetch(project, sources={TARGET: str(tmp_path / "nowhere")})
    assert "no such directory" in info.value.message
    assert_nothing_left(project.builds)


def test_an_override_is_used_and_recorded(project: Project, tmp_path: Path) -> None:
    project.write(url="file:///nonexistent/hello")
    mirror = tmp_path / "mirror"
    shutil.copytree(project.upstream.path, mirror)
    co = fetch(project, sources={TARGET: str(mirror)})
    assert co.overridden and not co.from_cache and co.commit == project.upstream.a


def test_cached_commit_needs_no_source(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    fetch(project)
    before = cache_state(project.cache)
    # the source is gone, and any attempt to reach it would fail the test
    shutil.move(project.upstream.path, project.upstream.path.with_name("gone"))
    project.write(url="file:///nonexistent/hello")

    def no_network(*args: object, **kw: object) -> None:
        raise AssertionError("the source was contacted although the commit is cached")

    monkeypatch.setattr(source, "_resolve_remote", no_network)
    monkeypatch.setattr(source, "_fetch_into", no_network)
    co = fetch(project)
    assert co.from_cache and co.commit == project.upstream.a
    assert cache_state(project.cache) == before


def test_a_plain_directory_is_snapshotted_deterministically(tmp_path: Path) -> None:
    src = tmp_path / "plain"
    src.mkdir()
    (src / "main.go").write_text("package main\n\nfunc main() {}\n")
    one = source.snapshot_directory(src, tmp_path / "s1", "v0")
    assert source.snapshot_directory(src, tmp_path / "s2", "v0") == one
    co = source.fetch(tmp_path / "b1", "plain", str(src), "v0", one, overridden=False)
    assert co.commit == one and not co.from_cache
    # changed files give another commit, which the pin refuses
    (src / "main.go").write_text("package main\n\nfunc main() { println() }\n")
    two = source.snapshot_directory(src, tmp_path / "s3", "v0")
    assert two != one
    with pytest.raises(SourceError, match=f"now points at {two}, but matrix.yaml pins {one}"):
        source.fetch(tmp_path / "b2", "plain", str(src), "v0", one, overridden=False)
    assert_nothing_left(tmp_path / "b2")
