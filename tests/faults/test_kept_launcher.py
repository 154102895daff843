"""The launcher under builds/tools/ runs as root on every measurement, so it is used only when it
is the file the package pins: its sha256 is in patchbench/measure/launcher/pins.py, not in a stamp
beside it, and the file is hashed again before each use. A wrapper put in its place (by root or
another user, world-writable or not, with a stamp beside it that names the wrapper's hash: what a
build running as root did before builds were sandboxed) or a link is built again with a warning;
a folder in its place is one line and exit 15. The wrapper never runs. The pin is what Go builds from the
package's sources (the real build here must match it)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from patchbench.errors import BenchmarkError
from patchbench.measure import launcher
from patchbench.measure.launcher import pins
from patchbench.util.files import is_sha256
from patchbench.util.layout import Layout


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wrapper(path: Path, marker: Path, mode: int = 0o755) -> None:
    path.unlink()
    path.write_text(f"#!/bin/sh\ntouch {marker}\nexec sleep 0 \"$@\"\n")
    path.chmod(mode)


def restamp(exe: Path) -> None:
    """What an attacker who can write builds/tools/ would also do: a stamp naming the wrapper
    (the stamp patchbench kept there before its pin moved into the package)."""
    stamp = exe.with_name(exe.name + ".sha256")
    stamp.unlink(missing_ok=True)
    stamp.write_text(json.dumps({"sha256": sha(exe)}))


def replaced(exe: Path, marker: Path) -> None:
    wrapper(exe, marker)


def replaced_and_restamped(exe: Path, marker: Path) -> None:
    """What a build running as root could do before builds were sandboxed: a wrapper of root's,
    mode 0755, with a stamp beside it that names the wrapper's own hash."""
    wrapper(exe, marker)
    restamp(exe)


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


CASES: dict[str, Callable[[Path, Path], None]] = {
    "replaced by a wrapper": replaced,
    "replaced by root's wrapper, stamp rewritten": replaced_and_restamped,
    "replaced, mode 0777, stamp rewritten": replaced_world_writable,
    "replaced by uid 1234, stamp rewritten": replaced_by_another_user,
    "a link, stamp rewritten": linked,
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
    monkeypatch.setenv("GOFLAGS", "-ldflags=-X=main.x=y")
    monkeypatch.setenv("GOAMD64", "v3")
    env = launcher.build_env("linux/amd64")
    assert "hunter2" not in json.dumps(env)
    assert env["XDG_CONFIG_HOME"] == os.devnull and env["GOTELEMETRY"] == "off"
    assert env["GOFLAGS"] == "-trimpath" and env["GOAMD64"] == "v1" and env["GOENV"] == "off"
    assert env["GOTOOLCHAIN"] == f"go{pins.GO}"


def test_the_pin_is_of_the_packages_sources() -> None:
    assert launcher.sources_digest() == pins.SOURCES
    assert set(pins.SHA256) == set(launcher.PLATFORMS)
    assert all(is_sha256(v) for v in pins.SHA256.values())


def test_no_stamp_is_written_or_read(tmp_path: Path) -> None:
    lay = Layout(tmp_path / "builds", tmp_path / "reports")
    exe = launcher.build(lay)
    assert sorted(p.name for p in lay.tools.iterdir()) == [exe.name]
    assert exe.name == f"burst-{pins.SHA256[launcher.host_platform()][:16]}"
    assert sha(exe) == pins.SHA256[launcher.host_platform()]


def test_the_real_build_gives_the_pinned_bytes(tmp_path: Path) -> None:
    """Not the tests' shared copy: the launcher built here hashes to the package's pin (Go builds
    it byte for byte the same on every machine of a platform; a fresh GOCACHE gave the same)."""
    platform = launcher.host_platform()
    got = launcher.compile_to(tmp_path / "burst", platform)
    assert got == pins.SHA256[platform]
