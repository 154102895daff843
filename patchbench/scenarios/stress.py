"""The ``stress`` kind: is the fast build still correct when instances are killed mid-start? Each
round launches instances, waits a seeded random delay, and applies one action to all of them (a
delete or stop command, SIGTERM or SIGINT, or none); then hangs, leftovers, the listing's latency
and a fresh start are checked. Each round's draw is used for every build, so the counts compare
like with like. ``mode: exec`` launches into a host container; ``signals`` checks that signals
reach the process inside (stress_signals.py). docs/scenarios.md#stress."""

from __future__ import annotations

import contextlib
import random
import shlex
import signal
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from patchbench.analysis import stats
from patchbench.config.scenarios import Argv, RoundsConfig
from patchbench.errors import BenchmarkError, CommandError
from patchbench.measure import bench
from patchbench.measure.bench import Cell
from patchbench.report import charts
from patchbench.report.blocks import MARKDOWN, Across, Block, Chart, Table, View, heading, table, text
from patchbench.report.kind_blocks import round_evidence
from patchbench.report.numbers import fmt_time
from patchbench.results import Record, ScenarioResult, ScenarioUpgrade
from patchbench.scenarios import stress_signals
from patchbench.scenarios.base import (
    Kind,
    ScenarioContext,
    ScenarioKind,
    evidence_summary,
    header,
    plan_steps,
    report_evidence,
    wait_or_capture,
)
from patchbench.scenarios.stress_signals import SignalCheck, SignalCount
from patchbench.util import cmd, progress
from patchbench.util.cmd import Background

if TYPE_CHECKING:  # types only: `invoke list` imports neither the builds nor the runtimes
    from patchbench.build import Built

# --- the config: the keys matrix.yaml gives this kind (registered by patchbench.scenarios) ---


class StressConfig(RoundsConfig):
    """Each round launches `instances` copies of `launch`, waits a random delay, applies one of
    `actions` to all of them, then checks with `list` and `fresh`."""

    kind: Literal["stress"] = Field(default="stress", description="`stress`.")
    instances: int = Field(default=8, ge=1, description="Instances launched at once per round.")
    delay: tuple[float, float] = Field(default=(0.0, 1.2), description=(
        "[low, high] seconds: the seeded random delay before the action, drawn once per round "
        "for every variant."))
    actions: list[Literal["delete", "stop", "sigterm", "sigint", "none"]] = Field(
        min_length=1, description=(
            "What a round does to its instances: a command from `kill` per instance "
            "(`delete`, `stop`), a signal to the launched process (`sigterm`, `sigint`), or "
            "nothing (`none`)."))
    launch: list[str] = Field(min_length=1, description=(
        "The launched command (`{i}` is the instance, `{round}` the round)."))
    kill: dict[Literal["delete", "stop"], list[str]] = Field(default_factory=dict, description=(
        "The command per instance for the `delete` and `stop` actions."))
    list_cmd: list[str] = Field(min_length=1, alias="list", description=(
        "Lists what is left after the action; it must answer within the timeout."))
    fresh: list[str] = Field(min_length=1, description=(
        "A fresh instance that must run after every round."))
    exit_labels: dict[int, str] = Field(default_factory=dict, description=(
        "Names for exit codes of the launched command, shown in the report."))
    mode: Literal["run", "exec"] = Field(default="run", description=(
        "`exec`: every round first starts a host container (`host`, named `{host}`) into which "
        "the instances are launched."))
    host: list[Argv] = Field(default_factory=list, description=(
        "mode `exec`: commands that start the round's host container `{host}`."))
    host_teardown: list[Argv] = Field(default_factory=list, description=(
        "mode `exec`: commands that remove the host container, on every path."))
    signals: SignalCheck | None = Field(default=None, description=(
        "The signal check: signals sent once each instance is ready; only with "
        "`actions: [none]`."))

    @model_validator(mode="after")
    def _shape(self) -> StressConfig:
        missing = [a for a in self.actions if a in ("delete", "stop") and a not in self.kill]
        if missing:
            raise ValueError(f"actions {missing} need a command under 'kill'")
        if self.delay[0] < 0 or self.delay[1] < self.delay[0]:
            raise ValueError("'delay' must be [low, high] seconds with 0 <= low <= high")
        if self.mode == "exec" and not (self.host and self.host_teardown):
            raise ValueError("mode 'exec' needs 'host' (start the round's host container, "
                             "{host}) and 'host_teardown' (remove it)")
        if self.mode == "run" and (self.host or self.host_teardown):
            raise ValueError("'host' and 'host_teardown' are for mode 'exec' only")
        if self.signals is not None and self.actions != ["none"]:
            raise ValueError("'signals' needs actions: [none] (an instance that is killed "
                             "cannot report the signals it got)")
        return self

    def shown_command(self) -> str:
        return shlex.join(self.launch)

    def plan_detail(self) -> str:
        return f", {self.instances} instances x actions {self.actions}"


