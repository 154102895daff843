"""The ``command`` kind (the default): one command per variant, timed by hyperfine in
interleaved rounds, compared with the baseline; an optional ``verify`` check after measuring.

Every measured run has its own deadline (``timeout``, seconds): hyperfine runs the command under
patchbench's launcher (``-k 1 -deadline``), which kills a run past it after saving its evidence
(process tree, signal masks, wchan, zombies). Such a run is counted as a hang ("hangs: N of M" per
cell, Fisher's exact p against the baseline), left out of the timing, and the scenario goes on;
under ``--gate`` any candidate hang fails. With ``conditions`` (patchbench.measure.conditions), each
condition runs as its own set of interleaved cells, named by a ``condition`` parameter."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from patchbench import results
from patchbench.config.scenarios import ScenarioConfig, TimedConfig
from patchbench.measure import bench, conditions, engine, launcher
from patchbench.measure.bench import Cell, Expander, Invocation, Samples
from patchbench.report.blocks import Across, Block, Table
from patchbench.results import AppliedCondition, Check, ScenarioResult, TimedResult, Verdict
from patchbench.results import Cell as CellResult
from patchbench.scenarios.base import (
    ScenarioContext,
    ScenarioKind,
    cell_hangs,
    cell_result,
    compare_cells,
    deadline_flags,
    evidence_summary,
    hang_gate,
    hang_warnings,
    header,
    noisy_warnings,
    plan_invocation,
    precision_rule,
    run_verify,
    statistics_ready,
    verdict_warnings,
)
from patchbench.scenarios.metric_views import metric_page, said
from patchbench.scenarios.views import timed_blocks, timed_charts, verify_blocks, verify_page
from patchbench.util import idle, progress

# --- the config: the keys matrix.yaml gives this kind (registered by patchbench.scenarios) ---


class CommandConfig(TimedConfig):
    """One command per variant, timed by hyperfine in interleaved rounds."""

    kind: Literal["command"] = Field(default="command", description=(
        "`command` (the default when `kind` is left out)."))


# --- the result: this kind's part of results.json (registered by patchbench.scenarios) ---


class CommandResult(TimedResult):
    kind: Literal["command"] = "command"
    verify: dict[str, Check] | None = None


def measure_cells(ctx: ScenarioContext[ScenarioConfig], cells: list[Cell], expand: Expander,
                  sc: ScenarioConfig, seed: int | None = None, *, head_start: bool = False
                  ) -> tuple[dict[Cell, Samples], list[list[str]]]:
    """hyperfine over ``cells`` in seeded interleaved rounds (see patchbench.measure.bench);
    ``head_start``: its warmups may start before the run reaches them (measure/headstart.py).
    Stops first (exit 16) without hyperfine 2 or a metric of ``sc`` this machine cannot give."""
    if isinstance(sc, TimedConfig):
        engine.check(sc.metric_names, f"scenario {sc.name}")
    return bench.measure(sc.name, cells, expand, runs=sc.runs, rounds=sc.rounds,
                         warmup=sc.warmup, timeout=sc.timeout,
                         seed=ctx.seed if seed is None else seed, workdir=ctx.workdir,
                         more=precision_rule(ctx, cells), head_start=head_start)


def plan_deadline(sc: TimedConfig) -> list[str]:
    """Dry-run lines for the per-run deadline, the metrics and the conditions."""
    own = {m.name: m.min_effect for m in sc.metrics if m.min_effect is not None}
    lines = [f"  every run: deadline {sc.timeout:g} s (patchbench's launcher; a run past it is "
             "a hang: evidence saved, killed, counted, left out of the timing)",
             "  metrics recorded and judged: " + ", ".join(
                 n + (f" (min_effect {own[n]:.0%})" if n in own else "")
                 for n in sc.metric_names)]
    if sc.conditioned:
        lines += [f"  condition {c.name}: {c.summary()}" for c in sc.conditions]
    return lines


def with_deadline(ctx: ScenarioContext[ScenarioConfig], launcher: Path, cell: Cell, inv: Invocation,
                  launcher_flags: list[str]) -> Invocation:
    """``inv`` with its command run by the launcher under a per-run deadline (the scenario's
    ``timeout``); ``launcher_flags`` go before the deadline's (``-k K``, ``-o FILE``)."""
    deadline = ctx.scenario.timeout
    argv = [str(launcher), *launcher_flags, *deadline_flags(ctx, cell, deadline), "--",
            *inv.command]
    return replace(inv, command=argv, deadline=deadline)


