"""What every scenario kind shares: the context a kind runs in, the ``ScenarioKind`` interface,
and the helpers that turn samples into typed results (the config keys every kind has are
``ScenarioConfig`` in patchbench/config/scenarios.py)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

from patchbench import results
from patchbench.analysis import metrics, paired, sequential, stats, verdict
from patchbench.config.scenarios import ScenarioConfig, TimedConfig
from patchbench.errors import ConfigError, PatchbenchError
from patchbench.measure import bench, hangs
from patchbench.measure.bench import Cell, Invocation, Samples
from patchbench.report.blocks import Block, View
from patchbench.results import Cell as CellResult
from patchbench.results import Check, Hangs, HangTest, ScenarioResult, Verdict
from patchbench.scenarios.steps import StepRule
from patchbench.util import cmd
from patchbench.util.cmd import Background
from patchbench.util.layout import Layout

if TYPE_CHECKING:  # types only: `invoke list` imports neither the builds nor the runtimes
    from patchbench.build import Built
    from patchbench.runtimes import Runtime
    from patchbench.runtimes.containerd import ContainerdDaemon, ContainerdRuntime

# a context is of one kind's config model (covariant: a helper that reads only the keys every
# kind has takes a ScenarioContext[ScenarioConfig])
ConfigT = TypeVar("ConfigT", bound=ScenarioConfig, covariant=True)
# a kind's config and result, as the ScenarioKind protocol sees them
KindConfig = TypeVar("KindConfig", bound=ScenarioConfig, contravariant=True)
KindResult = TypeVar("KindResult", bound=ScenarioResult)


@dataclass(kw_only=True)
class ScenarioContext(Generic[ConfigT]):
    """Everything a kind needs to run one scenario of one comparison (by keyword)."""

    scenario: ConfigT  # the kind's own config model
    built: list[Built]
    runtime: Runtime | None
    workdir: Path
    seed: int
    layout: Layout
    project_root: Path
    alpha: float
    min_effect: float
    extra_files: dict[str, Path] = field(default_factory=dict)  # copied into the report folder
    # names instances when no runtime does ({id}); stress counts listed names with this prefix
    token: str = field(default_factory=lambda: secrets.token_hex(3))
    # --until-ci or --budget: the stopping rule, and how each set of rounds ended
    # (scenarios/stopping.py)
    until: sequential.UntilCI | sequential.Budget | None = None
    stops: list[results.Stopping] = field(default_factory=list)
    # --budget and --gate: the level of each set's looks, by condition ("" without conditions):
    # each set's comparisons are judged at the level its own looks were taken at
    alphas: dict[str, float] = field(default_factory=dict)
    # the gate's metrics (the comparison's ``gate`` or --gate-metric): the first of the metrics'
    # family (patchbench.analysis.metrics.family); empty: wall time
    gate_metrics: tuple[str, ...] = ()
    # a kind's own placeholders of a cell, over the others (a scenario's bundle names {bundle})
    extra: Callable[[Cell], Mapping[str, str]] | None = None

    def build_of(self, variant: str) -> Built:
        return next(b for b in self.built if b.variant.name == variant)

    def values(self, b: Built, cell: Cell) -> dict[str, str]:
        """The placeholders of a variant's commands: {bin}, {work}, {variant}, {project}, {id},
        one per artifact ({runc}, {slowstart}, ...), the runtime's, and the cell's parameters."""
        v = {"bin": str(b.bin), "work": str(self.workdir), "variant": b.variant.name,
             "project": str(self.project_root), "id": f"pb-{self.token}-{b.variant.name}+"}
        for art in b.manifest["artifacts"]:
            v.setdefault(art.replace("-", "_").replace(".", "_"), str(b.bin / art))
        if self.runtime is not None:
            v.update(self.runtime.placeholders(b.variant.name, b.bin))
        v.update({"i": "{i}", "round": "{round}"})  # filled per instance by burst and stress
        v.update(dict(cell.params))
        if self.extra is not None:
            v.update(self.extra(cell))
        return v

    def each_build(self) -> list[tuple[Built, dict[str, str]]]:
        """Every build with its placeholders (of a cell without parameters)."""
        return [(b, self.values(b, Cell(b.variant.name))) for b in self.built]

    def expand(self: ScenarioContext[TimedConfig], cell: Cell) -> Invocation:
        """A command-style scenario's invocation for one cell, placeholders filled."""
        sc = self.scenario
        vals = self.values(self.build_of(cell.variant), cell)
        where = f"scenario {sc.name}"
        return bench.Invocation(
            command=bench.fill_argv(sc.command, vals, where),
            setup=[bench.fill_argv(a, vals, where) for a in sc.setup],
            teardown=[bench.fill_argv(a, vals, where) for a in sc.teardown],
            prepare=bench.fill(sc.prepare, vals, where) if sc.prepare else None,
            cleanup=bench.fill(sc.cleanup, vals, where) if sc.cleanup else None,
            metrics=tuple(sc.metric_names),
        )


