"""Measuring: interleaved hyperfine rounds over cells (a cell is a variant, plus parameters such as
k for a burst). Details: docs/internals.md."""

from __future__ import annotations

import json
import random
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbench.errors import BenchmarkError, ConfigError, RunsFailed
from patchbench.measure import hangs, hyperfine2, reaper
from patchbench.util import cmd, procguard
from patchbench.util.progress import RoundProgress, estimate_left, round_text, step

# Extra seconds allowed for one hyperfine call beyond (warmup + runs) x the per-run timeout.
TIMEOUT_SLACK = 10.0
# The rounds one hyperfine call may take, by the time the last call took per round: the progress
# lines come about this often (a run of short rounds is one or two calls), and an escaped process
# (gated) runs beside the rest of its call at most about this long before it is found and killed
BATCH_SECONDS = 10.0
MAX_BATCH_ROUNDS = 64  # and never more rounds than this in one call (one argv of every command)


@dataclass(frozen=True)
class Cell:
    variant: str
    params: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.variant} {extra}".strip()

    def param(self, name: str) -> str | None:
        return dict(self.params).get(name)


@dataclass
class Samples:
    times: list[float] = field(default_factory=list)
    # every other metric recorded, one value per timed run (aligned with times: hung runs have none)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    exit_codes: list[int] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    hyperfine: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0  # wall time spent in hyperfine (and setup/teardown) for this cell
    hung_times: list[float] = field(default_factory=list)  # runs past their deadline
    hung_rounds: list[int] = field(default_factory=list)
    # each block's own warm-up runs (``block_warmup``: the first runs of every block, discarded
    # from the timing): their wall times, other metrics and rounds, kept apart from ``times``
    warmup_times: list[float] = field(default_factory=list)
    warmup_metrics: dict[str, list[float]] = field(default_factory=dict)
    warmup_rounds: list[int] = field(default_factory=list)

    @property
    def runs(self) -> int:
        """Every run made, hung or not, a block's warm-ups included (hang rates count them)."""
        return len(self.times) + len(self.hung_times) + len(self.warmup_times)

    def as_dict(self) -> dict[str, Any]:
        return {
            "times": self.times,
            "metrics": self.metrics,
            "exit_codes": self.exit_codes,
            "rounds": self.rounds,
            "hyperfine": self.hyperfine,
            "seconds": self.seconds,
            "hung_times": self.hung_times,
            "hung_rounds": self.hung_rounds,
            "warmup_times": self.warmup_times,
            "warmup_metrics": self.warmup_metrics,
            "warmup_rounds": self.warmup_rounds,
        }

    def add(self, result: dict[str, Any], rnd: int, *, deadline: bool = True,
            metrics: Sequence[str] = (), warm: int = 0) -> list[int]:
        """Take one block's runs (round ``rnd``) from its hyperfine result, with the values of
        ``metrics`` (other than wall time) where the result has them: the first ``warm`` runs
        are the block's own warm-ups (kept apart, never timed); with a per-run ``deadline``, a
        run that exited 124 (the launcher's hang code) goes to the hung lists, a warm-up's
        too; every other run goes to the timed ones. Returns the exit codes of the runs that
        failed otherwise (without a deadline, 124 is a failure like any other code)."""
        got = hyperfine2.runs(result, metrics)
        codes = got.exit_codes
        for n, (t, code) in enumerate(zip(got.times, codes, strict=True)):
            if deadline and code == hangs.HANG_EXIT_CODE:
                self.hung_times.append(t)
                self.hung_rounds.append(rnd)
                continue
            if n < warm:
                if code == 0:
                    self.warmup_times.append(t)
                    self.warmup_rounds.append(rnd)
                    for name, values in got.values.items():
                        self.warmup_metrics.setdefault(name, []).append(values[n])
                continue
            self.times.append(t)
            self.exit_codes.append(code)
            self.rounds.append(rnd)
            for name, values in got.values.items():
                self.metrics.setdefault(name, []).append(values[n])
        self.hyperfine.append(hyperfine2.kept(result, self.hyperfine))
        hung = {hangs.HANG_EXIT_CODE} if deadline else set()
        return [c for c in codes if c != 0 and c not in hung]


