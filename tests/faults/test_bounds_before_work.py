"""Every size is bounded before any work: runs, rounds, candidates, a soak's runs, a timeout, an
--until-ci budget and a history range that a saved run could not hold (or that would wait past a
day) are refused with exit 10 naming the key or option, before anything is fetched or built
(util/limits.py, derived from the results loader's limits)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from patchbench import results
from patchbench.util import limits
from tests.support import REPO_ROOT, TARGET, Project, git, matrix_data, write_matrix


def patchbench(project: Project, *args: str, timeout: float = 600
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchbench", *args, "--project", str(project.root),
         "--builds", str(project.builds), "--reports", str(project.reports)],
        capture_output=True, text=True, timeout=timeout, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def refused(project: Project, res: subprocess.CompletedProcess[str], *words: str) -> None:
    assert res.returncode == 10, res.stderr
    assert "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, res.stderr
    for word in words:
        assert word in res.stderr, res.stderr
    # nothing was fetched or built
    assert not (project.builds / "sources").exists() and not (project.builds / "artifacts").exists()


def test_the_limits_are_the_results_loaders() -> None:
    assert (limits.MAX_SAMPLES, limits.MAX_CELLS) == (results.MAX_SAMPLES, results.MAX_CELLS)


@pytest.mark.parametrize("args, words", [
    (["--runs", "1000000000"], ["--runs 1000000000", "at most 100,000"]),
    (["--runs", "100010"], ["--runs 100010", "at most 100,000"]),
    (["--rounds", "1000000"], ["--rounds 1000000"]),
    (["--runs", "100000", "--rounds", "5", "--until-ci", "5"], ["--max-rounds", "--until-ci"]),
    (["--until-ci", "5", "--max-rounds", "60000"], ["--max-rounds 60000", "120,000 runs"]),
])
def test_options_past_a_limit(project: Project, args: list[str], words: list[str]) -> None:
    refused(project, patchbench(project, "compare", "fx", *args), *words)


def scenario(**keys: Any) -> dict[str, Any]:
    return {"name": "run", "command": ["{hello}"], "warmup": 0, "runs": 4, "rounds": 2,
            "timeout": 10, **keys}


@pytest.mark.parametrize("data, words", [
    (lambda p: matrix_data(p.upstream, p.go_version,
                           candidates={f"c{i}": ["greet"] for i in range(10_000)}),
     ["candidates", "10,001 cells", "more than 10,000"]),
    (lambda p: matrix_data(p.upstream, p.go_version, scenarios=[
        {"name": "soak", "kind": "soak", "command": ["{hello}"], "runs": 10_000_000,
         "block": 1}]), ["runs", "100000"]),
    (lambda p: matrix_data(p.upstream, p.go_version, scenarios=[scenario(timeout=1e9)]),
     ["timeout", "86400"]),
    (lambda p: matrix_data(p.upstream, p.go_version, scenarios=[scenario(warmup=10**9)]),
     ["warmup"]),
    (lambda p: matrix_data(p.upstream, p.go_version, build_timeout=1e9), ["timeout"]),
], ids=["10000 candidates", "soak runs 1e7 block 1", "timeout 1e9", "warmup 1e9",
        "build timeout 1e9"])
def test_a_matrix_past_a_limit(project: Project, data: Any, words: list[str]) -> None:
    write_matrix(project.root, data(project))
    refused(project, patchbench(project, "compare", "fx", "--dry-run"), "matrix.yaml", *words)


def _long_history(project: Project, n: int) -> None:
    """``n`` commits on main after v1 (by git fast-import: a second or two for 10,000)."""
    repo = project.upstream.path
    stream = []
    for i in range(n):
        stream.append(f"commit refs/heads/main\ncommitter F <f@x> {1700000000 + i} +0000\n"
                      f"data 2\nc\n" + ("from refs/heads/main^0\n" if i == 0 else "")
                      + f"M 644 inline n.txt\ndata {len(str(i)) + 1}\n{i}\n\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input="".join(stream),
                   text=True, check=True, capture_output=True)
    assert int(git(repo, "rev-list", "--count", "--first-parent", "v1..main")) == n + 1


def test_a_history_range_past_the_cell_limit_needs_every(project: Project) -> None:
    """10,002 first-parent commits, no --every: refused once the range is known, before a
    commit is described or anything is built."""
    _long_history(project, limits.MAX_CELLS)
    res = patchbench(project, "history", TARGET, "--range", "v1..main", "--scenario", "fx:run")
    assert res.returncode == 10, res.stderr
    assert "10,002 first-parent commits" in res.stderr and "--every" in res.stderr
    assert "Traceback" not in res.stderr
    assert not (project.builds / "artifacts").exists()


@pytest.mark.parametrize("args", [["--range", "v1..main"], ["--range", "v1..main", "--every", "50"]],
                         ids=["no --every", "--every 50"])
def test_a_history_of_more_points_than_one_run_builds_is_refused_up_front(
        project: Project, args: list[str]) -> None:
    """10,000 first-parent commits fit in a saved run, but each is a build (10,000 commits
    without --every started building: 22 builds in 46 s, and on); more points than
    ``limits.MAX_HISTORY_POINTS`` are refused before anything is built, with the --every that
    fits."""
    _long_history(project, limits.MAX_CELLS - 2)  # the chain: v1 and 9,999 more
    try:
        res = patchbench(project, "history", TARGET, *args, "--scenario", "fx:run", timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("history started building instead of refusing the range")
    assert res.returncode == 10, res.stderr
    assert "10,000 first-parent commits" in res.stderr and "--every" in res.stderr
    assert "Traceback" not in res.stderr
    assert not (project.builds / "artifacts").exists()
