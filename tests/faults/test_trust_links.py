"""Untrusted saved runs and artifacts (docs/security.md), links followed out: reading an artifact
or a saved run never follows a link (the ``exit-code-*`` files, ``results.json``, linked folders of
an artifact tree), writing under ``reports/``, ``--out`` or a summary file never goes through a
link the tool did not make, nor into a folder another user owns in a world-writable parent; the
root-ownership check of ``patches/`` and ``overlays/`` judges what a link resolves to."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchbench.errors import ConfigError, ReportError
from patchbench.runs import store as runstore
from patchbench.util import ownership
from tests.faults.trust_support import demo, merge, save

SECRET = "root-only-secret-7f3a"
OTHER = 54321  # a uid nobody on this machine uses
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chown to another user)")


def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    return path


def all_text(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in root.rglob("*")
                   if p.is_file() and not p.is_symlink())


def test_a_linked_exit_code_file_is_refused_not_copied(tmp_path: Path) -> None:
    art = tmp_path / "art"
    save(art / "m1", demo())
    (art / "m1" / "exit-code-m1").symlink_to(secret(tmp_path))
    reports = tmp_path / "reports"
    code, out, err = merge([str(art)], reports)
    assert code == 18, err
    assert "exit-code-m1" in err and "link" in err
    assert SECRET not in out + err
    assert not reports.exists()


def test_a_linked_results_file_is_refused(tmp_path: Path) -> None:
    elsewhere = save(tmp_path / "elsewhere", demo())
    art = tmp_path / "art"
    save(art / "m1", demo())
    (art / "m2").mkdir()
    (art / "m2" / "results.json").symlink_to(elsewhere / "results.json")
    code, _, err = merge([str(art)], tmp_path / "reports")
    assert code == 18, err
    assert "m2/results.json is a symbolic link" in err
    code, _, err = merge([f"x={art / 'm2'}"], tmp_path / "reports")
    assert code == 18 and "symbolic link" in err


def test_a_linked_folder_in_an_artifact_tree_is_not_entered(tmp_path: Path) -> None:
    elsewhere = save(tmp_path / "elsewhere" / "run", demo())
    art = tmp_path / "art"
    save(art / "m1", demo())
    (art / "m2").symlink_to(elsewhere.parent, target_is_directory=True)
    out = tmp_path / "out"
    code, stdout, err = merge([str(art)], tmp_path / "reports", out=str(out))
    assert code == 0, err
    assert "1 runs merged" in stdout and "m2" not in stdout


def test_the_loader_opens_no_link(tmp_path: Path) -> None:
    from patchbench import results

    run = save(tmp_path / "run", demo())
    (tmp_path / "link.json").symlink_to(run / "results.json")
    with pytest.raises(ReportError, match="symbolic link"):
        results.load(tmp_path / "link.json")
    (tmp_path / "linkdir").symlink_to(run, target_is_directory=True)
    with pytest.raises(ReportError, match="symbolic link"):
        results.load(tmp_path / "linkdir")


def test_publish_never_writes_through_a_planted_reports_link(tmp_path: Path) -> None:
    run_dir = save(tmp_path / "builds" / "runs" / "demo-1", demo())
    reports = tmp_path / "reports"
    reports.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (reports / "demo").symlink_to(victim, target_is_directory=True)
    with pytest.raises(ReportError, match="symbolic link below") as info:
        runstore.publish(run_dir / "results.json", reports, stamp="20260101T000000Z")
    assert info.value.exit_code == 18
    assert not list(victim.iterdir())


def test_merge_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    art = tmp_path / "art"
    save(art / "m1", demo())
    reports = tmp_path / "reports"
    reports.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (reports / "demo").symlink_to(victim, target_is_directory=True)
    code, _, err = merge([str(art)], reports)
    assert code == 18 and "symbolic link below" in err, err
    assert not list(victim.iterdir())
    (reports / "demo").unlink()
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").symlink_to(tmp_path / "victim" / "planted")
    code, _, err = merge([str(art)], reports, out=str(out))
    assert code == 0, err  # the link itself is replaced, never written through
    assert not (victim / "planted").exists() and not (out / "report.md").is_symlink()


def test_a_linked_summary_file_is_refused(tmp_path: Path) -> None:
    art = tmp_path / "art"
    save(art / "m1", demo())
    target = secret(tmp_path)
    summary = tmp_path / "summary.md"
    summary.symlink_to(target)
    code, _, err = merge([str(art)], tmp_path / "reports", out=str(tmp_path / "out"),
                         summary=str(summary))
    assert code == 18 and "symbolic link" in err, err
    assert target.read_text() == SECRET + "\n"


@as_root
def test_a_foreign_folder_in_a_world_writable_parent_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "reports"
    planted.mkdir()
    os.chown(planted, OTHER, OTHER)
    run_dir = save(tmp_path / "builds" / "runs" / "demo-1", demo())
    with pytest.raises(ReportError, match=f"owned by uid {OTHER} in the world-writable"):
        runstore.publish(run_dir / "results.json", planted, stamp="20260101T000000Z")
    assert not list(planted.iterdir())
    link = shared / "out"
    link.symlink_to(tmp_path / "victim")
    os.lchown(link, OTHER, OTHER)
    with pytest.raises(ReportError, match="a link owned by uid"):
        ownership.check_output(link / "report.md")
    ownership.check_output(tmp_path / "mine" / "report.md")  # our own place: fine


@as_root
@pytest.mark.parametrize("what", ["patch file", "series folder", "overlay file"])
def test_the_ownership_check_judges_what_a_link_resolves_to(tmp_path: Path, what: str) -> None:
    root = tmp_path / "p"
    (root / "patches" / "s").mkdir(parents=True)
    (root / "overlays" / "ov").mkdir(parents=True)
    (root / "overlays" / "ov" / "a.go").write_text("package a\n")
    matrix = root / "matrix.yaml"
    matrix.write_text("version: 1\ntargets: {}\ncomparisons: {}\n")
    builds = tmp_path / "builds"
    builds.mkdir()
    ownership.check_project(matrix, root, builds, euid=0, environ={})
    evil = tmp_path / "world"
    evil.mkdir()
    evil.chmod(0o777)  # world-writable, not sticky
    (evil / "0001-x.patch").write_text("From x\n")
    (evil / "series").write_text("0001-x.patch\n")
    if what == "patch file":
        (root / "patches" / "s" / "0001-x.patch").symlink_to(evil / "0001-x.patch")
    elif what == "series folder":
        (root / "patches" / "t").symlink_to(evil, target_is_directory=True)
    else:
        (root / "overlays" / "ov" / "b.go").symlink_to(evil / "0001-x.patch")
    with pytest.raises(ConfigError, match="writable by every user"):
        ownership.check_project(matrix, root, builds, euid=0, environ={})
