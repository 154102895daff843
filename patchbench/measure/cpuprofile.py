"""A sampled CPU profile of a process tree with perf: where a start spends its CPU.
Details: docs/internals.md."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchbench.errors import BenchmarkError
from patchbench.util import cmd

EVENT = "cpu-clock"
FREQUENCY = 4999  # Hz: a 20 ms start gives about 100 samples
SHOWN = f"perf record -e {EVENT} -F {{freq}} -g -o FILE -- COMMAND; perf script"
_HEAD = re.compile(r"^(\S.*?)\s+(\d+)(?:/\d+)?\s+(?:\[\d+\]\s+)?[\d.]+:\s+\d+\s+\S+:")
_FRAME = re.compile(r"^\s+[0-9a-f]+\s+(.+?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)$")
UNKNOWN = "[unknown]"


@dataclass
class Samples:
    """Folded stacks -> samples, and the traced command's exit code (None: killed at its
    timeout)."""

    stacks: dict[str, int] = field(default_factory=dict)
    exit_code: int | None = 0

    @property
    def total(self) -> int:
        return sum(self.stacks.values())


def _frame(sym: str, module: str) -> str:
    if sym == UNKNOWN:
        return f"[{Path(module).name}]" if module and module != UNKNOWN else UNKNOWN
    return sym.replace(";", ":")


def fold(script: str) -> dict[str, int]:
    """``perf script`` output (a header line per sample, then its frames innermost first, a blank
    line after) -> ``comm;outer;...;inner`` -> samples."""
    out: dict[str, int] = {}
    comm: str | None = None
    frames: list[str] = []

    def done() -> None:
        if comm is not None:
            key = ";".join([comm.replace(";", ":"), *reversed(frames)])
            out[key] = out.get(key, 0) + 1

    for line in script.splitlines():
        if not line.strip():
            done()
            comm, frames = None, []
            continue
        if not line[0].isspace():
            done()
            m = _HEAD.match(line)
            comm, frames = (m.group(1).strip() if m else line.split()[0]), []
            continue
        f = _FRAME.match(line)
        if f is not None and comm is not None:
            frames.append(_frame(f.group(1), f.group(2)))
    done()
    return out


def record(argv: Sequence[str | os.PathLike[str]], workdir: Path, *,
           env: Mapping[str, str] | None = None, timeout: float = 300.0,
           frequency: int = FREQUENCY) -> Samples:
    """Run ``argv`` under ``perf record`` and return its folded stacks; a run past ``timeout``
    is killed with its group (exit_code None) and what perf wrote until then is read."""
    cmd.which("perf")
    workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / "perf.data"
    data.unlink(missing_ok=True)
    rec = ["perf", "record", "-q", "-e", EVENT, "-F", str(int(frequency)), "-g", "-o", str(data),
           "--", *(str(a) for a in argv)]
    with cmd.Background(rec, env=dict(env) if env is not None else None,
                            log=workdir / "command.log") as bg:
        code = bg.wait(timeout)
        if code is None:
            bg.stop()
    if not data.exists():
        raise BenchmarkError("perf record wrote no data", detail=f"(log: {workdir / 'command.log'})")
    res = cmd.run(["perf", "script", "-i", str(data), "-F", "comm,pid,tid,time,period,event,ip,sym,dso"],
                      timeout=timeout, check=False, error=BenchmarkError, what="perf script")
    return Samples(fold(res.stdout), code)


def self_share(stacks: Mapping[str, int]) -> dict[str, float]:
    """function -> its share of the samples as the innermost frame (its own time)."""
    return _shares(stacks, lambda key: [key.rsplit(";", 1)[-1]])


def total_share(stacks: Mapping[str, int]) -> dict[str, float]:
    """function -> its share of the samples anywhere on the stack (itself and what it called)."""
    return _shares(stacks, lambda key: set(key.split(";")[1:]))


def _shares(stacks: Mapping[str, int], names: Callable[[str], Iterable[str]]
            ) -> dict[str, float]:
    """function -> the share of the samples whose stack ``names`` it among."""
    total = sum(stacks.values())
    out: dict[str, float] = {}
    if not total:
        return out
    for key, n in stacks.items():
        for name in names(key):
            out[name] = out.get(name, 0.0) + n / total
    return out
