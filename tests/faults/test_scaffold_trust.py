"""The scaffolding commands (series new and add, comparison new, target new) held to compare's
rules: as root, a project another user could change is refused before anything is written
(class 3); two editing commands started together both land, and one killed mid-write leaves
nothing the next command trips on (class 4); ordinary commits and names work or are refused with
a documented exit code (class 5)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import support
from tests.faults.scaffold_support import TARGET, Scaffold, make, staged

pytestmark = pytest.mark.integration
OTHER = 54321  # a uid and gid nobody on this machine uses
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="ownership is checked as root only")


@pytest.fixture
def sc(tmp_path: Path, upstream: support.Upstream, go_version: str) -> Scaffold:
    return make(tmp_path, upstream, go_version)


def comparison_new(sc: Scaffold, name: str, *extra: str) -> tuple[int, str, str]:
    return sc.run("comparison", "new", name, "--target", TARGET, "--candidate", "greet", *extra)


def one_line_error(code: int, err: str, expected: int) -> None:
    assert code == expected, err
    assert "Traceback" not in err and err.startswith("patchbench: ")


# --- class 3: ownership and links ---------------------------------------------------------------


@as_root
def test_a_world_writable_project_folder_is_refused_by_every_editing_command(sc: Scaffold) -> None:
    before = sc.matrix.read_bytes()
    sc.root.chmod(0o777)
    sc.commit("mine", {"README": "mine\n"}, "readme: mine\n\nA file of mine.")
    for argv in (("comparison", "new", "x", "--target", TARGET, "--candidate", "greet"),
                 ("series", "new", "x", "--target", TARGET, "--from", str(sc.clone), "v1..mine"),
                 ("series", "add", "x", "--target", TARGET, sc.upstream.b),
                 ("target", "new", "x", "--runtime", "go", "--source", str(sc.upstream.path))):
        code, _, err = sc.run(*argv)
        one_line_error(code, err, 10)
        assert f"{sc.root} is writable by every user" in err, argv
        assert f"chmod go-w {sc.root}" in err
    assert sc.matrix.read_bytes() == before
    assert sorted(p.name for p in (sc.root / "patches").iterdir()) == ["greet"]


@as_root
def test_a_matrix_owned_by_another_user_is_refused_and_left_theirs(sc: Scaffold) -> None:
    os.chown(sc.matrix, OTHER, OTHER)
    before = sc.matrix.read_bytes()
    code, _, err = comparison_new(sc, "x")
    one_line_error(code, err, 10)
    assert f"{sc.matrix} is owned by uid {OTHER}" in err
    assert sc.matrix.read_bytes() == before and sc.matrix.stat().st_uid == OTHER


@as_root
def test_a_patches_folder_linking_into_another_users_folder_is_refused(sc: Scaffold,
                                                                     tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    (sc.root / "patches").rename(theirs)
    os.chown(theirs, OTHER, OTHER)
    (sc.root / "patches").symlink_to(theirs)
    sc.commit("mine", {"README": "mine\n"}, "readme: mine\n\nA file of mine.")
    code, _, err = sc.run("series", "new", "x", "--target", TARGET, "--from", str(sc.clone),
                          "v1..mine")
    one_line_error(code, err, 10)
    assert f"{theirs} is owned by uid {OTHER}" in err
    assert sorted(p.name for p in theirs.iterdir()) == ["greet"]  # nothing written into theirs


def test_a_link_planted_at_a_predictable_temporary_name_is_not_written_through(
        sc: Scaffold, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("root-only\n")
    victim.chmod(0o600)
    for name in (f".matrix.yaml.{os.getpid()}.tmp", ".matrix.yaml.tmp", ".matrix.yaml.new"):
        (sc.root / name).symlink_to(victim)
    code, _, err = comparison_new(sc, "x")
    assert code == 0, err
    assert victim.read_text() == "root-only\n"
    assert "  x:\n" in sc.matrix.read_text() and not sc.matrix.is_symlink()


# --- class 4: concurrent edits, a killed edit ---------------------------------------------------


# imported first, then held until the test lets both go at once: the two edits overlap
AT_THE_START = """
import os, time
from patchbench.cli import scaffold  # noqa: F401  (what the command imports)
from ruamel.yaml import YAML  # noqa: F401
os.close(os.open({ready!r} + str(os.getpid()), os.O_CREAT | os.O_WRONLY))
while not os.path.exists({go!r}):
    time.sleep(0.001)
