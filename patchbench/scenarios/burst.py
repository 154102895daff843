"""The ``burst`` kind: k copies of a command launched at one moment by the launcher, timed until the
last one exits, for each k, every (build, k) cell interleaved in rounds; each instance's own
latency and the launcher's own overhead are kept, and ``phases`` times each step of an
instance's start. Every instance has its own deadline; a run with a hung instance counts as a
hang, out of the timing. docs/scenarios.md#burst."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from patchbench import results
from patchbench.analysis import stats
from patchbench.config.scenarios import TimedConfig
from patchbench.errors import BenchmarkError
from patchbench.measure import bench, launcher
from patchbench.measure.bench import Cell, Invocation
from patchbench.report import charts
from patchbench.report.blocks import MARKDOWN, Block, Image, View, table, text
from patchbench.report.kind_blocks import k_chart, k_tables, timed_blocks, timed_charts
from patchbench.report.metric_blocks import metric_page
from patchbench.report.numbers import fmt_ratio, fmt_time
from patchbench.results import (
    Figure,
    Instances,
    Record,
    ScenarioUpgrade,
    TimedResult,
)
from patchbench.scenarios.base import (
    Kind,
    ScenarioContext,
    ScenarioKind,
    hang_gate,
    header,
    plan_invocation,
)
from patchbench.scenarios.command import (
    measure_cells,
    plan_deadline,
    timed_results,
    with_deadline,
)
from patchbench.util import cmd, progress
from patchbench.util.models import Name, StrictModel

# --- the config: the keys matrix.yaml gives this kind (registered by patchbench.scenarios) ---


class Phase(StrictModel):
    """One step of an instance's start, timed on its own."""

    name: Name = Field(description="The phase's name in the phase table.")
    command: list[str] = Field(min_length=1, description=(
        "The phase's command (argv, placeholders filled; `{i}` is the instance, `{k}` the count)."))


class BurstConfig(TimedConfig):
    """k instances of `command` launched at one moment, for each k; the time until the last
    exits is measured. Takes no `conditions`."""

    kind: Literal["burst"] = Field(default="burst", description="`burst`.")
    k: list[Annotated[int, Field(ge=1)]] = Field(min_length=1, description=(
        "The instance counts to scan; each k is its own cell (`{k}`; `{i}` is the instance)."))
    phases: list[Phase] = Field(default_factory=list, description=(
        "After timing, launch k instances whose start is split into these phases, run one after "
        "the other, and report each phase's median (for targets whose logs cannot time phases)."))
    phase_k: list[Annotated[int, Field(ge=1)]] = Field(default_factory=list, description=(
        "The instance counts the phases are timed at (needed with `phases`)."))
    phase_runs: int = Field(default=3, ge=1, description="Phase launches per variant and k.")
    block_warmup: int = Field(default=0, ge=0, le=100, description=(
        "Runs that begin every block, recorded apart and never timed (see the command kind); "
        "0 by default here: a burst's run is k instances at once, seconds long, so a warm-up "
        "per block would cost a whole burst for a first-run cost that is a small part of it."))


    @model_validator(mode="after")
    def _phases(self) -> BurstConfig:
        if self.phases and not self.phase_k:
            raise ValueError("'phases' need 'phase_k', the instance counts to time them at")
        if self.conditioned:
            raise ValueError("a burst scan takes no 'conditions' (its table is per k); use a "
                             "command or soak scenario for conditions")
        return self


    def plan_detail(self) -> str:
        return f", k = {self.k}"

    def cells_per_variant(self) -> int:
        return len(self.k)  # one cell per k (no conditions)


# --- the result: this kind's part of results.json (registered by patchbench.scenarios) ---


class PhaseCell(Record):
    median: dict[str, float]
    total_median: float
    durations: list[list[float]]


def upgrade_v1(sc: dict[str, Any]) -> dict[str, Any]:
    """A version 1 burst scenario as version 2: its phases' names, in the order they ran."""
    if sc.get("phases"):
        first = next(iter(sc["phases"].values()))
        cell = next(iter(first.values()))
        sc["phase_names"] = list(cell["median"])
    return sc


class BurstResult(TimedResult):
    kind: Literal["burst"] = "burst"
    k: list[int]
    slope_s_per_instance: dict[str, Figure]  # NaN (null): a k whose every run hung
    launcher_overhead: dict[str, float]
    chart: str | None = None
    phases: dict[str, dict[str, PhaseCell]] | None = None
    phase_names: list[str] = Field(default_factory=list)

    upgrades: ClassVar[Mapping[int, ScenarioUpgrade]] = {1: upgrade_v1}


OVERHEAD_VARIANT = "launcher-overhead"


