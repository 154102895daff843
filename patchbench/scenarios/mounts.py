"""The ``mounts`` kind: the mount syscalls of one container start, counted exactly, per build. Each
build's traced starts of a command (an OCI runtime CLI's ``run``) run under bpftrace or ``strace
-f`` with all their descendants, the builds in a seeded order per round; every syscall of a start
is counted (its syscall profile, patchbench.scenarios.profile) and the mount counts are a view of
it. The report shows a table build × syscall with each candidate's change, and warns when a
build's starts differ. A candidate start that fails fails the gate. docs/scenarios.md#mounts."""

from __future__ import annotations

import random
import shlex
from typing import Annotated, Literal

from pydantic import Field, field_validator

from patchbench.analysis import stats
from patchbench.config.scenarios import Argv, ScenarioConfig
from patchbench.measure import bench, mounttrace, syscalls
from patchbench.measure.bench import Cell
from patchbench.measure.mounttrace import MountCounts
from patchbench.report import blocks as rb
from patchbench.report.blocks import MARKDOWN, Across, Block, Table, View
from patchbench.results import MAX_CELLS, Record, ScenarioResult
from patchbench.scenarios import profile
from patchbench.scenarios.base import Kind, ScenarioContext, ScenarioKind, header, plan_steps
from patchbench.scenarios.profile import Profile, TracedRun
from patchbench.util import cmd, progress
from patchbench.util.limits import MAX_SAMPLES

# --- the config: the keys matrix.yaml gives this kind (registered by patchbench.scenarios) ---


class MountsConfig(ScenarioConfig):
    """Traced starts of `command` (an OCI runtime CLI's `run`), each counted exactly: the calls of
    every mount syscall per start, per build, and whether every start made the same."""

    kind: Literal["mounts"] = Field(default="mounts", description="`mounts`.")
    command: list[str] = Field(min_length=1, description=(
        "One start (argv, placeholders filled; `{i}` is the start's number, `{round}` its "
        "round), traced with its descendants."))
    after: list[Argv] = Field(default_factory=list, description=(
        "Commands run after every start, traced or not (e.g. `{runtime} --root {root} delete "
        "-f {id}-m{i}`); one that fails is a warning."))
    tracer: Literal["bpftrace", "strace"] = Field(default="bpftrace", description=(
        "`bpftrace` (exact kernel counts, needs root; patchbench.measure.syscalls) or `strace` "
        "(`strace -f`: no root or tracefs needed, but ptrace slows the start)."))
    syscalls: list[str] = Field(default_factory=lambda: [
        "mount", "umount2", "open_tree", "move_mount", "mount_setattr"], min_length=1,
                                description=(
        "The syscalls counted: of " + ", ".join(f"`{s}`" for s in mounttrace.TRACEPOINTS) + "."))
    warmup: int = Field(default=1, ge=0, le=MAX_SAMPLES, description=(
        "Untraced starts per build before the first round (their counts are not kept)."))
    runs: int = Field(default=5, ge=1, le=MAX_SAMPLES, description=(
        "Traced starts per build in all, a multiple of `rounds`."))
    rounds: int = Field(default=5, ge=1, le=MAX_SAMPLES, description=(
        "Rounds; each traces runs/rounds starts of every build, the builds in a seeded random "
        "order."))

    @field_validator("syscalls")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in mounttrace.TRACEPOINTS]
        if unknown:
            raise ValueError(f"{unknown} are not syscalls patchbench can count (known: "
                             f"{', '.join(mounttrace.TRACEPOINTS)})")
        if len(set(names)) != len(names):
            raise ValueError("a syscall is listed twice")
        return names

    def plan_detail(self) -> str:
        return f", {self.runs} traced starts per build ({self.tracer}), {', '.join(self.syscalls)}"


class MountStart(Record):
    """One traced start of a ``mounts`` scenario: its calls and failed calls per syscall."""

    variant: str
    round: int
    index: int  # the start's number ({i}), over all rounds
    exit_code: int
    calls: dict[str, int]  # syscall -> calls, every traced syscall listed
    errors: dict[str, int]  # syscall -> calls that returned an error
    by_comm: dict[str, int] = Field(default_factory=dict)  # process name -> calls


