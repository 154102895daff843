"""Scenario kinds, and their registry (``KINDS``). Each kind is one module here owning its config
model, its ``--dry-run`` lines, its run, its gate rule, its result model and its report blocks;
the config, the pipeline and the reports never name a kind (tests/unit/test_kind_isolation.py),
so adding a kind is one new module and one line in ``MODULES`` (docs/architecture.md). What each
kind measures: docs/scenarios.md."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from patchbench import results
from patchbench.config import scenarios as config_scenarios
from patchbench.config.scenarios import DEFAULT_KIND, ScenarioConfig
from patchbench.errors import ConfigError
from patchbench.scenarios.base import ScenarioContext, ScenarioKind
from patchbench.util import kinds
from patchbench.util.progress import say

# every kind, one line each: its name and its module (this order is the one the "unknown
# scenario kind" messages and docs/matrix.md list them in)
MODULES = {
    "command": "patchbench.scenarios.command",
    "burst": "patchbench.scenarios.burst",
    "stress": "patchbench.scenarios.stress",
    "layers": "patchbench.scenarios.layers",
    "soak": "patchbench.scenarios.soak",
    "ctrstress": "patchbench.scenarios.ctrstress",
    "mounts": "patchbench.scenarios.mounts",
}

_KINDS: dict[str, ScenarioKind[Any, Any]] = {}


class _Registry(Mapping[str, ScenarioKind[Any, Any]]):
    """The kinds by name. A kind's module is imported the first time it is asked for (the
    measured comparison's kind, a results file's kinds); iterating imports every kind."""

    def __getitem__(self, name: str) -> ScenarioKind[Any, Any]:
        if name not in _KINDS and name in MODULES:
            load({name})
        return _KINDS[name]

    def __contains__(self, name: object) -> bool:
        return name in _KINDS or name in MODULES

    def __iter__(self) -> Iterator[str]:
        load(None)
        return iter(kinds.ranked(_KINDS))

    def __len__(self) -> int:
        load(None)
        return len(_KINDS)


KINDS: Mapping[str, ScenarioKind[Any, Any]] = _Registry()


def register(kind: ScenarioKind[Any, Any], *, rebuild: bool = True) -> None:
    """Add a kind to the registry: ``kind.name`` is the ``kind`` of its scenarios in matrix.yaml,
    validated as ``kind.config``, and in results.json, whose entries of that kind are read as
    ``kind.result``."""
    if _KINDS.get(kind.name, kind) is not kind:
        raise RuntimeError(f"bug: two scenario kinds are named {kind.name!r}")
    config_scenarios.register_config(kind.name, kind.config, rebuild=rebuild)
    results.register(kind.name, kind.result, default=kind.name == DEFAULT_KIND, rebuild=rebuild)
    _KINDS[kind.name] = kind


def unregister(name: str) -> None:
    """Forget a kind (a test's own kind, registered for that test)."""
    _KINDS.pop(name, None)
    config_scenarios.unregister_config(name)
    results.unregister(name)


def load(names: set[str] | frozenset[str] | None) -> None:
    """Import and register the kinds ``names`` (None: every kind) not registered yet; a name
    that is neither one of MODULES nor registered (a typo in a matrix) loads every kind, so
    that the message refusing it lists them all. The models whose schema holds the kinds'
    union are rebuilt once, after the last."""
    if names is not None and not names <= MODULES.keys() | _KINDS.keys():
        names = None
    todo = [n for n in MODULES if (names is None or n in names) and n not in _KINDS]
    for name in todo:
        register(importlib.import_module(MODULES[name]).KIND, rebuild=False)
    if todo:
        config_scenarios.kinds_changed()
        results.kinds_changed()


kinds.install(load, MODULES)


def get(name: str) -> ScenarioKind[Any, Any]:
    return KINDS[name]


def override(sc: ScenarioConfig, runs: int | None, rounds: int | None, warmup: int | None
             ) -> ScenarioConfig:
    """The scenario with --runs/--rounds/--warmup applied, validated like the matrix (runs are
    rounded down to a multiple of rounds)."""
    changes: dict[str, Any] = {k: v for k, v in (("rounds", rounds), ("runs", runs),
                                                 ("warmup", warmup)) if v is not None}
    if not changes:
        return sc
    r, n = changes.get("rounds", sc.rounds), changes.get("runs", sc.runs)
    if r >= 1 and n >= 1:
        if n < r:  # said, not silently raised to one run per round
            raise ConfigError(f"scenario {sc.name}: {n} runs in {r} rounds: every round runs each "
                              "cell at least once", hint=f"give --runs {r} or more, or --rounds "
                              f"{n} or fewer")
        if n % r:
            say(f"scenario {sc.name}: {n} runs in {r} rounds: {n - n % r} runs "
                f"({n // r} per round)")
        changes["runs"] = n - n % r
    try:  # --rounds 0 is refused, not a division by zero
        return type(sc).model_validate({**sc.model_dump(by_alias=True), **changes})
    except ValidationError as exc:
        raise ConfigError(f"--runs/--rounds/--warmup: {exc.errors()[0]['msg']}") from None


__all__ = ["KINDS", "MODULES", "ScenarioContext", "ScenarioKind", "get", "load", "override",
           "register", "unregister"]