class ScenarioKind(Protocol[KindConfig, KindResult]):
    """One kind of scenario: a module in patchbench/scenarios/ registered in KINDS, of its config
    model (patchbench.config.scenarios) and its result model (defined in its module, registered
    for results.json by patchbench.scenarios.register)."""

    name: ClassVar[str]
    config: ClassVar[type[ScenarioConfig]]
    result: ClassVar[type[ScenarioResult]]  # registered for results.json's ``kind`` (results.register)
    # how a bisect or history step judges its results, commit against commit (scenarios/steps.py);
    # None: a kind that cannot be bisected
    step: ClassVar[StepRule | None]

    def plan(self, ctx: ScenarioContext[KindConfig]) -> list[str]:
        """The lines ``--dry-run`` prints for this scenario (every command, placeholders filled)."""

    def run(self, ctx: ScenarioContext[KindConfig]) -> tuple[KindResult, list[str]]:
        """Measure; return the typed result and the warnings for the report."""

    def gate(self, result: KindResult) -> list[str]:
        """Why this scenario fails an A/B gate beyond its times (which patchbench.gate calls for
        every kind against the margin, patchbench.analysis.gating): a failed check, hangs,
        leftovers; empty when it passes."""

    def blocks(self, result: KindResult, view: View) -> list[Block]:
        """How this scenario is shown (pytest's report hooks): its part of report.md after its
        header and (a timed kind) its cells' detail table, the same without round-paired details
        and hangs (what ``compare`` prints), its part of report.html, its table rows of a CI job
        summary (Table blocks; the rows of all scenarios with the same headers are one table),
        its cells of a merged report (Across blocks); an empty list: nothing."""


class Kind:
    """What each kind's class declares in its class line (``class X(Kind, name=..., ...)``):
    its name, its config and result models, and its step rule (None: bisect and history do not
    judge it)."""

    name: ClassVar[str]
    config: ClassVar[type[ScenarioConfig]]
    result: ClassVar[type[ScenarioResult]]
    step: ClassVar[StepRule | None]

    def __init_subclass__(cls, *, name: str, config: type[ScenarioConfig],
                          result: type[ScenarioResult], step: StepRule | None = None) -> None:
        super().__init_subclass__()
        cls.name, cls.config, cls.result, cls.step = name, config, result, step


# --- shared helpers -------------------------------------------------------------------------


def header(sc: Any, command: str) -> dict[str, Any]:
    """The fields every scenario result starts with."""
    rate = getattr(sc, "rate", None)
    return {"name": sc.name, "description": sc.description, "command": command, "runs": sc.runs,
            "rounds": sc.rounds, "warmup": sc.warmup,
            "block_warmup": getattr(sc, "block_warmup", 0),
            "rate": rate.model_dump() if rate is not None else None}


def cell_result(cell: Cell, samples: Samples, seed: int = 0, hangs: Hangs | None = None
                ) -> CellResult:
    """A cell's summary and raw samples. Its timing statistics are of the runs that finished;
    runs past their deadline are counted in ``hangs``. A cell whose every run hung has no
    timing: its summary is of no runs (n 0, NaN figures)."""
    if samples.times:
        summ = stats.summarize(samples.times)
        ci = stats.median_ci(samples.times, seed=seed)
        summary = results.Summary(**summ.__dict__, cv=summ.cv, noisy=summ.noisy,
                                  median_ci=list(ci) if ci else None)
    else:  # no timing at all: every figure has no value (NaN; null in results.json)
        nan = float("nan")
        summary = results.Summary(n=0, median=nan, mean=nan, stdev=nan, min=nan, max=nan,
                                  cv=nan, noisy=False, median_ci=None)
    return results.Cell(
        variant=cell.variant, params=dict(cell.params), label=cell.label, summary=summary,
        samples=results.Samples(**samples.as_dict()), hangs=hangs,
    )


