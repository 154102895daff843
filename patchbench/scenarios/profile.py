"""Why a start changed: the syscall profile of a scenario's command per variant, the phases of
an OCI runtime CLI's start, and where its CPU time goes, from runs of their own made after
measuring (never among the timed runs). Shared by the kinds that trace (``command`` with
``profile:``, ``mounts``, whose mount counts are a view of the same traces) and read by the
readers of saved runs (diff, merge, the exports). Details: docs/internals.md."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Annotated, Any

from pydantic import Field

from patchbench.analysis import stats
from patchbench.measure import cpuprofile, syscalls
from patchbench.measure.bench import Cell, Invocation
from patchbench.report import charts
from patchbench.report.blocks import Block, Chart, Code, Output, bullets, heading, table, text
from patchbench.report.numbers import fmt_time
from patchbench.results import MAX_CELLS, Record
from patchbench.scenarios.base import ScenarioContext
from patchbench.util import cmd, progress

TRACE_SLOWDOWN = 5.0  # a traced run may take this many times the scenario's timeout (ptrace)
SHOWN_ROWS = 15  # syscalls per table in report.md (report.html shows every one)


class TracedRun(Record):
    """One run of a cell's command under the tracer: its calls, failed calls and wall time in
    calls per syscall, and (an OCI runtime CLI's start) its phases."""

    variant: str
    cell: str  # the cell's label: the variant and its parameters
    index: int  # the run's number within its cell
    exit_code: int | None  # None: past its deadline under the tracer, killed
    wall_s: float  # from the trace's first line to its last
    calls: dict[str, int]
    errors: dict[str, int] = Field(default_factory=dict)  # only syscalls that failed
    seconds: dict[str, float] = Field(default_factory=dict)  # strace -T, summed
    phases: dict[str, float] | None = None  # syscalls.PHASES -> seconds


class CpuProfile(Record):
    """Sampled CPU stacks per cell (``profile: [cpu]``), made in runs of their own after the
    timed runs: ``comm;outermost;...;innermost`` -> samples over the cell's runs (the rarest
    stacks beyond MAX_STACKS summed into one ``[other stacks]`` entry per cell)."""

    command: str  # perf's command line, as shown
    event: str
    frequency: int
    runs: dict[str, int]  # cell -> profiled runs
    stacks: dict[str, dict[str, int]]  # cell -> folded stack -> samples
    failed: list[str] = Field(default_factory=list)  # "cell run i: exited N"


class Profile(Record):
    """The traced runs of a scenario, made after its timed runs."""

    tracer: str  # the tracer's command line, as shown
    runs: Annotated[list[TracedRun], Field(max_length=MAX_CELLS)]
    cpu: CpuProfile | None = None  # profile: [cpu]


# --- tracing ---------------------------------------------------------------------------------


def record(variant: str, cell: str, index: int, t: syscalls.Trace, *, oci: bool) -> TracedRun:
    """A Trace as results.json keeps it (``oci``: the phases of an OCI runtime CLI's start)."""
    return TracedRun(variant=variant, cell=cell, index=index, exit_code=t.exit_code,
                     wall_s=round(t.wall, 6), calls=t.by_syscall(),
                     errors={k: n for k, n in t.errors_by_syscall().items() if n},
                     seconds={k: round(v, 6) for k, v in sorted(t.seconds.items())},
                     phases=syscalls.phases(t) if oci else None)


TRACERS = {"strace": syscalls.SHOWN, "bpftrace": syscalls.BPFTRACE_SHOWN}


def _each_run(ctx: ScenarioContext[Any], cells: Sequence[Cell],
              expand: Callable[[Cell], Invocation], runs: int, seed: int, what: str,
              how: str) -> Iterator[tuple[int, Cell, Invocation]]:
    """Every cell ``runs`` times, the cells in a seeded order each time, each run between its
    setup and its teardown: (run, cell, invocation) while the caller runs it."""
    sc = ctx.scenario
    timeout = sc.timeout * TRACE_SLOWDOWN
    log = ctx.workdir / f"{sc.name}.profile.log"
    rng = random.Random(ctx.seed + seed)
    for i in range(runs):
        order = list(cells)
        rng.shuffle(order)
        for cell in order:
            inv = expand(cell)
            for argv in inv.setup:
                cmd.run(argv, env=inv.env, timeout=timeout, log=log)
            try:
                yield i, cell, inv
            finally:
                for argv in inv.teardown:
                    cmd.run(argv, env=inv.env, timeout=timeout, log=log, check=False)
        progress.step(sc.name, f"{what} run {i + 1}/{runs} of {len(cells)} cells ({how})")


def _slug(cell: Cell, i: int) -> str:
    return cell.label.replace(" ", "_").replace("=", "") + f"-{i}"


def trace_cells(ctx: ScenarioContext[Any], cells: Sequence[Cell],
                expand: Callable[[Cell], Invocation], runs: int, *, oci: bool,
                tracer: str = "strace") -> tuple[Profile, list[str]]:
    """``runs`` traced runs of every cell (its command as ``expand`` gives it, without the
    launcher) under ``tracer`` (``strace`` or ``bpftrace``), the cells in a seeded order each
    time; the profile and the warnings (a run that failed or hung)."""
    if tracer == "bpftrace":
        syscalls.bpftrace_check()
    sc = ctx.scenario
    timeout = sc.timeout * TRACE_SLOWDOWN
    log = ctx.workdir / f"{sc.name}.profile.log"
    out: list[TracedRun] = []
    warnings: list[str] = []
    for i, cell, inv in _each_run(ctx, cells, expand, runs, 104729, "traced", tracer):
        if inv.prepare:
            cmd.run(["sh", "-c", inv.prepare], env=inv.env, timeout=timeout, log=log, check=False)
        t = syscalls.trace(inv.command, ctx.workdir / f"{sc.name}-profile" / _slug(cell, i),
                           tracer=tracer, env=inv.env, timeout=timeout)
        if inv.cleanup:
            cmd.run(["sh", "-c", inv.cleanup], env=inv.env, timeout=timeout, log=log, check=False)
        run = record(cell.variant, cell.label, i, t, oci=oci)
        out.append(run)
        if run.exit_code is None:
            warnings.append(f"{sc.name} {cell.label}: traced run {i} hung past {timeout:g} s "
                            f"under {tracer} and was killed")
        elif run.exit_code != 0:
            warnings.append(f"{sc.name} {cell.label}: traced run {i} exited {run.exit_code}")
    return Profile(tracer=TRACERS[tracer], runs=out), warnings


MAX_STACKS = 2000  # distinct stacks kept per cell


def sample_cells(ctx: ScenarioContext[Any], cells: Sequence[Cell],
                 expand: Callable[[Cell], Invocation], runs: int,
                 frequency: int = cpuprofile.FREQUENCY) -> tuple[CpuProfile, list[str]]:
    """``runs`` runs of every cell under ``perf record`` (the cells in a seeded order each
    time), their stacks summed per cell; the profile and the warnings."""
    sc = ctx.scenario
    stacks: dict[str, dict[str, int]] = {c.label: {} for c in cells}
    failed: list[str] = []
    for i, cell, inv in _each_run(ctx, cells, expand, runs, 130363, "sampled", "perf"):
        got = cpuprofile.record(inv.command, ctx.workdir / f"{sc.name}-cpu" / _slug(cell, i),
                                env=inv.env, timeout=sc.timeout * TRACE_SLOWDOWN,
                                frequency=frequency)
        per = stacks[cell.label]
        for key, n in got.stacks.items():
            per[key] = per.get(key, 0) + n
        if got.exit_code != 0:
            failed.append(f"{cell.label} run {i}: " + (
                "hung under perf (killed)" if got.exit_code is None
                else f"exited {got.exit_code}"))
    kept = {label: _capped(per) for label, per in stacks.items()}
    return (CpuProfile(command=cpuprofile.SHOWN.format(freq=frequency), event=cpuprofile.EVENT,
                       frequency=frequency, runs={c.label: runs for c in cells}, stacks=kept,
                       failed=failed),
            [f"{sc.name} {f}" for f in failed])


def plan_cpu(runs: int, cells: int) -> list[str]:
    return [f"  profile: {runs} sampled run(s) of each of {cells} cell(s) after measuring: "
            + cpuprofile.SHOWN.format(freq=cpuprofile.FREQUENCY)]


def _capped(per: dict[str, int]) -> dict[str, int]:
    if len(per) <= MAX_STACKS:
        return dict(sorted(per.items()))
    ranked = sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))
    out = dict(sorted(ranked[:MAX_STACKS]))
    out["[other stacks]"] = sum(n for _, n in ranked[MAX_STACKS:])
    return out