# --- the result: this kind's part of results.json (registered by patchbench.scenarios) ---


class StressRound(Record):
    round: int
    variant: str
    action: str
    delay_s: float
    exit_codes: list[int | None]
    outcomes: dict[str, int]
    kill_errors: int
    hangs: int
    leftovers: list[str]
    list_latency_s: float
    fresh_ok: bool
    # added later (optional; older files read as before): the exec mode's host container, the
    # signal check per signal name, launched processes that never said they were ready
    host: str | None = None
    signals: dict[str, SignalCount] = Field(default_factory=dict)
    not_ready: int = 0
    evidence: list[str] = Field(default_factory=list)  # hang evidence files (version 4)


class StressBuild(Record):
    rounds: int
    instances_killed: int
    kill_errors: int
    hangs: int
    leftovers: int
    fresh_failures: int
    list_latency_median_s: float
    list_latency_max_s: float
    outcomes: dict[str, int]
    signals: dict[str, SignalCount] = Field(default_factory=dict)  # added later, optional
    not_ready: int = 0  # added later, optional


def upgrade_v1(sc: dict[str, Any]) -> dict[str, Any]:
    """A version 1 stress scenario as version 2: without the empty ``cells`` and ``comparisons``
    (and ``k``) it carried."""
    for key in ("cells", "comparisons", "k"):
        sc.pop(key, None)
    return sc


class StressResult(ScenarioResult):
    kind: Literal["stress"] = "stress"
    rounds_detail: list[StressRound]
    per_build: dict[str, StressBuild]
    instances: int
    delay: list[float]
    actions: list[str]
    mode: Literal["run", "exec"] = "run"  # added later, optional
    not_forwarded: list[str] = Field(default_factory=list)  # added later: by design, never gated
    evidence_summary: str | None = None  # a readable account of every hang (version 4)

    upgrades: ClassVar[Mapping[int, ScenarioUpgrade]] = {1: upgrade_v1}


SIGNALS = {"sigterm": signal.SIGTERM, "sigint": signal.SIGINT}
_SIGNUMS = {int(x) for x in signal.Signals}
OUT_DIR = "stress-out"  # per instance output files (readiness, recorded signals), in the run folder


def host_name(instance_id: str, rnd: int | str) -> str:
    """The exec mode's host container of a round: ``{id}-h{round}``."""
    return f"{instance_id}-h{rnd}"


def classify(action: str, code: int | None, labels: dict[int, str] | None = None) -> str:
    """What a launched command's exit says about the action applied to it."""
    if code is None:
        return "hang"
    if labels and code in labels:
        return f"{labels[code]} ({code})"
    if action == "none" and code < 0:
        return f"killed by {signal.Signals(-code).name}" if -code in _SIGNUMS else f"exit {code}"
    if action in SIGNALS:
        signum = int(SIGNALS[action])
        if code == 128 + signum:
            return "forwarded (container exited by the signal)"
        if code == -signum:
            return "lost (the launcher itself died of the signal)"
        if code == 0:
            return "finished normally (signal had no effect)"
        return f"other exit {code}"
    return f"exit {code}"


def run_round(ctx: ScenarioContext[StressConfig], b: Built, rnd: int, draw: tuple[str, float], log: Path,
              seen: set[str] | None = None) -> StressRound:
    """One round for one build, with the round's (action, delay), which every build shares.
    ``seen`` holds leftovers already reported (where nothing could clean them up), so that each
    is counted once."""
    sc: StressConfig = ctx.scenario
    values = {**ctx.values(b, Cell(b.variant.name)), "round": str(rnd)}
    if sc.mode == "exec":
        values["host"] = host_name(values["id"], rnd)
    where = f"scenario {sc.name}"

    def argv_for(template: list[str], i: int) -> list[str]:
        return [a.replace("{i}", str(i)) for a in bench.fill_argv(template, values, where)]

    action, delay = draw
    for argv in sc.setup:  # e.g. start this build's own service
        cmd.run(bench.fill_argv(argv, values, where), timeout=sc.timeout, log=log,
                    error=BenchmarkError, what=f"{where} {b.variant.name}: setup")
    try:
        if sc.mode == "run":
            return _round(ctx, b, rnd, values, where, action, delay, log, seen, argv_for)
        return _exec_round(ctx, b, rnd, values, where, action, delay, log, seen, argv_for)
    finally:
        for argv in sc.teardown:
            cmd.run(bench.fill_argv(argv, values, where), timeout=sc.timeout, log=log,
                        check=False, what=f"{where} {b.variant.name}: teardown")