def hang_test(base: Samples, cand: Samples) -> HangTest:
    """The candidate's hangs against the baseline's, by Fisher's exact test."""
    cmp = hangs.compare_hangs(hangs.HangCount("baseline", len(base.hung_times), base.runs),
                              hangs.HangCount("candidate", len(cand.hung_times), cand.runs))
    return results.HangTest(hangs=len(cand.hung_times), runs=cand.runs,
                            baseline_hangs=len(base.hung_times), baseline_runs=base.runs,
                            p_value=cmp.p_value, p_more=cmp.p_more)


def compare_cells(base: Cell, cand: Cell, samples: dict[Cell, Samples], ctx: ScenarioContext[ScenarioConfig],
                  *, deadline: bool = False, order: Sequence[Sequence[str]] = ()) -> Verdict:
    """The round-paired verdict (patchbench.analysis.verdict), the pooled figures kept as descriptive;
    with ``deadline`` (runs had one each), the hang counts tested against the baseline; ``order``
    (the cells' labels per round, as run) tells how neighbouring rounds share noise."""
    b, c = samples[base], samples[cand]
    params = " ".join(f"{k}={v}" for k, v in base.params)
    if not set(b.rounds) & set(c.rounds):  # every run of one of them hung (or no round shared)
        return results.Verdict(
            baseline=base.label, candidate=cand.label, candidate_variant=cand.variant,
            params=params, speedup=float("nan"), ci_low=None, ci_high=None, p_value=None,
            verdict=str(paired.Verdict.WITHHELD), alpha=ctx.alpha, min_effect=ctx.min_effect,
            method=paired.METHOD, rounds=0,
            min_rounds=stats.MIN_ROUNDS,
            note="verdict withheld: no round has finished runs of both variants",
            hangs=hang_test(b, c) if deadline else None)
    signs = paired.neighbour_signs(order, base.label, cand.label) if order else None
    alpha = ctx.alphas.get(base.param("condition") or "", ctx.alpha)
    sc = ctx.scenario
    chosen = ({n: sc.metric_min_effect(n, ctx.min_effect) for n in sc.metric_names}
              if isinstance(sc, TimedConfig) else None)
    judged = verdict.judge(b, c, alpha=alpha, min_effect=ctx.min_effect, seed=ctx.seed,
                           signs=signs, metrics=chosen, gated=ctx.gate_metrics or (metrics.WALL,))
    mets = ({n: results.MetricVerdict(**m) for n, m in judged.metrics.items()}
            if chosen is not None else None)
    return results.Verdict(baseline=base.label, candidate=cand.label,
                           candidate_variant=cand.variant, params=params,
                           hangs=hang_test(b, c) if deadline else None,
                           metrics=mets, **judged.record)


def verdict_warnings(name: str, comparisons: list[Verdict]) -> list[str]:
    """A withheld verdict (too few rounds) and drift between blocks, per comparison."""
    return [w for c in comparisons
            for w in verdict.notes(f"{name} {c.candidate}", c.model_dump(mode="json"))]


def noisy_warnings(name: str, cells: list[CellResult]) -> list[str]:
    return [f"{name} {c.label}: noisy samples (σ is {c.summary.cv:.0%} of the mean)"
            for c in cells if c.summary.noisy]


def run_verify(ctx: ScenarioContext[ScenarioConfig], cells: list[Cell], argv_template: list[str]
               ) -> dict[str, Check]:
    """Run a check once per variant; a failing or hanging check is a finding, kept and shown."""
    out: dict[str, Check] = {}
    sc = ctx.scenario
    for cell in cells:
        argv = bench.fill_argv(argv_template, ctx.values(ctx.build_of(cell.variant), cell),
                               sc.name)
        try:
            res = cmd.run(argv, timeout=sc.timeout * 10, check=False)
        except PatchbenchError as exc:
            out[cell.variant] = results.Check(command=shlex.join(argv), exit_code=None,
                                              passed=False, output=exc.message)
            continue
        out[cell.variant] = results.Check(
            command=shlex.join(argv), exit_code=res.returncode, passed=res.returncode == 0,
            output=output_tail(res.stdout, res.stderr))
    return out


VERIFY_LINES, VERIFY_CHARS = 40, 4000  # what a check keeps of its output: its end


