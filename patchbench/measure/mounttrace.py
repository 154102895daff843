"""Exact counts of the mount syscalls (``open_tree``, ``mount_setattr``, ``move_mount``, ``mount``,
``umount2``, and their failures) of a command, of given running processes (a containerd) and of
everything they fork while traced, per syscall and per ``comm``, with bpftrace counting in kernel
maps so no event is dropped. For a plain OCI runtime CLI the whole-tree syscall profile
(patchbench.measure.syscalls, ``strace -f``) counts the same calls and ``from_trace`` is its view
of them. Where tracefs is not mounted, bpftrace runs in a private mount namespace with it, and the
traced command is moved back into the caller's (``nsenter``)."""

from __future__ import annotations

import os
import shlex
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchbench.errors import BenchmarkError
from patchbench.measure import syscalls
from patchbench.measure.hangs import HANG_EXIT_CODE
from patchbench.measure.syscalls import (
    bpftrace_argv,
    bpftrace_check,
    bpftrace_dir,
    bpftrace_docs,
    bpftrace_env,
)
from patchbench.util import cmd

# syscall name -> its tracepoint name (umount2 is SYSCALL_DEFINE2(umount, ...) in the kernel)
SYSCALLS: dict[str, str] = {
    "open_tree": "open_tree",
    "mount_setattr": "mount_setattr",
    "move_mount": "move_mount",
    "mount": "mount",
    "umount2": "umount",
}
# every syscall a trace may name (SYSCALLS, the default, plus the new mount API's other calls)
TRACEPOINTS: dict[str, str] = {**SYSCALLS, "fsopen": "fsopen", "fsconfig": "fsconfig",
                               "fsmount": "fsmount", "fspick": "fspick"}