@dataclass(frozen=True)
class Invocation:
    """What to run for one cell, with placeholders already filled in."""

    command: list[str]
    setup: list[list[str]] = field(default_factory=list)
    teardown: list[list[str]] = field(default_factory=list)
    prepare: str | None = None
    cleanup: str | None = None
    env: Mapping[str, str] | None = None
    wrap: list[str] = field(default_factory=list)  # a prefix for hyperfine (a condition's)
    deadline: float | None = None  # each run's deadline, enforced by the launcher in `command`
    metrics: tuple[str, ...] = ()  # recorded besides wall time (patchbench.analysis.metrics)


def williams(n: int) -> list[list[int]]:
    """A Williams design for ``n`` treatments: rows of a Latin square (every treatment once in
    every position) in which every treatment follows every other one equally often (n rows for
    an even n, 2n for an odd one). For two: AB, BA."""
    if n < 1:
        return []
    first, low, high = [0], 1, n - 1
    for i in range(1, n):
        if i % 2:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def schedule(cells: Sequence[Cell], rounds: int, seed: int) -> list[list[Cell]]:
    """A seeded, balanced order: the rounds go through a Williams design, block after
    block (AB/BA for two cells), so that every cell runs in every position of a round equally
    often (within one, when the rounds are not a whole number of blocks) and position effects
    cancel rather than add to the variance. The seed picks which cell is which treatment and the
    order of the rows within each block."""
    rng = random.Random(seed)
    cells = list(cells)
    symbols = list(range(len(cells)))
    rng.shuffle(symbols)
    rows = williams(len(cells))
    order: list[list[Cell]] = []
    while len(order) < rounds:
        block = list(rows)
        rng.shuffle(block)
        order += [[cells[symbols[x]] for x in row] for row in block[:rounds - len(order)]]
    return order


def fill(template: str, values: Mapping[str, str], where: str) -> str:
    try:
        return template.format_map(values)
    except KeyError as exc:
        raise ConfigError(
            f"{where}: unknown placeholder {{{exc.args[0]}}} in {template!r}",
            hint="available: " + ", ".join("{" + k + "}" for k in sorted(values)),
        ) from None
    except (ValueError, IndexError):
        raise ConfigError(
            f"{where}: {template!r} has a brace that is not a placeholder",
            hint="write a literal { or } as {{ or }}",
        ) from None


def fill_argv(argv: Sequence[str], values: Mapping[str, str], where: str) -> list[str]:
    return [fill(a, values, where) for a in argv]


def hyperfine(
    inv: Invocation, *, runs: int, warmup: int, per_run_timeout: float, export: Path, log: Path,
    name: str,
) -> dict[str, Any]:
    """One hyperfine call (no shell, failures recorded rather than fatal); returns its result."""
    return hyperfine_many([inv], runs=runs, warmup=warmup, per_run_timeout=per_run_timeout,
                          export=export, log=log, names=[name], name=name)[0]


def hyperfine_call(
    invs: Sequence[Invocation], *, runs: int, warmup: int, per_run_timeout: float, export: Path,
    names: Sequence[str],
) -> tuple[list[str], float]:
    """The argv of one hyperfine call running every one of ``invs`` (``runs`` runs each, in this
    order, after ``warmup`` warmup runs each) under ``names``, and its timeout. ``invs`` share
    ``wrap``, ``env`` and ``cleanup`` (:func:`shareable`); a ``prepare`` is given per command."""
    first = invs[0]
    argv = [*first.wrap, *reaper.argv(),
        "hyperfine", "-N", "-i", "--style", "basic", "--runs", str(runs), "--warmup", str(warmup),
        "--export-json", str(export), *hyperfine2.option(first.metrics),
    ]
    for n in names:
        argv += ["--command-name", n]
    for inv in invs:  # all or none (shareable): one per command, in order
        if inv.prepare:
            argv += ["--prepare", inv.prepare]
    if first.cleanup:
        argv += ["--cleanup", first.cleanup]
    argv += ["--", *(shlex.join(inv.command) for inv in invs)]  # never read as an option
    per_run = [per_run_timeout if inv.deadline is None else inv.deadline + hangs.KILL_SLACK
               for inv in invs]
    return argv, sum((runs + warmup) * p for p in per_run) + TIMEOUT_SLACK  # the commands in turn


