"""procguard.popen: a guarded command joins the run's cgroup through a shell prologue (no
preexec_fn, so no fork of the interpreter), keeps its own pid, exit code and arguments, and is in
the cgroup when popen returns. Here on a fake v1 freezer hierarchy (a directory whose
cgroup.procs is a plain file: the shell's "0" lands in it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from patchbench.util import procguard


@pytest.fixture
def guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> procguard.ProcGuard:
    (tmp_path / "cg" / "freezer").mkdir(parents=True)
    (tmp_path / "cg" / "freezer" / "cgroup.procs").write_text("")
    g = procguard.ProcGuard("run", root=tmp_path / "cg").__enter__()
    assert g.path is not None and g.kind == "v1-freezer"
    (g.path / "cgroup.procs").write_text("")
    monkeypatch.setattr(procguard, "_ACTIVE", g)
    return g


def test_not_guarding_runs_the_command_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procguard, "_ACTIVE", None)
    proc = procguard.popen(["/bin/sh", "-c", "exit 7"])
    assert proc.args == ["/bin/sh", "-c", "exit 7"]
    assert proc.wait() == 7


def test_a_guarded_command_joins_first_and_keeps_its_pid_code_and_arguments(
        guard: procguard.ProcGuard, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # arguments that look like options stay the command's; $$ is the command's own pid
    proc = procguard.popen(["/bin/sh", "-c", 'echo "$$ $1 $2" > "$0"; exit 3', str(out), "-n",
                            "--version"], start_new_session=True)
    assert guard.path is not None
    assert (guard.path / "cgroup.procs").read_text() == "0\n"  # written when popen returned
    assert proc.wait() == 3
    assert out.read_text() == f"{proc.pid} -n --version\n"


def test_a_command_that_cannot_join_does_not_run(guard: procguard.ProcGuard,
                                                 tmp_path: Path) -> None:
    assert guard.path is not None
    (guard.path / "cgroup.procs").unlink()
    (guard.path / "cgroup.procs").mkdir()  # not writable as a file: the join fails
    ran = tmp_path / "ran"
    proc = procguard.popen(["/bin/sh", "-c", 'touch "$0"', str(ran)], stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == procguard.JOIN_FAILED_EXIT_CODE
    assert b"patchbench: cannot join the cgroup of" in err
    assert not ran.exists()
