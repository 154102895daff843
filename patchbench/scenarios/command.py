"""The ``command`` kind (the default): one command per variant, timed by hyperfine in
interleaved rounds, compared with the baseline; an optional ``verify`` check after measuring.
Details: docs/internals.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

from pydantic import Field

from patchbench import results
from patchbench.config.scenarios import ScenarioConfig, TimedConfig
from patchbench.measure import bench, conditions, hyperfine2, launcher
from patchbench.measure.bench import Cell, Expander, Invocation, Samples
from patchbench.report.blocks import Across, Block, View
from patchbench.report.kind_blocks import timed_blocks, timed_charts, verify_blocks, verify_page
from patchbench.report.metric_blocks import metric_page, said
from patchbench.results import AppliedCondition, Check, TimedResult, Verdict
from patchbench.results import Cell as CellResult
from patchbench.scenarios import command_bundle, profile, scans
from patchbench.scenarios.base import (
    Kind,
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
    run_verify,
    verdict_warnings,
)
from patchbench.scenarios.command_bundle import BundleConfig
from patchbench.scenarios.profile import Profile
from patchbench.scenarios.scans import ScanConfig, ScanResult
from patchbench.scenarios.steps import ByTime
from patchbench.scenarios.stopping import precision_rule
from patchbench.util import progress

# --- the config: the keys matrix.yaml gives this kind (registered by patchbench.scenarios) ---


class CommandConfig(TimedConfig):
    """One command per variant, timed by hyperfine in interleaved rounds."""

    kind: Literal["command"] = Field(default="command", description=(
        "`command` (the default when `kind` is left out)."))
    profile: list[Literal["syscalls", "cpu"]] = Field(default_factory=list, description=(
        "After measuring, `profile_runs` runs of every cell apart from the timed ones: "
        "`syscalls`, every syscall of the process tree counted (`profile_tracer`), with each "
        "candidate's syscall diff and, for an OCI runtime CLI, the phases of its start; `cpu`, "
        "its call stacks sampled with perf (cpu-clock), with each candidate's functions by CPU "
        "share and a differential flame graph."))
    profile_runs: int = Field(default=5, ge=1, le=100, description=(
        "Traced runs per cell with `profile`."))
    profile_tracer: Literal["strace", "bpftrace"] = Field(default="strace", description=(
        "`strace` (`strace -f`: no root needed; ptrace slows the run, so what grows with its "
        "length, such as a Go runtime's nanosleep and futex calls, grows too) or `bpftrace` "
        "(counted in the kernel at nearly the run's own speed; root, and the kernel headers' "
        "syscall table)."))
    scan: ScanConfig | None = Field(default=None, description=(
        "A placeholder scanned over values, each value its own set of interleaved cells, with "
        "a verdict per value and a fit per variant of how the time grows with it."))
    bundle: BundleConfig | None = Field(default=None, description=(
        "The scenario's own OCI bundle (runtime `runc`), named `{bundle}` in it: the "
        "process's args, environment, host programs copied in, bind mounts."))


# --- the result: this kind's part of results.json (registered by patchbench.scenarios) ---


class CommandResult(TimedResult):
    kind: Literal["command"] = "command"
    verify: dict[str, Check] | None = None
    profile: Profile | None = None  # traced runs (profile: [syscalls]); absent before them
    scan: ScanResult | None = None  # a scan's fits; absent before scans


def measure_cells(ctx: ScenarioContext[ScenarioConfig], cells: list[Cell], expand: Expander,
                  sc: ScenarioConfig, seed: int | None = None
                  ) -> tuple[dict[Cell, Samples], list[list[str]]]:
    """hyperfine over ``cells`` in seeded interleaved rounds (see patchbench.measure.bench).
    Stops first (exit 16) without hyperfine 2 or a metric of ``sc`` this machine cannot give."""
    if isinstance(sc, TimedConfig):
        hyperfine2.check(sc.metric_names, f"scenario {sc.name}")
    seed = ctx.seed if seed is None else seed
    return bench.measure(sc.name, cells, expand, runs=sc.runs, rounds=sc.rounds,
                         warmup=sc.warmup, timeout=sc.timeout, seed=seed, workdir=ctx.workdir,
                         more=precision_rule(ctx, cells, seed),
                         block_warmup=sc.block_warmup if isinstance(sc, TimedConfig) else 0)


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
    if not sc.conditioned:
        samples, order = measure_cells(ctx, cells, expand, sc)
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
                  order: Sequence[Sequence[str]] = (),
                  ) -> tuple[list[CellResult], list[Verdict], str | None, list[str]]:
    """Cell results with their hangs, each candidate cell against the baseline cell with the
    same parameters, the hang evidence summary's name, and the warnings."""
    sc = ctx.scenario
    summary: list[str] = []
    base = ctx.built[0].variant.name
    pairs = [(Cell(base, c.params), c) for c in cells if c.variant != base]
    cell_results = [cell_result(c, samples[c], ctx.seed,
                                cell_hangs(ctx, c, samples[c], sc.timeout, summary))
                    for c in cells]
    comparisons = [compare_cells(b, c, samples, ctx, deadline=True, order=order)
                   for b, c in pairs]
    warnings = (noisy_warnings(sc.name, cell_results) + verdict_warnings(sc.name, comparisons)
                + hang_warnings(sc.name, cell_results))
    return cell_results, comparisons, evidence_summary(ctx, summary), warnings


