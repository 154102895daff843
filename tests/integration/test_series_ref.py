"""Upstream commits as series by reference, with the fixture upstream (real git and go): the
commit is fetched into the shallow source cache, the patch made from it and its hash checked;
a wrong hash and a missing commit are refused; the right one is applied, built and recorded."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from patchbench import pipeline
from patchbench.errors import ConfigError, PatchError, SourceError
from patchbench.source import series_ref
from tests import support
from tests.support import Project, assert_nothing_left, git, write_series

pytestmark = pytest.mark.integration


def patch_id(project: Project, commit: str) -> str:
    shown = git(project.upstream.path, "show", commit)
    out = subprocess.run(["git", "patch-id", "--stable"], input=shown + "\n", capture_output=True,
                         text=True, check=True).stdout
    return out.split()[0]


def use(project: Project, name: str, line: str) -> None:
    write_series(project.root, name, [], series_text=f"# fixture\n{line}\n")
    project.write(candidates={name: [name]})


def test_series_add_writes_the_pin_with_the_subject(project: Project) -> None:
    proj = project.load()
    opts = project.options()
    checkout = support.fetch(proj, opts, "hello")
    b = project.upstream.b
    lines = series_ref.add(project.root, checkout, "readme", [b.upper()], opts.builds)
    expected = f"upstream {b} patch-id:{patch_id(project, b)}  # hello: add a README"
    assert lines == [expected]
    text = (project.root / "patches" / "readme" / "series").read_text()
    assert text.startswith("# readme: upstream hello commits by reference")
    assert text.endswith(expected + "\n")
    with pytest.raises(ConfigError, match="already names"):
        series_ref.add(project.root, checkout, "readme", [b], opts.builds)
    with pytest.raises(ConfigError, match="not a full 40-hex"):
        series_ref.add(project.root, checkout, "other", [b[:12]], opts.builds)
    with pytest.raises(SourceError, match=f"upstream commit {'1' * 40} is missing from"):
        series_ref.add(project.root, checkout, "other", ["1" * 40], opts.builds)
    assert not (project.root / "patches" / "other").exists()


def test_the_right_commit_is_applied_built_and_recorded(project: Project) -> None:
    b = project.upstream.b
    use(project, "readme", f"upstream {b} patch-id:{patch_id(project, b)}  # add a README")
    opts = project.options()
    rows = pipeline.patch_check(project.load(), opts, ["readme"])
    assert rows == [("readme", "hello", "ok (1 patch)")]
    base, cand = pipeline.build_for_patch(project.load(), opts, "readme")
    (entry,) = cand.manifest["series"]
    (p,) = entry["patches"]
    assert p["origin"] == f"upstream, commit:{b}"
    assert p["hash"] == f"patch-id:{patch_id(project, b)}"
    assert p["file"] == f"upstream-{b}.patch"
    assert cand.manifest["built_commit"] != base.manifest["built_commit"]
    # the built commit is the pinned one plus upstream's change, with upstream's message
    cache = project.cache
    msg = git(cache, "show", "-s", "--format=%s", cand.manifest["built_commit"])
    assert msg == "hello: add a README"
    tree = git(cache, "ls-tree", "--name-only", cand.manifest["built_commit"])
    assert "README" in tree.split()
    # rebuilding is a cache hit: the key does not depend on the made patch
    again = pipeline.build_for_patch(project.load(), opts, "readme")
    assert again[1].cached and again[1].path == cand.path
    assert_nothing_left(opts.builds, cache)


def test_a_wrong_hash_is_refused_naming_both(project: Project) -> None:
    b = project.upstream.b
    wrong = "0123456789abcdef0123456789abcdef01234567"
    use(project, "readme", f"upstream {b} patch-id:{wrong}")
    opts = project.options()
    with pytest.raises(PatchError) as exc:
        pipeline.build_for_patch(project.load(), opts, "readme")
    msg = exc.value.message
    assert f"patch-id:{wrong}" in msg and f"patch-id:{patch_id(project, b)}" in msg
    assert "does not match its pinned hash" in msg and "patches/readme/series:2" in msg
    assert_nothing_left(opts.builds, project.cache)


def test_a_sha256_pin_is_checked_too(project: Project) -> None:
    b = project.upstream.b
    use(project, "readme", f"upstream {b} sha256:{'0' * 64}")
    with pytest.raises(PatchError, match=r"the fetched commit gives sha256:[0-9a-f]{64}"):
        pipeline.build_for_patch(project.load(), project.options(), "readme")


def test_a_missing_commit_is_refused(project: Project) -> None:
    missing = "1234567890123456789012345678901234567890"
    use(project, "ghost", f"upstream {missing} patch-id:{'a' * 40}")
    opts = project.options()
    with pytest.raises(PatchError) as exc:
        pipeline.patch_check(project.load(), opts, ["ghost"])
    assert f"upstream commit {missing} is missing from the fetched source" in exc.value.detail
    with pytest.raises(PatchError, match=f"upstream commit {missing} is missing"):
        pipeline.build_for_patch(project.load(), opts, "ghost")
    assert_nothing_left(opts.builds, project.cache)


def test_our_patches_and_upstream_commits_mix_in_one_series(project: Project) -> None:
    b = project.upstream.b
    write_series(project.root, "mixed", [("0001-greet.patch", project.upstream.patches["greet"])],
                 series_text=f"0001-greet.patch\nupstream {b} patch-id:{patch_id(project, b)}\n")
    project.write(candidates={"mixed": ["mixed"]})
    _, cand = pipeline.build_for_patch(project.load(), project.options(), "mixed")
    files = [p["file"] for p in cand.manifest["series"][0]["patches"]]
    assert files == ["0001-greet.patch", f"upstream-{b}.patch"]
    out = subprocess.run([str(cand.bin / "hello")], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[0] == "hello, patched"


def test_a_plain_format_patch_is_told_it_lacks_dep3_not_that_it_did_not_apply(
        project: Project) -> None:
    b = project.upstream.b
    plain = git(project.upstream.path, "format-patch", "-1", "--stdout", "--zero-commit",
                "--no-signature", b) + "\n"
    write_series(project.root, "plain", [("0001-readme.patch", plain)])
    project.write(candidates={"plain": ["plain"], "greet": ["greet"]})
    with pytest.raises(PatchError) as exc:
        pipeline.patch_check(project.load(), project.options(), ["plain", "greet"])
    assert exc.value.message == ("series 'plain': 0001-readme.patch lacks the DEP-3 fields "
                                 "Description, Author or Origin, Forwarded")
    assert "did not apply" not in exc.value.render()
    assert "greet  hello  ok (1 patch)" in (exc.value.detail or "")


def test_an_upstream_commit_of_a_refused_form_is_refused(project: Project) -> None:
    up = project.upstream.path
    git(up, "checkout", "-q", "--detach", project.upstream.a)
    (up / "link").symlink_to("main.go")
    git(up, "add", "link")
    git(up, "commit", "-q", "-m", "hello: a symlink")
    c = git(up, "rev-parse", "HEAD")
    git(up, "tag", "keep-symlink", c)  # reachable, so it can be fetched
    use(project, "link", f"upstream {c} patch-id:{patch_id(project, c)}")
    with pytest.raises(PatchError, match=f"the patch made from upstream commit {c} .*symbolic"):
        pipeline.build_for_patch(project.load(), project.options(), "link")


def test_a_commit_that_is_a_shallow_boundary_still_gives_its_own_patch(tmp_path: Path) -> None:
    """Fetching B, then its child C, at depth 2 makes B a shallow boundary: git then pretends B
    has no parent. The patch (and so its hash) must still be B's diff against its real parent,
    not against the empty tree (this gave a 56 MB 'patch' of containerd's whole tree)."""
    full = tmp_path / "full"
    full.mkdir()
    git(full, "init", "-q", "-b", "main")
    shas = []
    for i, text in enumerate(["a\n", "a\nb\n", "a\nb\nc\n"]):
        (full / "f.txt").write_text(text)
        (full / f"other{i}.txt").write_text(f"{i}\n")
        git(full, "add", "-A")
        git(full, "commit", "-q", "-m", f"commit {i}")
        shas.append(git(full, "rev-parse", "HEAD").strip())
    shallow = tmp_path / "shallow.git"
    git(tmp_path, "init", "-q", "--bare", str(shallow))
    for sha in shas[1:]:  # B, then C: B ends up listed in the shallow file
        git(shallow, "fetch", "-q", "--depth=2", full.as_uri(), sha)
    assert shas[1] in (shallow / "shallow").read_text()
    b_full = series_ref.make_patch(full, shas[1])
    b_shallow = series_ref.make_patch(shallow, shas[1])
    assert "other0.txt" not in b_shallow  # not a diff against the empty tree
    assert series_ref.patch_hash(shallow, b_shallow, "patch-id") == \
        series_ref.patch_hash(full, b_full, "patch-id")