def without_host(leftovers: list[str], host: str) -> list[str]:
    """The leftovers that are not the round's host container. An entry names the container
    first: a runtime's "<id> (state, 2 cgroups)" or a listing's "instance <id>"."""
    def name(entry: str) -> str:
        return entry.removeprefix("instance ").split(" ", 1)[0]
    return [x for x in leftovers if name(x) != host]


def _exec_round(
    ctx: ScenarioContext[StressConfig], b: Built, rnd: int, values: dict[str, str], where: str, action: str,
    delay: float, log: Path, seen: set[str] | None, argv_for: Callable[[list[str], int], list[str]],
) -> StressRound:
    """A round of mode exec: start the host, run the round into it (the host is not a
    leftover), and always tear the host down; a host still there after its teardown is removed
    with the runtime's cleanup, and counted as a leftover if even that fails."""
    sc: StressConfig = ctx.scenario
    host = values["host"]
    name = b.variant.name
    try:
        for argv in sc.host:
            cmd.run(bench.fill_argv(argv, values, where), timeout=sc.timeout, log=log,
                        error=BenchmarkError, what=f"{where} {name}: host {host}")
        one = _round(ctx, b, rnd, values, where, action, delay, log, seen, argv_for, host=host)
    finally:  # also on an error or Ctrl-C: the host never outlives its round
        for argv in sc.host_teardown:
            # a hung teardown is killed; the check below (or the run's teardown) cleans up
            with contextlib.suppress(CommandError):
                cmd.run(bench.fill_argv(argv, values, where), timeout=sc.timeout, log=log,
                            check=False, what=f"{where} {name}: host teardown")
    if ctx.runtime is not None and ctx.runtime.leftovers(name, b.bin):
        ctx.runtime.cleanup(name, b.bin)  # the round's leftovers (counted already), or the host
    left = _host_left(ctx, b, values, where, host)
    if left:
        extra = [x for x in left if seen is None or x not in seen]
        if seen is not None:
            seen.update(extra)
        one = one.model_copy(update={"leftovers": [*one.leftovers, *extra]})
    return one


def _host_left(ctx: ScenarioContext[StressConfig], b: Built, values: dict[str, str], where: str, host: str,
               ) -> list[str]:
    """What remains of the host container after its teardown."""
    sc: StressConfig = ctx.scenario
    if ctx.runtime is not None:
        found = ctx.runtime.leftovers(b.variant.name, b.bin)
        return [x for x in found if x not in without_host(found, host)]
    try:
        res = cmd.run(bench.fill_argv(sc.list_cmd, values, where), timeout=sc.timeout,
                          check=False)
    except CommandError:
        return []
    return [f"instance {x} (the host, after its teardown)" for x in res.stdout.split() if x == host]


