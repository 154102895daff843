"""One fact in one place: the runtimes registry's keys are the names matrix.yaml accepts."""

from __future__ import annotations

import typing

from patchbench import config, runtimes


def _names(annotation: object) -> set[str]:
    out: set[str] = set()
    for arg in typing.get_args(annotation):
        if isinstance(arg, str):
            out.add(arg)
        else:
            out |= _names(arg)
    return out


def test_the_registry_has_exactly_the_runtimes_the_config_accepts() -> None:
    accepted = _names(config.Target.model_fields["runtime"].annotation)
    comparison_level = _names(config.Comparison.model_fields["runtime"].annotation)
    assert accepted == set(runtimes.REGISTRY)
    assert comparison_level <= set(runtimes.REGISTRY)


def test_every_registered_runtime_loads_and_has_its_name() -> None:
    for name in runtimes.REGISTRY:
        rt = runtimes.get(name)
        assert rt is not None and getattr(rt, "name", name) == name
