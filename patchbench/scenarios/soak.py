"""The ``soak`` kind: thousands of short runs, each with its own deadline, because rare hangs and
lost signals show in a few runs of every thousand; timing is incidental. Every round runs one
block of runs of each variant through the launcher, in a seeded order, per condition; it counts
hangs (with their evidence, patchbench.measure.hangs), failures, escaped processes and
leftovers, and the gate fails a candidate that hangs, leaves anything behind, lets a process
escape or fails significantly more often than the baseline. docs/scenarios.md#soak."""

from __future__ import annotations

import json
import shlex
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from patchbench.analysis import stats
from patchbench.config.scenarios import ScenarioConfig
from patchbench.errors import BenchmarkError
from patchbench.measure import bench, conditions, hangs, launcher
from patchbench.measure.bench import Cell
from patchbench.measure.conditions import DEFAULT, Applied, Condition
from patchbench.measure.hangs import HANG_EXIT_CODE
from patchbench.report.blocks import (
    MARKDOWN,
    Block,
    Code,
    Inline,
    Link,
    Output,
    View,
    bullets,
    heading,
    table,
    text,
)
from patchbench.report.kind_blocks import account, links, lost_sigchld
from patchbench.report.numbers import fmt_p, fmt_time
from patchbench.results import Record, ScenarioResult
from patchbench.scenarios import base as common
from patchbench.scenarios.base import Kind, ScenarioContext, ScenarioKind, plan_steps
from patchbench.scenarios.steps import ByCount
from patchbench.util import cmd, progress
from patchbench.util.limits import MAX_TIMEOUT_S

if TYPE_CHECKING:  # types only: `invoke list` imports neither the builds nor the runtimes
    from patchbench.build import Built

# --- the config: the keys matrix.yaml gives this kind (registered by patchbench.scenarios) ---


class SoakConfig(ScenarioConfig):
    """Thousands of short runs per variant and condition, each with its own deadline; hangs
    (with evidence), failures, leftovers and escaped processes are counted."""

    kind: Literal["soak"] = Field(default="soak", description="`soak`.")
    command: list[str] = Field(min_length=1, description=(
        "The command run again and again (argv, placeholders filled)."))
    warmup: int = Field(default=0, ge=0, le=0, description=(
        "Always 0: nothing to warm, the timing is incidental."))
    rounds: int = Field(default=1, description="Unused: a soak interleaves in blocks.")
    timeout: float = Field(default=5.0, gt=0, le=MAX_TIMEOUT_S, description=(
        "Each run's deadline in seconds; a run past it is a hang, its evidence saved."))
    block: int = Field(default=20, ge=1, description=(
        "Runs of one variant in a row; `runs` must be a multiple of it."))
    budget_s: float | None = Field(default=None, gt=0, description=(
        "Wall time per condition (all variants), seconds; the soak stops at `runs` or here."))
    list_cmd: list[str] | None = Field(default=None, alias="list", description=(
        "Without a runtime: a command listing leftovers, one per line; lines holding the "
        "run's `{id}` prefix count."))
    conditions: list[Condition] = Field(default_factory=lambda: [DEFAULT], min_length=1,
                                        description=(
        "Machine states, each its own set of blocks; names must be unique."))
    escapes: bool = Field(default=True, description=(
        "Count and kill processes that outlive their run; `false` for commands whose children "
        "are meant to live on (`runc exec -d`)."))

    @model_validator(mode="after")
    def _blocks(self) -> SoakConfig:
        if self.runs % self.block:
            raise ValueError(f"runs ({self.runs}) must be a multiple of block ({self.block})")
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ValueError("condition names must be unique")
        return self

    def plan_detail(self) -> str:
        budget = f", at most {self.budget_s:g} s per condition" if self.budget_s else ""
        return (f"; soak: blocks of {self.block}, deadline {self.timeout:g} s per run{budget}, "
                f"conditions {', '.join(c.name for c in self.conditions)}")


# --- the result: this kind's part of results.json (registered by patchbench.scenarios) ---