def output_tail(stdout: str, stderr: str) -> str:
    """The last lines of a program's output, stdout then stderr (where a traceback ends), cut at
    the start, never at the end (its last line is the one that says what failed)."""
    lines = [*stdout.rstrip().splitlines(), *stderr.rstrip().splitlines()]
    tail = lines[-VERIFY_LINES:]
    while tail and len("\n".join(tail)) > VERIFY_CHARS:
        tail = tail[1:]
    if not tail and lines:  # one line longer than the limit: its end
        return "…" + lines[-1][-VERIFY_CHARS:]
    return ("…\n" if len(tail) < len(lines) else "") + "\n".join(tail)


def plan_steps(tag: str, steps: Sequence[tuple[str, Sequence[str]]], vals: Mapping[str, str],
               where: str) -> list[str]:
    """Dry-run lines: each step's label and its command, placeholders filled."""
    return [f"{tag} {label + ':':<9} {shlex.join(bench.fill_argv(list(argv), dict(vals), where))}"
            for label, argv in steps]


def plan_invocation(ctx: ScenarioContext[TimedConfig], cell: Cell, verify: list[str] | None = None
                    ) -> list[str]:
    """Dry-run lines of one command-style cell: setup, measure, prepare, cleanup, teardown."""
    inv = ctx.expand(cell)
    tag = f"[{cell.variant}]"
    lines = [f"  {tag} setup:    {shlex.join(a)}" for a in inv.setup]
    lines.append(f"  {tag} measure:  {shlex.join(inv.command)}")
    if inv.prepare:
        lines.append(f"  {tag} prepare:  {inv.prepare}")
    if inv.cleanup:
        lines.append(f"  {tag} cleanup:  {inv.cleanup}")
    lines += [f"  {tag} teardown: {shlex.join(a)}" for a in inv.teardown]
    if verify:
        vals = ctx.values(ctx.build_of(cell.variant), cell)
        lines.append(f"  {tag} verify:   "
                     + shlex.join(bench.fill_argv(verify, vals, ctx.scenario.name)))
    return lines


# --- per-run deadlines: evidence and the gate rule (command, burst, soak) ---------------------


def needs_runtime(ctx: ScenarioContext[ScenarioConfig], name: str, what: str,
                  hint: str | None = None) -> Runtime:
    """The context's runtime, which ``what`` needs to be ``name`` (ConfigError otherwise); by
    name, not isinstance, so that a stand-in of the same name (a unit test's fake) serves too."""
    rt = ctx.runtime
    if rt is None or rt.name != name:
        raise ConfigError(f"scenario {ctx.scenario.name}: {what} needs a target with "
                          f"'runtime: {name}'", hint=hint)
    return rt


def containerd_runtime(ctx: ScenarioContext[ScenarioConfig]) -> ContainerdRuntime:
    """The runtime the containerd kinds (layers, ctrstress) need."""
    return cast("ContainerdRuntime",
                needs_runtime(ctx, "containerd", f"the {ctx.scenario.kind} kind"))


def planned_daemons(ctx: ScenarioContext[ScenarioConfig]) -> list[tuple[Built, ContainerdDaemon]]:
    """Each build with the containerd daemon the runtime gives it (for ``--dry-run``: not
    started)."""
    rt = containerd_runtime(ctx)
    return [(b, rt.daemon_for(b.variant.name, b.bin)) for b in ctx.built]


def redacted_copy(src: Path, dest: Path, ctx: ScenarioContext[ScenarioConfig]) -> None:
    """Copy a text file for the report folder with this machine's paths replaced by names."""
    text = src.read_text()
    for path, name in ((str(ctx.workdir), "<run>"), (str(ctx.layout.builds), "<builds>"),
                       (str(ctx.project_root), "<project>")):
        text = text.replace(path, name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)


def evidence_dir(ctx: ScenarioContext[ScenarioConfig], cell: Cell) -> Path:
    """Where the launcher saves the hang evidence of one cell's runs."""
    slug = cell.label.replace(" ", "_").replace("=", "")
    return ctx.workdir / f"{ctx.scenario.name}-evidence" / slug


def deadline_flags(ctx: ScenarioContext[ScenarioConfig], cell: Cell, deadline: float) -> list[str]:
    """The launcher's options for a per-run deadline with the cell's evidence folder."""
    return ["-deadline", f"{deadline:g}s", "-evidence", str(evidence_dir(ctx, cell))]