class MountsResult(ScenarioResult):
    """The mount syscalls of each traced start, per build (data only: the report derives the
    counts per build and their spread from ``starts``)."""

    kind: Literal["mounts"] = "mounts"
    tracer: Literal["bpftrace", "strace"]
    syscalls: list[str]
    variants: list[str]  # the builds, the baseline first
    starts: Annotated[list[MountStart], Field(max_length=MAX_CELLS)]
    # every syscall of each traced start (the counts above are a view of it); absent in runs
    # before it
    profile: Profile | None = None


def _fill(argv: list[str], values: dict[str, str], where: str, i: str, rnd: str) -> list[str]:
    return [a.replace("{i}", i).replace("{round}", rnd)
            for a in bench.fill_argv(argv, values, where)]


def tracer_shown(sc: MountsConfig) -> str:
    if sc.tracer == "strace":
        return syscalls.SHOWN + " (every syscall: the counts are a view of the profile)"
    return syscalls.BPFTRACE_SHOWN + " (the counts are a view of the profile)"


# --- the counts a report shows, derived from the starts -------------------------------------


def figures(starts: list[MountStart], syscalls: list[str], variants: list[str]
            ) -> dict[str, dict[str, list[int]]]:
    """variant -> syscall (and ``all``, their sum, and ``failed``) -> the count of each of its
    starts (a variant without starts is left out)."""
    out: dict[str, dict[str, list[int]]] = {}
    for v in variants:
        mine = [s for s in starts if s.variant == v]
        if not mine:
            continue
        per = {name: [s.calls.get(name, 0) for s in mine] for name in syscalls}
        per["all"] = [sum(s.calls.get(n, 0) for n in syscalls) for s in mine]
        per["failed"] = [sum(s.errors.get(n, 0) for n in syscalls) for s in mine]
        out[v] = per
    return out


def spread(starts: list[MountStart], syscalls: list[str], variants: list[str]
           ) -> dict[str, dict[str, tuple[int, int]]]:
    """variant -> syscall (and ``all``, ``failed``) -> (least, most) over its starts."""
    return {v: {n: (min(xs), max(xs)) for n, xs in per.items()}
            for v, per in figures(starts, syscalls, variants).items()}


def medians(starts: list[MountStart], syscalls: list[str], variants: list[str]
            ) -> dict[str, dict[str, float]]:
    """variant -> syscall (and ``all``, ``failed``) -> the median over its starts."""
    return {v: {n: stats.median(xs) for n, xs in per.items()}
            for v, per in figures(starts, syscalls, variants).items()}


def fmt_range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}–{high}"


def fmt_change(base: tuple[int, int], cand: tuple[int, int], mb: float, mc: float) -> str:
    """The candidate's change: exact when both builds made the same in every start, else the
    change of the medians (marked ~)."""
    if base[0] == base[1] and cand[0] == cand[1]:
        d = cand[0] - base[0]
        return f"{d:+d}" if d else "0"
    d2 = mc - mb
    return f"~{d2:+g}" if d2 else "~0"


def differing(starts: list[MountStart], syscalls: list[str], variants: list[str]
              ) -> dict[str, list[str]]:
    """variant -> the syscalls whose count was not the same in every start."""
    return {v: [n for n in [*syscalls, "failed"] if per[n][0] != per[n][1]]
            for v, per in spread(starts, syscalls, variants).items()}


def count_table(sc: MountsResult, name: str = "") -> Table:
    cols = [*sc.syscalls, "all", "failed"]
    per = spread(sc.starts, sc.syscalls, sc.variants)
    mid = medians(sc.starts, sc.syscalls, sc.variants)
    rows: list[list[str]] = []
    for v, figures in per.items():
        mine = [s for s in sc.starts if s.variant == v]
        bad = sum(1 for s in mine if s.exit_code != 0)
        same = "yes" if all(lo == hi for lo, hi in figures.values()) else "no"
        rows.append([v, *[fmt_range(*figures[c]) for c in cols],
                     f"{len(mine)}" + (f" ({bad} exited non-zero)" if bad else ""), same])
    variants = list(per)
    if len(variants) > 1:
        base = variants[0]
        for v in variants[1:]:
            rows.append([f"{v} − {base}",
                         *[fmt_change(per[base][c], per[v][c], mid[base][c], mid[v][c])
                           for c in cols], "", ""])
    return rb.table(["build", *[f"`{c}`" if c in sc.syscalls else c for c in cols], "starts",
                     "same in every start"], rows, name)


