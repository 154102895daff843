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