# a bisect finds the commit that changed its time
class CommandKind(Kind, name="command", config=CommandConfig, result=CommandResult,
                  step=ByTime()):
    def plan(self, ctx: ScenarioContext[CommandConfig]) -> list[str]:
        sc: CommandConfig = ctx.scenario
        lines = []
        for cell in first_cells(sc, [b.variant.name for b in ctx.built]):
            lines += plan_invocation(ctx, cell, sc.verify or None)
        return lines + plan_deadline(sc) + plan_why(sc, len(ctx.built))

    def run(self, ctx: ScenarioContext[CommandConfig]) -> tuple[CommandResult, list[str]]:
        sc: CommandConfig = ctx.scenario
        exe = launcher.build(ctx.layout)
        variants = [b.variant.name for b in ctx.built]
        plain = sc.scan.cells(variants) if sc.scan else [Cell(v) for v in variants]
        if sc.bundle is not None:  # {bundle}: the scenario's own, per cell (a scan's value)
            ctx.extra = command_bundle.placeholders(ctx, sc.bundle, plain)

        def expand(cell: Cell) -> Invocation:
            return with_deadline(ctx, exe, cell, ctx.expand(cell), ["-k", "1"])

        samples, order, applied = measure_conditions(ctx, plain, expand)
        cells = list(samples)
        traced, why_warnings = why(ctx, sc, plain)
        checked = first_cells(sc, variants)
        verify = run_verify(ctx, checked, sc.verify) if sc.verify else None
        cell_results, comparisons, ev_summary, warnings = timed_results(ctx, cells, samples, order)
        res = CommandResult(
            **header(sc, sc.shown_command()), order=order, cells=cell_results,
            comparisons=comparisons, verify=verify, deadline_s=sc.timeout, conditions=applied,
            evidence_summary=ev_summary, profile=traced,
            scan=scan_result(ctx, sc, cell_results), metrics=sc.metric_names)
        warnings += [f"{sc.name} {v}: the verify check FAILED (exit {r.exit_code})"
                     for v, r in (verify or {}).items() if not r.passed]
        return res, warnings + why_warnings

    def gate(self, result: CommandResult) -> list[str]:
        return [f"{result.name} {variant}: verify failed (exit {v.exit_code})"
                for variant, v in (result.verify or {}).items() if not v.passed
                ] + hang_gate(result.name, result.comparisons, result.cells)

    def blocks(self, result: CommandResult, view: View) -> list[Block]:
        base = baseline_of(result)
        if view is View.PAGE:
            return (verify_page(result.verify) + timed_charts(result.model_dump(mode="json"))
                    + metric_page(result) + scans.page(result.scan, result.name, result.cells, base)
                    + profile.page(result.profile, base))
        if view is View.MERGE:
            return why_across(result)
        if view is View.SUMMARY:
            return []
        return ((timed_blocks(result, deadlines=True) if view is View.REPORT else said(result))
                + verify_blocks(result.verify) + scans.blocks(result.scan, base)
                + profile.blocks(result.profile, base, only=shown_cells(result)))


