"""Help and option errors through both front ends: invoke (tasks.py) and the console script."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from patchbench.cli import main, spec
from tests.support import invoke_argv

pytestmark = pytest.mark.integration


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)


# through a real process of each front end: both flags, the renamed task (list) and a few more;
# every command with both flags in-process below (one process per pair took 15 s of CPU)
THROUGH_A_PROCESS = [("compare", "--help"), ("list", "-h"), ("history", "--help"),
                     ("series", "-h")]


@pytest.mark.parametrize("front", ["invoke", "patchbench"])
def test_help_after_every_command(front: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    for name in spec.COMMANDS:
        for flag in ("--help", "-h"):
            with pytest.raises(SystemExit) as exc:  # what both front ends call
                main.run([name, flag], project=str(tmp_path), prog=front)
            out = capsys.readouterr().out
            assert exc.value.code == 0, (name, flag)
            assert f"usage: {front} {name}" in out, (name, out)
    for name, flag in THROUGH_A_PROCESS:
        argv = (invoke_argv(name, flag) if front == "invoke"
                else [shutil.which("patchbench") or "patchbench", name, flag])
        res = _run(argv, tmp_path)
        assert res.returncode == 0, (name, flag, res.stderr)
        assert f"usage: {front} {name}" in res.stdout, (name, res.stdout)


def test_invoke_help_before_the_task_and_list(tmp_path: Path) -> None:
    res = _run(invoke_argv("--help", "compare"), tmp_path)
    assert res.returncode == 0 and "usage: invoke compare NAME" in res.stdout
    res = _run(invoke_argv("--list"), tmp_path)
    assert res.returncode == 0
    for name in spec.COMMANDS:
        assert f"  {name} " in res.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["compare", "demo", "--runz", "5"], "did you mean --runs?"),
    (["compare", "demo", "--rounds", "five"], "expected a whole number"),
    (["compare", "demo", "--seed", "-1"], ">= 0"),
    (["diff", "only-one"], "missing RUN_B"),
])
def test_option_errors_are_exit_10_in_invoke_too(args: list[str], message: str,
                                                 tmp_path: Path) -> None:
    res = _run(invoke_argv(*args), tmp_path)
    assert res.returncode == 10, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr


def test_python_m_patchbench_says_so_in_its_usage(tmp_path: Path) -> None:
    res = _run(["python3", "-m", "patchbench", "compare", "--help"], tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("usage: python3 -m patchbench compare")
