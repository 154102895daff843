"""The stress kind's signal-forwarding check: a signal sent to the launched runtime process once
the user's process inside is ready must reach that process. The process inside traps the signals
and writes a line per signal it gets; patchbench waits for its readiness line, sends the signals,
and afterwards counts per signal and build what was forwarded, lost, or not forwarded by design
(a signal the comparison lists under ``not_forwarded``, such as runc's SIGWINCH: shown, never
gated). An instance that never said it was ready counts as not ready."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from patchbench.config.scenarios import canonical
from patchbench.results import Record
from patchbench.util.cmd import Background
from patchbench.util.models import StrictModel

# --- the config: the keys matrix.yaml gives this kind (registered by patchbench.scenarios) ---


class SignalCheck(StrictModel):
    """``signals:`` of a stress scenario."""

    send: list[str] = Field(min_length=1, description=(
        "Signals sent to each ready instance (e.g. `SIGUSR1`); each counts as forwarded or lost."))
    ready: str = Field(default="ready", min_length=1, description=(
        "The line the process writes when its signal traps are set."))
    not_forwarded: list[str] = Field(default_factory=list, description=(
        "Signals the runtime does not forward by design: a missing one is \"by design\", never lost."))
    ready_timeout: float | None = Field(default=None, gt=0, description=(
        "Seconds to wait for an instance's readiness line; default: the scenario's timeout."))

    @field_validator("send", "not_forwarded")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        out = [canonical(n) for n in names]
        dups = sorted({n for n in out if out.count(n) > 1})
        if dups:
            raise ValueError(f"{', '.join(dups)} listed more than once")
        return out

    @field_validator("ready")
    @classmethod
    def _one_line(cls, ready: str) -> str:
        if ready.strip() != ready or "\n" in ready:
            raise ValueError("must be one line without surrounding spaces")
        return ready

    @model_validator(mode="after")
    def _subset(self) -> SignalCheck:
        extra = [n for n in self.not_forwarded if n not in self.send]
        if extra:
            raise ValueError(f"not_forwarded {extra} must also be listed under 'send'")
        if self.ready in {n.removeprefix("SIG") for n in self.send} | set(self.send):
            raise ValueError(f"ready line {self.ready!r} is also a signal name")
        return self


POLL_S = 0.0005  # how often an instance's output is looked at for its readiness line, at first
SLOW_POLL_S = 0.01  # after FAST_FOR_S seconds without every instance ready
FAST_FOR_S = 1.0


class SignalCount(Record):
    """What became of one signal sent to a build's launched processes (the stress signal check):
    ``forwarded`` = the process recorded it; ``lost`` = it did not; ``by_design`` = it did not, and
    the runtime is known not to forward this signal (never counted as lost)."""

    sent: int = 0
    forwarded: int = 0
    lost: int = 0
    by_design: int = 0


def number(name: str) -> int:
    return int(signal.Signals[canonical(name)])


def lines_of(text: str) -> list[str]:
    """Complete lines only: a line still being written is not read."""
    return [ln.strip() for ln in text.split("\n")[:-1]]


def is_ready(text: str, marker: str) -> bool:
    return marker in lines_of(text)


def received(text: str, ready: str) -> set[str]:
    """The signal names the process recorded after its readiness line."""
    lines = lines_of(text)
    after = lines[lines.index(ready) + 1:] if ready in lines else []
    got = set()
    for ln in after:
        try:
            got.add(canonical(ln))
        except ValueError:
            continue  # the runtime's own output, or anything else
    return got


def count(check: SignalCheck, got: set[str] | None) -> dict[str, SignalCount]:
    """One instance: what became of each signal (``got`` None: it was never ready, nothing sent)."""
    out = {}
    for name in check.send:
        if got is None:
            out[name] = SignalCount()
        elif name in got:
            out[name] = SignalCount(sent=1, forwarded=1)
        elif name in check.not_forwarded:
            out[name] = SignalCount(sent=1, by_design=1)
        else:
            out[name] = SignalCount(sent=1, lost=1)
    return out


def add(total: dict[str, SignalCount], more: dict[str, SignalCount]) -> dict[str, SignalCount]:

    out = dict(total)
    for name, c in more.items():
        t = out.get(name, SignalCount())
        out[name] = SignalCount(sent=t.sent + c.sent, forwarded=t.forwarded + c.forwarded,
                                lost=t.lost + c.lost, by_design=t.by_design + c.by_design)
    return out


def send_when_ready(procs: Sequence[Background], outputs: Sequence[Path], check: SignalCheck,
                    delay: float, timeout: float,
                    clock: Callable[[], float] = time.monotonic) -> list[bool]:
    """For each instance: wait for its readiness line, then ``delay`` seconds, then send every
    signal of ``check.send`` (in order) to the launched process. Returns which instances were
    signalled; one that exited or stayed silent for ``timeout`` seconds was not."""
    n = len(procs)
    ready_at: list[float | None] = [None] * n
    done = [False] * n
    sent = [False] * n
    start = clock()
    deadline = start + timeout
    numbers = [number(s) for s in check.send]
    while not all(done) and clock() < deadline:
        for i in range(n):
            if done[i]:
                continue
            now = clock()
            if ready_at[i] is None:
                try:
                    text = outputs[i].read_text(errors="replace")
                except OSError:
                    text = ""
                if is_ready(text, check.ready):
                    ready_at[i] = now
                elif procs[i].proc.poll() is not None:
                    done[i] = True  # exited without ever being ready
                    continue
            at = ready_at[i]
            if at is not None and now >= at + delay:
                for sig in numbers:
                    procs[i].signal(sig)
                sent[i] = done[i] = True
        time.sleep(POLL_S if clock() - start < FAST_FOR_S else SLOW_POLL_S)
    return sent


def gate(name: str, per_build: dict[str, dict[str, SignalCount]]) -> list[str]:
    """A candidate fails for a signal it lost when the baseline forwarded that signal and lost it
    less often (by share of the signals sent). Signals not forwarded by design never count.
    ``per_build``: each build's signal counts (its ``StressBuild.signals``)."""
    base = per_build.get("baseline")
    out = []
    for v, signals in per_build.items():
        if v == "baseline":
            continue
        for sig, c in signals.items():
            if not c.lost:
                continue
            b = base.get(sig) if base is not None else None
            if b is None or not b.forwarded:
                continue  # the baseline never forwarded it: nothing to lose against
            if c.lost / c.sent > (b.lost / b.sent if b.sent else 0.0):
                out.append(f"{name} {v}: lost {sig} {c.lost} of {c.sent} times (baseline: "
                           f"{b.lost} of {b.sent})")
    return out