def _lat_file(ctx: ScenarioContext[BurstConfig], cell: Cell) -> Path:
    return ctx.workdir / f"{ctx.scenario.name}-latencies" / f"{cell.variant}-k{cell.param('k')}.jsonl"


class BurstKind(Kind, name="burst", config=BurstConfig, result=BurstResult):
    def plan(self, ctx: ScenarioContext[BurstConfig]) -> list[str]:
        sc: BurstConfig = ctx.scenario
        lines = []
        for b in ctx.built:
            lines += plan_invocation(ctx, Cell(b.variant.name, (("k", str(sc.k[0])),)))
        return lines + plan_deadline(sc)

    def run(self, ctx: ScenarioContext[BurstConfig]) -> tuple[BurstResult, list[str]]:
        sc: BurstConfig = ctx.scenario
        exe = launcher.build(ctx.layout)
        (ctx.workdir / f"{sc.name}-latencies").mkdir(parents=True, exist_ok=True)

        def expand(cell: Cell) -> Invocation:
            if cell.variant == OVERHEAD_VARIANT:
                return Invocation(command=[str(exe), "-k", cell.param("k") or "1", "--", "true"])
            return with_deadline(ctx, exe, cell, ctx.expand(cell),
                                 ["-k", cell.param("k") or "1", "-o", str(_lat_file(ctx, cell))])

        variants = [b.variant.name for b in ctx.built]
        cells = [Cell(v, (("k", str(k)),)) for v in variants for k in sc.k]
        samples, order = measure_cells(ctx, cells, expand, sc)
        # the launcher's own cost, measured the same way (k copies of `true`)
        over_cells = [Cell(OVERHEAD_VARIANT, (("k", str(k)),)) for k in sc.k]
        over_sc = sc.model_copy(update={"name": f"{sc.name}-overhead", "setup": [],
                                        "teardown": [], "prepare": None, "cleanup": None})
        over, _ = measure_cells(ctx, over_cells, expand, over_sc)

        cell_results, comparisons, ev_summary, warnings = timed_results(ctx, cells, samples, order)
        for c, res in zip(cells, cell_results, strict=True):
            res.instances = _instances(_lat_file(ctx, c))
            # a run with a hung instance exits 124 as a whole: say what else failed in it
            failed = sorted({x for x in res.instances.exit_codes if x not in (0, 124)})
            if failed:
                warnings.append(f"{sc.name} {c.label}: instances failed (exit codes {failed}) "
                                "in runs counted as hangs (or in warmup runs)")
        medians = {(c.variant, int(c.param("k") or 1)): r.summary.median  # NaN: every run hung
                   for c, r in zip(cells, cell_results, strict=True)}
        overhead = {str(k): stats.summarize(over[Cell(OVERHEAD_VARIANT, (("k", str(k)),))].times
                                            ).median for k in sc.k}

        chart = ctx.workdir / f"{sc.name}.svg"
        charts.burst(chart, sc.k, variants, medians, sc.name)
        ctx.extra_files[chart.name] = chart
        phases = measure_phases(ctx, exe, variants) if sc.phases else None
        result = BurstResult(
            **header(sc, sc.shown_command()), k=sc.k, order=order, cells=cell_results,
            comparisons=comparisons,
            slope_s_per_instance={v: stats.slope(sc.k, [medians[(v, k)] for k in sc.k])
                                  for v in variants},
            launcher_overhead=overhead, chart=chart.name, phases=phases,
            phase_names=[p.name for p in sc.phases], deadline_s=sc.timeout,
            evidence_summary=ev_summary, metrics=sc.metric_names)
        base_k1 = medians.get((variants[0], min(sc.k)))
        worst = max(overhead.values())
        if base_k1 and worst > 0.25 * base_k1:
            warnings.append(
                f"{sc.name}: launcher overhead (up to {worst * 1e3:.1f} ms) is large against the "
                f"k={min(sc.k)} time ({base_k1 * 1e3:.1f} ms)")
        return result, warnings

    def gate(self, result: BurstResult) -> list[str]:
        return hang_gate(result.name, result.comparisons, result.cells)

    def blocks(self, result: BurstResult, view: View) -> list[Block]:
        if view is View.PAGE:
            return page(result)
        return report(result, details=view is View.REPORT) if view in MARKDOWN else []


