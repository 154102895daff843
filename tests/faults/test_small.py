"""Class 10 of issue 10, the small ones: `invoke report` without RUN_DIR shows the newest run; a
plain directory as --source is called "not a git repository" (not "the tag moved"); a broken
pipe ends quietly; --series names outside patches/ are refused; no "set toolchain.download:
true" hint when it is set; messages name the matrix file actually in use."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import yaml

from patchbench import config, errors, results
from patchbench.build.toolchains import go
from patchbench.errors import PatchError, SourceError, ToolchainError
from patchbench.runs import store as runstore
from patchbench.source import patching
from patchbench.util import command
from patchbench.util.workspace import Workspace
from tests import support
from tests.support import REPO_ROOT, TARGET, Project, invoke_argv

DEMO = sorted((REPO_ROOT / "reports" / "demo").glob("*/results.json"))[-1]


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


class FakeGo:
    """A go command that reports another version than the pinned one."""

    where = "host"

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            error: type[errors.PatchbenchError] = ToolchainError,
            what: str | None = None) -> command.Result:
        return command.Result(tuple(argv), 0, "go version go1.99.1 linux/amd64\n", "", 0.0)


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