def exit_warnings(sc: MountsResult) -> list[str]:
    return [f"{sc.name} {s.variant}: traced start {s.index} exited {s.exit_code}"
            for s in sc.starts if s.exit_code != 0]


class MountsKind(Kind, name="mounts", config=MountsConfig, result=MountsResult):
    def plan(self, ctx: ScenarioContext[MountsConfig]) -> list[str]:
        sc: MountsConfig = ctx.scenario
        lines = []
        for b, vals in ctx.each_build():
            tag = f"[{b.variant.name}]"
            lines += plan_steps(f"  {tag}", [("setup", a) for a in sc.setup], vals, sc.name)
            lines.append(f"  {tag} traced:   {tracer_shown(sc)} "
                         f"{shlex.join(_fill(sc.command, vals, sc.name, '{i}', '{round}'))}")
            lines += [f"  {tag} after:    {shlex.join(_fill(a, vals, sc.name, '{i}', '{round}'))}"
                      for a in sc.after]
            lines += plan_steps(f"  {tag}", [("teardown", a) for a in sc.teardown], vals,
                                sc.name)
        lines.append(f"  {sc.warmup} untraced start(s), then {sc.runs} traced starts per build "
                     f"in {sc.rounds} rounds; counted: {', '.join(sc.syscalls)}")
        return lines

    def run(self, ctx: ScenarioContext[MountsConfig]) -> tuple[MountsResult, list[str]]:
        sc: MountsConfig = ctx.scenario
        if sc.tracer == "bpftrace":
            syscalls.bpftrace_check()
        else:
            cmd.which("strace")
        variants = [b.variant.name for b in ctx.built]
        vals = {v: ctx.values(ctx.build_of(v), Cell(v)) for v in variants}
        log = ctx.workdir / f"{sc.name}.log"
        warnings: list[str] = []

        def after(v: str, i: str, rnd: str) -> None:
            for a in sc.after:
                argv = _fill(a, vals[v], sc.name, i, rnd)
                res = cmd.run(argv, timeout=sc.timeout, log=log, check=False)
                if res.returncode != 0:
                    warnings.append(f"{sc.name} {v}: `{shlex.join(argv)}` after start {i} "
                                    f"exited {res.returncode}")

        traced: list[TracedRun] = []

        def trace(v: str, i: str, rnd: str) -> MountCounts:
            argv = _fill(sc.command, vals[v], sc.name, i, rnd)
            where = ctx.workdir / f"{sc.name}-trace" / f"{v}-{i}"
            # the whole profile; the mount counts are a view of it
            t = syscalls.trace(argv, where, tracer=sc.tracer, timeout=sc.timeout)
            traced.append(profile.record(v, v, int(i), t, oci=True))
            return mounttrace.from_trace(t, sc.syscalls)

        for v in variants:
            for a in sc.setup:
                cmd.run(bench.fill_argv(a, vals[v], sc.name), timeout=sc.timeout, log=log)
        starts: list[MountStart] = []
        order: list[list[str]] = []
        rng = random.Random(ctx.seed)
        try:
            for v in variants:
                for w in range(sc.warmup):
                    argv = _fill(sc.command, vals[v], sc.name, f"w{w}", "0")
                    cmd.run(argv, timeout=sc.timeout, log=log, check=False)
                    after(v, f"w{w}", "0")
            per_round = sc.runs // sc.rounds
            for r in range(1, sc.rounds + 1):
                vs = variants[:]
                rng.shuffle(vs)
                order.append(vs)
                for v in vs:
                    for j in range(per_round):
                        i = (r - 1) * per_round + j
                        mc = trace(v, str(i), str(r))
                        after(v, str(i), str(r))
                        starts.append(MountStart(
                            variant=v, round=r, index=i, exit_code=mc.exit_code,
                            calls=mc.by_syscall(),
                            errors={s: sum(mc.errors.get(s, {}).values()) for s in sc.syscalls},
                            by_comm=mc.by_comm() if sc.tracer == "bpftrace" else {}))
                last = {s.variant: sum(s.calls.values()) for s in starts if s.round == r}
                progress.step(f"{sc.name} round {r}/{sc.rounds}",
                              "; ".join(f"{v} {n} mount syscalls" for v, n in last.items()))
        finally:
            for v in variants:
                for a in sc.teardown:
                    cmd.run(bench.fill_argv(a, vals[v], sc.name), timeout=sc.timeout,
                                log=log, check=False)
        res = MountsResult(**header(sc, sc.shown_command()), order=order,
                                   tracer=sc.tracer, syscalls=list(sc.syscalls),
                                   variants=variants, starts=starts,
                                   profile=Profile(tracer=profile.TRACERS[sc.tracer],
                                                   runs=traced))
        warnings += exit_warnings(res)
        warnings += [f"{sc.name} {v}: the starts differ in {', '.join(names)}"
                     for v, names in differing(starts, res.syscalls, variants).items() if names]
        return res, warnings

    def gate(self, result: MountsResult) -> list[str]:
        """A candidate's traced start that exited non-zero fails (a baseline's never does)."""
        base = result.variants[0] if result.variants else None
        bad: dict[str, int] = {}
        for s in result.starts:
            if s.variant != base and s.exit_code != 0:
                bad[s.variant] = bad.get(s.variant, 0) + 1
        return [f"{result.name} {v}: {n} traced start{'s' if n > 1 else ''} exited non-zero"
                for v, n in bad.items()]

    def blocks(self, result: MountsResult, view: View) -> list[Block]:
        if view in MARKDOWN:
            return report(result, details=view is View.REPORT)
        return page(result) if view is View.PAGE else [
            summary(result) if view is View.SUMMARY else across(result)]


