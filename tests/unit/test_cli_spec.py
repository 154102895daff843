"""The one command spec: help for every command, typed and ranged options, 'did you mean', and
no option error that is a traceback or invoke's exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchbench.cli import main, spec
from patchbench.errors import ConfigError


@pytest.mark.parametrize("name", list(spec.COMMANDS))
def test_every_command_has_help_with_usage_options_examples_and_exit_codes(name: str) -> None:
    cmd = spec.COMMANDS[name]
    parsed = spec.parse(cmd, ["--help"])
    assert parsed.help
    text = spec.help_text(cmd)
    assert text.startswith(f"usage: patchbench {name}")
    assert "options:" in text and "examples:" in text and "exit codes:" in text
    assert len(cmd.examples) >= 1
    for opt in cmd.all_options():
        assert opt.flag in text
    assert max(len(line) for line in text.splitlines()) <= spec.WIDTH + 2


@pytest.mark.parametrize("name", [n for n, c in spec.COMMANDS.items() if c.positionals])
def test_help_wins_over_a_missing_or_given_positional(name: str) -> None:
    cmd = spec.COMMANDS[name]
    assert spec.parse(cmd, ["-h"]).help
    assert spec.parse(cmd, ["x", "--help"]).help


def test_types_ranges_and_defaults() -> None:
    cmd = spec.COMMANDS["compare"]
    v = spec.parse(cmd, ["demo", "--runs", "40", "--rounds=10", "--scenario", "a", "--scenario",
                         "b", "--gate", "--source", "runc=/src/runc"]).values
    assert v["name"] == "demo" and v["runs"] == 40 and v["rounds"] == 10
    assert v["scenario"] == ["a", "b"] and v["gate"] is True and v["aa"] is False
    assert v["seed"] is None and v["source"] == ["runc=/src/runc"]


@pytest.mark.parametrize(("argv", "message"), [
    (["demo", "--rounds", "five"], "--rounds 'five': expected a whole number"),
    (["demo", "--seed", "-1"], "--seed -1: expected a whole number >= 0"),
    (["demo", "--runs", "0"], "--runs 0: expected a whole number >= 1"),
    (["demo", "--runz", "5"], "no option --runz (did you mean --runs?)"),
    (["demo", "--backend", "dokcer"], "expected one of host, docker (did you mean docker?)"),
    (["demo", "--gate=yes"], "--gate takes no value"),
    (["demo", "--runs"], "--runs needs a value"),
    ([], "missing NAME"),
    (["a", "b"], "unexpected argument 'b'"),
])
def test_option_errors_are_config_errors_naming_the_option(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        spec.parse(spec.COMMANDS["compare"], argv)
    assert message in exc.value.message
    assert exc.value.exit_code == 10


def test_an_unknown_command_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"no command 'compair' \(did you mean compare\?\)"):
        spec.command_of("compair")


def test_from_is_spelled_without_its_underscore() -> None:
    cmd = spec.COMMANDS["series"]
    v = spec.parse(cmd, ["new", "x", "a..b", "--from", "/src", "--target", "runc"]).values
    assert v["from_"] == "/src" and v["revs"] == ["a..b"]


def test_double_dash_ends_options() -> None:
    v = spec.parse(spec.COMMANDS["series"], ["add", "x", "--", "--not-an-option"]).values
    assert v["revs"] == ["--not-an-option"]


def test_the_console_script_exits_with_the_documented_codes(capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    for argv, code in ((["compare", "--help"], 0), (["--help"], 0), (["compare", "--rounds", "x"],
                       10), (["nope"], 10), (["diff", "--help"], 0), (["series", "--help"], 0)):
        with pytest.raises(SystemExit) as exc:
            main.run(argv)
        assert exc.value.code == code, argv
    out = capsys.readouterr()
    assert "usage: patchbench compare NAME" in out.out
    assert "Traceback" not in out.err


def test_project_may_come_before_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main.run(["--project", "/nonexistent-project", "list", "--help"])
    assert exc.value.code == 0
    assert "usage: patchbench list" in capsys.readouterr().out


def test_every_command_has_a_handler() -> None:
    assert set(main.HANDLERS) == set(spec.COMMANDS)


def test_list_fits_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from patchbench.cli import commands
    from tests.support import REPO_ROOT

    commands.do_list(commands.workspace(project=str(REPO_ROOT)))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 10
    assert max(len(line) for line in lines) <= 120


def test_source_env_spells_a_dot_as_two_underscores() -> None:
    from patchbench import config

    got = config.parse_source_overrides([], {"PATCHBENCH_SOURCE_MY_RT__2": "/src/x",
                                             "PATCHBENCH_SOURCE_APPLE_CONTAINER": "/src/a"})
    assert got == {"my-rt.2": "/src/x", "apple-container": "/src/a"}


def test_a_source_naming_no_target_is_refused_with_the_targets(tmp_path: Path) -> None:
    from patchbench import pipeline
    from patchbench.cli import commands
    from tests.support import REPO_ROOT

    ws = commands.workspace(sources=["rnuc=/src/runc"], project=str(REPO_ROOT),
                            builds=str(tmp_path / "b"))
    with pytest.raises(ConfigError) as exc:
        pipeline.load(ws)
    assert "no target 'rnuc'" in exc.value.message and "did you mean 'runc'?" in exc.value.message
    assert exc.value.hint is not None and "runc" in exc.value.hint