def _round(
    ctx: ScenarioContext[StressConfig], b: Built, rnd: int, values: dict[str, str], where: str,
    action: str, delay: float, log: Path, seen: set[str] | None,
    argv_for: Callable[[list[str], int], list[str]], host: str | None = None,
) -> StressRound:
    sc: StressConfig = ctx.scenario
    check = sc.signals
    procs: list[Background] = []
    outputs: list[Path] = []
    kill_errors = 0
    kill_hangs = 0
    signalled: list[bool] = []
    evidence: list[str] = []
    launched = time.monotonic()
    try:
        for i in range(sc.instances):
            out = None
            if check is not None:  # its own output file: readiness and the signals it got
                out = ctx.workdir / OUT_DIR / f"{sc.name}-{b.variant.name}-r{rnd}-{i}.out"
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(b"")
                outputs.append(out)
            procs.append(Background(argv_for(sc.launch, i), log=out or log))
        if check is not None:
            signalled = stress_signals.send_when_ready(
                procs, outputs, check, delay, check.ready_timeout or sc.timeout)
        else:
            time.sleep(delay)
        for i, proc in enumerate(procs if action != "none" else []):
            if action in SIGNALS:
                proc.signal(SIGNALS[action])
                continue
            try:
                kill_cmd = sc.kill[action]  # type: ignore[index]  # signals were handled above
                res = cmd.run(argv_for(kill_cmd, i), timeout=sc.timeout, check=False, log=log)
                kill_errors += res.returncode != 0
            except CommandError:
                kill_hangs += 1
        # a hang: its evidence before the kill (and the group's kill below)
        codes, evidence = wait_or_capture(procs, sc.timeout, lambda i: argv_for(sc.launch, i),
                                          evidence_dir_of(ctx, b), launched)
    finally:
        for p in procs:
            p.stop()
    signals: dict[str, SignalCount] = {}
    if check is not None:
        for out, sent in zip(outputs, signalled, strict=True):
            got = stress_signals.received(out.read_text(errors="replace"), check.ready)
            signals = stress_signals.add(signals, stress_signals.count(check, got if sent else None))
    after = _after_round(ctx, b, values, where, log, seen, argv_for, host)
    return StressRound(
        round=rnd, variant=b.variant.name, action=action, delay_s=round(delay, 4),
        exit_codes=codes,
        outcomes=dict(Counter(classify(action, c, sc.exit_labels) for c in codes)),
        kill_errors=kill_errors,
        hangs=sum(c is None for c in codes) + kill_hangs + int(after.listing_hang),
        leftovers=after.leftovers, list_latency_s=after.list_latency, fresh_ok=after.fresh_ok,
        host=host, signals=signals, not_ready=sum(not x for x in signalled), evidence=evidence)


@dataclass(frozen=True)
class _After:
    """What a round left: whether the listing hung and how long it took, the leftovers, and
    whether a fresh instance ran."""

    listing_hang: bool
    list_latency: float
    leftovers: list[str]
    fresh_ok: bool


def _after_round(ctx: ScenarioContext[StressConfig], b: Built, values: dict[str, str],
                 where: str, log: Path, seen: set[str] | None,
                 argv_for: Callable[[list[str], int], list[str]], host: str | None) -> _After:
    """After a round: the listing (timed), what is left (the runtime's look, deeper than the
    listing, which also cleans up; with a host, after its teardown), a fresh instance."""
    sc = ctx.scenario
    t0 = time.monotonic()
    listing_hang = False
    listed: list[str] = []
    try:
        res = cmd.run(bench.fill_argv(sc.list_cmd, values, where), timeout=sc.timeout,
                      check=False)
        listed = res.stdout.split()
    except CommandError:
        listing_hang = True
    list_latency = time.monotonic() - t0
    if ctx.runtime is not None:
        leftovers = ctx.runtime.leftovers(b.variant.name, b.bin)
        if host is not None:
            leftovers = without_host(leftovers, host)
        if leftovers and host is None:  # with a host: after its teardown (_exec_round)
            ctx.runtime.cleanup(b.variant.name, b.bin)
    else:
        prefix = values["id"] + "-"
        leftovers = [f"instance {x}" for x in listed if x.startswith(prefix) and x != host]
    if seen is not None:
        leftovers = [x for x in leftovers if x not in seen]
        seen.update(leftovers)
    fresh_ok = False
    try:
        fresh = cmd.run(argv_for(sc.fresh, sc.instances), timeout=sc.timeout, check=False,
                        log=log)
        fresh_ok = fresh.returncode == 0
    except CommandError:
        pass
    return _After(listing_hang, list_latency, leftovers, fresh_ok)


def evidence_dir_of(ctx: ScenarioContext[StressConfig], b: Built) -> Path:
    """Where the evidence of a variant's hung instances is saved (before they are killed)."""
    return ctx.workdir / f"{ctx.scenario.name}-evidence" / b.variant.name


