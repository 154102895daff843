"""What every scenario kind shares: the common config keys, the context a kind runs in, the
``ScenarioKind`` interface, and the helpers that turn samples into typed results."""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import Field, model_validator

from patchbench.models import StrictModel

if TYPE_CHECKING:
    from patchbench.bench import Cell, Invocation, Samples
    from patchbench.build import Built
    from patchbench.layout import Layout
    from patchbench.results import Cell as CellResult
    from patchbench.results import Check, ScenarioResult, Verdict
    from patchbench.runtimes import Runtime


class ScenarioConfig(StrictModel):
    """Keys every kind has. ``runs`` must be a multiple of ``rounds`` so that every round runs each
    variant equally often."""

    kind: str
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    description: str = ""
    setup: list[list[str]] = Field(default_factory=list)
    teardown: list[list[str]] = Field(default_factory=list)
    warmup: int = Field(default=3, ge=0)
    runs: int = Field(default=30, ge=1)
    rounds: int = Field(default=5, ge=1)
    timeout: float = Field(default=60.0, gt=0)  # seconds per single run of the command

    @model_validator(mode="after")
    def _balanced(self) -> ScenarioConfig:
        if self.runs % self.rounds:
            raise ValueError(
                f"runs ({self.runs}) must be a multiple of rounds ({self.rounds}) so that every "
                "round runs each variant equally often"
            )
        return self

    def shown_command(self) -> str:
        """The measured command as the report shows it."""
        return ""

    def plan_detail(self) -> str:
        """What ``--dry-run`` adds to the scenario's line (", k = [1, 8]", ...)."""
        return ""


@dataclass
class ScenarioContext:
    """Everything a kind needs to run one scenario of one comparison."""

    scenario: Any  # the kind's own config model
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
        return v

    def expand(self, cell: Cell) -> Invocation:
        """A command-style scenario's invocation for one cell, placeholders filled."""
        from patchbench import bench

        sc = self.scenario
        vals = self.values(self.build_of(cell.variant), cell)
        where = f"scenario {sc.name}"
        return bench.Invocation(
            command=bench.fill_argv(sc.command, vals, where),
            setup=[bench.fill_argv(a, vals, where) for a in sc.setup],
            teardown=[bench.fill_argv(a, vals, where) for a in sc.teardown],
            prepare=bench.fill(sc.prepare, vals, where) if sc.prepare else None,
            cleanup=bench.fill(sc.cleanup, vals, where) if sc.cleanup else None,
        )


class ScenarioKind(Protocol):
    """One kind of scenario: a module in patchbench/scenarios/ registered in KINDS."""

    name: str
    config: ClassVar[type[ScenarioConfig]]

    def plan(self, ctx: ScenarioContext) -> list[str]:
        """The lines ``--dry-run`` prints for this scenario (every command, placeholders filled)."""

    def run(self, ctx: ScenarioContext) -> tuple[ScenarioResult, list[str]]:
        """Measure; return the typed result and the warnings for the report."""

    def gate(self, result: Any) -> list[str]:
        """Why this scenario fails an A/B gate, beyond "significantly slower" (judged for all
        kinds at once, Holm-adjusted); empty when it passes."""


# --- shared helpers -------------------------------------------------------------------------


def header(sc: Any, command: str) -> dict[str, Any]:
    """The fields every scenario result starts with."""
    rate = getattr(sc, "rate", None)
    return {"name": sc.name, "description": sc.description, "command": command, "runs": sc.runs,
            "rounds": sc.rounds, "warmup": sc.warmup,
            "rate": rate.model_dump() if rate is not None else None}


def cell_result(cell: Cell, samples: Samples, seed: int = 0) -> CellResult:
    from patchbench import results, stats

    summ = stats.summarize(samples.times)
    ci = stats.median_ci(samples.times, seed=seed)
    return results.Cell(
        variant=cell.variant, params=dict(cell.params), label=cell.label,
        summary=results.Summary(**summ.__dict__, cv=summ.cv, noisy=summ.noisy,
                                median_ci=list(ci) if ci else None),
        samples=results.Samples(**samples.as_dict()),
    )


def compare_cells(base: Cell, cand: Cell, samples: dict[Cell, Samples], ctx: ScenarioContext,
                  ) -> Verdict:
    """The round-paired verdict (patchbench.verdict), the pooled figures kept as descriptive."""
    from patchbench import results, verdict

    b, c = samples[base], samples[cand]
    rec = verdict.record(b.times, b.rounds, c.times, c.rounds, alpha=ctx.alpha,
                         min_effect=ctx.min_effect, seed=ctx.seed)
    params = " ".join(f"{k}={v}" for k, v in base.params)
    return results.Verdict(baseline=base.label, candidate=cand.label,
                           candidate_variant=cand.variant, params=params, **rec)


def verdict_warnings(name: str, comparisons: list[Verdict]) -> list[str]:
    """A withheld verdict (too few rounds) and drift between blocks, per comparison."""
    from patchbench import verdict

    return [w for c in comparisons
            for w in verdict.notes(f"{name} {c.candidate}", c.model_dump(mode="json"))]


def noisy_warnings(name: str, cells: list[CellResult]) -> list[str]:
    return [f"{name} {c.label}: noisy samples (σ is {c.summary.cv:.0%} of the mean)"
            for c in cells if c.summary.noisy]


def run_verify(ctx: ScenarioContext, cells: list[Cell], argv_template: list[str]
               ) -> dict[str, Check]:
    """Run a check once per variant; a failing or hanging check is a finding, kept and shown."""
    from patchbench import bench, command, results
    from patchbench.errors import PatchbenchError

    out: dict[str, Check] = {}
    sc = ctx.scenario
    for cell in cells:
        argv = bench.fill_argv(argv_template, ctx.values(ctx.build_of(cell.variant), cell),
                               sc.name)
        try:
            res = command.run(argv, timeout=sc.timeout * 10, check=False)
        except PatchbenchError as exc:
            out[cell.variant] = results.Check(command=shlex.join(argv), exit_code=None,
                                              passed=False, output=exc.message)
            continue
        out[cell.variant] = results.Check(
            command=shlex.join(argv), exit_code=res.returncode, passed=res.returncode == 0,
            output=(res.stdout.strip() or res.stderr.strip())[-2000:])
    return out


def plan_invocation(ctx: ScenarioContext, cell: Cell, verify: list[str] | None = None
                    ) -> list[str]:
    """Dry-run lines of one command-style cell: setup, measure, prepare, cleanup, teardown."""
    from patchbench import bench

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
