"""The GitHub Actions workflow users copy (.github/workflows/ab.yml): actionlint accepts it, it
has the triggers, runner matrix, caches, uploads and final merge job the README promises, and its
own `run:` steps, executed locally, turn two demo runs made as two machines (separate builds and
reports directories) into one merged report and job summary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from patchbench.util import cmd
from tests.support import REPO_ROOT

pytestmark = pytest.mark.integration

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "ab.yml"


def workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return data


def steps(job: str) -> dict[str, dict[str, Any]]:
    return {s.get("id") or s.get("name") or s["uses"]: s for s in workflow()["jobs"][job]["steps"]}


def test_actionlint_accepts_the_workflow() -> None:
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.fail("actionlint is not installed: run `bash .ci/install` (it installs it pinned)")
    cmd.run([actionlint, str(WORKFLOW)], cwd=REPO_ROOT, timeout=60)


def test_the_workflow_has_what_the_readme_promises() -> None:
    wf = workflow()
    on = wf[True]  # YAML 1.1 reads the key `on` as true
    assert on["pull_request"]["paths"] == ["patches/**", "overlays/**", "matrix.yaml"]
    assert "comparison" in on["workflow_dispatch"]["inputs"]
    assert wf["permissions"] == {"contents": "read"}
    assert "PATCHBENCH_COMPARISON" in wf["concurrency"]["group"]  # the comparison is in the group
    measure = wf["jobs"]["measure"]
    assert measure["needs"] == "plan"
    assert measure["strategy"]["matrix"]["include"] == "${{ fromJSON(needs.plan.outputs.machines) }}"
    assert measure["strategy"]["fail-fast"] is False
    cache = steps("measure")["Cache sources and Go caches"]["with"]
    assert "builds/sources" in cache["path"] and "steps.go-cache.outputs.build" in cache["path"]
    assert "hashFiles('matrix.yaml', 'patches/**')" in cache["key"]
    assert 'patchbench compare "$COMPARISON" --gate' in steps("measure")["compare"]["run"]
    upload = steps("measure")["Upload the run"]
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["if"] == "${{ !cancelled() }}"  # not always(): a cancel stops everything
    final = wf["jobs"]["merge"]
    assert final["needs"] == "measure" and final["if"] == "${{ !cancelled() }}"
    assert final["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert all("permissions" not in job for name, job in wf["jobs"].items() if name != "merge")
    assert "patchbench merge" in steps("merge")["merge"]["run"]
    assert "--gate" in steps("merge")["merge"]["run"]
    assert '"$GITHUB_STEP_SUMMARY"' in steps("merge")["merge"]["run"]
    install = steps("measure")["install"]["run"]
    for package in ("hyperfine", "busybox-static", "pkg-config", "make", "libseccomp-dev",
                    "strace", "bpftrace"):
        assert package in install, package


@pytest.mark.parametrize(("metal", "fork", "machines", "notice"), [
    ("", "false", ["hosted"], False),  # no self-hosted runner variable: never pending on one
    ("true", "false", ["hosted", "metal"], False),
    ("true", "true", ["hosted"], True),  # a fork's pull request is not run as root
])
def test_the_plan_has_the_root_machine_only_when_asked_and_never_for_forks(
        metal: str, fork: str, machines: list[str], notice: bool, tmp_path: Path) -> None:
    output = tmp_path / "out"
    res = run_step(steps("plan")["plan"]["run"], {**os.environ, "METAL": metal, "FORK": fork,
                                                 "GITHUB_OUTPUT": str(output)}, timeout=30)
    assert res.returncode == 0, res.stderr
    line = output.read_text().strip()
    assert line.startswith("machines=")
    planned = json.loads(line.removeprefix("machines="))
    assert [m["machine"] for m in planned] == machines
    assert ("::notice::" in res.stdout) is notice


def run_step(script: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """As GitHub runs a `run:` step: bash -eo pipefail, from the repository root."""
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def lighter_project(tmp_path: Path) -> Path:
    """This repository's project with the demo comparison's scenario measured in 10 runs of 5
    rounds instead of 40 of 10 (the fewest rounds with a round-paired verdict; the fix is about 8x
    faster, which tests/integration/test_demo.py decides so too): the two machines' compares
    took 15-21 s of this test."""
    data = yaml.safe_load((REPO_ROOT / "matrix.yaml").read_text())
    (scenario,) = data["comparisons"]["demo"]["scenarios"]
    scenario.update(runs=10, rounds=5, warmup=1)
    project = tmp_path / "project"
    for part in ("patches", "overlays", "demo"):
        shutil.copytree(REPO_ROOT / part, project / part)
    (project / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return project


def test_the_workflow_steps_merge_two_machines_locally(tmp_path: Path) -> None:
    base_env = {**os.environ, "COMPARISON": "demo",
                "PATCHBENCH_PROJECT": str(lighter_project(tmp_path))}
    final_temp = tmp_path / "final-runner-temp"
    machines = ("hosted", "metal")

    def measure(machine: str) -> subprocess.CompletedProcess[str]:
        temp = tmp_path / machine / "runner-temp"
        temp.mkdir(parents=True)
        env = {**base_env, "MACHINE": machine, "RUNNER_TEMP": str(temp),
               "GITHUB_OUTPUT": str(tmp_path / machine / "github-output"),
               # a machine of its own: its own (empty) build cache
               "PATCHBENCH_BUILDS": str(tmp_path / machine / "builds")}
        return run_step(steps("measure")["compare"]["run"], env)

    # the two machines' jobs at once, as the matrix runs them
    with ThreadPoolExecutor(len(machines)) as pool:
        done = list(pool.map(measure, machines))
    for machine, res in zip(machines, done, strict=True):
        assert res.returncode == 0, res.stdout + res.stderr
        assert "exit-code=0" in (tmp_path / machine / "github-output").read_text()
        # what upload-artifact then download-artifact (pattern patchbench-*) do
        shutil.copytree(tmp_path / machine / "runner-temp" / "patchbench-reports",
                        final_temp / "runs" / f"patchbench-{machine}")
    summary = tmp_path / "step-summary.md"
    summary.write_text("")
    res = run_step(steps("merge")["merge"]["run"],
                   {**base_env, "RUNNER_TEMP": str(final_temp), "GITHUB_STEP_SUMMARY": str(summary),
                    "GITHUB_OUTPUT": str(tmp_path / "merge-output")})
    assert res.returncode == 0, res.stdout + res.stderr
    text = summary.read_text()
    assert "### patchbench `demo` on 2 machines" in text
    assert "| start-8 per-sandbox-lock | " in text
    assert "patchbench-hosted" in text and "patchbench-metal" in text
    assert "yes: faster" in text
    assert "- patchbench-hosted: gate passed" in text and "- patchbench-metal: gate passed" in text
    merged = json.loads((final_temp / "merged" / "merged.json").read_text())
    assert [r["label"] for r in merged["runs"]] == ["patchbench-hosted", "patchbench-metal"]
    assert all(row["agrees"] for row in merged["rows"])
    # two fresh builds in two build caches gave the same artifacts: nothing "differs"
    assert merged["identical_builds"] == {"baseline": True, "per-sandbox-lock": True}
    assert merged["build_differences"] == [] and merged["gate_failed"] is False
    comment = (final_temp / "comment.md").read_text()  # the pull-request comment, rendered
    assert comment.startswith("<!-- patchbench-ab:demo -->\n")
    assert "| start-8 per-sandbox-lock | " in comment
    page = (final_temp / "merged" / "report.html").read_text()
    assert '<table class="summary">' in page and 'data-chart="merge"' in page
    assert "Builds differ" not in (final_temp / "merged" / "report.md").read_text()


def test_a_machine_that_errored_fails_the_merge_gate(tmp_path: Path) -> None:
    """A machine whose compare ended in an error (exit 14, say) has an exit-code file and
    maybe no run: the merge step fails the gate and says which machine."""
    runs = tmp_path / "runs"
    ok = runs / "patchbench-hosted"
    shutil.copytree(REPO_ROOT / "reports" / "demo" / "20261129T225457Z",
                    ok / "demo" / "20261129T225457Z")
    (ok / "exit-code-hosted").write_text("0\n")
    (runs / "patchbench-metal").mkdir()
    (runs / "patchbench-metal" / "exit-code-metal").write_text("14\n")
    summary = tmp_path / "s.md"
    res = run_step(steps("merge")["merge"]["run"],
                   {**os.environ, "RUNNER_TEMP": str(tmp_path), "GITHUB_STEP_SUMMARY": str(summary),
                    "GITHUB_OUTPUT": str(tmp_path / "out"), "COMPARISON": "demo"}, timeout=300)
    assert res.returncode == 4, res.stdout + res.stderr
    text = summary.read_text()
    assert "**metal: invoke compare exited 14" in text
    assert "- patchbench-hosted: gate passed" in text
