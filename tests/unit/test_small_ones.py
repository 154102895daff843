"""Small things a new user tripped over, each pinned by a test."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from patchbench.measure import machine
from patchbench.util import locks


def test_virtualization_says_what_the_machine_runs_in(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"--vm": "kvm", "--container": "docker"}
    monkeypatch.setattr(machine, "_version", lambda argv: answers[argv[1]])
    assert machine._virtualization() == "vm: kvm, container: docker"
    answers.update({"--vm": "none", "--container": "none"})
    assert machine._virtualization() is None


def test_a_second_run_on_one_builds_dir_is_told_it_waits(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    lock_dir = tmp_path / "builds" / "locks"
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with locks.locked(lock_dir, "build-x"):
            held.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(5)
    threading.Timer(0.2, release.set).start()
    started = time.monotonic()
    with locks.locked(lock_dir, "build-x"):
        waited = time.monotonic() - started
    t.join()
    assert waited > 0.1
    err = capsys.readouterr().err
    assert f"waiting for another patchbench process using {tmp_path / 'builds'}" in err
    assert "build-x.lock" in err
