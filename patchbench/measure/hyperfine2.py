"""The timing engine, hyperfine 2: its version, the metrics this machine can give, the
``--metrics`` option, and its export read back. Details: docs/internals.md."""

from __future__ import annotations

import functools
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from patchbench.analysis import metrics as mx
from patchbench.errors import BenchmarkError, PatchbenchError, RequirementError
from patchbench.util import cmd

MIN_VERSION = (2, 0, 0)
INSTALL = ("cargo install hyperfine --version 2.0.0 --locked --ignore-rust-version "
           "--root /usr/local")
PROBE_COMMAND = "true"  # what a counter is probed on: any program the kernel can count


def parse_version(text: str) -> tuple[int, ...] | None:
    """``hyperfine 2.0.0`` -> (2, 0, 0); None when the text names no version."""
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(x) for x in m.groups(default="0")) if m else None


@functools.cache
def version() -> tuple[int, ...] | None:
    """The version of the hyperfine on PATH (None: none there, or it says none)."""
    if shutil.which("hyperfine") is None:
        return None
    try:
        out = cmd.run(["hyperfine", "--version"], timeout=30, check=False)
    except PatchbenchError:
        return None
    return parse_version(out.stdout or out.stderr)


def require() -> None:
    """Stop (exit 16) unless the hyperfine on PATH is 2.0 or newer."""
    found = version()
    if found is not None and found >= MIN_VERSION:
        return
    shown = "no hyperfine on PATH" if found is None and shutil.which("hyperfine") is None else (
        f"hyperfine {'.'.join(map(str, found))}" if found else "a hyperfine of unknown version")
    raise RequirementError(
        f"{shown}: patchbench measures with hyperfine 2.0 or newer (it records every run's CPU "
        "time, user and system time and peak memory besides wall time)",
        hint=f"install it: {INSTALL} (or run .ci/install); Debian's package is 1.x")


@functools.cache
def available(name: str) -> bool:
    """Whether this machine gives metric ``name``: the five of every run always; a hardware
    counter when hyperfine can open it here (a PMU and perf_event_open allowed), asked of
    hyperfine itself on one run of a trivial program."""
    m = mx.metric(name)
    if not m.counter:
        return True
    argv = ["hyperfine", "-N", "--style", "none", "--runs", "1", "--metrics", m.hyperfine,
            "--", PROBE_COMMAND]
    try:
        out = cmd.run(argv, timeout=60, check=False)
    except PatchbenchError:
        return False
    return out.returncode == 0


def check(names: Sequence[str], where: str) -> None:
    """Stop (exit 16) unless hyperfine 2 is here and every metric of ``names`` is available,
    naming each one that is not."""
    require()
    missing = [n for n in names if not available(n)]
    if missing:
        raise RequirementError(
            f"{where}: this machine cannot measure {', '.join(missing)} (hyperfine cannot open "
            "the hardware counter: no PMU, as in most VMs, or perf_event_open is not allowed)",
            hint="leave it out of the scenario's `metrics`, or run on a machine with a PMU "
                 "(and kernel.perf_event_paranoid <= 2)")


def check_scenarios(scenarios: Sequence[Any]) -> None:
    """:func:`check` for every scenario that records metrics (a timed kind's ``metric_names``),
    before anything is built."""
    for sc in scenarios:
        names = getattr(sc, "metric_names", None)
        if names is not None:
            check(names, f"scenario {sc.name}")


def option(names: Sequence[str]) -> list[str]:
    """hyperfine's ``--metrics`` for ``names`` (wall time first: hyperfine's primary metric, the
    one its log and its comparisons show); nothing for no names."""
    if not names:
        return []
    return ["--metrics", ",".join(mx.metric(n).hyperfine for n in mx.ordered([mx.WALL, *names]))]


@dataclass
class Runs:
    """One command's runs from one hyperfine result: wall times, exit codes, and the values of
    every other metric recorded, run by run."""

    times: list[float]
    exit_codes: list[int]
    values: dict[str, list[float]] = field(default_factory=dict)


def _code(value: Any) -> int:
    return int(value) if value is not None else -1


def runs(result: dict[str, Any], names: Sequence[str] = ()) -> Runs:
    """The runs of one result of hyperfine's JSON export (schema 2, or 1.x), with the values of
    the metrics ``names`` (other than wall time) that it holds. A schema-2 run without one of
    them, or a value that is not a number, is a BenchmarkError."""
    wanted = [n for n in mx.ordered(names) if n != mx.WALL]
    if "measurements" not in result:  # hyperfine 1.x: wall times, per-run user/system rarely
        times = [float(t) for t in result["times"]]
        codes = [_code(c) for c in result.get("exit_codes") or [0] * len(times)]
        values = {n: [float(x) for x in result.get(f"{n}_times") or []] for n in wanted}
        return Runs(times, codes, {n: v for n, v in values.items() if len(v) == len(times)})
    out = Runs([], [])
    for n in wanted:
        out.values[n] = []
    for i, run in enumerate(result["measurements"]):
        out.times.append(_value(run, mx.WALL, i))
        out.exit_codes.append(_code(run.get("exit_code")))
        for n in wanted:
            out.values[n].append(_value(run, n, i))
    return out


def _value(run: dict[str, Any], name: str, i: int) -> float:
    entry = run.get(mx.metric(name).hyperfine)
    value = entry.get("value") if isinstance(entry, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise BenchmarkError(f"hyperfine's export has no {name} value for run {i + 1} "
                             f"({mx.metric(name).hyperfine}: {entry!r})")
    return float(value)


# a 2.x result's parts made again from the cell's samples: per-run ``measurements`` (about 330
# bytes a run) and their ``summary`` (about 900 bytes a call)
DERIVED = ("measurements", "summary")


CMD = "command"  # hyperfine's key for a call's command line


def kept(result: dict[str, Any], before: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """What results.json keeps of one result of hyperfine's export after the cell's ``before``:
    a 2.x result's name, and its command unless it is the last one kept (with short blocks a
    cell is hundreds of calls of one command); a 1.x result whole."""
    if "measurements" not in result:
        return result
    last = next((h[CMD] for h in reversed(before) if CMD in h), None)
    return {k: v for k, v in result.items()
            if k not in DERIVED and not (k == CMD and v == last)}


def total(result: dict[str, Any]) -> float:
    """The sum of one result's wall times."""
    return sum(runs(result).times)
