"""The GitHub Actions workflow users copy (.github/workflows/ab.yml): actionlint accepts it, it
has the triggers, runner matrix, caches, uploads and final merge job the README promises, and its
own `run:` steps, executed locally, turn two demo runs made as two machines (separate builds and
reports directories) into one merged report and job summary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from patchbench.util import command
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
    command.run([actionlint, str(WORKFLOW)], cwd=REPO_ROOT, timeout=60)


def test_the_workflow_has_what_the_readme_promises() -> None:
    wf = workflow()
    on = wf[True]  # YAML 1.1 reads the key `on` as true
    assert on["pull_request"]["paths"] == ["patches/**", "overlays/**", "matrix.yaml"]
    assert "comparison" in on["workflow_dispatch"]["inputs"]
    measure = wf["jobs"]["measure"]
    runners = [e["runner"] for e in measure["strategy"]["matrix"]["include"]]
    assert "ubuntu-latest" in runners
    assert any(isinstance(r, list) and "self-hosted" in r for r in runners)
    assert measure["strategy"]["fail-fast"] is False
    cache = steps("measure")["Cache sources and Go caches"]["with"]
    assert "builds/sources" in cache["path"] and "steps.go-cache.outputs.build" in cache["path"]
    assert "hashFiles('matrix.yaml', 'patches/**')" in cache["key"]
    assert 'invoke compare "$COMPARISON" --gate' in steps("measure")["compare"]["run"]
    upload = steps("measure")["Upload the run"]
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["if"] == "always()"
    final = wf["jobs"]["merge"]
    assert final["needs"] == "measure" and final["if"] == "always()"
    assert "invoke merge" in steps("merge")["merge"]["run"]
    assert "--gate" in steps("merge")["merge"]["run"]
    assert '"$GITHUB_STEP_SUMMARY"' in steps("merge")["merge"]["run"]


def run_step(script: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """As GitHub runs a `run:` step: bash -eo pipefail, from the repository root."""
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_the_workflow_steps_merge_two_machines_locally(tmp_path: Path) -> None:
    base_env = {**os.environ, "COMPARISON": "demo"}
    final_temp = tmp_path / "final-runner-temp"
    for machine in ("hosted", "metal"):
        temp = tmp_path / machine / "runner-temp"
        temp.mkdir(parents=True)
        output = tmp_path / machine / "github-output"
        env = {**base_env, "MACHINE": machine, "RUNNER_TEMP": str(temp),
               "GITHUB_OUTPUT": str(output),
               # a machine of its own: its own (empty) build cache
               "PATCHBENCH_BUILDS": str(tmp_path / machine / "builds")}
        res = run_step(steps("measure")["compare"]["run"], env)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "exit-code=0" in output.read_text()
        # what upload-artifact then download-artifact (pattern patchbench-*) do
        shutil.copytree(temp / "patchbench-reports", final_temp / "runs" / f"patchbench-{machine}")
    summary = tmp_path / "step-summary.md"
    summary.write_text("")
    res = run_step(steps("merge")["merge"]["run"],
                   {**base_env, "RUNNER_TEMP": str(final_temp), "GITHUB_STEP_SUMMARY": str(summary)})
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
                   {**os.environ, "RUNNER_TEMP": str(tmp_path), "GITHUB_STEP_SUMMARY": str(summary)},
                   timeout=300)
    assert res.returncode == 4, res.stdout + res.stderr
    text = summary.read_text()
    assert "**metal: invoke compare exited 14" in text
    assert "- patchbench-hosted: gate passed" in text