class StressKind(Kind, name="stress", config=StressConfig, result=StressResult):
    def plan(self, ctx: ScenarioContext[StressConfig]) -> list[str]:
        sc: StressConfig = ctx.scenario
        lines = []
        for b, vals in ctx.each_build():
            if sc.mode == "exec":
                vals["host"] = host_name(vals["id"], "{round}")
            steps = [*[("setup", a) for a in sc.setup], *[("host", a) for a in sc.host],
                     ("launch", sc.launch),
                     *[(f"kill/{a}", c) for a, c in sc.kill.items()],
                     ("list", sc.list_cmd), ("fresh", sc.fresh),
                     *[("host down", a) for a in sc.host_teardown],
                     *[("teardown", a) for a in sc.teardown]]
            lines += plan_steps(f"  [{b.variant.name}]", steps, vals, sc.name)
            if sc.signals is not None:
                lines.append(f"  [{b.variant.name}] signals:  {', '.join(sc.signals.send)} to each "
                             f"launched process once it printed {sc.signals.ready!r}"
                             + (f" (not forwarded by design: {', '.join(sc.signals.not_forwarded)})"
                                if sc.signals.not_forwarded else ""))
        return lines

    def run(self, ctx: ScenarioContext[StressConfig]) -> tuple[StressResult, list[str]]:
        sc: StressConfig = ctx.scenario
        rng = random.Random(ctx.seed)
        order = bench.schedule([Cell(b.variant.name) for b in ctx.built], sc.rounds, ctx.seed)
        log = ctx.workdir / f"{sc.name}.stress.log"
        rounds: list[StressRound] = []
        seen: dict[str, set[str]] = {b.variant.name: set() for b in ctx.built}
        for r, cells in enumerate(order, 1):
            # one action and one delay per round, the same for every build
            draw = (rng.choice(sc.actions), rng.uniform(*sc.delay))
            for cell in cells:
                one = run_round(ctx, ctx.build_of(cell.variant), r, draw, log, seen[cell.variant])
                rounds.append(one)
                lost = sum(c.lost for c in one.signals.values())
                design = sum(c.by_design for c in one.signals.values())
                said = (f" signals lost {lost} of {sum(c.sent for c in one.signals.values())}"
                        + (f" ({design} not forwarded by design)" if design else "")
                        if one.signals else "")
                progress.step(cell.variant, f"round {r}: {one.action:<7} after {one.delay_s:.2f} s: "
                              f"{one.outcomes} leftovers {len(one.leftovers)} hangs {one.hangs} "
                              f"fresh {'ok' if one.fresh_ok else 'FAILED'}{said}")
        summary: list[str] = []
        for one in rounds:  # each hang's evidence into the report folder, named there
            if one.evidence:
                files = [evidence_dir_of(ctx, ctx.build_of(one.variant)) / n for n in one.evidence]
                one.evidence, _ = report_evidence(
                    ctx, files, f"{sc.name}-{one.variant}-r{one.round}", summary)
        per_build = {}
        for b in ctx.built:
            mine = [x for x in rounds if x.variant == b.variant.name]
            outcomes: Counter[str] = Counter()
            for x in mine:
                outcomes.update(x.outcomes)
            lat = [x.list_latency_s for x in mine]
            sigs: dict[str, SignalCount] = {}
            for x in mine:
                sigs = stress_signals.add(sigs, x.signals)
            per_build[b.variant.name] = StressBuild(
                rounds=len(mine), instances_killed=len(mine) * sc.instances,
                kill_errors=sum(x.kill_errors for x in mine), hangs=sum(x.hangs for x in mine),
                leftovers=sum(len(x.leftovers) for x in mine),
                fresh_failures=sum(not x.fresh_ok for x in mine),
                list_latency_median_s=stats.summarize(lat).median, list_latency_max_s=max(lat),
                outcomes=dict(outcomes), signals=sigs, not_ready=sum(x.not_ready for x in mine))
        res = StressResult(
            **header(sc, sc.shown_command()), order=[[c.label for c in cs] for cs in order],
            rounds_detail=rounds, per_build=per_build, instances=sc.instances,
            delay=list(sc.delay), actions=list(sc.actions), mode=sc.mode,
            not_forwarded=list(sc.signals.not_forwarded) if sc.signals else [],
            evidence_summary=evidence_summary(ctx, summary))
        warnings = [f"{sc.name} {v}: {pb.leftovers} leftovers, {pb.hangs} hangs, "
                    f"{pb.fresh_failures} failed fresh runs"
                    for v, pb in per_build.items() if pb.leftovers or pb.hangs or pb.fresh_failures]
        warnings += [f"{sc.name} {v}: lost {s} {c.lost} of {c.sent} times"
                     for v, pb in per_build.items() for s, c in pb.signals.items() if c.lost]
        warnings += [f"{sc.name} {v}: {pb.not_ready} launched processes never said they were "
                     "ready (no signal sent to them)"
                     for v, pb in per_build.items() if pb.not_ready]
        return res, warnings

    def gate(self, result: StressResult) -> list[str]:
        """A candidate whose rounds hung, left something behind or could not run a fresh
        instance fails, and one that lost a signal the baseline forwards (more often than the
        baseline lost it); the baseline's own failures are reported but fail nothing."""
        return [f"{result.name} {v}: {pb.hangs} hangs, {pb.leftovers} leftovers, "
                f"{pb.fresh_failures} failed fresh runs"
                for v, pb in result.per_build.items()
                if v != "baseline" and (pb.hangs or pb.leftovers or pb.fresh_failures)
                ] + stress_signals.gate(result.name,
                                        {v: pb.signals for v, pb in result.per_build.items()})

    def blocks(self, result: StressResult, view: View) -> list[Block]:
        if view in MARKDOWN:
            return report(result, details=view is View.REPORT)
        return page(result) if view is View.PAGE else [
            summary(result) if view is View.SUMMARY else across(result)]


