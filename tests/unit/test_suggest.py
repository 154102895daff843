"""The one "did you mean": the closest known word, quoted or as typed, or nothing."""

from __future__ import annotations

from patchbench import config
from patchbench.cli import spec
from patchbench.util.suggest import suggest


def test_the_closest_choice_is_named_quoted() -> None:
    assert suggest("runz", ["rounds", "runs", "warmup"]) == " (did you mean 'runs'?)"
    assert suggest("tragets", {"targets": {}, "comparisons": {}}) == " (did you mean 'targets'?)"


def test_what_is_typed_as_is_is_shown_unquoted() -> None:
    assert suggest("--runz", ["--runs", "--rounds"], show=str) == " (did you mean --runs?)"


def test_nothing_close_suggests_nothing() -> None:
    assert suggest("zzz", ["runs", "rounds"]) == ""
    assert suggest("runs", []) == ""
    # difflib's ratio: twice the matching characters over both lengths, at least 0.6
    assert suggest("rx", ["runs"]) == ""  # 2 * 1 / 6
    assert suggest("rn", ["runs"]) == " (did you mean 'runs'?)"  # 2 * 2 / 6


def test_words_that_are_not_strings_are_compared_as_text() -> None:
    assert suggest(1024, [1023, 2048]) == " (did you mean '1023'?)"


def test_the_config_and_the_command_line_use_this_one() -> None:
    assert config.suggest is suggest and spec.suggest is suggest
