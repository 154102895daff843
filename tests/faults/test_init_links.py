"""``init`` follows no link and opens no FIFO: in a folder whose matrix.yaml is a link (dangling
or not) it writes nothing, anywhere, and stops with exit 10 naming the link; a .gitignore that is
a FIFO (or any other file that is not a regular file) is left as it is, with a note, and init
finishes instead of waiting on it forever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT


def init(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "patchbench", "--project", str(project), "init"],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def everything(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")}


@pytest.mark.parametrize("dangling", [True, False], ids=["dangling link", "link to a file"])
def test_a_matrix_yaml_that_is_a_link_is_refused(tmp_path: Path, dangling: bool) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    target = outside / "planted.yaml"
    if not dangling:
        target.write_text("# someone else's file\n")
    (project / "matrix.yaml").symlink_to(target)
    before = everything(tmp_path)
    res = init(project)
    assert res.returncode == 10, res.stdout + res.stderr
    assert "matrix.yaml" in res.stderr and "link" in res.stderr
    assert "Traceback" not in res.stderr
    assert everything(tmp_path) == before  # nothing written through it, nor beside it
    assert dangling == (not target.exists())


def test_a_gitignore_that_is_a_fifo_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    os.mkfifo(project / ".gitignore")
    try:
        res = init(project)
    except subprocess.TimeoutExpired:
        pytest.fail("init waited on the FIFO")
    assert res.returncode == 0, res.stderr
    assert (project / "matrix.yaml").is_file()
    assert not (project / ".gitignore").is_file()  # still the FIFO: never opened
    assert ".gitignore" in res.stderr and "not a regular file" in res.stderr