@dataclass(frozen=True)
class MountCounts:
    """calls[syscall][comm] = count; errors likewise for calls that returned an error."""

    calls: Mapping[str, Mapping[str, int]]
    errors: Mapping[str, Mapping[str, int]]
    exit_code: int
    syscalls: tuple[str, ...] = field(default=tuple(SYSCALLS))

    def by_syscall(self, comms: Sequence[str] | None = None) -> dict[str, int]:
        return {s: sum(n for c, n in self.calls.get(s, {}).items() if comms is None or c in comms)
                for s in self.syscalls}

    def by_comm(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for per in self.calls.values():
            for comm, n in per.items():
                out[comm] = out.get(comm, 0) + n
        return dict(sorted(out.items()))

    def total(self, comms: Sequence[str] | None = None) -> int:
        return sum(self.by_syscall(comms).values())

    def error_total(self) -> int:
        return sum(n for per in self.errors.values() for n in per.values())

    def as_dict(self) -> dict[str, object]:
        return {"by_syscall": self.by_syscall(), "by_comm": self.by_comm(), "total": self.total(),
                "calls": {s: dict(sorted(c.items())) for s, c in self.calls.items()},
                "errors": {s: dict(sorted(c.items())) for s, c in self.errors.items()},
                "exit_code": self.exit_code}


def script(roots: Sequence[int], syscalls: Sequence[str] = tuple(SYSCALLS)) -> str:
    """The bpftrace program: follow ``cpid`` and ``roots`` and their descendants, count calls."""
    unknown = [s for s in syscalls if s not in TRACEPOINTS]
    if unknown:
        raise ValueError(f"no tracepoint known for {unknown}")
    seeds = "".join(f" @tree[{int(r)}] = 1;" for r in roots)
    enter = ", ".join(f"tracepoint:syscalls:sys_enter_{TRACEPOINTS[s]}" for s in syscalls)
    exits = ", ".join(f"tracepoint:syscalls:sys_exit_{TRACEPOINTS[s]}" for s in syscalls)
    return (
        f"BEGIN {{ @tree[cpid] = 1;{seeds} }}\n"
        "tracepoint:sched:sched_process_fork /@tree[pid]/ { @tree[args->child_pid] = 1; }\n"
        "tracepoint:sched:sched_process_exit /@tree[tid]/ { delete(@tree[tid]); }\n"
        f"{enter} /@tree[pid]/ {{ @calls[probe, comm] = count(); }}\n"
        f"{exits} /@tree[pid] && args->ret < 0/ {{ @errors[probe, comm] = count(); }}\n"
        "END { clear(@tree); }\n"
    )


def parse(output: str, exit_code: int, syscalls: Sequence[str] = tuple(SYSCALLS)) -> MountCounts:
    """bpftrace's ``-f json`` output -> counts. Keys look like
    ``"tracepoint:syscalls:sys_enter_mount,containerd"``."""
    by_tp = {tp: name for name, tp in TRACEPOINTS.items()}
    maps: dict[str, dict[str, dict[str, int]]] = {"@calls": {}, "@errors": {}}
    for doc in bpftrace_docs(output):
        if doc.get("type") != "map":
            continue
        for map_name, entries in doc.get("data", {}).items():
            if map_name not in maps or not isinstance(entries, dict):
                continue
            for key, n in entries.items():
                probe, _, comm = key.partition(",")
                tp = probe.rsplit(":", 1)[-1].removeprefix("sys_enter_").removeprefix("sys_exit_")
                name = by_tp.get(tp)
                if name is None:
                    raise BenchmarkError(f"bpftrace reported an unexpected probe {probe!r}")
                per = maps[map_name].setdefault(name, {})
                per[comm] = per.get(comm, 0) + int(n)
    return MountCounts(maps["@calls"], maps["@errors"], exit_code, tuple(syscalls))


def check() -> None:
    """RequirementError unless bpftrace can run here (root, bpftrace, nsenter/unshare)."""
    bpftrace_check("mount syscalls", hint=None)


def trace(
    argv: Sequence[str | os.PathLike[str]],
    workdir: Path,
    *,
    roots: Sequence[int] = (),
    syscalls: Sequence[str] = tuple(SYSCALLS),
    env: Mapping[str, str] | None = None,
    timeout: float = 300.0,
) -> MountCounts:
    """Run ``argv`` under the tracer and return the counts of it, ``roots`` and their
    descendants. ``argv``'s output goes to ``workdir/command.log``; its exit code is in the result.
    """
    check()
    wd = bpftrace_dir(workdir)
    prog = wd / "mounts.bt"
    prog.write_text(script(roots, syscalls))
    status = wd / "command.status"
    status.unlink(missing_ok=True)
    out = wd / "bpftrace.json"
    out.unlink(missing_ok=True)
    bt, _ = bpftrace_argv(wd, prog, out, argv, then=f"echo $? >{shlex.quote(str(status))}")
    run_env = bpftrace_env(env)
    cmd.run(bt, env=run_env, timeout=timeout, log=wd / "bpftrace.log", error=BenchmarkError,
            what="bpftrace (mount syscall count)")
    try:
        code = int(status.read_text().strip())
    except (OSError, ValueError):
        raise BenchmarkError(
            "the traced command did not record its exit status (bpftrace did not run it?)",
            detail=f"(log: {wd / 'bpftrace.log'})") from None
    try:
        text = out.read_text()
    except OSError:
        raise BenchmarkError("bpftrace wrote no output", detail=f"(log: {wd / 'bpftrace.log'})") from None
    return parse(text, code, syscalls)


def from_trace(t: syscalls.Trace, names: Sequence[str] = tuple(SYSCALLS)) -> MountCounts:
    """The mount-syscall counts of a whole-tree syscall profile (patchbench.measure.syscalls):
    the calls and failed calls of ``names`` per process name; a run killed at its timeout under
    the tracer has the hang's exit code (124)."""
    wanted = set(names)
    calls = {s: dict(per) for s, per in t.calls.items() if s in wanted}
    errors = {s: dict(per) for s, per in t.errors.items() if s in wanted}
    code = t.exit_code if t.exit_code is not None else HANG_EXIT_CODE
    return MountCounts(calls, errors, code, tuple(names))


def parse_strace(output: str, exit_code: int, syscalls_: Sequence[str] = tuple(SYSCALLS)
                 ) -> MountCounts:
    """``strace -f -Y -o FILE`` output -> counts per syscall and ``comm`` (the profile's parser,
    patchbench.measure.syscalls.parse, then ``from_trace``): a call counts once, where it
    starts; it is an error when it returned -1; one that never returned counts as made."""
    return from_trace(syscalls.parse(output, exit_code), syscalls_)


@dataclass(frozen=True)
class MountTableSample:
    at: float  # seconds since the sampler started
    mounts: int  # lines of the mount table
    read_seconds: float  # how long reading it took


class MountTableSampler:
    """Samples the size of the mount table, and how long it takes to read, every ``interval``
    seconds in a thread (``with MountTableSampler() as s: ...burst...``; then ``s.samples``,
    ``s.peak()``). The seed saw reading it take tens of seconds under load."""

    def __init__(self, interval: float = 0.05, mountinfo: Path = Path("/proc/self/mountinfo")):
        self.interval = interval
        self.mountinfo = mountinfo
        self.samples: list[MountTableSample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    def sample(self) -> MountTableSample:
        started = time.monotonic()
        with open(self.mountinfo, "rb") as f:
            n = sum(1 for _ in f)
        now = time.monotonic()
        return MountTableSample(round(started - self._t0, 4), n, now - started)

    def _loop(self) -> None:
        while True:
            self.samples.append(self.sample())
            if self._stop.wait(self.interval):
                break

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="mount-table-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        self.samples.append(self.sample())  # one after the burst, always

    def peak(self) -> MountTableSample:
        """The sample with the most mounts (the earliest among equals)."""
        return max(self.samples, key=lambda s: (s.mounts, -s.at))

    def slowest_read(self) -> float:
        return max(s.read_seconds for s in self.samples)

    def __enter__(self) -> MountTableSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