def why_across(result: CommandResult) -> list[Block]:
    """A merged report's cells: each traced cell's syscalls per start and biggest change, each
    scanned variant's exponent."""
    rows = [((result.name, cell), note)
            for cell, note in profile.summary_text(result.profile, baseline_of(result))]
    if result.scan is not None:
        rows += [((result.name, f"{f.variant} exponent"
                   + (f" ({f.condition})" if f.condition else "")),
                  scans.fmt_exponent(f)) for f in result.scan.fits]
    if not rows:
        return []
    return [Across(KIND.name, "Why: syscalls per start and scans", ("scenario", "cell"),
                   "syscalls per start (traced runs) and each scan's power-law exponent with its "
                   "95% CI, per machine", tuple(rows))]


# --- what tells why: the profile, the scan (patchbench/scenarios/profile.py, scan.py) ---


def first_cells(sc: CommandConfig, variants: list[str]) -> list[Cell]:
    """One cell per variant: a scan's first value (the dry run's and verify's)."""
    if sc.scan is None:
        return [Cell(v) for v in variants]
    return [Cell(v, ((sc.scan.name, str(sc.scan.scanned[0])),)) for v in variants]


def why(ctx: ScenarioContext[CommandConfig], sc: CommandConfig, cells: list[Cell]
        ) -> tuple[Profile | None, list[str]]:
    """The traced runs (``profile``), after the timed ones; the warnings of those that failed."""
    if not sc.profile:
        return None, []
    traced, warnings = (profile.trace_cells(ctx, cells, ctx.expand, sc.profile_runs,
                                            oci=oci_cli(ctx), tracer=sc.profile_tracer)
                        if "syscalls" in sc.profile else (Profile(tracer="", runs=[]), []))
    if "cpu" in sc.profile:
        traced.cpu, more = profile.sample_cells(ctx, cells, ctx.expand, sc.profile_runs)
        warnings += more
    return traced, warnings


def plan_why(sc: CommandConfig, variants: int) -> list[str]:
    lines = []
    if sc.scan is not None:
        lines.append(f"  scan: {{{sc.scan.name}}} over {sc.scan.scanned}, each value its own "
                     "cells, interleaved; a fit per variant")
    if sc.bundle is not None:
        lines.append(f"  bundle: {{bundle}} is the scenario's own: {sc.bundle.summary()}")
    cells = variants * (len(sc.scan.scanned) if sc.scan else 1)
    if "syscalls" in sc.profile:
        lines += profile.plan_lines(sc, sc.profile_runs, cells, sc.profile_tracer)
    if "cpu" in sc.profile:
        lines += profile.plan_cpu(sc.profile_runs, cells)
    return lines


def oci_cli(ctx: ScenarioContext[CommandConfig]) -> bool:
    """Whether the command is an OCI runtime CLI's (its start has phases to show)."""
    return ctx.runtime is not None and ctx.runtime.name == "runc"


def baseline_of(result: CommandResult) -> str:
    return result.cells[0].variant if result.cells else ""


def shown_cells(result: CommandResult) -> list[str] | None:
    """report.md's syscall diffs: a scan's at its largest value (report.html has every one)."""
    if result.scan is None or result.profile is None:
        return None
    top = str(max(result.scan.values))
    return [c.label for c in result.cells if c.params.get(result.scan.name) == top]


def scan_result(ctx: ScenarioContext[CommandConfig], sc: CommandConfig,
                cells: list[CellResult]) -> ScanResult | None:
    """The scan's fits from the cells' samples, and its chart (a file report.md links)."""
    if sc.scan is None:
        return None
    res = ScanResult(name=sc.scan.name, values=sc.scan.scanned,
                     fits=scans.fits(sc.scan.name, cells))
    path = ctx.workdir / f"{sc.name}-scan.svg"
    if scans.write_chart(path, res, sc.name, cells):
        res.chart = path.name
        ctx.extra_files[path.name] = path
    return res


KIND: ScenarioKind[CommandConfig, CommandResult] = CommandKind()
