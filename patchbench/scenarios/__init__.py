"""Scenario kinds. Each kind is one module here owning its config model, its ``--dry-run`` plan
lines, its run, its gate rule and its report (patchbench.report.blocks, which report.markdown,
report.html, the job summary and merge format), and is listed in ``KINDS``. Adding a kind means
one new module and one line below; the pipeline and the reports never name a kind (a test checks
it: tests/unit/test_kind_isolation.py).

- ``command`` (default): one command per variant, timed by hyperfine in interleaved rounds.
- ``burst``: k instances launched at one moment, for each k (the seed's k-at-once table).
- ``stress``: instances killed, deleted or signalled mid-start; hangs and leftovers counted.
- ``layers``: containerd, image layers × concurrency, with exact mount-syscall counts.
- ``ctrstress``: containerd containers killed mid-start, its daemon restarted mid-burst;
  leftover mounts, snapshots, shims, tasks and containers counted per variant.
- ``soak``: thousands of short runs with per-run deadlines, under conditions; hangs (with
  evidence), failures, leftovers and escaped processes counted per variant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Discriminator, Tag

from patchbench.scenarios import burst, command, ctrstress, layers, soak, stress
from patchbench.scenarios.base import ScenarioConfig, ScenarioContext, ScenarioKind

KINDS: dict[str, ScenarioKind] = {
    "command": command.KIND,
    "burst": burst.KIND,
    "stress": stress.KIND,
    "layers": layers.KIND,
    "soak": soak.KIND,
    "ctrstress": ctrstress.KIND,
}


def kind_of(value: Any) -> str:
    """The discriminator: a scenario without ``kind`` is a command scenario."""
    if isinstance(value, dict):
        return str(value.get("kind", "command"))
    return str(getattr(value, "kind", "command"))


def get(name: str) -> ScenarioKind:
    return KINDS[name]


def override(sc: ScenarioConfig, runs: int | None, rounds: int | None, warmup: int | None
             ) -> ScenarioConfig:
    """The scenario with --runs/--rounds/--warmup applied, validated like the matrix (runs are
    rounded down to a multiple of rounds)."""
    from pydantic import ValidationError

    from patchbench.errors import ConfigError

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
            from patchbench.util.progress import say

            say(f"scenario {sc.name}: {n} runs in {r} rounds: {n - n % r} runs "
                f"({n // r} per round)")
        changes["runs"] = n - n % r
    try:  # --rounds 0 is refused, not a division by zero
        return type(sc).model_validate({**sc.model_dump(by_alias=True), **changes})
    except ValidationError as exc:
        raise ConfigError(f"--runs/--rounds/--warmup: {exc.errors()[0]['msg']}") from None


if TYPE_CHECKING:
    AnyScenario = ScenarioConfig
else:
    from typing import Union

    AnyScenario = Annotated[
        Union[tuple(Annotated[k.config, Tag(n)] for n, k in KINDS.items())],  # noqa: UP007
        Discriminator(kind_of, custom_error_type="unknown_kind",
                      custom_error_message="unknown scenario kind (known: "
                      + ", ".join(KINDS) + ")"),
    ]

__all__ = ["KINDS", "AnyScenario", "ScenarioConfig", "ScenarioContext", "ScenarioKind", "get",
           "override"]
