"""The A/B workflow never runs the pull request's own patchbench: both jobs install the base
branch's (checked out apart, without credentials) or the pinned PATCHBENCH_PACKAGE, so a pull
request changes what is measured, never how it is judged."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO_ROOT

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "ab.yml"
JOBS = ("measure", "merge")  # the jobs that run patchbench


def steps(job: str) -> list[dict[str, Any]]:
    data = yaml.safe_load(WORKFLOW.read_text())
    out: list[dict[str, Any]] = data["jobs"][job]["steps"]
    return out


def install_script(job: str) -> str:
    [script] = [s["run"] for s in steps(job) if "pip install" in s.get("run", "")]
    return script


@pytest.mark.parametrize("job", JOBS)
def test_no_job_installs_the_checked_out_pull_request(job: str) -> None:
    script = install_script(job)
    assert "-e ." not in script and "install -q .\n" not in script + "\n"
    tool = [s for s in steps(job) if s.get("with", {}).get("path") == ".patchbench-tool"]
    assert len(tool) == 1, "the base branch's patchbench is checked out apart"
    checkout = tool[0]
    assert checkout["uses"].startswith("actions/checkout@")
    assert "github.event.pull_request.base.sha" in checkout["with"]["ref"]
    assert checkout["with"]["persist-credentials"] is False
    assert checkout["if"] == "${{ vars.PATCHBENCH_PACKAGE == '' }}"
    order = [s.get("with", {}).get("path") or s.get("name") or s.get("uses") for s in steps(job)]
    assert order.index(".patchbench-tool") < next(
        i for i, s in enumerate(steps(job)) if "pip install" in s.get("run", ""))


@pytest.mark.parametrize("package, installed", [
    ("", "./.patchbench-tool"),
    ("patchbench==1.2.0", "patchbench==1.2.0"),
])
def test_the_install_step_installs_the_base_or_the_pinned_package(
        tmp_path: Path, package: str, installed: str) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "pip.log"
    (fake / "python3").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\n')
    (fake / "python3").chmod(0o755)
    env = {"PATH": f"{fake}:{os.environ['PATH']}", "PATCHBENCH_PACKAGE": package,
           "HOME": str(tmp_path)}
    res = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                          install_script("merge")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert log.read_text().split() == ["-m", "pip", "install", "-q", installed]


def test_actionlint_accepts_it() -> None:
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.fail("actionlint is not installed: run `bash .ci/install`")
    res = subprocess.run([actionlint, str(WORKFLOW)], capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