def hyperfine_many(
    invs: Sequence[Invocation], *, runs: int, warmup: int, per_run_timeout: float, export: Path,
    log: Path, names: Sequence[str], name: str,
) -> list[dict[str, Any]]:
    """One hyperfine call (:func:`hyperfine_call`): the results of ``invs``, in their order.
    ``name`` names the call in errors."""
    argv, timeout = hyperfine_call(invs, runs=runs, warmup=warmup,
                                   per_run_timeout=per_run_timeout, export=export, names=names)
    try:
        cmd.run(argv, log=log, timeout=timeout, env=invs[0].env, error=BenchmarkError,
                    what=name)
    except BenchmarkError as exc:
        raise explained(exc, invs, runs=runs + warmup, timeout=timeout, log=log,
                        name=name) from None
    return exported(export, invs, name)


def explained(exc: BenchmarkError, invs: Sequence[Invocation], *, runs: int, timeout: float,
              log: Path, name: str) -> BenchmarkError:
    """A hyperfine call's failure said as what it means: a call that timed out although every
    run has a deadline hung in the launcher or in hyperfine's prepare/cleanup; one without
    deadlines hung in the command. ``runs``: each command's, warmups included."""
    if "timed out" not in exc.message:
        return exc
    seen = _seen_so_far(log)
    if all(inv.deadline is not None for inv in invs):
        each = ", ".join(f"{inv.deadline:g}" for inv in invs if inv.deadline is not None)
        what = (f"hyperfine did not finish {runs * len(invs)} runs in "
                f"{timeout:g} s although each run has a deadline of {each} s: the "
                "launcher itself or hyperfine's prepare/cleanup hung")
    else:
        what = (f"the benchmark command hung (this command runs without a per-run "
                f"deadline); stopped after {timeout:g} s")
    return BenchmarkError(f"{name}: {what}. Seen: {seen}", detail=exc.detail)


def exported(export: Path, invs: Sequence[Invocation], name: str) -> list[dict[str, Any]]:
    """The results hyperfine exported for ``invs``, one per command."""
    data = json.loads(export.read_text())
    results: list[dict[str, Any]] = data["results"]
    if len(results) != len(invs):
        raise BenchmarkError(f"{name}: hyperfine exported {len(results)} results for "
                             f"{len(invs)} commands", detail=f"hyperfine JSON: {export}")
    return results


def shareable(invs: Sequence[Invocation]) -> bool:
    """Whether these cells' invocations can run as one hyperfine call: at least two, none with
    setup or teardown lists (those run around one cell's call), the same wrap, environment and
    cleanup (hyperfine takes them once), and a prepare for every command or for none."""
    if len(invs) < 2 or any(inv.setup or inv.teardown for inv in invs):
        return False
    first = invs[0]
    same = all(inv.wrap == first.wrap and inv.env == first.env and inv.cleanup == first.cleanup
               and inv.metrics == first.metrics for inv in invs)
    prepares = {inv.prepare is None for inv in invs}
    return same and len(prepares) == 1


