"""A build's `git describe` does not depend on the source cache's size: git abbreviates hashes by
the repository's object count (a shallow cache gave runc `g59923ef`, one with full history
`g59923ef1`, and so a different binary under the same fingerprint). The build pins core.abbrev."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchbench.build import Variant
from tests import support
from tests.support import TARGET, Project, git, matrix_data, write_matrix

pytestmark = pytest.mark.integration


def test_describe_is_the_same_whatever_the_git_config_says(project: Project, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    data = matrix_data(project.upstream, project.go_version, commands=[
        ["sh", "-c", "git describe --tags --long --always > describe.txt"],
        ["go", "build", "-o", "hello", "."],
    ])
    data["targets"][TARGET]["build"]["artifacts"] = ["hello", "describe.txt"]
    write_matrix(project.root, data)
    opts = project.options()
    first = support.build(project.load(), opts, TARGET, [Variant("baseline", ())], [])[0]
    described = (first.bin / "describe.txt").read_text()
    assert described == f"v1-0-g{project.upstream.a[:7]}\n"
    assert first.manifest["fingerprint"]["env"]["GIT_CONFIG_VALUE_0"] == "7"
    # a git that would abbreviate longer (as a big repository's does); the source cache refuses
    # a config key it did not write (source/integrity.py), so here the user's own config says it
    home = tmp_path / "home"
    home.mkdir()
    git(home, "config", "--file", str(home / ".gitconfig"), "core.abbrev", "12")
    monkeypatch.setenv("HOME", str(home))
    Path(first.path / "COMPLETE").unlink()  # force a rebuild of the same key
    again = support.build(project.load(), opts, TARGET, [Variant("baseline", ())], [])[0]
    assert not again.cached
    assert (again.bin / "describe.txt").read_text() == described
    assert again.manifest["artifacts"] == first.manifest["artifacts"]
