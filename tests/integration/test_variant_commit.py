"""Variants at commits without a build: a plan moved to another commit keeps the pinned
toolchain's fingerprint, takes that commit's SOURCE_DATE_EPOCH, and keys its cache by the
commit; builds at different commits are not refused for their epochs, but a real toolchain
difference still is. And the first-parent chain from a release tag on a merged branch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from patchbench import build, config
from patchbench.errors import SourceError, ToolchainError
from patchbench.source import cache as source
from patchbench.source import history
from tests import support


def _repo(path: Path) -> tuple[str, str]:
    path.mkdir()
    support.git(path, "init", "-q", "-b", "main")
    shas = []
    for n, date in enumerate(("2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z")):
        (path / "f").write_text(f"{n}\n")
        support.git(path, "add", "-A")
        support.git(path, "commit", "-q", "-m", f"c{n}",
                    env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        shas.append(support.git(path, "rev-parse", "HEAD"))
    return shas[0], shas[1]


@pytest.fixture
def plan(tmp_path: Path) -> build.BuildPlan:
    a, b = _repo(tmp_path / "up")
    up = support.Upstream(tmp_path / "up", a, b)
    support.write_series(tmp_path / "p", "greet", [("0001-x.patch", "")])
    support.write_matrix(tmp_path / "p", support.matrix_data(up, "1.26.8"))
    project = config.load(tmp_path / "p" / "matrix.yaml")
    checkout = source.Checkout(support.TARGET, tmp_path / "up", a, "v1", from_cache=True,
                               overridden=False)
    ws = support.Project(tmp_path / "p", up, "1.26.8", tmp_path / "builds", tmp_path / "r")
    fp = {"kind": "go", "version": "go1.26.8", "env": {"SOURCE_DATE_EPOCH": "1", "TZ": "UTC"}}
    return build.BuildPlan(project, support.TARGET, project.target(support.TARGET), checkout,
                           ws.options().layout, [], {"SOURCE_DATE_EPOCH": "1", "TZ": "UTC"}, fp)


def test_a_plan_at_another_commit_keeps_the_toolchain_and_keys_by_commit(
        plan: build.BuildPlan) -> None:
    b = plan.checkout.repo
    later = support.git(b, "rev-parse", "main")
    assert plan.at(plan.checkout.commit) is plan
    moved = plan.at(later)
    epoch = support.git(b, "show", "-s", "--format=%ct", later)
    assert moved.checkout.commit == later and moved.checkout.repo == plan.checkout.repo
    assert moved.env == {**plan.env, "SOURCE_DATE_EPOCH": epoch}
    assert moved.fingerprint == {**plan.fingerprint,
                                 "env": {"SOURCE_DATE_EPOCH": epoch, "TZ": "UTC"}}
    assert moved.key([]) != plan.key([])
    assert plan.fingerprint["env"]["SOURCE_DATE_EPOCH"] == "1"  # the original is unchanged


def _built(commit: str, fp: dict[str, Any]) -> build.Built:
    return build.Built(build.Variant(commit[:12], (), commit=commit), Path("/nonexistent"),
                       {"commit": commit, "fingerprint": fp}, cached=True)


def test_builds_at_two_commits_differ_only_in_their_epoch() -> None:
    fp = {"version": "go1.26.8", "env": {"SOURCE_DATE_EPOCH": "1"}}
    later = {"version": "go1.26.8", "env": {"SOURCE_DATE_EPOCH": "2"}}
    build.check_same_toolchain([_built("a" * 40, fp), _built("b" * 40, later)])
    with pytest.raises(ToolchainError, match="SOURCE_DATE_EPOCH"):  # one commit: a real mismatch
        build.check_same_toolchain([_built("a" * 40, fp), _built("a" * 40, later)])
    other_go = {"version": "go1.25.0", "env": {"SOURCE_DATE_EPOCH": "2"}}
    with pytest.raises(ToolchainError, match="version"):
        build.check_same_toolchain([_built("a" * 40, fp), _built("b" * 40, other_go)])


def test_a_good_tag_on_a_merged_branch_starts_the_chain_at_its_merge(tmp_path: Path) -> None:
    repo = tmp_path / "merged"
    a, _ = _repo(repo)
    support.git(repo, "checkout", "-q", "-b", "topic", a)
    (repo / "g").write_text("release\n")
    support.git(repo, "add", "-A")
    support.git(repo, "commit", "-q", "-m", "VERSION: release")
    support.git(repo, "tag", "v2")
    support.git(repo, "checkout", "-q", "main")
    support.git(repo, "merge", "-q", "--no-ff", "-m", "merge topic", "topic")
    merge = support.git(repo, "rev-parse", "HEAD")
    (repo / "h").write_text("after\n")
    support.git(repo, "add", "-A")
    support.git(repo, "commit", "-q", "-m", "after the release")
    tip = support.git(repo, "rev-parse", "HEAD")
    checkout = source.Checkout("t", repo, tip, "main", from_cache=True, overridden=False)
    v2 = history.resolve(checkout, "v2")
    chain = history.first_parent(checkout, v2, tip)
    # main's second commit (before the merge) does not hold v2: the chain skips it
    assert [c.sha for c in chain] == [v2, merge, tip]
    assert chain[1].subject == "merge topic"
    with pytest.raises(SourceError, match="not a descendant"):
        history.first_parent(checkout, tip, v2)
