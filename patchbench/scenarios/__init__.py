"""Scenario kinds, and their registry (``KINDS``). Each kind is one module here owning its config
model, its ``--dry-run`` lines, its run, its gate rule, its result model and its report blocks.
Importing this package registers every kind, for matrix.yaml and for results.json, so whoever
loads a matrix or reads results imports it first. The config, the pipeline and the reports never
name a kind (tests/unit/test_kind_isolation.py), so adding a kind is one new module, imported
and registered below (docs/architecture.md). What each kind measures: docs/scenarios.md."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from patchbench import results
from patchbench.config import scenarios as config_scenarios
from patchbench.config.scenarios import DEFAULT_KIND, ScenarioConfig
from patchbench.errors import ConfigError
from patchbench.scenarios import burst, command, ctrstress, layers, mounts, soak, stress
from patchbench.scenarios.base import ScenarioContext, ScenarioKind
from patchbench.util.progress import say

KINDS: dict[str, ScenarioKind[Any, Any]] = {}


def register(kind: ScenarioKind[Any, Any]) -> None:
    """Add a kind to the registry: ``kind.name`` is the ``kind`` of its scenarios in matrix.yaml,
    validated as ``kind.config``, and in results.json, whose entries of that kind are read as
    ``kind.result``."""
    if KINDS.get(kind.name, kind) is not kind:
        raise RuntimeError(f"bug: two scenario kinds are named {kind.name!r}")
    config_scenarios.register_config(kind.name, kind.config)
    results.register(kind.name, kind.result, default=kind.name == DEFAULT_KIND)
    KINDS[kind.name] = kind


def unregister(name: str) -> None:
    """Forget a kind (a test's own kind, registered for that test)."""
    KINDS.pop(name, None)
    config_scenarios.unregister_config(name)
    results.unregister(name)


# every kind, one line each (this order is the one the "unknown scenario kind" messages and
# docs/matrix.md list them in)
for _kind in (
    command.KIND,
    burst.KIND,
    stress.KIND,
    layers.KIND,
    soak.KIND,
    ctrstress.KIND,
    mounts.KIND,
):
    register(_kind)
del _kind


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


__all__ = ["KINDS", "ScenarioContext", "ScenarioKind", "get", "override", "register",
           "unregister"]