def plan_lines(sc: Any, runs: int, cells: int, tracer: str = "strace") -> list[str]:
    return [f"  profile: {runs} traced run(s) of each of {cells} cell(s) after measuring, apart "
            f"from the timed runs: {TRACERS[tracer]}{' COMMAND' if tracer == 'strace' else ''} (timeout "
            f"{sc.timeout * TRACE_SLOWDOWN:g} s each)"]


# --- figures ---------------------------------------------------------------------------------


def by_cell(profile: Profile) -> dict[str, list[TracedRun]]:
    out: dict[str, list[TracedRun]] = {}
    for r in profile.runs:
        out.setdefault(r.cell, []).append(r)
    return out


def mean_calls(runs: Sequence[TracedRun]) -> dict[str, float]:
    """syscall -> calls per start (the mean over ``runs``; a syscall one run never made counts
    as 0 there)."""
    names = sorted({n for r in runs for n in r.calls})
    return {n: sum(r.calls.get(n, 0) for r in runs) / len(runs) for n in names}


def time_share(runs: Sequence[TracedRun]) -> dict[str, float]:
    """syscall -> its share of the wall time spent in syscalls (all runs together)."""
    total = sum(v for r in runs for v in r.seconds.values())
    if total <= 0:
        return {}
    names = sorted({n for r in runs for n in r.seconds})
    return {n: sum(r.seconds.get(n, 0.0) for r in runs) / total for n in names}