class SoakVariant(Record):
    """One variant under one soak condition."""

    runs: int
    hangs: int
    failures: int
    failure_codes: dict[str, int]  # exit code -> runs (hangs not included)
    leftovers: list[str]
    escaped: list[str]
    evidence: list[str]  # hang evidence files in the run folder
    lost_sigchld: int  # hangs whose evidence shows a zombie child under a sleeping parent
    median_s: float | None  # of the runs that exited 0 (incidental)
    times: list[float]
    exit_codes: list[int]  # per run, in order; 124 = hang


class SoakTest(Record):
    """Fisher's exact test of a candidate's counts against the baseline's."""

    candidate: str
    hang_p: float  # two-sided
    hang_p_more: float  # one-sided: the candidate hangs more often
    failure_p: float
    failure_p_more: float


class SoakCondition(Record):
    name: str
    summary: str
    applied: dict[str, Any]
    blocks: int
    wall_s: float
    stopped_by: str  # "runs" or "budget"
    per_variant: dict[str, SoakVariant]
    tests: list[SoakTest]


class SoakResult(ScenarioResult):
    kind: Literal["soak"] = "soak"
    deadline_s: float
    block: int
    budget_s: float | None = None
    conditions: list[SoakCondition]
    evidence_summary: str | None = None  # a readable account of every hang, in the run folder


HANG_ALPHA = 0.05  # the one-sided Fisher level for "fails more often than the baseline"


@dataclass
class _Tally:
    """What one variant did under one condition."""

    times: list[float] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)  # per run; 124 = hang
    leftovers: list[str] = field(default_factory=list)
    escaped: list[str] = field(default_factory=list)
    evidence: list[Path] = field(default_factory=list)


def _block(ctx: ScenarioContext[SoakConfig], exe: Path, b: Built, cond: Condition, applied: Applied,
           block_no: int, log: Path, tally: _Tally) -> None:
    """One block of ``sc.block`` runs of one variant."""
    sc: SoakConfig = ctx.scenario
    where = f"scenario {sc.name}"
    values = {**ctx.values(b, Cell(b.variant.name)), "block": str(block_no), "rep": "{rep}",
              "condition": cond.name}
    variant = b.variant.name
    ev_dir = ctx.workdir / f"{sc.name}-evidence" / cond.name / variant
    rec = ctx.workdir / f"{sc.name}-records" / cond.name / f"{variant}-b{block_no}.jsonl"
    rec.parent.mkdir(parents=True, exist_ok=True)
    before = set(ev_dir.glob("hang-*.json")) if ev_dir.is_dir() else set()
    for argv in sc.setup:
        cmd.run(bench.fill_argv(argv, values, where), timeout=sc.timeout * 10, log=log,
                    error=BenchmarkError, what=f"{where} {variant}: setup")
    try:
        argv = applied.wrap([str(exe), "-k", "1", "-n", str(sc.block), "-deadline",
                             f"{sc.timeout:g}s", "-evidence", str(ev_dir), "-o", str(rec),
                             *(["-escapes"] if sc.escapes else []), "--",
                             *bench.fill_argv(sc.command, values, where)])
        # the launcher enforces every deadline; this timeout only catches the launcher itself
        cmd.run(argv, env=applied.environ(), timeout=sc.block * (sc.timeout + 12) + 30,
                    check=False, log=log, error=BenchmarkError,
                    what=f"{where} {variant} block {block_no}")
    finally:
        for argv in sc.teardown:
            cmd.run(bench.fill_argv(argv, values, where), timeout=sc.timeout * 10, log=log,
                        check=False, what=f"{where} {variant}: teardown")
    lines = rec.read_text().splitlines() if rec.is_file() else []
    if len(lines) != sc.block:
        raise BenchmarkError(f"{where} {variant} block {block_no}: the launcher recorded "
                             f"{len(lines)} of {sc.block} runs", detail=f"(log: {log})")
    for line in lines:
        r = json.loads(line)
        tally.times.append(float(r["latencies"][0]))
        tally.codes.append(HANG_EXIT_CODE if r.get("hung", [False])[0] else int(r["exit_codes"][0]))
        tally.escaped += [f"block {block_no} run {r['rep']}: {e}" for e in r.get("escaped") or []]
    if ev_dir.is_dir():
        tally.evidence += sorted(set(ev_dir.glob("hang-*.json")) - before)
    if ctx.runtime is not None:
        left = ctx.runtime.leftovers(variant, b.bin)
        if left:
            ctx.runtime.cleanup(variant, b.bin)
    elif sc.list_cmd:
        try:
            res = cmd.run(bench.fill_argv(sc.list_cmd, values, where), timeout=sc.timeout * 10,
                              check=False)
            prefix = values["id"] + "-"
            left = [f"instance {x}" for x in res.stdout.split() if x.startswith(prefix)]
        except BenchmarkError as exc:
            left = [f"the listing failed: {exc.message}"]
    else:
        left = []
    tally.leftovers += [f"block {block_no}: {x}" for x in left]


