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
from patchbench.util.workspace import Switches

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


def override(sc: ScenarioConfig, runs: int | None, rounds: int | None, warmup: int | None,
             *, profile: tuple[str, ...] = (), block_warmup: int | None = None
             ) -> ScenarioConfig:
    """The scenario with --runs/--rounds/--warmup/--block-warmup applied, validated like the
    matrix (runs are rounded down to a multiple of rounds), and --profile added to its
    ``profile`` (a kind without the key is left as it is, and said)."""
    changes: dict[str, Any] = {k: v for k, v in (("rounds", rounds), ("runs", runs),
                                                 ("warmup", warmup)) if v is not None}
    if block_warmup is not None and "block_warmup" in type(sc).model_fields:
        changes["block_warmup"] = block_warmup
    if profile and "profile" in type(sc).model_fields:
        changes["profile"] = list(dict.fromkeys([*getattr(sc, "profile", []), *profile]))
    elif profile:
        say(f"scenario {sc.name} ({sc.kind}): no profile for this kind; --profile is not applied")
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
        err = exc.errors()[0]
        key = "/".join(f"--{k}".replace("_", "-") for k in (
            "runs", "rounds", "warmup", "block_warmup", "profile") if k in changes) \
            if not err["loc"] else f"--{err['loc'][-1]}"
        raise ConfigError(f"scenario {sc.name}: {key}: {err['msg']}") from None


# --until-ci without --max-rounds: up to this many times a scenario's rounds
UNTIL_BUDGET = 4


def for_run(sc: ScenarioConfig, sw: Switches) -> ScenarioConfig:
    """The scenario as ``compare`` runs it (``override``), refused (exit 10) before anything is
    built when --until-ci or --gate could add rounds past the samples a cell of a saved run may
    hold, or when --max-rounds is below the scenario's own rounds."""
    from patchbench.analysis import gating

    out = override(sc, sw.runs, sw.rounds, sw.warmup, profile=sw.profile,
                   block_warmup=sw.block_warmup)
    adds = "--until-ci" if sw.until_ci is not None else "--gate" if sw.gate else None
    if adds is None:
        return out
    default = UNTIL_BUDGET if sw.until_ci is not None else gating.CAP_FACTOR
    cap = sw.max_rounds or default * out.rounds
    if cap < out.rounds:
        raise ConfigError(f"--max-rounds {cap}: scenario {sc.name} already runs {out.rounds} "
                          "rounds", hint="give a cap of at least its rounds")
    most = out.runs // out.rounds * cap
    limit = f"--max-rounds {cap}" if sw.max_rounds else f"{cap} ({default}x its rounds)"
    if most > results.MAX_SAMPLES:
        raise ConfigError(
            f"scenario {sc.name}: {adds} could add rounds up to {limit}: with "
            f"{out.runs // out.rounds} runs per round, {most:,} runs of a cell, more than "
            f"{results.MAX_SAMPLES:,}, the samples a cell of a saved run may hold",
            hint="give a smaller --max-rounds, or fewer --runs per round")
    return out


__all__ = ["KINDS", "UNTIL_BUDGET", "ScenarioContext", "ScenarioKind", "for_run", "get",
           "override", "register", "unregister"]
