"""The templates shipped in the package: each is a valid matrix; its target is the recipe of this
repository's own matrix.yaml for that runtime (the one known to work), apart from what a project
takes from its own source (url, ref, commit, the toolchain's version); it has the standard
scenarios of its runtime; and the toolchain a target new pins from a source's files."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from patchbench import config
from patchbench.cli import spec, target, templates
from patchbench.errors import ConfigError, ToolchainError
from tests.support import REPO_ROOT

MATRIX = config.load(REPO_ROOT / "matrix.yaml")
# the template -> the target of matrix.yaml it is taken from
IN_MATRIX = {"runc": "runc", "crun": "crun", "youki": "youki", "containerd": "containerd",
             "lima": "lima"}
OWN = ("description", "url", "ref", "commit")  # a project's own: from its source
OWN_TOOLCHAIN = ("version", "download", "rustup_toolchain")


def _target(name: str) -> config.Target:
    return next(iter(templates.get(name).project().matrix.targets.values()))


def _comparison(name: str) -> config.Comparison:
    return next(iter(templates.get(name).project().matrix.comparisons.values()))


def test_every_runtime_of_init_has_a_template_file_and_no_file_is_left_out() -> None:
    files = sorted(p.stem for p in (REPO_ROOT / "patchbench" / "templates").glob("*.yaml"))
    assert files == sorted(spec.RUNTIMES) == sorted(templates.names())


def test_the_wheel_carries_the_templates() -> None:
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "templates/*.yaml" in data["tool"]["setuptools"]["package-data"]["patchbench"]


@pytest.mark.parametrize("name", spec.RUNTIMES)
def test_a_template_is_a_valid_matrix_of_one_target_and_one_comparison(name: str) -> None:
    path = REPO_ROOT / "patchbench" / "templates" / f"{name}.yaml"
    project = config.load(path)  # what compare would say of it
    assert len(project.matrix.targets) == len(project.matrix.comparisons) == 1
    comp = _comparison(name)
    assert comp.candidates == {"unchanged": []}  # the starter: the unchanged build again
    assert templates.get(name).summary and templates.get(name).summary[0].isalnum()


def _plain(model: Any, drop: tuple[str, ...]) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(mode="json")
    return {k: v for k, v in data.items() if k not in drop}


@pytest.mark.parametrize(("name", "in_matrix"), IN_MATRIX.items())
def test_a_template_is_in_step_with_the_matrix_target_it_comes_from(name: str,
                                                                     in_matrix: str) -> None:
    tpl, ours = _target(name), MATRIX.target(in_matrix)
    assert _plain(tpl, (*OWN, "toolchain")) == _plain(ours, (*OWN, "toolchain"))
    assert _plain(tpl.toolchain, OWN_TOOLCHAIN) == _plain(ours.toolchain, OWN_TOOLCHAIN)
    assert templates.of_target(ours) == name  # comparison new finds the template of a target


@pytest.mark.parametrize("name", ["runc", "crun", "youki"])
def test_an_oci_template_has_run_exec_exec_d_a_soak_and_kills_mid_start(name: str) -> None:
    scenarios = {s.name: s for s in _comparison(name).scenarios}
    first = "create-start-delete" if name == "youki" else "run"
    assert [s for s in scenarios if s not in ("soak", "kill-mid-start")] == [
        first, "exec", "exec-detached"]
    assert scenarios["soak"].kind == "soak" and scenarios["soak"].timeout > 0  # a deadline each
    assert scenarios["kill-mid-start"].kind == "stress"
    assert "{runtime}" in str(scenarios["exec"].model_dump()["command"])


def test_containerd_starts_one_container_then_scans_layers() -> None:
    scenarios = _comparison("containerd").scenarios
    assert [(s.name, s.kind) for s in scenarios] == [("start", "layers"), ("layers", "layers")]


def test_the_oci_scenarios_match_the_matrix_comparisons_they_come_from() -> None:
    """runc's run, exec and exec -d are runc-signal's, its kills runc-stress's (with {runtime}
    for {runc}: the same program)."""
    tpl = {s.name: s.model_dump(mode="json") for s in _comparison("runc").scenarios}
    ours = {s.name: s.model_dump(mode="json") for s in MATRIX.comparison("runc-signal").scenarios}
    ours |= {s.name: s.model_dump(mode="json") for s in MATRIX.comparison("runc-stress").scenarios}
    for name in ("run", "exec", "exec-detached", "kill-mid-start"):
        mine, theirs = tpl[name], ours[name]
        for key in ("command", "setup", "teardown", "launch", "kill", "list", "fresh", "actions"):
            if key in theirs:
                assert str(mine[key]).replace("{runtime}", "{runc}") == str(theirs[key]), (name, key)


# --- the toolchain the source asks for ---------------------------------------------------------

RUNC_GO_MOD = "module x\n\ngo 1.22\n\n// a comment\ntoolchain go1.22.4\n"


def test_go_pins_the_toolchain_line_and_downloads_it_when_it_is_not_installed() -> None:
    version, download, note = target.go_toolchain(RUNC_GO_MOD, "1.26.8", None)
    assert (version, download) == ("1.22.4", True)
    assert note is not None and "1.22.4" in note and "1.26.8" in note
    assert "golang.org/toolchain" in note
    assert target.go_toolchain(RUNC_GO_MOD, "1.22.4", None) == ("1.22.4", False, None)


def test_go_takes_the_installed_go_when_it_meets_the_go_line() -> None:
    version, download, note = target.go_toolchain("module x\n\ngo 1.21\n", "1.26.8", None)
    assert (version, download) == ("1.26.8", False)
    assert note is not None and "at least Go 1.21" in note


def test_go_downloads_the_go_line_when_the_installed_go_is_older() -> None:
    assert target.go_toolchain("module x\ngo 1.27\n", "1.26.8", None)[:2] == ("1.27.0", True)
    assert target.go_toolchain("module x\ngo 1.27.3\n", None, None)[:2] == ("1.27.3", True)


def test_go_refuses_a_version_the_module_proxy_lacks_naming_both() -> None:
    with pytest.raises(ToolchainError) as info:
        target.go_toolchain("module x\ngo 1.12\ntoolchain go1.19.2\n", "1.26.8", None)
    assert info.value.exit_code == 13
    assert "1.19.2" in info.value.message and "1.26.8" in info.value.message
    assert info.value.hint == "build with the installed one: --toolchain 1.26.8"


def test_go_toolchain_option_wins_and_is_checked() -> None:
    assert target.go_toolchain(RUNC_GO_MOD, "1.26.8", "1.26.8") == ("1.26.8", False, None)
    with pytest.raises(ConfigError):
        target.go_toolchain(RUNC_GO_MOD, "1.26.8", "latest")


INSTALLED = ("1.95.0", "x86_64-unknown-linux-gnu", ["stable-x86_64-unknown-linux-gnu",
                                                    "1.95.0-x86_64-unknown-linux-gnu"])


def test_rust_pins_an_installed_release_the_source_asks_for() -> None:
    toml = '[toolchain]\nchannel = "1.95.0"\nprofile = "minimal"\n'
    assert target.rust_toolchain(toml, None, INSTALLED) == (
        "1.95.0", "1.95.0-x86_64-unknown-linux-gnu", None)
    assert target.rust_toolchain(None, None, INSTALLED)[0] == "1.95.0"
    assert target.rust_toolchain('[toolchain]\nchannel = "stable"\n', None, INSTALLED)[0] == "1.95.0"


def test_rust_refuses_a_release_that_is_not_installed_naming_both_then_takes_the_option() -> None:
    toml = '[toolchain]\nchannel = "1.96.0"\n'
    with pytest.raises(ToolchainError) as info:
        target.rust_toolchain(toml, None, INSTALLED)
    assert info.value.exit_code == 13
    assert "1.96.0" in info.value.message and "1.95.0" in info.value.message
    assert info.value.hint is not None and "--toolchain 1.95.0" in info.value.hint
    version, chain, note = target.rust_toolchain(toml, "1.95.0", INSTALLED)
    assert (version, chain) == ("1.95.0", "1.95.0-x86_64-unknown-linux-gnu")
    assert note is not None and "1.96.0" in note


def test_gitmodules_are_read() -> None:
    text = ('[submodule "libocispec"]\n\tpath = libocispec\n\turl = https://x/libocispec\n'
            '[submodule "odd"]\n\tpath = a/b\n')
    assert target._gitmodules(text) == [{"path": "libocispec", "url": "https://x/libocispec"}]


@pytest.mark.parametrize(("text", "name"), [("/src/My Runc.git", "my-runc"), ("x", "x"),
                                            ("..", "go"), ("", "go")])
def test_a_folder_name_becomes_a_target_name(text: str, name: str) -> None:
    assert templates.slug(Path(text).name, "go") == name