"""


def test_two_comparison_new_started_together_both_land(sc: Scaffold, tmp_path: Path) -> None:
    names = [f"c{i}" for i in range(6)]
    for i, (a, b) in enumerate(zip(names[::2], names[1::2], strict=True)):
        ready, go = tmp_path / f"ready{i}-", tmp_path / f"go{i}"
        prelude = AT_THE_START.format(ready=str(ready), go=str(go))
        procs = [sc.process("comparison", "new", n, "--target", TARGET, "--candidate", "greet",
                            prelude=prelude) for n in (a, b)]
        while len(list(tmp_path.glob(f"ready{i}-*"))) < 2 and all(p.poll() is None
                                                                  for p in procs):
            time.sleep(0.01)
        go.touch()
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    text = sc.matrix.read_text()
    assert [n for n in names if f"\n  {n}:\n" not in text] == []
    assert staged(sc.root) == []


KILL_AT = """
import os, signal
def _killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
os.{call} = _killed
"""


def test_a_series_new_killed_before_its_rename_leaves_nothing_that_breaks_the_next_commands(
        sc: Scaffold) -> None:
    sc.commit("mine", {"README": "mine\n"}, "readme: mine\n\nA file of mine.")
    argv = ("series", "new", "mine", "--target", TARGET, "--from", str(sc.clone), "v1..mine")
    p = sc.process(*argv, prelude=KILL_AT.format(call="rename"))
    p.communicate(timeout=120)
    assert p.returncode == -signal.SIGKILL
    assert not (sc.root / "patches" / "mine").exists()
    code, out, err = sc.run("patch", "--check")  # the leftover is no series
    assert code == 0, err
    assert out.count("ok (1 patch)") == 1
    code, _, err = sc.run(*argv)  # the next editing command removes it
    assert code == 0, err
    assert staged(sc.root) == [] and (sc.root / "patches" / "mine" / "series").is_file()


def test_a_comparison_new_killed_before_its_replace_leaves_the_matrix_and_is_swept(
        sc: Scaffold) -> None:
    before = sc.matrix.read_bytes()
    p = sc.process("comparison", "new", "x", "--target", TARGET, "--candidate", "greet",
                   prelude=KILL_AT.format(call="replace"))
    p.communicate(timeout=120)
    assert p.returncode == -signal.SIGKILL
    assert sc.matrix.read_bytes() == before
    code, _, err = comparison_new(sc, "y")
    assert code == 0, err
    assert staged(sc.root) == []
    assert "  y:\n" in sc.matrix.read_text() and "  x:\n" not in sc.matrix.read_text()


# --- class 5: ordinary input --------------------------------------------------------------------


def series_then_check(sc: Scaffold, name: str, branch: str) -> str:
    """series new and comparison new of ``branch``, then patch --check of the series: both must
    pass; the text of the one patch."""
    code, _, err = sc.run("series", "new", name, "--target", TARGET, "--from", str(sc.clone),
                          f"v1..{branch}")
    assert code == 0, err
    code, _, err = comparison_new(sc, name)
    assert code == 0, err
    code, out, err = sc.run("patch", "--check", "--series", name)
    assert code == 0, err + out
    (patch,) = sorted((sc.root / "patches" / name).glob("*.patch"))
    return patch.read_text()


def test_a_commit_with_a_subject_and_no_body(sc: Scaffold) -> None:
    sc.commit("short", {"README": "short\n"}, "readme: add one")
    text = series_then_check(sc, "short", "short")
    assert "\nDescription: readme: add one\n" in text and "\nForwarded: no\n" in text


def test_a_body_with_a_dashed_line_and_a_diff_stays_in_the_message(sc: Scaffold) -> None:
    body = ("readme: explain\n\nBefore the rule:\n---\nafter it, a diff quoted:\n\n"
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\nIndex: y\n")
    sc.commit("dashed", {"README": "explained\n"}, body)
    text = series_then_check(sc, "dashed", "dashed")
    message = text.split("\n\n", 1)[1].split("\n---\n", 1)[0]
    assert " ---\n" in message and " diff --git a/x b/x\n" in message and " +new\n" in message
    assert text.count("\ndiff --git ") == 1  # the quoted diff is no patch


def test_a_rename_is_written_as_a_delete_and_an_add(sc: Scaffold) -> None:
    support.git(sc.clone, "checkout", "-q", "-B", "moved", "v1")
    support.git(sc.clone, "mv", "go.mod", "go2.mod")
    support.git(sc.clone, "commit", "-q", "-m", "move go.mod away\n\nA new name.")
    text = series_then_check(sc, "moved", "moved")
    assert "rename from" not in text and "deleted file mode" in text and "new file mode" in text


@pytest.mark.parametrize(("shape", "why"), [("mode", "changes a file mode"),
                                            ("empty", "changes no file"),
                                            ("link", "symbolic link")])
def test_a_commit_a_patch_cannot_hold_is_refused_before_anything_is_written(
        sc: Scaffold, shape: str, why: str) -> None:
    support.git(sc.clone, "checkout", "-q", "-B", shape, "v1")
    if shape == "mode":
        (sc.clone / "main.go").chmod(0o755)
    elif shape == "link":
        (sc.clone / "elsewhere").symlink_to("/etc/passwd")
    support.git(sc.clone, "add", "-A")
    support.git(sc.clone, "commit", "-q", "--allow-empty", "-m", f"a {shape} commit\n\nWhy.")
    code, _, err = sc.run("series", "new", shape, "--target", TARGET, "--from", str(sc.clone),
                          f"v1..{shape}")
    one_line_error(code, err, 12)
    assert why in err
    assert not (sc.root / "patches" / shape).exists() and staged(sc.root) == []


def test_a_300_character_name_is_refused_at_validation(sc: Scaffold) -> None:
    sc.commit("mine", {"README": "mine\n"}, "readme: mine\n\nA file of mine.")
    long = "a" * 300
    before = sc.matrix.read_bytes()
    for argv in (("series", "new", long, "--target", TARGET, "--from", str(sc.clone), "v1..mine"),
                 ("comparison", "new", long, "--target", TARGET, "--candidate", "greet"),
                 ("target", "new", long, "--runtime", "go", "--source", str(sc.upstream.path))):
        code, _, err = sc.run(*argv)
        one_line_error(code, err, 10)
        assert "at most 64 characters" in err, argv
    assert sc.matrix.read_bytes() == before
    assert sorted(p.name for p in (sc.root / "patches").iterdir()) == ["greet"]
    name64 = "b" * 64
    code, _, err = sc.run("series", "new", name64, "--target", TARGET, "--from", str(sc.clone),
                          "v1..mine")
    assert code == 0, err


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only file system needs root")
    mount = tmp_path / "ro"
    mount.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mount)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_builds_on_a_read_only_file_system_is_a_one_line_error(sc: Scaffold,
                                                               read_only: Path) -> None:
    sc.builds = read_only / "builds"
    for argv in (("fetch", TARGET), ("patch", "--check"),
                 ("series", "add", "up", "--target", TARGET, sc.upstream.b)):
        code, _, err = sc.run(*argv)
        one_line_error(code, err, 10)
        assert re.search(r"cannot make .*: Read-only file system", err), (argv, err)
        assert "--builds DIR" in err