def fmt_count(x: float) -> str:
    x = round(x, 6)  # a mean of whole counts: 1263.9999999 is 1,264
    return f"{x:,.0f}" if x == round(x) else f"{x:,.1f}"


def fmt_delta(x: float) -> str:
    if x == 0:
        return "0"
    return ("+" if x > 0 else "−") + fmt_count(abs(x))


def beyond(base: Sequence[int], cand: Sequence[int]) -> bool:
    """Every candidate run outside the range of the baseline runs (on one side)."""
    return bool(base and cand) and (min(cand) > max(base) or max(cand) < min(base))


def diff_rows(base: Sequence[TracedRun], cand: Sequence[TracedRun]) -> list[list[str]]:
    """Per syscall (and ``all`` first): calls per start in each, the difference, beyond the
    spread, failed calls per start, the share of syscall time; the biggest change first."""
    mb, mc = mean_calls(base), mean_calls(cand)
    eb, ec = mean_errors(base), mean_errors(cand)
    sb, sc = time_share(base), time_share(cand)
    names = sorted(set(mb) | set(mc),
                   key=lambda n: (-abs(mc.get(n, 0.0) - mb.get(n, 0.0)), n))

    def counts(runs: Sequence[TracedRun], n: str | None) -> list[int]:
        return [sum(r.calls.values()) if n is None else r.calls.get(n, 0) for r in runs]

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x * 100:.1f} %"

    tb, tc = sum(mb.values()), sum(mc.values())
    rows = [["all", fmt_count(tb), fmt_count(tc), fmt_delta(tc - tb),
             "yes" if beyond(counts(base, None), counts(cand, None)) else "no",
             f"{fmt_count(sum(eb.values()))} → {fmt_count(sum(ec.values()))}", "", ""]]
    for n in names:
        b, c = mb.get(n, 0.0), mc.get(n, 0.0)
        rows.append([n, fmt_count(b), fmt_count(c), fmt_delta(c - b),
                     "yes" if beyond(counts(base, n), counts(cand, n)) else "no",
                     f"{fmt_count(eb.get(n, 0.0))} → {fmt_count(ec.get(n, 0.0))}",
                     pct(sb.get(n)) if sb else "-", pct(sc.get(n)) if sc else "-"])
    return rows


