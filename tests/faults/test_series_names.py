"""A series or overlay name is a directory name in patches/ or overlays/: a name that would
lead outside (``..``, a path, an absolute path) is refused before anything there is read, from
the matrix and from the command line alike."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from patchbench.errors import PatchError
from patchbench.source import patching
from tests.support import REPO_ROOT, invoke_argv


@pytest.mark.parametrize("name", ["../../etc", "..", "a/b", "/etc", "Upper", ".hidden", ""])
def test_series_names_outside_patches_are_refused(tmp_path: Path, name: str) -> None:
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "series").write_text("passwd\n")
    with pytest.raises(PatchError, match="is not a name of a directory in patches/"):
        patching.load_series(tmp_path / "project", name)
    with pytest.raises(PatchError, match="is not a name of a directory in overlays/"):
        patching.load_overlay(tmp_path / "project", name)


def test_series_outside_patches_from_the_command_line(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "matrix.yaml").write_text(yaml.safe_dump({"version": 1, "targets": {},
                                                      "comparisons": {}}))
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "series").write_text("x.patch\n")
    res = subprocess.run(invoke_argv("patch", "--check", "--series", "../../secret", "--matrix",
                                     str(root / "matrix.yaml"), "--builds",
                                     str(tmp_path / "builds")),
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 12, res.stderr
    assert "series '../../secret' is not a name of a directory in patches/" in res.stderr
    assert "does not exist in" not in res.stderr  # nothing was read there
