"""The launcher under builds/tools/ runs as root on every measurement, so it is used only when it
is the file patchbench built: pinned to the sha256 kept in its stamp and hashed again before each
use. A wrapper put in its place (also with a stamp to match, when another user owns it or anyone
may write it), a link, or a missing stamp is built again with a warning; a folder in its place is
one line and exit 15. The wrapper never runs."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from patchbench.errors import BenchmarkError
from patchbench.measure import launcher
from patchbench.util.layout import Layout


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wrapper(path: Path, marker: Path, mode: int = 0o755) -> None:
    path.unlink()
    path.write_text(f"#!/bin/sh\ntouch {marker}\nexec sleep 0 \"$@\"\n")
    path.chmod(mode)


def restamp(exe: Path) -> None:
    """What an attacker who can write builds/tools/ would also do: a stamp naming the wrapper."""
    stamp = exe.with_name(exe.name + ".sha256")
    stamp.unlink(missing_ok=True)
    stamp.write_text(json.dumps({"sha256": sha(exe)}))


def replaced(exe: Path, marker: Path) -> None:
    wrapper(exe, marker)


def replaced_world_writable(exe: Path, marker: Path) -> None:
    wrapper(exe, marker, 0o777)
    exe.chmod(0o777)
    restamp(exe)


def replaced_by_another_user(exe: Path, marker: Path) -> None:
    wrapper(exe, marker)
    os.chown(exe, 1234, 1234)
    restamp(exe)


def linked(exe: Path, marker: Path) -> None:
    elsewhere = marker.with_name("elsewhere.sh")
    elsewhere.write_text(f"#!/bin/sh\ntouch {marker}\n")
    elsewhere.chmod(0o755)
    exe.unlink()
    exe.symlink_to(elsewhere)
    restamp(exe)


def stamp_removed(exe: Path, marker: Path) -> None:
    wrapper(exe, marker)
    exe.with_name(exe.name + ".sha256").unlink(missing_ok=True)


CASES: dict[str, Callable[[Path, Path], None]] = {
    "replaced by a wrapper": replaced,
    "replaced, mode 0777, stamp rewritten": replaced_world_writable,
    "replaced by uid 1234, stamp rewritten": replaced_by_another_user,
    "a link, stamp rewritten": linked,
    "no stamp": stamp_removed,
}


@pytest.mark.parametrize("tamper", CASES.values(), ids=list(CASES))
def test_a_launcher_patchbench_did_not_build_is_built_again(
        tmp_path: Path, tamper: Callable[[Path, Path], None],
        capsys: pytest.CaptureFixture[str]) -> None:
    if tamper is replaced_by_another_user and os.geteuid() != 0:
        pytest.skip("chown needs root")
    lay = Layout(tmp_path / "builds", tmp_path / "reports")
    exe = launcher.build(lay)
    genuine = sha(exe)
    marker = tmp_path / "PWNED"
    tamper(exe, marker)
    again = launcher.build(lay)
    assert again == exe and not again.is_symlink()
    assert sha(again) == genuine, "the planted launcher is used"
    assert "building it again" in capsys.readouterr().err
    assert not marker.exists()
    assert not (marker.with_name("elsewhere.sh").exists()
                and sha(marker.with_name("elsewhere.sh")) == genuine)  # never written through


def test_a_folder_in_its_place_is_one_line_and_exit_15(tmp_path: Path) -> None:
    lay = Layout(tmp_path / "builds", tmp_path / "reports")
    exe = launcher.build(lay)
    exe.unlink()
    (exe / "x").mkdir(parents=True)
    real = getattr(launcher.build, "__wrapped__", launcher.build)  # not the tests' shared copy
    with pytest.raises(BenchmarkError) as info:
        real(lay)
    assert info.value.exit_code == 15 and str(exe) in info.value.message
    assert "\n" not in info.value.message


def test_the_launcher_is_built_without_the_callers_secrets_or_telemetry(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHBENCH_TEST_TOKEN", "hunter2")
    monkeypatch.setenv("https_proxy", "http://user:hunter2@proxy.invalid:3128")
    env = launcher.build_env()
    assert "hunter2" not in json.dumps(env)
    assert env["XDG_CONFIG_HOME"] == os.devnull and env["GOTELEMETRY"] == "off"