def mean_errors(runs: Sequence[TracedRun]) -> dict[str, float]:
    names = sorted({n for r in runs for n in r.errors})  # sorted: the sums' order is fixed
    return {n: sum(r.errors.get(n, 0) for r in runs) / len(runs) for n in names}


HEADERS = ["syscall", "baseline", "candidate", "candidate − baseline", "beyond the spread",
           "failed (baseline → candidate)", "time share baseline", "time share candidate"]


def pairs(profile: Profile, baseline: str) -> list[tuple[str, str, list[TracedRun],
                                                          list[TracedRun]]]:
    """(baseline cell, candidate cell, their runs) for every candidate cell with a baseline cell
    of the same parameters."""
    cells = by_cell(profile)
    variants = {c: runs[0].variant for c, runs in cells.items()}
    out = []
    for label, runs in cells.items():
        v = variants[label]
        if v == baseline:
            continue
        base = baseline + label[len(v):]
        if base in cells:
            out.append((base, label, cells[base], runs))
    return out


def failed_runs(profile: Profile) -> list[str]:
    return [f"{r.cell} run {r.index}: " + ("hung under the tracer (killed)" if r.exit_code is None
                                           else f"exited {r.exit_code}")
            for r in profile.runs if r.exit_code != 0]


def intro(profile: Profile) -> Block:
    cells = by_cell(profile)
    per = max((len(r) for r in cells.values()), default=0)
    kernel = profile.tracer.startswith("bpftrace")
    how = ("bpftrace, in the kernel (no ptrace: the runs keep nearly their own speed)" if kernel
           else "strace")
    times = ("the time from each call's entry to its return in the kernel" if kernel else
             "strace -T; ptrace slows every call, so the counts are exact and the times only "
             "relative, and what grows with a run's length (a Go runtime's nanosleep and futex) "
             "grows with the tracer's slowdown too")
    return text(f"Syscalls per start, counted with {how} over the whole process tree in {per} "
                "traced run(s) per cell made after the timed runs (never among them): the mean "
                "calls per start, the difference, whether every candidate run lies outside the "
                "baseline runs' range (\"beyond the spread\"), the failed calls per start, and "
                "each syscall's share of the wall time spent in syscalls (blocking calls such as "
                f"futex and wait4 hold most of it; {times}). Biggest changes first.")


def blocks(profile: Profile | None, baseline: str, *, rows: int | None = SHOWN_ROWS,
           only: Sequence[str] | None = None) -> list[Block]:
    """The syscall diff of each candidate cell against the baseline's (``only``: those
    candidate cells), the phases, and any traced run that failed."""
    if profile is None:
        return []
    out: list[Block] = [intro(profile)] if profile.runs else []
    for base, cand, rb, rc in pairs(profile, baseline):
        if only is not None and cand not in only:
            continue
        all_rows = diff_rows(rb, rc)
        shown = all_rows if rows is None else all_rows[:rows + 1]
        headers = [*HEADERS]
        headers[1], headers[2] = base, cand
        out += [text(Code(cand), " against ", Code(base), ":"),
                table(headers, shown, "syscalls", text=True)]
        if len(all_rows) > len(shown):
            rest = all_rows[len(shown):]
            out.append(text(f"{len(rest)} more syscalls, each changed by at most "
                            f"{rest[0][3].lstrip('+−')} per start (report.html lists every one)."))
    out += phase_blocks(profile, baseline)
    bad = failed_runs(profile)
    if bad:
        out += [text("Traced runs that did not exit 0 (their counts are kept above):"),
                bullets([[Output(b)] for b in bad])]
    return out + cpu_blocks(profile.cpu, baseline, rows=rows, only=only)