def report_evidence(ctx: ScenarioContext[ScenarioConfig], files: list[Path], prefix: str,
                    summary: list[str]) -> tuple[list[str], int]:
    """Copy hang evidence into the report folder (paths redacted), append a readable account of
    each hang to ``summary``; return the names in the report folder and how many show the
    lost-SIGCHLD signature."""
    names, lost = [], 0
    for path in files:
        name = f"{prefix}-{path.name}"
        copy = ctx.workdir / f"{ctx.scenario.name}-evidence-report" / name
        redacted_copy(path, copy, ctx)
        ctx.extra_files[name] = copy
        names.append(name)
        ev = hangs.load_evidence_file(path)
        lost += ev.lost_sigchld
        summary += [f"## {prefix}: {name}", hangs.describe(ev), ""]
    return names, lost


def evidence_summary(ctx: ScenarioContext[ScenarioConfig], summary: list[str]) -> str | None:
    """Write the readable account of every hang (if any) for the report folder; its name."""
    if not summary:
        return None
    name = f"{ctx.scenario.name}-hangs.txt"
    text = ctx.workdir / name
    text.write_text("\n".join(summary) + "\n")
    red = ctx.workdir / f"{ctx.scenario.name}-evidence-report" / name
    redacted_copy(text, red, ctx)
    ctx.extra_files[name] = red
    return name


def cell_hangs(ctx: ScenarioContext[ScenarioConfig], cell: Cell, samples: Samples, deadline: float,
               summary: list[str]) -> Hangs:
    """A cell's "hangs: N of M" with its evidence (warmup hangs leave evidence too, and are
    named with the rest)."""
    d = evidence_dir(ctx, cell)
    files = sorted(d.glob(hangs.EVIDENCE_GLOB)) if d.is_dir() else []
    slug = cell.label.replace(" ", "_").replace("=", "")
    names, lost = report_evidence(ctx, files, f"{ctx.scenario.name}-{slug}", summary)
    return results.Hangs(hangs=len(samples.hung_times), runs=samples.runs, deadline_s=deadline,
                         evidence=names, lost_sigchld=lost,
                         warmup_hangs=max(0, len(files) - len(samples.hung_times)))


def hang_gate(name: str, comparisons: list[Verdict], cells: list[CellResult]) -> list[str]:
    """The gate rule for runs with deadlines: any hang of a candidate fails, in a measured run or
    in a warmup run (hyperfine records no warmup exit codes; the evidence counts them); the
    baseline's count and Fisher's p are named beside it, and a baseline's own hangs never fail."""
    by_label = {c.label: c for c in cells}
    out = []
    for c in comparisons:
        h = c.hangs
        cell = by_label.get(c.candidate)
        warm = cell.hangs.warmup_hangs if cell is not None and cell.hangs is not None else 0
        if h is not None and h.hangs:
            out.append(f"{name} {c.candidate}: hangs: {h.hangs} of {h.runs} (baseline "
                       f"{h.baseline_hangs} of {h.baseline_runs}; Fisher p {h.p_value:.2g})")
        if warm:
            out.append(f"{name} {c.candidate}: {warm} warmup run{'s' if warm != 1 else ''} hung")
    return out


def wait_or_capture(procs: Sequence[Background], timeout: float,
                    argv_of: Callable[[int], list[str]], directory: Path, started: float,
                    ) -> tuple[list[int | None], list[str]]:
    """Wait for launched instances with one deadline shared by all (``timeout`` from now); an
    instance still running then is a hang: its evidence is saved (``hangs.capture``) and every
    process of its tree killed, also those that left its process group. Returns the exit codes
    (None: hung) and the evidence files' names."""
    end = time.monotonic() + timeout
    codes = [p.wait(max(0.0, end - time.monotonic())) for p in procs]
    evidence = []
    for i, (p, code) in enumerate(zip(procs, codes, strict=True)):
        if code is None:
            path = hangs.capture(p.proc.pid, argv_of(i), i, timeout,
                                 time.monotonic() - started, directory)
            evidence.append(path.name)
            for pid in hangs.load_evidence_file(path).killed:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
    return codes, evidence


def hang_warnings(name: str, cells: list[CellResult]) -> list[str]:
    return [f"{name} {c.label}: hangs: {c.hangs.text} (runs past the {c.hangs.deadline_s:g} s "
            "deadline, killed and left out of the timing)"
            for c in cells if c.hangs is not None and (c.hangs.hangs or c.hangs.warmup_hangs)]
