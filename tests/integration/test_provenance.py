"""Provenance kept, with the fixture upstream: ``series new`` records a commit upstream has (the
same SHA, or the same change cherry-picked) as upstream's (``Origin:`` with its SHA, the ``From``
SHA kept, ``Forwarded: not-needed``) and yours as yours; ``series add --pr N`` names a pull
request's commits; the report's builds table shows the upstream SHAs and the pull request."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import support
from tests.faults.scaffold_support import TARGET, Scaffold, make
from tests.support import git

pytestmark = pytest.mark.integration


@pytest.fixture
def sc(tmp_path: Path, upstream: support.Upstream, go_version: str) -> Scaffold:
    return make(tmp_path, upstream, go_version)


def patches(sc: Scaffold, series: str) -> list[str]:
    return [p.read_text() for p in sorted((sc.root / "patches" / series).glob("*.patch"))]


def test_series_new_tells_upstream_commits_from_yours(sc: Scaffold) -> None:
    b = sc.upstream.b  # upstream's "add a README", after v1 on its main branch
    sc.commit("mixed", {"NOTES": "mine\n"}, "notes: mine\n\nA file of mine.")
    git(sc.clone, "cherry-pick", b)  # the same change on another parent: another SHA
    picked = git(sc.clone, "rev-parse", "HEAD")
    assert picked != b
    git(sc.clone, "checkout", "-q", "-B", "same", "origin/main")  # the very commit b
    code, _, err = sc.run("series", "new", "mixed", "--target", TARGET, "--from", str(sc.clone),
                          "v1..mixed")
    assert code == 0, err
    assert f"1 of them upstream's ({b[:12]})" in err
    mine, theirs = patches(sc, "mixed")
    assert theirs.startswith(f"From {picked} ")  # kept, not zeroed
    assert f"\nOrigin: upstream, commit:{b}\n" in theirs
    assert "\nForwarded: not-needed\n" in theirs and "\nAuthor: " not in theirs
    assert mine.startswith("From 0000000000000000000000000000000000000000 ")
    assert "\nForwarded: no\n" in mine and "\nOrigin: " not in mine
    code, _, err = sc.run("series", "new", "same", "--target", TARGET, "--from", str(sc.clone),
                          "v1..same")
    assert code == 0, err
    (same,) = patches(sc, "same")
    assert same.startswith(f"From {b} ") and f"\nOrigin: upstream, commit:{b}\n" in same


def test_an_unreachable_upstream_records_every_commit_as_yours(sc: Scaffold,
                                                               tmp_path: Path) -> None:
    sc.commit("mine", {"NOTES": "mine\n"}, "notes: mine\n\nA file of mine.")
    broken = tmp_path / "broken"
    (broken / ".git").mkdir(parents=True)  # looks like a clone; git cannot read it
    code, _, err = sc.run("series", "new", "mine", "--target", TARGET, "--from", str(sc.clone),
                          "v1..mine", "--source", f"{TARGET}={broken}")
    assert code == 0, err
    assert "upstream's history of hello could not be read" in err
    assert "\nForwarded: no\n" in patches(sc, "mine")[0]


def pull_request(sc: Scaffold, number: int, base: str = "v1") -> list[str]:
    """Two commits on ``base`` published by the upstream as refs/pull/N/head."""
    up = sc.upstream.path
    git(up, "checkout", "-q", "--detach", base)
    shas = []
    for i in (1, 2):
        (up / f"pr{number}-{i}.txt").write_text(f"pull request {number}, commit {i}\n")
        git(up, "add", "-A")
        git(up, "commit", "-q", "-m", f"pr {number}: commit {i}")
        shas.append(git(up, "rev-parse", "HEAD"))
    git(up, "update-ref", f"refs/pull/{number}/head", shas[-1])
    git(up, "checkout", "-q", "main")
    return shas


def test_series_add_pr_names_the_pull_requests_commits_and_the_report_shows_them(
        sc: Scaffold, tmp_path: Path) -> None:
    shas = pull_request(sc, 7)
    code, _, err = sc.run("series", "add", "pr7", "--target", TARGET, "--pr",
                            "https://github.com/example/hello/pull/7")
    assert code == 0, err
    lines = [line for line in (sc.root / "patches" / "pr7" / "series").read_text().splitlines()
             if line.startswith("upstream ")]
    assert [line.split()[1] for line in lines] == shas
    assert all(line.split()[3] == "pr:7" for line in lines)
    assert "next: patchbench comparison new pr7" in err
    sc.commit("mine", {"NOTES": "mine\n"}, "notes: mine\n\nA file of mine.")
    git(sc.clone, "cherry-pick", sc.upstream.b)
    code, _, err = sc.run("series", "new", "mine", "--target", TARGET, "--from", str(sc.clone),
                          "v1..mine")
    assert code == 0, err
    code, _, err = sc.run("comparison", "new", "both", "--target", TARGET, "--candidate", "pr7",
                          "--candidate", "mine")
    assert code == 0, err
    reports = tmp_path / "reports"
    code, _, err = sc.run("compare", "both", "--runs", "5", "--rounds", "5", "--warmup", "0",
                            "--reports", str(reports), "--seed", "1")
    assert code == 0, err
    (report,) = reports.glob("both/*/report.md")
    builds = report.read_text().split("## Builds", 1)[1].split("##", 1)[0]
    assert re.search(rf"\| pr7 \(upstream {shas[0][:12]}, {shas[1][:12]}; PR #7\) ", builds), builds
    assert re.search(rf"\| mine \(upstream {sc.upstream.b[:12]}\) ", builds), builds
    html = report.with_name("report.html").read_text()
    assert "PR #7" in html and sc.upstream.b[:12] in html


def test_a_pull_request_not_built_on_the_pinned_commit_is_refused_naming_the_way_out(
        sc: Scaffold) -> None:
    pull_request(sc, 8, base=sc.upstream.b)  # on main after v1: the pinned v1 is below it
    git(sc.upstream.path, "checkout", "-q", "--orphan", "elsewhere")
    git(sc.upstream.path, "commit", "-q", "--allow-empty", "-m", "an unrelated root")
    git(sc.upstream.path, "update-ref", "refs/pull/9/head", "HEAD")
    git(sc.upstream.path, "checkout", "-q", "-f", "main")
    code, _, err = sc.run("series", "add", "pr9", "--target", TARGET, "--pr", "9")
    assert code == 10, err
    assert "does not build on the pinned commit" in err and "--ref BASE" in err
    code, _, err = sc.run("series", "add", "pr1", "--target", TARGET, "--pr", "1")
    assert code == 11, err
    assert "pull request 1 is not at" in err
    assert not (sc.root / "patches" / "pr9").exists()