def builds_table(sc: StressResult, view: View) -> Table:
    """Per build: rounds, kills, hangs, leftovers, fresh runs, list latency, outcomes."""
    page = view is View.PAGE
    return table(["build", "rounds", "instances", "kill errors", "hangs", "leftovers",
                  "fresh run failed", "list latency median / max",
                  "outcomes" if page else "launched command outcomes"],
                 [[v, pb.rounds, pb.instances_killed, pb.kill_errors, pb.hangs, pb.leftovers,
                   pb.fresh_failures,
                   f"{fmt_time(pb.list_latency_median_s)} / {fmt_time(pb.list_latency_max_s)}",
                   "; ".join(f"{k}: {n}" for k, n in sorted(pb.outcomes.items()))]
                  for v, pb in sc.per_build.items()], "stress" if page else "")


def report(result: StressResult, *, details: bool = True) -> list[Block]:
    """The builds' table; the signal check; the hung instances with their evidence."""
    sc = result
    out: list[Block] = [builds_table(sc, View.REPORT)]
    if any(pb.signals for pb in sc.per_build.values()):
        note = (f" {', '.join(sc.not_forwarded)}: the runtime does not forward it by design; "
                "a missing one is shown apart and never fails the gate."
                if sc.not_forwarded else "")
        out += [text("Signals sent to the launched process once the process inside said it "
                     "was ready, and whether it recorded them:" + note),
                table(SIGNAL_HEADERS, signal_rows(sc))]
    return out + round_evidence(sc)


def page(result: StressResult) -> list[Block]:
    sc = result
    if not sc.per_build:
        return []
    out: list[Block] = [builds_table(sc, View.PAGE)]
    sig_rows = signal_rows(sc)
    if sig_rows:
        out += [heading("Signals sent once the process inside was ready"),
                table(SIGNAL_HEADERS, sig_rows, "stress-signals")]
    return [*out, Chart("stress", partial(charts.stress_chart, sc.model_dump(mode="json")),
                        "How every instance launched in the stress rounds ended, per build.")]


def summary(result: StressResult) -> Table:
    """The job summary's row per build: hangs, leftovers, failed fresh runs, kill errors."""
    return table(["stress", "build", "hangs", "leftovers", "fresh run failed", "kill errors"],
                 [[result.name, build, pb.hangs, pb.leftovers, pb.fresh_failures,
                   pb.kill_errors] for build, pb in result.per_build.items()])


def across(result: StressResult) -> Across:
    """A merged report's cell per build and machine: hangs / leftovers / failed fresh runs."""
    return Across(KIND.name, "Stress rounds", ("stress", "build"),
                  "hangs / leftovers / failed fresh runs, per machine",
                  tuple(((result.name, build),
                         f"{pb.hangs} / {pb.leftovers} / {pb.fresh_failures}")
                        for build, pb in result.per_build.items()))


SIGNAL_HEADERS = ["build", "signal", "sent", "forwarded", "lost", "not forwarded (by design)",
                  "never ready (nothing sent)"]


def signal_rows(sc: StressResult) -> list[list[str]]:
    """One row per build and signal: sent, forwarded, lost ("N of M"), not forwarded by design,
    instances never ready."""
    rows = []
    for v, pb in sc.per_build.items():
        for name, c in pb.signals.items():
            design = str(c.by_design) if name in sc.not_forwarded or c.by_design else ""
            rows.append([v, name, str(c.sent), str(c.forwarded), f"{c.lost} of {c.sent}", design,
                         str(pb.not_ready)])
    return rows


KIND: ScenarioKind[StressConfig, StressResult] = StressKind()