# --- the CPU profile ---------------------------------------------------------------------------


def cpu_pairs(cpu: CpuProfile, baseline: str) -> list[tuple[str, str]]:
    """(baseline cell, candidate cell) of the same parameters."""
    out = []
    for label in cpu.stacks:
        v = label.split(" ", 1)[0]
        base = baseline + label[len(v):]
        if v != baseline and base in cpu.stacks:
            out.append((base, label))
    return out


def cpu_rows(base: dict[str, int], cand: dict[str, int]) -> list[list[str]]:
    """Per function: its share of the samples with what it calls (anywhere on the stack) in
    each, the change in points, and its own share (the innermost frame) in the candidate; the
    biggest change first."""
    ib, ic = cpuprofile.total_share(base), cpuprofile.total_share(cand)
    own = cpuprofile.self_share(cand)
    names = sorted(set(ib) | set(ic), key=lambda n: (-abs(ic.get(n, 0.0) - ib.get(n, 0.0)), n))
    return [[n, f"{ib.get(n, 0.0) * 100:.1f} %", f"{ic.get(n, 0.0) * 100:.1f} %",
             f"{(ic.get(n, 0.0) - ib.get(n, 0.0)) * 100:+.1f}", f"{own.get(n, 0.0) * 100:.1f} %"]
            for n in names]


def cpu_blocks(cpu: CpuProfile | None, baseline: str, *, rows: int | None = SHOWN_ROWS,
               only: Sequence[str] | None = None) -> list[Block]:
    if cpu is None:
        return []
    out: list[Block] = [text(
        f"Where the CPU time goes: {cpu.event} sampled at {cpu.frequency} Hz with the call "
        f"stacks (perf, every process of the tree) in {max(cpu.runs.values(), default=0)} run(s) "
        "per cell of their own after the timed runs; each function's share of the samples with "
        "what it calls (anywhere on the stack) in each, the change in points, and its own share "
        "(the innermost frame) in the candidate. Biggest changes first.")]
    for base, cand in cpu_pairs(cpu, baseline):
        if only is not None and cand not in only:
            continue
        all_rows = cpu_rows(cpu.stacks[base], cpu.stacks[cand])
        shown = all_rows if rows is None else all_rows[:rows]
        nb, nc = sum(cpu.stacks[base].values()), sum(cpu.stacks[cand].values())
        out += [text(Code(cand), f" ({nc} samples) against ", Code(base), f" ({nb} samples):"),
                table(["function", base, cand, "change (points)", "own, candidate"],
                      shown, "cpu", plain=True)]
    if cpu.failed:
        out += [text("Sampled runs that did not exit 0:"),
                bullets([[Output(f)] for f in cpu.failed])]
    return out


def cpu_charts(cpu: CpuProfile | None, baseline: str) -> list[Block]:
    """report.html: a differential flame graph per candidate cell."""
    if cpu is None:
        return []
    return [Chart("flame", partial(charts.flame_diff, cpu.stacks[base], cpu.stacks[cand],
                                   f"{cand} against {base}: CPU samples"),
                  f"Differential flame graph of {cand}: its sampled stacks, each frame red where "
                  f"its share of the samples grew against {base}'s and blue where it shrank.")
            for base, cand in cpu_pairs(cpu, baseline)]


# --- phases ----------------------------------------------------------------------------------


def ordered(cells: dict[str, list[TracedRun]], baseline: str) -> list[str]:
    """The cells, the baseline's first, then by variant and by their parameters' numbers."""
    def key(label: str) -> tuple[bool, str, list[tuple[int, str]]]:
        v, _, params = label.partition(" ")
        parts = [(int(p), "") if p.isdigit() else (0, p) for p in re.split(r"(\d+)", params) if p]
        return (v != baseline, v, parts)
    return sorted(cells, key=key)


