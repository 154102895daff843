"""The machine description every run records: what the machine runs in (systemd-detect-virt)."""

from __future__ import annotations

import pytest

from patchbench.measure import machine


def test_virtualization_says_what_the_machine_runs_in(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"--vm": "kvm", "--container": "docker"}
    monkeypatch.setattr(machine, "_version", lambda argv: answers[argv[1]])
    assert machine._virtualization() == "vm: kvm, container: docker"
    answers.update({"--vm": "none", "--container": "none"})
    assert machine._virtualization() is None


def test_a_machine_busier_than_its_cores_is_said_before_measuring(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from patchbench.measure import machine

    monkeypatch.setattr(machine.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (7.0, 5.0, 3.0))
    said = machine.load_warning()
    assert said is not None and "1-minute load is 7.0 on 2 cores" in said
    assert "--budget" in said and "more inconclusive" in said
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (2.0, 5.0, 3.0))
    assert machine.load_warning() is None  # as busy as its cores: nothing to say
