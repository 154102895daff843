"""apple/container: on anything but macOS on Apple silicon the refusal is one clear message, and
it comes only after what can run here did (the fetch and the patch check); a dry run prints the
whole plan anywhere."""

from __future__ import annotations

import platform
import re
from pathlib import Path

import pytest

from patchbench import runtimes
from patchbench.config import Comparison, Target
from patchbench.errors import RequirementError
from patchbench.runtimes import apple_container
from patchbench.runtimes.apple_container import AppleContainerRuntime


def comparison() -> Comparison:
    return Comparison.model_validate({
        "target": "apple-container", "candidates": {"per-vm-lock": ["per-vm-lock"]},
        "scenarios": [{"name": "s", "command": ["true"], "runs": 1, "rounds": 1}]})


def target() -> Target:
    return Target.model_validate({
        "url": "https://example.invalid/container", "ref": "1.2.2", "commit": "0" * 40,
        "toolchain": {"kind": "swift", "version": "6.2"},
        "build": {"commands": [["make", "all"]], "artifacts": ["bin/container"]},
        "requires": ["macos", "apple-silicon"], "runtime": "apple-container"})


def machine(monkeypatch: pytest.MonkeyPatch, system: str, arch: str) -> None:
    monkeypatch.setattr(platform, "system", lambda: system)
    monkeypatch.setattr(platform, "machine", lambda: arch)


# --- unit ----------------------------------------------------------------------------------


def test_refused_on_linux_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    machine(monkeypatch, "Linux", "x86_64")
    with pytest.raises(RequirementError) as info:
        AppleContainerRuntime().check(None, comparison(), target())  # type: ignore[arg-type]
    err = info.value
    assert err.message == ("apple/container needs macOS 15 or newer on Apple silicon; this "
                           "machine is Linux x86_64")
    assert err.exit_code == 16
    assert "on a Mac" in (err.hint or "")
    assert "the fetch and the patch check ran" in (err.hint or "")


@pytest.mark.parametrize(("system", "arch"), [("Darwin", "x86_64"), ("Linux", "aarch64"),
                                              ("Linux", "arm64")])
def test_refused_on_other_machines(monkeypatch: pytest.MonkeyPatch, system: str, arch: str
                                   ) -> None:
    machine(monkeypatch, system, arch)
    with pytest.raises(RequirementError, match=f"this machine is {system} {arch}$"):
        AppleContainerRuntime().check(None, comparison(), target())  # type: ignore[arg-type]


def test_accepted_on_apple_silicon(monkeypatch: pytest.MonkeyPatch) -> None:
    machine(monkeypatch, "Darwin", "arm64")
    assert apple_container.on_apple_silicon()
    AppleContainerRuntime().check(None, comparison(), target())  # type: ignore[arg-type]
    runtimes.check_requirements(target())


def test_runtime_lookup_and_placeholders(tmp_path: Path) -> None:
    rt = runtimes.get("apple-container")
    assert isinstance(rt, AppleContainerRuntime)
    ph = rt.placeholders("per-vm-lock", tmp_path / "bin")
    # the build's install root is kept whole: <artifacts>/bin/bin/container
    assert ph["container"] == str(tmp_path / "bin" / "bin" / "container")
    assert ph["image"] == apple_container.IMAGE
    assert re.fullmatch(r"pb-[0-9a-f]{6}-per-vm-lock", ph["id"])
    assert rt.leftovers("per-vm-lock", tmp_path) == [] and rt.cleanup("x", tmp_path) == []


# --- a fixture target that needs a Mac --------------------------------------------------------

needs_linux_host = pytest.mark.skipif(apple_container.on_apple_silicon(),
                                      reason="this machine could build apple/container")