def report(result: BurstResult, *, details: bool) -> list[Block]:
    """The seed report's shape: k | baseline | candidate | speedup, plus launcher overhead;
    the chart file; the phase medians."""
    sc = result
    variants = list(sc.slope_s_per_instance)
    cells = {c.label: c for c in sc.cells}
    comps = {c.candidate: c for c in sc.comparisons}
    rows = []
    for k in sc.k:
        row: list[str] = [str(k)]
        row += [fmt_time(cells[f"{v} k={k}"].summary.median) for v in variants]
        row += [fmt_ratio(comps[f"{v} k={k}"]) for v in variants[1:]]
        row.append(fmt_time(sc.launcher_overhead[str(k)]))
        rows.append(row)
    slope = ", ".join(f"{v} {s * 1e3:.2f} ms" for v, s in sc.slope_s_per_instance.items())
    out = [*(timed_blocks(sc, deadlines=True) if details else []),
           table(["k at once", *variants, *[f"speedup {v} [95% CI]" for v in variants[1:]],
                  "launcher overhead"], rows),
           text("Slope (seconds per extra instance, least squares over median times): "
                f"{slope}.")]
    if sc.chart:
        out.append(Image(sc.chart, "time against k"))
    if sc.phases:
        names = sc.phase_names
        prows = [[variant, k, *[fmt_time(res.median.get(n)) for n in names],
                  fmt_time(res.total_median)]
                 for variant, per_k in sc.phases.items() for k, res in per_k.items()]
        out += [text("Median phase times (every instance of every run):"),
                table(["build", "k", *names, "total"], prows)]
    return out


def page(result: BurstResult) -> list[Block]:
    """The k table (a "-" where a cell is missing), the slopes, the phases; the charts."""
    sc = result
    data = sc.model_dump(mode="json")
    return [*k_tables(KIND.name, sc.k, sc.cells, sc.comparisons, overhead=sc.launcher_overhead,
                      slopes=sc.slope_s_per_instance, phases=sc.phases,
                      phase_names=sc.phase_names),
            *timed_charts(data), k_chart(KIND.name, data), *metric_page(sc)]


def measure_phases(ctx: ScenarioContext[BurstConfig], exe: Path, variants: list[str]
                   ) -> dict[str, dict[str, PhaseCell]]:
    """Launch k instances whose start is split into the scenario's phases (run one after the
    other per instance), ``phase_runs`` times per (build, k) in a seeded shuffled order; return,
    per build and k, each phase's median over every instance and run, and the raw durations."""
    sc: BurstConfig = ctx.scenario
    cells = [Cell(v, (("k", str(k)),)) for v in variants for k in sc.phase_k]
    order = bench.schedule(cells, sc.phase_runs, ctx.seed + 1)
    log = ctx.workdir / f"{sc.name}.phases.log"
    raw: dict[Cell, list[list[float]]] = {c: [] for c in cells}
    for r, round_cells in enumerate(order, 1):
        for cell in round_cells:
            values = {**ctx.values(ctx.build_of(cell.variant), cell), "round": str(r)}
            argv: list[str] = []
            for phase in sc.phases:
                argv += ["--then", *bench.fill_argv(phase.command, values, sc.name)]
            out_file = ctx.workdir / f"{sc.name}.phases.{cell.variant}.k{cell.param('k')}.r{r}.json"
            cmd.run([exe, "-k", cell.param("k") or "1", "-o", out_file, "--", *argv[1:]],
                        log=log, timeout=sc.timeout * len(sc.phases) + 30, error=BenchmarkError,
                        what=f"{sc.name} phases {cell.label} run {r}")
            rec = json.loads(out_file.read_text().splitlines()[-1])
            raw[cell] += rec["phases"]
            progress.step(f"phases {cell.label}", f"run {r}: done")
    out: dict[str, dict[str, PhaseCell]] = {}
    for cell, rows in raw.items():
        per_phase = {p.name: [row[n] for row in rows if len(row) > n]
                     for n, p in enumerate(sc.phases)}
        out.setdefault(cell.variant, {})[cell.param("k") or "1"] = PhaseCell(
            median={name: stats.summarize(v).median for name, v in per_phase.items() if v},
            total_median=stats.summarize([sum(row) for row in rows]).median,
            durations=rows)
    return out


def _instances(path: Path) -> Instances:
    """Per-instance latencies the launcher recorded for one cell (all runs, warmups included)."""
    lat: list[float] = []
    codes: list[int] = []
    if path.is_file():
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            hung = rec.get("hung") or [False] * len(rec["latencies"])
            # a hung instance's "latency" is its deadline: counted as a hang, never timed
            lat += [x for x, h in zip(rec["latencies"], hung, strict=True) if not h]
            codes += rec["exit_codes"]
    return results.Instances(latencies=lat, exit_codes=codes,
                             median=stats.summarize(lat).median if lat else None)


KIND: ScenarioKind[BurstConfig, BurstResult] = BurstKind()
