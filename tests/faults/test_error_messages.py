"""Error messages say what is true and what to do: a plain directory given as --source is "not a
git repository" (not "the tag moved"), no "set toolchain.download: true" hint when it is set, and
messages name the matrix file actually in use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import yaml

from patchbench import config, errors
from patchbench.build.toolchains import go
from patchbench.errors import SourceError, ToolchainError
from patchbench.util import cmd
from patchbench.util.workspace import Workspace
from tests import support
from tests.support import TARGET, Project


class FakeGo:
    """A go command that reports another version than the pinned one."""

    where = "host"

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            error: type[errors.PatchbenchError] = ToolchainError,
            what: str | None = None) -> cmd.Result:
        return cmd.Result(tuple(argv), 0, "go version go1.99.1 linux/amd64\n", "", 0.0)


def go_error(download: bool) -> ToolchainError:
    target = config.Target.model_validate({
        "url": "https://example.com/x.git", "ref": "v1", "commit": "0" * 40,
        "toolchain": {"kind": "go", "version": "1.21.0", "download": download},
        "build": {"commands": [["go", "build"]], "artifacts": ["x"]}})
    assert isinstance(target.toolchain, config.GoToolchain)
    with pytest.raises(ToolchainError) as info:
        go.fingerprint(target, target.toolchain, {}, FakeGo(), {})  # type: ignore[arg-type]
    return info.value


def test_no_download_hint_when_download_is_already_set() -> None:
    assert "toolchain.download: true" in (go_error(download=False).hint or "")
    assert "toolchain.download" not in (go_error(download=True).hint or "")


def test_messages_name_the_matrix_file_in_use(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    custom = tmp_path / "experiments" / "my-matrix.yml"
    custom.parent.mkdir()
    custom.write_text(yaml.safe_dump({"version": 1, "targets": {}, "comparisons": {}}))
    config.load(custom)
    exc = go_error(download=False)
    exc.matrix = config.shown(custom)  # what the top level (cli.main) sets
    text = exc.render()
    assert f"{custom} pins Go 1.21.0" in text
    assert "matrix.yaml" not in text
    # a path already in a message is left alone
    err = SourceError(f"{tmp_path}/matrix.yaml:3: something")
    assert f"{tmp_path}/matrix.yaml:3" in err.render()


@pytest.mark.integration
def test_a_plain_directory_as_source_is_not_a_git_repository(project: Project,
                                                            tmp_path: Path) -> None:
    plain = tmp_path / "plain-copy"
    plain.mkdir()
    (plain / "main.go").write_text("package main\nfunc main() {}\n")
    ws = Workspace(root=project.root, matrix=project.matrix, builds=project.builds,
                   reports=project.reports, sources={TARGET: str(plain)})
    with pytest.raises(SourceError) as info:
        support.fetch(project.load(), ws, TARGET)
    assert f"{plain} is not a git repository" in info.value.message
    assert "moved" not in info.value.message + (info.value.hint or "")