MIN_PHASE_RUNS = 5  # traced runs that show the phases, per cell, before they are shown


def phase_runs(profile: Profile, baseline: str = "") -> dict[str, list[dict[str, float]]]:
    """cell -> the phases of each of its traced runs that show them."""
    cells = by_cell(profile)
    out = {cell: [r.phases for r in cells[cell] if r.phases] for cell in ordered(cells, baseline)}
    return {cell: shown for cell, shown in out.items() if shown}


def phase_medians(profile: Profile, baseline: str = "") -> dict[str, dict[str, float]]:
    """cell -> phase -> the median over its traced runs that show the phases, for the cells
    with at least MIN_PHASE_RUNS of them (a phase of one start moves by tens of per cent from
    run to run under the tracer: fewer runs say nothing about a cell's phases)."""
    return {cell: {p: stats.median([ph[p] for ph in shown]) for p in syscalls.PHASES}
            for cell, shown in phase_runs(profile, baseline).items()
            if len(shown) >= MIN_PHASE_RUNS}


def phase_blocks(profile: Profile, baseline: str) -> list[Block]:
    runs = phase_runs(profile, baseline)
    if not runs:
        return []
    few = {cell: len(shown) for cell, shown in runs.items() if len(shown) < MIN_PHASE_RUNS}
    left = (f"Phases of the start left out for {', '.join(f'{c} ({n})' for c, n in few.items())}"
            f": fewer than {MIN_PHASE_RUNS} traced runs showed them (`profile_runs`).")
    med = phase_medians(profile, baseline)
    if not med:
        return [text(left)]

    def spread(cell: str, p: str) -> str:
        xs = [ph[p] for ph in runs[cell]]
        return f"{fmt_time(med[cell][p])} ({fmt_time(min(xs))}–{fmt_time(max(xs))})"

    rows = [[cell, *[spread(cell, p) for p in syscalls.PHASES],
             fmt_time(sum(per.values()))] for cell, per in med.items()]
    what = "; ".join(f"{p}: {syscalls.PHASE_TEXT[p]}" for p in syscalls.PHASES)
    out: list[Block] = [
        text("Phases of the start under the tracer (per cell, the median over its traced runs "
             "with the lowest and highest in brackets, from the syscalls' timestamps; the tracer "
             "slows every call, and a phase moves by tens of per cent from run to run): "
             f"{what}."),
        table(["cell", *syscalls.PHASES, "total of medians"], rows, "phases", text=True)]
    return out + ([text(left)] if few else [])


def page(profile: Profile | None, baseline: str) -> list[Block]:
    """report.html: every syscall of every comparison, the phases with their stacked bars, the
    differential flame graphs."""
    if profile is None:
        return []
    out: list[Block] = [heading("Why: traced runs"), *blocks(profile, baseline, rows=None),
                        *cpu_charts(profile.cpu, baseline)]
    if phase_medians(profile):
        out.append(Chart("phases", partial(charts.phases_chart, phase_medians(profile, baseline),
                                           list(syscalls.PHASES)),
                         "Phases of the start per cell under the tracer (medians): the CLI "
                         "until it makes the init, the init until the container's process is "
                         "exec'd, the process, and the CLI's exit after it."))
    return out


def summary_text(profile: Profile | None, baseline: str) -> list[tuple[str, str]]:
    """(cell, "N syscalls per start; biggest change ...") for a merged report's cells."""
    if profile is None:
        return []
    out = []
    cells = by_cell(profile)
    changes = {cand: diff_rows(rb, rc) for _, cand, rb, rc in pairs(profile, baseline)}
    for cell, runs in cells.items():
        total = sum(mean_calls(runs).values())
        note = f"{fmt_count(total)} syscalls per start"
        rows = changes.get(cell)
        if rows and len(rows) > 1:
            note += f"; biggest change {rows[1][0]} {rows[1][3]}"
        out.append((cell, note))
    return out