def hangs_of(result: ScenarioResult, variant: str) -> tuple[int, int]:
    """A variant's hangs and runs, summed over the conditions: what a bisect step compares."""
    assert isinstance(result, SoakResult)
    per = [c.per_variant[variant] for c in result.conditions]
    return sum(v.hangs for v in per), sum(v.runs for v in per)


# a bisect finds the commit that hangs
class SoakKind(Kind, name="soak", config=SoakConfig, result=SoakResult,
               step=ByCount(hangs_of)):
    def plan(self, ctx: ScenarioContext[SoakConfig]) -> list[str]:
        sc: SoakConfig = ctx.scenario
        lines = []
        for cond in sc.conditions:
            lines.append(f"  condition {cond.name}: {cond.summary()}")
            for b in ctx.built:
                vals = {**ctx.values(b, Cell(b.variant.name)), "block": "<block>", "rep": "{rep}",
                        "condition": cond.name}
                tag = f"    [{b.variant.name}]"
                lines += plan_steps(tag, [("setup", a) for a in sc.setup], vals, sc.name)
                lines.append(f"{tag} {sc.block} runs: launcher -deadline {sc.timeout:g}s -- "
                             f"{shlex.join(bench.fill_argv(sc.command, vals, sc.name))}")
                lines += plan_steps(tag, [("teardown", a) for a in sc.teardown], vals, sc.name)
        return lines

    def run(self, ctx: ScenarioContext[SoakConfig]) -> tuple[SoakResult, list[str]]:
        sc: SoakConfig = ctx.scenario
        exe = launcher.build(ctx.layout)
        log = ctx.workdir / f"{sc.name}.soak.log"
        variants = [b.variant.name for b in ctx.built]
        base = variants[0]
        out_conditions: list[SoakCondition] = []
        summary_lines: list[str] = []
        warnings: list[str] = []
        all_order: list[list[str]] = []
        for ci, cond in enumerate(sc.conditions):
            tallies = {v: _Tally() for v in variants}
            order = bench.schedule([Cell(v) for v in variants], sc.runs // sc.block,
                                   ctx.seed + 7919 * ci)
            started = time.monotonic()
            stopped_by = "runs"
            blocks = 0
            progress.say(f"  condition {cond.name}: {cond.summary()}")
            with conditions.apply(cond, log=log) as applied:
                for r, cells in enumerate(order, 1):
                    # at least one round; then the budget is checked between rounds
                    if r > 1 and sc.budget_s is not None and time.monotonic() - started > sc.budget_s:
                        stopped_by = "budget"
                        break
                    for cell in cells:
                        _block(ctx, exe, ctx.build_of(cell.variant), cond, applied, r, log,
                               tallies[cell.variant])
                    all_order.append([f"{cond.name}/{c.label}" for c in cells])
                    blocks = r
                    if r % max(1, 500 // sc.block) == 0 or r == len(order):
                        progress.step(cond.name, f"{r * sc.block} runs per variant: hangs " + ", ".join(
                            f"{v} {hangs.count_hangs(t.codes)}" for v, t in tallies.items()))
            wall = time.monotonic() - started
            per_variant: dict[str, SoakVariant] = {}
            for v, t in tallies.items():
                hung = hangs.count_hangs(t.codes)
                fails = Counter(str(c) for c in t.codes if c not in (0, hangs.HANG_EXIT_CODE))
                ok_times = [x for x, c in zip(t.times, t.codes, strict=True) if c == 0]
                names, lost = common.report_evidence(ctx, t.evidence, f"{sc.name}-{cond.name}-{v}",
                                              summary_lines)
                per_variant[v] = SoakVariant(
                    runs=len(t.codes), hangs=hung, failures=sum(fails.values()),
                    failure_codes=dict(fails), leftovers=t.leftovers, escaped=t.escaped,
                    evidence=names, lost_sigchld=lost,
                    median_s=stats.summarize(ok_times).median if ok_times else None,
                    times=t.times, exit_codes=t.codes)
            tests = []
            b_pv = per_variant[base]
            for v in variants[1:]:
                pv = per_variant[v]
                h = hangs.compare_hangs(hangs.HangCount(base, b_pv.hangs, b_pv.runs),
                                        hangs.HangCount(v, pv.hangs, pv.runs))
                f = hangs.compare_hangs(hangs.HangCount(base, b_pv.failures, b_pv.runs),
                                        hangs.HangCount(v, pv.failures, pv.runs))
                tests.append(SoakTest(candidate=v, hang_p=h.p_value, hang_p_more=h.p_more,
                                              failure_p=f.p_value, failure_p_more=f.p_more))
            for v, pv in per_variant.items():
                if pv.hangs or pv.leftovers or pv.escaped:
                    warnings.append(f"{sc.name} [{cond.name}] {v}: hangs {pv.hangs} of {pv.runs}, "
                                    f"{len(pv.leftovers)} leftovers, {len(pv.escaped)} escaped")
            out_conditions.append(SoakCondition(
                name=cond.name, summary=cond.summary(), applied=applied.record(), blocks=blocks,
                wall_s=round(wall, 3), stopped_by=stopped_by, per_variant=per_variant,
                tests=tests))
        ev_summary = common.evidence_summary(ctx, summary_lines)
        res = SoakResult(
            **common.header(sc, sc.shown_command()), order=all_order, deadline_s=sc.timeout,
            block=sc.block, budget_s=sc.budget_s, conditions=out_conditions,
            evidence_summary=ev_summary)
        return res, warnings

    def gate(self, result: SoakResult) -> list[str]:
        """A candidate fails when, under any condition, it hangs at all, leaves something
        behind, lets a process escape, or fails significantly more often than the baseline
        (Fisher one-sided p < 0.05). The baseline's own hangs are shown beside it."""
        out = []
        for cond in result.conditions:
            variants = list(cond.per_variant)
            base = cond.per_variant[variants[0]]
            tests = {t.candidate: t for t in cond.tests}
            for v in variants[1:]:
                pv, t = cond.per_variant[v], tests.get(v)
                why = []
                if pv.hangs:
                    p = f", Fisher p {t.hang_p:.2g}" if t else ""
                    why.append(f"hangs: {pv.hangs} of {pv.runs} (baseline {base.hangs} of "
                               f"{base.runs}{p})")
                if pv.leftovers:
                    why.append(f"{len(pv.leftovers)} leftovers")
                if pv.escaped:
                    why.append(f"{len(pv.escaped)} escaped processes")
                if t is not None and pv.failures and t.failure_p_more < HANG_ALPHA:
                    why.append(f"failures: {pv.failures} of {pv.runs} against the baseline's "
                               f"{base.failures} (Fisher one-sided p {t.failure_p_more:.2g})")
                if why:
                    out.append(f"{result.name} [{cond.name}] {v}: " + "; ".join(why))
        return out

    def blocks(self, result: SoakResult, view: View) -> list[Block]:
        if view is View.PAGE:
            return page(result)
        return report(result, details=view is View.REPORT) if view in MARKDOWN else []


def report(result: SoakResult, *, details: bool = True) -> list[Block]:
    """Per condition and variant: hangs N of M with Fisher's p against the baseline,
    failures, leftovers, escaped processes; then what each hang looked like, by evidence
    file."""
    sc = result
    rows = []
    for cond in sc.conditions:
        tests = {t.candidate: t for t in cond.tests}
        for v, pv in cond.per_variant.items():
            t = tests.get(v)
            codes = ", ".join(f"{k}: {n}" for k, n in sorted(pv.failure_codes.items()))
            rows.append([
                cond.name, v, f"{pv.hangs} of {pv.runs}", fmt_p(t.hang_p) if t else "-",
                f"{pv.failures}" + (f" ({codes})" if codes else ""),
                fmt_p(t.failure_p) if t else "-", str(len(pv.leftovers)),
                str(len(pv.escaped)), fmt_time(pv.median_s)])
    out: list[Block] = [
        text(f"{sc.block} runs of a variant per block, variants interleaved block by block; "
             f"each run has a {sc.deadline_s:g} s deadline. Fisher's exact test (two-sided) "
             "against the baseline under the same condition."),
        table(["condition", "variant", "hangs", "p (Fisher)", "failures", "p (Fisher)",
               "leftovers", "escaped", "median (exit 0)"], rows),
        text("Conditions:"),
        bullets([[Code(c.name), f": {c.summary}; {c.blocks} blocks in {c.wall_s:.0f} s"
                  + (" (stopped by the time budget)" if c.stopped_by == "budget" else "")]
                 for c in sc.conditions])]
    seen: list[list[Inline]] = []
    for cond in sc.conditions:
        for v, pv in cond.per_variant.items():
            if pv.evidence:
                seen.append([Code(cond.name), f" / {v}: {len(pv.evidence)} hangs"
                             f"{lost_sigchld(pv.lost_sigchld)}; evidence (saved before the "
                             "kill): ", *links(pv.evidence, 5)])
            seen += [[Code(cond.name), f" / {v}: ", Output(e)]  # a process's own words
                     for e in pv.escaped[:3] + pv.leftovers[:3]]
    if seen:
        return [*out, text("What was seen, by condition:", *account(sc.evidence_summary)),
                bullets(seen)]
    return [*out, text("Nothing was seen: no hang, leftover or escaped process under any "
                       "condition.")]


def page(result: SoakResult) -> list[Block]:
    """Per condition and variant: hangs N of M with Fisher's p, failures, leftovers, escaped
    processes; then links to every hang's evidence."""
    sc = result
    rows: list[list[object]] = []
    found: list[list[Inline]] = []
    for cond in sc.conditions:
        tests = {t.candidate: t for t in cond.tests}
        for v, pv in cond.per_variant.items():
            t = tests.get(v)
            rows.append([cond.name, v, f"{pv.hangs} of {pv.runs}",
                         fmt_p(t.hang_p) if t else "-", pv.failures,
                         fmt_p(t.failure_p) if t else "-", len(pv.leftovers),
                         len(pv.escaped), fmt_time(pv.median_s)])
            found += [[f"{cond.name} / {v}: ", Link(n, n)] for n in pv.evidence]
    out: list[Block] = [
        text(f"{sc.block} runs of a variant per block, variants interleaved block by block; "
             f"each run has a {sc.deadline_s} s deadline."),
        table(["condition", "variant", "hangs", "p (Fisher)", "failures", "p (Fisher)",
               "leftovers", "escaped", "median (exit 0)"], rows, "soak")]
    if found:
        out.append(heading("Hang evidence (saved before the kill)"))
        if sc.evidence_summary:
            out.append(text(Link("every hang, described", sc.evidence_summary)))
        out.append(bullets(found, "evidence"))
    return out


KIND: ScenarioKind[SoakConfig, SoakResult] = SoakKind()
