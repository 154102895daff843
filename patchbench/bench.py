"""Measuring: interleaved hyperfine rounds over cells (a cell is a variant, plus parameters such as
k for a burst).

Every round runs every cell once, in an order drawn from a seeded generator, so baseline and
candidate alternate through the whole measurement and never run as all-A-then-all-B. hyperfine does
the timing (``-N``, warmup, prepare, cleanup, ``--export-json``); this module keeps every run's
time, exit code and round, stops a hanging call with a timeout, and reports a failing run with its
round and exit code.
"""

from __future__ import annotations

import json
import random
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbench import command, procguard
from patchbench.errors import BenchmarkError, ConfigError
from patchbench.progress import RoundProgress, step

# Extra seconds allowed for one hyperfine call beyond (warmup + runs) x the per-run timeout.
TIMEOUT_SLACK = 10.0


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
    user: list[float] = field(default_factory=list)
    system: list[float] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    hyperfine: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0  # wall time spent in hyperfine (and setup/teardown) for this cell

    def as_dict(self) -> dict[str, Any]:
        return {
            "times": self.times,
            "user": self.user,
            "system": self.system,
            "exit_codes": self.exit_codes,
            "rounds": self.rounds,
            "hyperfine": self.hyperfine,
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class Invocation:
    """What to run for one cell, with placeholders already filled in."""

    command: list[str]
    setup: list[list[str]] = field(default_factory=list)
    teardown: list[list[str]] = field(default_factory=list)
    prepare: str | None = None
    cleanup: str | None = None
    env: Mapping[str, str] | None = None


def schedule(cells: Sequence[Cell], rounds: int, seed: int) -> list[list[Cell]]:
    """A seeded, balanced order: each round is a fresh permutation of all cells."""
    rng = random.Random(seed)
    order = []
    for _ in range(rounds):
        r = list(cells)
        rng.shuffle(r)
        order.append(r)
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
    argv = [
        "hyperfine", "-N", "-i", "--style", "basic", "--runs", str(runs), "--warmup", str(warmup),
        "--export-json", str(export), "--command-name", name,
    ]
    if inv.prepare:
        argv += ["--prepare", inv.prepare]
    if inv.cleanup:
        argv += ["--cleanup", inv.cleanup]
    argv += ["--", shlex.join(inv.command)]  # never read as a hyperfine option
    timeout = (runs + warmup) * per_run_timeout + TIMEOUT_SLACK
    try:
        command.run(argv, log=log, timeout=timeout, env=inv.env, error=BenchmarkError, what=name)
    except BenchmarkError as exc:
        if "timed out" in exc.message:
            raise BenchmarkError(
                f"{name}: the benchmark command hung; stopped after {timeout:g} s",
                hint="raise the scenario's 'timeout' (seconds per run) if it is legitimately slow",
                detail=exc.detail,
            ) from None
        raise
    data = json.loads(export.read_text())
    result: dict[str, Any] = data["results"][0]
    return result


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
) -> tuple[dict[Cell, Samples], list[list[str]]]:
    """Run the scenario named ``scenario`` over ``cells`` in ``rounds`` interleaved rounds of
    ``runs // rounds`` runs per cell (the first round of a cell after ``warmup`` warmup runs, later
    ones after at most one); ``timeout`` is seconds per run. Returns samples and the order used."""
    workdir.mkdir(parents=True, exist_ok=True)
    order = schedule(cells, rounds, seed)
    per_round = runs // rounds
    samples = {c: Samples() for c in cells}
    warmed: set[Cell] = set()
    log = workdir / f"{scenario}.hyperfine.log"
    shown = RoundProgress(rounds, label=scenario)  # round r/R and the time left, on a terminal
    for r, round_cells in enumerate(order, 1):
        shown.start(r)
        for cell in round_cells:
            inv = expand(cell)
            name = f"{scenario} {cell.label} round {r}/{rounds}"
            cell_warmup = warmup if cell not in warmed else min(1, warmup)
            warmed.add(cell)
            slug = cell.label.replace(" ", "_").replace("=", "")
            export = workdir / f"{scenario}.{slug}.r{r}.json"
            t0 = time.monotonic()
            # setup and teardown write to the log, never to a pipe: a detached container that
            # inherits a pipe would hold it open long after its launcher returned
            for argv in inv.setup:
                command.run(argv, env=inv.env, timeout=timeout + TIMEOUT_SLACK,
                            error=BenchmarkError, what=f"{name}: setup", log=log)
            try:
                result = hyperfine(inv, runs=per_round, warmup=cell_warmup,
                                   per_run_timeout=timeout, export=export, log=log, name=name)
            finally:
                for argv in inv.teardown:
                    command.run(argv, env=inv.env, timeout=timeout + TIMEOUT_SLACK,
                                check=False, what=f"{name}: teardown", log=log)
                # what outlived the command: found and killed (the baseline's is not gated)
                procguard.check_active(name, cell.variant)
            s = samples[cell]
            s.seconds += time.monotonic() - t0
            codes = [int(c) if c is not None else -1 for c in result.get("exit_codes", [])]
            s.times.extend(result["times"])
            s.exit_codes.extend(codes)
            s.rounds.extend([r] * len(result["times"]))
            s.user.extend(result.get("user_times", []) or [])
            s.system.extend(result.get("system_times", []) or [])
            s.hyperfine.append(result)
            failed = [c for c in codes if c != 0]
            if failed:
                raise BenchmarkError(
                    f"{name}: {len(failed)} of {len(codes)} runs failed "
                    f"(exit codes {sorted(set(failed))})",
                    hint="run the command by hand (invoke compare NAME --dry-run prints it)",
                    detail=f"command: {shlex.join(inv.command)}\nhyperfine JSON: {export}",
                )
            if on_round:
                on_round(r, cell, result)
    shown.finish()
    return samples, [[c.label for c in rc] for rc in order]


def show_round(r: int, cell: Cell, result: dict[str, Any]) -> None:
    """Progress after each hyperfine call (stderr)."""
    med = result.get("median") or 0.0
    step(cell.label, f"round {r}: median {med * 1000:8.2f} ms")
