"""The ``command`` kind (the default): one command per variant, timed by hyperfine in
interleaved rounds, compared with the baseline; an optional ``verify`` check after measuring."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from patchbench.models import StrictModel
from patchbench.scenarios.base import (
    ScenarioConfig,
    ScenarioContext,
    cell_result,
    compare_cells,
    header,
    noisy_warnings,
    plan_invocation,
    run_verify,
    verdict_warnings,
)

if TYPE_CHECKING:
    from patchbench.results import CommandResult


class Rate(StrictModel):
    """Report count/time as a rate as well (e.g. 2000 records per run -> lines/s)."""

    count: int = Field(gt=0)
    unit: str


class CommandConfig(ScenarioConfig):
    kind: Literal["command"] = "command"
    command: list[str] = Field(min_length=1)
    prepare: str | None = None  # hyperfine --prepare, a shell command before every run
    cleanup: str | None = None  # hyperfine --cleanup, after each round's runs
    rate: Rate | None = None
    # a check command run once per variant after measuring (exit 0 = pass); its stdout is kept
    verify: list[str] = Field(default_factory=list)


    def shown_command(self) -> str:
        return shlex.join(self.command)


def measure_cells(ctx: ScenarioContext, cells: list[Any], expand: Any, sc: Any,
                  seed: int | None = None) -> tuple[dict[Any, Any], list[list[str]]]:
    """hyperfine over ``cells`` in seeded interleaved rounds (see patchbench.bench)."""
    from patchbench import bench

    return bench.measure(sc.name, cells, expand, runs=sc.runs, rounds=sc.rounds,
                         warmup=sc.warmup, timeout=sc.timeout,
                         seed=ctx.seed if seed is None else seed, workdir=ctx.workdir,
                         on_round=bench.show_round)


class CommandKind:
    name = "command"
    config: ClassVar[type[ScenarioConfig]] = CommandConfig

    def plan(self, ctx: ScenarioContext) -> list[str]:
        from patchbench.bench import Cell

        sc: CommandConfig = ctx.scenario
        lines = []
        for b in ctx.built:
            lines += plan_invocation(ctx, Cell(b.variant.name), sc.verify or None)
        return lines

    def run(self, ctx: ScenarioContext) -> tuple[CommandResult, list[str]]:
        from patchbench import results
        from patchbench.bench import Cell

        sc: CommandConfig = ctx.scenario
        cells = [Cell(b.variant.name) for b in ctx.built]
        samples, order = measure_cells(ctx, cells, ctx.expand, sc)
        cell_results = [cell_result(c, samples[c], ctx.seed) for c in cells]
        verify = run_verify(ctx, cells, sc.verify) if sc.verify else None
        comparisons = [compare_cells(cells[0], c, samples, ctx) for c in cells[1:]]
        res = results.CommandResult(
            **header(sc, sc.shown_command()), order=order, cells=cell_results,
            comparisons=comparisons, verify=verify)
        warnings = noisy_warnings(sc.name, cell_results) + verdict_warnings(sc.name, comparisons)
        warnings += [f"{sc.name} {v}: the verify check FAILED (exit {r.exit_code})"
                     for v, r in (verify or {}).items() if not r.passed]
        return res, warnings

    def gate(self, result: CommandResult) -> list[str]:
        return [f"{result.name} {variant}: verify failed (exit {v.exit_code})"
                for variant, v in (result.verify or {}).items() if not v.passed]


KIND = CommandKind()