def measure_conditions(ctx: ScenarioContext[CommandConfig], cells: list[Cell], expand: Expander
                       ) -> tuple[dict[Cell, Samples], list[list[str]], list[AppliedCondition]]:
    """Measure ``cells`` under each of the scenario's conditions in turn, every condition its
    own interleaved set (cells named by a ``condition`` parameter unless only the default
    runs); return the samples, the order and what each condition applied."""
    sc = ctx.scenario
    if not sc.conditioned:  # a head start needs no runtime state (measure/headstart.py)
        samples, order = measure_cells(ctx, cells, expand, sc, head_start=ctx.runtime is None)
        return samples, order, []
    all_samples: dict[Cell, Samples] = {}
    all_order: list[list[str]] = []
    applied_list: list[AppliedCondition] = []
    log = ctx.workdir / f"{sc.name}.conditions.log"
    for ci, cond in enumerate(sc.conditions):
        named = [Cell(c.variant, (*c.params, ("condition", cond.name))) for c in cells]
        progress.say(f"  condition {cond.name}: {cond.summary()}")
        with conditions.apply(cond, log=log) as applied:
            def under(cell: Cell, applied: conditions.Applied = applied) -> Invocation:
                inv = expand(cell)
                return replace(inv, wrap=applied.wrap([]), env=applied.environ(inv.env))

            samples, order = measure_cells(ctx, named, under, sc, seed=ctx.seed + 7919 * ci)
        all_samples.update(samples)
        all_order += order
        applied_list.append(results.AppliedCondition(name=cond.name, summary=cond.summary(),
                                                     applied=applied.record()))
    return all_samples, all_order, applied_list


def timed_results(ctx: ScenarioContext[ScenarioConfig], cells: list[Cell], samples: dict[Cell, Samples],
                  ) -> tuple[list[CellResult], list[Verdict], str | None, list[str]]:
    """Cell results with their hangs, each candidate cell against the baseline cell with the
    same parameters, the hang evidence summary's name, and the warnings."""
    sc = ctx.scenario
    summary: list[str] = []
    base = ctx.built[0].variant.name
    pairs = [(Cell(base, c.params), c) for c in cells if c.variant != base]
    # the comparisons in a thread beside the cells' summaries: numpy leaves the interpreter
    # during their bootstraps, so the two use both cores (each has its own seed: same figures)
    statistics_ready()
    compared = idle.beside(lambda: [compare_cells(b, c, samples, ctx, deadline=True)
                                    for b, c in pairs])
    try:
        cell_results = [cell_result(c, samples[c], ctx.seed,
                                    cell_hangs(ctx, c, samples[c], sc.timeout, summary))
                        for c in cells]
    finally:  # on an error or Ctrl-C too: nothing it does outlives this step
        compared.join()
    comparisons = compared.result()
    warnings = (noisy_warnings(sc.name, cell_results) + verdict_warnings(sc.name, comparisons)
                + hang_warnings(sc.name, cell_results))
    return cell_results, comparisons, evidence_summary(ctx, summary), warnings


class CommandKind:
    name = "command"
    config: ClassVar[type[ScenarioConfig]] = CommandConfig
    result: ClassVar[type[ScenarioResult]] = CommandResult

    def plan(self, ctx: ScenarioContext[CommandConfig]) -> list[str]:
        sc: CommandConfig = ctx.scenario
        lines = []
        for b in ctx.built:
            lines += plan_invocation(ctx, Cell(b.variant.name), sc.verify or None)
        return lines + plan_deadline(sc)

    def run(self, ctx: ScenarioContext[CommandConfig]) -> tuple[CommandResult, list[str]]:
        sc: CommandConfig = ctx.scenario
        exe = launcher.build(ctx.layout)
        plain = [Cell(b.variant.name) for b in ctx.built]

        def expand(cell: Cell) -> Invocation:
            return with_deadline(ctx, exe, cell, ctx.expand(cell), ["-k", "1"])

        samples, order, applied = measure_conditions(ctx, plain, expand)
        cells = list(samples)
        # the checks (commands) run while this thread does the statistics: both after measuring
        statistics_ready()  # before any thread beside this one
        stop = threading.Event()
        checks = idle.beside(lambda: run_verify(ctx, plain, sc.verify, stop)) if sc.verify else None
        try:
            cell_results, comparisons, ev_summary, warnings = timed_results(ctx, cells, samples)
        except BaseException:  # an error or Ctrl-C: no next check
            stop.set()
            raise
        finally:  # nothing the checks started outlives this scenario
            if checks is not None:
                checks.join()
        verify = checks.result() if checks else None
        res = CommandResult(
            **header(sc, sc.shown_command()), order=order, cells=cell_results,
            comparisons=comparisons, verify=verify, deadline_s=sc.timeout, conditions=applied,
            evidence_summary=ev_summary, metrics=sc.metric_names)
        warnings += [f"{sc.name} {v}: the verify check FAILED (exit {r.exit_code})"
                     for v, r in (verify or {}).items() if not r.passed]
        return res, warnings

    def gate(self, result: CommandResult) -> list[str]:
        return [f"{result.name} {variant}: verify failed (exit {v.exit_code})"
                for variant, v in (result.verify or {}).items() if not v.passed
                ] + hang_gate(result.name, result.comparisons, result.cells)

    def report(self, result: CommandResult, *, details: bool = True) -> list[Block]:
        return ((timed_blocks(result, deadlines=True) if details else said(result))
                + verify_blocks(result.verify))

    def page(self, result: CommandResult) -> list[Block]:
        return (verify_page(result.verify) + timed_charts(result.model_dump(mode="json"))
                + metric_page(result))

    def summary(self, result: CommandResult) -> Table | None:
        return None

    def across(self, result: CommandResult) -> Across | None:
        return None


KIND: ScenarioKind[CommandConfig, CommandResult] = CommandKind()
