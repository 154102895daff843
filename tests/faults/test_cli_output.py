"""What the command line prints for saved runs: ``report`` without a run shows the newest one, and
a reader that leaves early (a broken pipe, as ``| head``) ends ``report`` and ``list`` quietly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from patchbench import results
from patchbench.runs import store as runstore
from tests.support import DEMO_RUN, REPO_ROOT, invoke_argv

DEMO = DEMO_RUN / "results.json"


def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    complete = runstore.save_complete(run, results.load(DEMO), {})
    older = runstore.publish(complete, tmp_path / "reports", stamp="20250101T000000Z")
    newer = runstore.publish(complete, tmp_path / "reports", stamp="20260101T000000Z")
    return older, newer


def test_report_without_run_dir_shows_the_newest(tmp_path: Path) -> None:
    _, newer = two_runs(tmp_path)
    res = subprocess.run(invoke_argv("report", "--reports", str(tmp_path / "reports")),
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("# demo")
    assert f"run: {results.load(newer).started_at}" in res.stdout


@pytest.mark.parametrize("args", [["report"], ["list"]])
def test_a_broken_pipe_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    two_runs(tmp_path)
    proc = subprocess.Popen(invoke_argv(*args, "--reports", str(tmp_path / "reports")),
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves at once, like `| head -0`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert err == "", err