def _seen_so_far(log: Path) -> str:
    """What hyperfine's log last said (its progress lines), for an error that says what was seen
    rather than what to raise."""
    try:
        lines = [x.strip() for x in log.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return "no log"
    return " | ".join(lines[-3:])[-400:] or "nothing in the log"


Expander = Callable[[Cell], Invocation]


def measure(
    scenario: str,
    cells: Sequence[Cell],
    expand: Expander,
    *,
    runs: int,
    rounds: int,
    warmup: int,
    timeout: float,
    seed: int,
    workdir: Path,
    on_round: Callable[[int, Cell, dict[str, Any]], None] | None = None,
    more: More | None = None,
    block_warmup: int = 0,
) -> tuple[dict[Cell, Samples], list[list[str]]]:
    """Run the scenario named ``scenario`` over ``cells`` in ``rounds`` interleaved rounds of
    ``runs // rounds`` runs per cell; ``timeout`` is seconds per run. Returns samples and the order
    used. ``more`` (``--until-ci``, ``--budget``) is asked after the last round planned so far
    for a :class:`Plan`: rounds to add (0: stop) and the cells that go on (the baseline always
    does), in the seeded balanced order those cells would have. ``warmup`` runs once per cell
    before its first round, unrecorded; ``block_warmup`` runs begin every block, recorded apart
    and never timed (docs/statistics.md, "The schedule")."""
    workdir.mkdir(parents=True, exist_ok=True)
    order = schedule(cells, rounds, seed)
    per_round = runs // rounds
    samples = {c: Samples() for c in cells}
    warmed: set[Cell] = set()
    log = workdir / f"{scenario}.hyperfine.log"
    shown = RoundProgress(rounds, label=scenario)  # round r/R and the time left, on a terminal
    share = [True]  # False for the rest of the scenario once a shared call left a process
    r = 0
    per_call: float | None = None  # seconds per round of the last call
    batchable: bool | None = None  # whether the cells share a call (asked once, when it matters)
    live, since = list(cells), 0  # the cells still measured, since round ``since``
    while r < len(order):
        first = r + 1
        batch = _batch(order, first, per_call, share, warmed, live, warmup, on_round)
        if len(batch) > 1 and batchable is None:
            batchable = shareable([expand(c) for c in cells])
        if not batchable:
            batch = batch[:1]
        shown.start(first)
        began = time.monotonic()
        if len(batch) > 1:
            done = _run_rounds(scenario, first, rounds, batch, expand, samples, share,
                               per_round=per_round, block_warmup=block_warmup, timeout=timeout,
                               workdir=workdir, log=log)
            shown.spread(len(batch))
        else:
            done = [_run_round(scenario, first, rounds, order[r], expand, samples, warmed, share,
                               per_round=per_round, warmup=warmup, block_warmup=block_warmup,
                               timeout=timeout, workdir=workdir, log=log, on_round=on_round)]
        per_call = (time.monotonic() - began) / len(done)
        for medians in done:  # one line per round, the cells in their given order
            r += 1
            step(scenario, round_line(r, rounds, shown, [(c.label, medians[c]) for c in cells
                                                          if c in medians]))
        if r == len(order) and more is not None:
            plan = more(samples, r, [[c.label for c in rc] for rc in order])
            if plan.rounds > 0:
                order, live, since = _go_on(order, live, since, plan, seed)
                rounds = shown.total = len(order)
    shown.finish()
    return samples, [[c.label for c in rc] for rc in order]


def _go_on(order: list[list[Cell]], live: list[Cell], since: int, plan: Plan, seed: int
           ) -> tuple[list[list[Cell]], list[Cell], int]:
    """The order with ``plan``'s rounds added, the cells still measured, and the round since
    which they are: decided cells stop, and a new order begins; the seeded balanced order of the
    cells measured since then goes on (``schedule`` of more rounds begins with that of fewer),
    with every cell the whole scenario's, as one planned that long would run."""
    keep = set(live if plan.cells is None else plan.cells)
    if any(c not in keep for c in live):
        live, since = [c for c in live if c in keep], len(order)
    n = len(order) - since
    return [*order, *schedule(live, n + plan.rounds, seed + since)[n:]], live, since


@dataclass(frozen=True)
class Plan:
    """What ``more`` asks for: ``rounds`` more rounds (0: stop) of ``cells`` (None: the cells
    measured so far; a subset drops the others, which are decided)."""

    rounds: int
    cells: tuple[Cell, ...] | None = None


More = Callable[[dict[Cell, Samples], int, list[list[str]]], Plan]


def _batch(order: Sequence[Sequence[Cell]], first: int, per_call: float | None,
           share: list[bool], warmed: set[Cell], cells: Sequence[Cell], warmup: int,
           on_round: Callable[[int, Cell, dict[str, Any]], None] | None,
           ) -> list[Sequence[Cell]]:
    """The rounds from ``first`` that the next call runs: that one alone for the first measured
    round (its time decides the batches), without a shared call or with a per-round callback;
    else as many as take about BATCH_SECONDS at the last call's time per round."""
    left = len(order) - first + 1
    if per_call is None or not share[0] or on_round is not None or left < 2 or \
            (warmup > 0 and not warmed.issuperset(cells)):
        return [order[first - 1]]
    n = max(1, min(left, MAX_BATCH_ROUNDS, int(BATCH_SECONDS / max(per_call, 1e-6))))
    return list(order[first - 1:first - 1 + n])


def _run_name(scenario: str, cell: Cell, r: int, rounds: int) -> str:
    """A cell's command name in round ``r`` (hyperfine's, and the errors')."""
    return f"{scenario} {cell.label} round {r}/{rounds}"


def _run_rounds(
    scenario: str, first: int, rounds: int, batch: Sequence[Sequence[Cell]], expand: Expander,
    samples: dict[Cell, Samples], share: list[bool], *, per_round: int, block_warmup: int,
    timeout: float, workdir: Path, log: Path,
) -> list[dict[Cell, float]]:
    """Rounds ``first``.. (``batch``: each one's cells in its order) as one hyperfine call, every
    cell warmed: each round's cells its commands in that round's order, so the runs come in the
    order one call per round runs them. Returns each round's medians. A failed run is raised
    after the call, naming its round, as :func:`_run_round` raises it (the call's later rounds
    have run); an escape is found after the call (it ran beside the call's later rounds; it is
    gated) and ends the sharing, and with it the batches, as there."""
    last = first + len(batch) - 1
    plan = [(first + i, cell) for i, rc in enumerate(batch) for cell in rc]
    invs = [expand(cell) for _, cell in plan]
    names = [_run_name(scenario, cell, r, rounds) for r, cell in plan]
    labels = ", ".join(c.label for c in batch[0])
    export = workdir / f"{scenario}.r{first}-{last}.json"
    got = _shared_call([cell for _, cell in plan], invs, samples, share,
                       runs=per_round + block_warmup, warmup=0, timeout=timeout, export=export,
                       log=log, names=names,
                       call=f"{scenario} rounds {first}-{last}/{rounds} (cells {labels} in one "
                            "hyperfine call)")
    done: list[dict[Cell, float]] = [{} for _ in batch]
    for (r, cell), inv, name, res in zip(plan, invs, names, got, strict=True):
        # the first failed round: raised
        done[r - first][cell] = _take(samples[cell], res, r, inv, name, export, cell.variant,
                                      block_warmup)
    return done


def _run_round(
    scenario: str, r: int, rounds: int, round_cells: Sequence[Cell], expand: Expander,
    samples: dict[Cell, Samples], warmed: set[Cell], share: list[bool], *, per_round: int,
    warmup: int, block_warmup: int, timeout: float, workdir: Path, log: Path,
    on_round: Callable[[int, Cell, dict[str, Any]], None] | None,
) -> dict[Cell, float]:
    """Round ``r``: every cell of ``round_cells`` once, in that order; returns each cell's median.

    One hyperfine call for the whole round when the cells can share it (:func:`shareable`, and
    ``share[0]``), else one per cell. A shared call's wall time is split between its cells in
    proportion to the time of their recorded runs (hyperfine does not report a command's own
    share of the call, its warmups included); ``Samples.seconds`` stays what the cell cost.

    What outlived a shared call cannot be told apart by cell: procguard attributes a step's
    escapes to its variant, and the baseline's are not gated. Such an escape is recorded against
    no variant (gated: it may be the candidate's) with a step that names every cell of the call,
    and the rest of the scenario goes back to one call per cell, so that any further escape is
    attributed to its cell."""
    invs = {cell: expand(cell) for cell in round_cells}
    names = {cell: _run_name(scenario, cell, r, rounds) for cell in round_cells}
    # warmups once per cell, before its first round (every round holds every cell: round 1)
    warmups = {cell: warmup if cell not in warmed else 0 for cell in round_cells}
    warmed.update(round_cells)
    medians: dict[Cell, float] = {}

    def took(cell: Cell, result: dict[str, Any], export: Path) -> None:
        # a failure: raised
        medians[cell] = _take(samples[cell], result, r, invs[cell], names[cell], export,
                              cell.variant, block_warmup)
        if on_round:
            on_round(r, cell, result)

    if share[0] and shareable(list(invs.values())):
        labels = ", ".join(c.label for c in round_cells)
        call = f"{scenario} round {r}/{rounds} (cells {labels} in one hyperfine call)"
        export = workdir / f"{scenario}.r{r}.json"
        got = _shared_call(round_cells, [invs[c] for c in round_cells], samples, share,
                           runs=per_round + block_warmup, warmup=max(warmups.values()),
                           timeout=timeout,
                           export=export, log=log, names=[names[c] for c in round_cells],
                           call=call)
        for cell, res in zip(round_cells, got, strict=True):
            took(cell, res, export)
        return medians
    for cell in round_cells:
        inv, name = invs[cell], names[cell]
        slug = cell.label.replace(" ", "_").replace("=", "")
        export = workdir / f"{scenario}.{slug}.r{r}.json"
        t0 = time.monotonic()
        # setup and teardown write to the log, never to a pipe: a detached container that
        # inherits a pipe would hold it open long after its launcher returned
        for argv in inv.setup:
            cmd.run(argv, env=inv.env, timeout=timeout + TIMEOUT_SLACK,
                        error=BenchmarkError, what=f"{name}: setup", log=log)
        try:
            result = hyperfine(inv, runs=per_round + block_warmup, warmup=warmups[cell],
                               per_run_timeout=timeout, export=export, log=log, name=name)
        finally:
            for argv in inv.teardown:
                cmd.run(argv, env=inv.env, timeout=timeout + TIMEOUT_SLACK,
                            check=False, what=f"{name}: teardown", log=log)
            # what outlived the command: found and killed (the baseline's is not gated)
            procguard.check_active(name, cell.variant)
        samples[cell].seconds += time.monotonic() - t0
        took(cell, result, export)
    return medians


def _shared_call(
    cells: Sequence[Cell], invs: Sequence[Invocation], samples: dict[Cell, Samples],
    share: list[bool], *, runs: int, warmup: int, timeout: float, export: Path, log: Path,
    names: Sequence[str], call: str,
) -> list[dict[str, Any]]:
    """One hyperfine call for ``cells`` (their ``invs``, in this order), then the escape check;
    its wall time is added to the cells' ``seconds`` in proportion to their recorded runs."""
    t0 = time.monotonic()
    try:
        got = hyperfine_many(invs, runs=runs, warmup=warmup, per_run_timeout=timeout,
                             export=export, log=log, names=names, name=call)
    finally:
        variants = {c.variant for c in cells}
        one = next(iter(variants)) if len(variants) == 1 else None
        if procguard.check_active(call, one) is not None and one is None:
            share[0] = False  # from now on attributable: one call per cell
    wall = time.monotonic() - t0  # the call and its check
    total = sum(hyperfine2.total(res) for res in got)
    for cell, res in zip(cells, got, strict=True):
        samples[cell].seconds += wall * (hyperfine2.total(res) / total if total > 0
                                         else 1 / len(cells))
    return got


def _take(s: Samples, result: dict[str, Any], r: int, inv: Invocation, name: str,
          export: Path, variant: str, warm: int = 0) -> float:
    """Add one cell's hyperfine result of round ``r`` to its samples (its first ``warm`` runs
    are the block's warm-ups) and return the median of its timed runs (0.0 for none); a failed
    run (not a hang under a deadline) is a BenchmarkError naming the cell, the round and the
    exit codes (RunsFailed: ``variant``'s)."""
    before = len(s.times)
    failed = s.add(result, r, deadline=inv.deadline is not None, metrics=inv.metrics,
                   warm=warm)
    if failed:
        codes = hyperfine2.runs(result).exit_codes
        raise RunsFailed(
            f"{name}: {len(failed)} of {len(codes)} runs failed "
            f"(exit codes {sorted(set(failed))})",
            hint="run the command by hand (invoke compare NAME --dry-run prints it)",
            detail=f"command: {shlex.join(inv.command)}\nhyperfine JSON: {export}",
            variant=variant)
    timed = sorted(s.times[before:])
    if not timed:
        return 0.0
    mid = len(timed) // 2
    return timed[mid] if len(timed) % 2 else (timed[mid - 1] + timed[mid]) / 2


def round_line(r: int, rounds: int, shown: RoundProgress,
               medians: Sequence[tuple[str, float]]) -> str:
    """``round 3/25 · 12s elapsed · ETA 1m28s · baseline 3.21 ms · fix 3.02 ms``."""
    elapsed = shown.clock() - shown.began
    done = [*shown.durations, elapsed - sum(shown.durations)]
    head = round_text(r, rounds, elapsed, estimate_left(done, rounds - r) if r < rounds else 0.0)
    return " · ".join([head, *(f"{label} {med * 1000:.2f} ms" for label, med in medians)])


