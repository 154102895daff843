"""scenario set/add's settings (patchbench/cli/scenario_edit.py) on one scenario's round-trip
mapping: a count is ASCII digits, anything else is refused with the forms it takes."""

from __future__ import annotations

import pytest
from ruamel.yaml.comments import CommentedMap

from patchbench.cli import scenario_edit
from patchbench.errors import ConfigError


def _run() -> CommentedMap:
    return CommentedMap([("name", "run"), ("command", ["{runtime}", "run", "-b", "{bundle}",
                                                       "{id}-run"]),
                         ("runs", 20), ("rounds", 5)])


@pytest.mark.parametrize("given", ["²", "٣", "５"])
def test_a_count_that_is_not_ascii_digits_is_refused(given: str) -> None:
    for settings in (scenario_edit.Settings(env=[given]),
                     scenario_edit.Settings(bind_mounts=given)):
        sc = _run()
        with pytest.raises(ConfigError, match="expected a count"):
            scenario_edit.apply(sc, settings, "comparisons.env", "runc")
        assert "bundle" not in sc


def test_a_count_and_a_placeholder_are_written_as_the_bundle_takes_them() -> None:
    sc = _run()
    scenario_edit.apply(sc, scenario_edit.Settings(env=["5000"], bind_mounts="{binds}"),
                        "comparisons.env", "runc")
    assert sc["bundle"] == {"env": 5000, "bind_mounts": "{binds}"}


@pytest.mark.parametrize("given", ["envs=" + "9" * 5000, "envs=1,٣", "envs=", "Envs=1,2"])
def test_a_scan_that_is_not_whole_numbers_is_refused(given: str) -> None:
    with pytest.raises(ConfigError, match="expected NAME=V1,V2"):
        scenario_edit.parse_scan(given)


def test_a_scan_is_parsed() -> None:
    assert scenario_edit.parse_scan("envs=0,1000, 5000,,20000") == ("envs", [0, 1000, 5000, 20000])
    assert scenario_edit.parse_scan("none") is None
