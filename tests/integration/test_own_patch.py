"""Your own patch, from zero to a verdict, through the installed ``patchbench`` console script, in a
project folder that holds only a matrix.yaml and patches/ (no copy of patchbench): three commands,
no hand-edited YAML."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import support
from tests.support import TARGET, git

pytestmark = pytest.mark.integration

MATRIX = """\
# my project's matrix: this comment must survive `comparison new`
version: 1
targets:
  {target}:
    description: the fixture upstream
    url: {url}
    ref: v1
    commit: {commit}
    toolchain: {{kind: go, version: "{go}", download: false}}
    build:
      commands: [[go, build, -o, hello, .]]
      artifacts: [hello]
      timeout: 120

comparisons:
  fx:
    description: the fixture comparison
    target: {target}
    candidates:
      greet: [greet]
    scenarios:
      - name: run
        command: ["{{hello}}"]   # the built artifact
        warmup: 1
        runs: 10
        rounds: 5
        timeout: 10
"""


def _script() -> str:
    path = shutil.which("patchbench")
    assert path, "the patchbench console script is not installed (pip install -e .)"
    return path


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_script(), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=os.environ.copy())


@pytest.fixture
def own(tmp_path: Path, upstream: support.Upstream, go_version: str) -> tuple[Path, Path]:
    """(project folder, a local clone with one commit of the user's on branch my-fix)."""
    project = tmp_path / "my-project"
    project.mkdir()
    (project / "matrix.yaml").write_text(MATRIX.format(target=TARGET, url=upstream.path,
                                                       commit=upstream.a, go=go_version))
    support.write_series(project, "greet", [("0001-greet.patch", upstream.patches["greet"])])
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream.path), str(clone))
    git(clone, "checkout", "-q", "-b", "my-fix", "v1")
    main = clone / "main.go"
    main.write_text(main.read_text().replace('return "bye"', 'return "bye for now"'))
    git(clone, "commit", "-q", "-am", "hello: a kinder farewell\n\nSay it once more, kindly.")
    return project, clone


def test_three_commands_from_a_local_branch_to_a_verdict(own: tuple[Path, Path],
                                                         tmp_path: Path) -> None:
    project, clone = own
    elsewhere = tmp_path / "elsewhere"  # not the project, not this repository
    elsewhere.mkdir()
    p = ["--project", str(project)]

    new = run(*p, "series", "new", "my-fix", "--target", TARGET, "--from", str(clone), "v1..my-fix",
              cwd=elsewhere)
    assert new.returncode == 0, new.stderr
    patch = project / "patches" / "my-fix" / "0001-hello-a-kinder-farewell.patch"
    text = patch.read_text()
    assert "\nDescription: hello: a kinder farewell\n" in text
    assert "\n Say it once more, kindly.\n" in text
    assert "\nAuthor: " in text and "\nForwarded: no\n" in text
    assert text.count("\n@@ ") == 1 and "-U3" not in text  # one hunk, three lines of context
    assert (project / "patches" / "my-fix" / "series").read_text().splitlines()[-1] == patch.name

    comp = run(*p, "comparison", "new", "my-fix", "--target", TARGET, "--candidate", "my-fix",
               "--like", "fx", cwd=elsewhere)
    assert comp.returncode == 0, comp.stderr
    matrix = (project / "matrix.yaml").read_text()
    assert "# my project's matrix: this comment must survive" in matrix
    assert "# the built artifact" in matrix  # comments inside the copied scenarios too
    assert "  my-fix:\n" in matrix

    builds, reports = tmp_path / "builds", tmp_path / "reports"
    res = run(*p, "compare", "my-fix", "--builds", str(builds), "--reports", str(reports),
              "--seed", "7", cwd=elsewhere)
    assert res.returncode == 0, res.stderr
    assert "saved:" in res.stdout
    run_dirs = list((reports / "my-fix").iterdir())
    assert len(run_dirs) == 1
    results = json.loads((run_dirs[0] / "results.json").read_text())
    assert results["comparison"] == "my-fix"
    assert not (elsewhere / "builds").exists() and not (project / "builds").exists()

    again = run(*p, "comparison", "new", "my-fix", "--target", TARGET, "--candidate", "my-fix",
                cwd=elsewhere)
    assert again.returncode == 10 and "already exists" in again.stderr


def test_comparison_new_refuses_a_missing_series_and_leaves_the_matrix(own: tuple[Path, Path]
                                                                      ) -> None:
    project, _ = own
    before = (project / "matrix.yaml").read_bytes()
    res = run("--project", str(project), "comparison", "new", "x", "--target", TARGET,
              "--candidate", "nope", cwd=project)
    assert res.returncode == 10
    assert "patchbench series new nope" in res.stderr
    assert (project / "matrix.yaml").read_bytes() == before
    assert sorted(p.name for p in project.iterdir()) == ["matrix.yaml", "patches"]


def test_series_new_refuses_an_option_like_range_and_an_empty_one(own: tuple[Path, Path]) -> None:
    project, clone = own
    p = ["--project", str(project), "series", "new", "s", "--target", TARGET, "--from", str(clone)]
    res = run(*p, "--", "--output=/tmp/x", cwd=project)
    assert res.returncode == 10 and "starts with '-'" in res.stderr
    res = run(*p, "my-fix..my-fix", cwd=project)
    assert res.returncode == 10 and "no commits in that range" in res.stderr
    assert not (project / "patches" / "s").exists()


def test_series_add_works_when_the_matrix_already_names_the_series(own: tuple[Path, Path],
                                                                  tmp_path: Path) -> None:
    project, clone = own
    matrix = project / "matrix.yaml"
    matrix.write_text(matrix.read_text().replace("      greet: [greet]\n",
                                                 "      greet: [greet]\n      up: [up]\n"))
    sha = git(clone, "rev-parse", "my-fix")
    git(clone, "push", "-q", "origin", "my-fix")  # the commit is upstream's now
    res = run("--project", str(project), "series", "add", "up", "--target", TARGET, sha,
              "--builds", str(tmp_path / "b"), cwd=project)
    assert res.returncode == 0, res.stderr
    assert (project / "patches" / "up" / "series").read_text().count(sha) == 1