def report(result: MountsResult, *, details: bool = True) -> list[Block]:
    """The table build × syscall (a range where the starts differ) and the change of each
    candidate against the baseline."""
    sc = result
    if not sc.starts:
        return [rb.text("No start was traced.")]
    n = len({s.round for s in sc.starts})
    per_build = len(sc.starts) // max(1, len({s.variant for s in sc.starts}))
    return [rb.text(f"Mount syscalls of one start, counted with {sc.tracer} ({per_build} "
                    f"traced starts per build in {n} rounds, after {sc.warmup} untraced): "
                    "the count when every start of a build made the same, else the range "
                    "(least–most); `all` is their sum, `failed` the calls that returned an "
                    "error. The last rows are each candidate's change: exact, or (~) the "
                    "change of the medians when a build's starts differ."),
            count_table(sc), *profile.blocks(sc.profile, sc.variants[0])]


def page(result: MountsResult) -> list[Block]:
    data = result.model_dump(mode="json")
    return [count_table(result, "mounts"),
            rb.Data(f"{result.kind}: every traced start", data["starts"]),
            *profile.page(result.profile, result.variants[0])]


def summary(result: MountsResult) -> Table:
    """The job summary's row per build: all mount syscalls of one start, and failed ones."""
    per = spread(result.starts, result.syscalls, result.variants)
    return rb.table(["mounts", "build", "mount syscalls per start", "failed"],
                    [[result.name, v, fmt_range(*f["all"]), fmt_range(*f["failed"])]
                     for v, f in per.items()])


def across(result: MountsResult) -> Across:
    """A merged report's cell per build and machine: all mount syscalls (failed)."""
    per = spread(result.starts, result.syscalls, result.variants)
    return Across(KIND.name, "Mount syscalls per start", ("mounts", "build"),
                  "all mount syscalls of one start (failed ones), per machine",
                  tuple(((result.name, v),
                         f"{fmt_range(*f['all'])} ({fmt_range(*f['failed'])})")
                        for v, f in per.items()))


KIND: ScenarioKind[MountsConfig, MountsResult] = MountsKind()
