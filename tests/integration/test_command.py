"""The one wrapper for external commands: missing tools, failures with the output's tail, logs,
and timeouts that kill the whole process group."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from patchbench.errors import BuildError, CommandError, RequirementError
from patchbench.util import cmd
from tests.support import processes_with

pytestmark = pytest.mark.integration


def test_a_missing_tool() -> None:
    with pytest.raises(RequirementError) as info:
        cmd.run(["patchbench-no-such-tool", "x"])
    assert "'patchbench-no-such-tool' was not found on PATH" in info.value.message
    with pytest.raises(RequirementError) as hinted:
        cmd.which("hyperfine-missing")
    assert hinted.value.exit_code == 16


def test_output_and_failure() -> None:
    res = cmd.run(["sh", "-c", "echo out; echo err >&2"])
    assert (res.returncode, res.stdout, res.stderr) == (0, "out\n", "err\n")
    with pytest.raises(CommandError) as info:
        cmd.run(["sh", "-c", "for i in $(seq 40); do echo line$i; done; exit 4"],
                    what="step x")
    err = info.value
    assert err.message == "step x: exited with code 4"
    assert err.detail is not None
    lines = err.detail.splitlines()
    assert len(lines) == cmd.TAIL_LINES and lines[-1] == "line40"
    res = cmd.run(["sh", "-c", "exit 4"], check=False)
    assert res.returncode == 4


def test_a_log_gets_the_output_and_the_error_names_it(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "x.log"
    with pytest.raises(BuildError) as info:
        cmd.run(["sh", "-c", "echo compiling; echo 'oops: broken' >&2; exit 2"], log=log,
                    cwd=tmp_path, error=BuildError)
    text = log.read_text()
    assert "+ sh -c" in text and "compiling" in text and "oops: broken" in text
    assert info.value.detail is not None
    assert "oops: broken" in info.value.detail
    assert info.value.detail.endswith(f"(full log: {log})")


def test_a_timeout_kills_the_whole_process_group() -> None:
    marker = "58.7654"
    started = time.monotonic()
    with pytest.raises(CommandError) as info:
        cmd.run(["sh", "-c", f"sleep {marker} & sleep {marker}; wait"], timeout=1)
    assert "timed out after 1 s and was killed" in info.value.message
    assert time.monotonic() - started < 20
    deadline = time.monotonic() + 10
    while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(f"sleep {marker}") == []


def test_a_command_ignoring_sigterm_is_killed() -> None:
    marker = "57.6543"
    started = time.monotonic()
    with pytest.raises(CommandError, match="timed out"):
        cmd.run(["sh", "-c", f"trap '' TERM; sleep {marker}"], timeout=0.5)
    assert time.monotonic() - started < 20
    deadline = time.monotonic() + 10
    while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(f"sleep {marker}") == []


def test_background_stop(tmp_path: Path) -> None:
    marker = "56.5432"
    with cmd.Background(["sleep", marker], log=tmp_path / "bg.log") as bg:
        assert bg.wait(0.1) is None
        assert processes_with(f"sleep {marker}")
    deadline = time.monotonic() + 10
    while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(f"sleep {marker}") == []


def test_verbose_shows_every_command_and_quiet_shows_none(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    import logging

    from patchbench.cli import commands

    ws = commands.workspace(verbose=True)
    assert ws.verbose and cmd.LOG.isEnabledFor(logging.DEBUG)
    cmd.run(["true"], timeout=10)
    assert "+ true" in capsys.readouterr().err
    commands.workspace(verbose=False)
    cmd.run(["true"], timeout=10)
    assert "+ true" not in capsys.readouterr().err
