"""Every syscall of a process tree, counted by name (strace or bpftrace): why a start got
slower. Details: docs/internals.md."""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbench.errors import BenchmarkError, RequirementError
from patchbench.util import cmd

STRACE_FLAGS = ("-f", "-q", "-Y", "-ttt", "-T", "-e", "signal=none")
SHOWN = "strace " + " ".join(STRACE_FLAGS) + " -o FILE --"

# "PID<comm> 1796308780.673353 rest": -Y names the process, -ttt stamps the line (output
# without -ttt reads too, every line at time 0)
_LINE = re.compile(r"^(\d+)<(.{0,64}?)> (?:(\d+\.\d+) )?(.*)$")
_CALL = re.compile(r"^([a-z0-9_]+)\(")
_RESUMED = re.compile(r"^<\.\.\. ([a-z0-9_]+) resumed>")
_RESULT = re.compile(r"\)\s+= (-?\d+|\?|0x[0-9a-f]+)(?:<[^>]*>)?(?: ([A-Z][A-Z0-9_]*))?")
_DURATION = re.compile(r" <(\d+\.\d+)>$")
_EXITED = re.compile(r"^\+\+\+ (exited with (-?\d+)|killed by (SIG[A-Z0-9]+)(?: \(core dumped\))?) \+\+\+$")
_EXEC_PATH = re.compile(r'^execve(?:at)?\((?:-?\d+|AT_FDCWD)?,? ?"((?:[^"\\]|\\.)*)"')
SPAWNS = ("clone", "clone3", "fork", "vfork")  # a clone without CLONE_THREAD makes a process
EXECS = ("execve", "execveat")


@dataclass(frozen=True)
class Event:
    """One step in the life of a traced process: ``spawn`` (it made a process, at the call's
    start), ``exec`` (an exec that succeeded, at the call's start; ``detail`` the file, ""
    for an exec of a file descriptor), ``exit`` (its exit: ``detail`` the status)."""

    pid: int
    at: float  # seconds, strace's clock (-ttt)
    what: str
    detail: str = ""


@dataclass
class Trace:
    """calls[syscall][comm] = count; ``errors`` likewise for calls that returned an error;
    ``seconds[syscall]``: the wall time spent in them (-T)."""

    calls: dict[str, dict[str, int]] = field(default_factory=dict)
    errors: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    exit_code: int | None = 0  # None: killed at its timeout (a hang under the tracer)
    first: float | None = None  # the first and last timestamps of the output
    last: float | None = None
    root: int | None = None  # the traced command's pid (the first line's)

    def by_syscall(self, names: Sequence[str] | None = None) -> dict[str, int]:
        """syscall -> calls (``names``: those, in that order, a name never made as 0)."""
        keys = list(names) if names is not None else sorted(self.calls)
        return {s: sum(self.calls.get(s, {}).values()) for s in keys}

    def errors_by_syscall(self, names: Sequence[str] | None = None) -> dict[str, int]:
        keys = list(names) if names is not None else sorted(self.calls)
        return {s: sum(self.errors.get(s, {}).values()) for s in keys}

    def total(self) -> int:
        return sum(n for per in self.calls.values() for n in per.values())

    @property
    def wall(self) -> float:
        """Seconds from the first line to the last (the traced run's own length)."""
        return (self.last - self.first) if self.first is not None and self.last is not None \
            else 0.0


def _bump(table: dict[str, dict[str, int]], name: str, comm: str) -> None:
    per = table.setdefault(name, {})
    per[comm] = per.get(comm, 0) + 1


def parse(output: str, exit_code: int | None = 0) -> Trace:
    """``strace -f -q -Y -ttt -T`` output -> a Trace. A call counts once, where it starts (a
    call cut by another process's, ``<unfinished ...>``, is finished by its ``resumed`` line,
    which has its result and time); it failed when it returned -1 with an error name; one that
    never returned (``= ?``: exit_group, a killed process) counts as made, not failed. Lines
    that are not strace's are skipped."""
    t = Trace(exit_code=exit_code)
    pending: dict[int, tuple[str, str, float, str]] = {}  # pid -> an unfinished call's start

    def finished(pid: int, name: str, comm: str, at: float, head: str, rest: str) -> None:
        m = _RESULT.search(rest)
        failed = m is not None and m.group(1).startswith("-") and m.group(2) is not None
        if failed:
            _bump(t.errors, name, comm)
        d = _DURATION.search(rest)
        if d is not None:
            t.seconds[name] = t.seconds.get(name, 0.0) + float(d.group(1))
        if m is None or failed:
            return
        if name in SPAWNS and "CLONE_THREAD" not in head and m.group(1) not in ("?", "0"):
            t.events.append(Event(pid, at, "spawn", name))
        elif name in EXECS and m.group(1) == "0":
            path = _EXEC_PATH.match(head)
            t.events.append(Event(pid, at, "exec", path.group(1) if path else ""))

    for line in output.splitlines():
        m = _LINE.match(line.rstrip())
        if m is None:
            continue
        pid, comm, rest = int(m.group(1)), m.group(2), m.group(4)
        stamp = float(m.group(3) or 0.0)
        if t.root is None:
            t.root = pid
        t.first = stamp if t.first is None else min(t.first, stamp)
        t.last = stamp if t.last is None else max(t.last, stamp)
        if (x := _EXITED.match(rest)) is not None:
            status = x.group(2) if x.group(2) is not None else x.group(3)
            t.events.append(Event(pid, stamp, "exit", status))
            continue
        if (r := _RESUMED.match(rest)) is not None:
            name, comm0, at, head = pending.pop(pid, (r.group(1), comm, stamp, ""))
            finished(pid, name, comm0, at, head, rest)
            continue
        c = _CALL.match(rest)
        if c is None:
            continue
        name = c.group(1)
        _bump(t.calls, name, comm)
        if rest.endswith("<unfinished ...>"):
            pending[pid] = (name, comm, stamp, rest)
        else:
            finished(pid, name, comm, stamp, rest, rest)
    t.events.sort(key=lambda e: e.at)  # a cut call's event is known only when it resumes
    return t


def trace(argv: Sequence[str | os.PathLike[str]], workdir: Path, *, tracer: str = "strace",
          env: Mapping[str, str] | None = None, timeout: float = 300.0,
          only: Sequence[str] = ()) -> Trace:
    """Run ``argv`` under ``tracer`` (strace: every syscall, or ``only`` those; bpftrace:
    ``trace_bpftrace``) with all its descendants and return its Trace. ``argv``'s output goes to
    ``workdir/command.log``, strace's to ``workdir/strace.txt``; a run past ``timeout`` is killed
    with its group (exit_code None)."""
    if tracer == "bpftrace":
        return trace_bpftrace(argv, workdir, env, timeout)
    cmd.which("strace")
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "strace.txt"
    out.unlink(missing_ok=True)
    flags = [*STRACE_FLAGS, *(["-e", "trace=" + ",".join(only)] if only else [])]
    st = ["strace", *flags, "-o", str(out), "--", *(str(a) for a in argv)]
    with cmd.Background(st, env=dict(env) if env is not None else None,
                            log=workdir / "command.log") as bg:
        code = bg.wait(timeout)
        if code is None:  # a hang under the tracer: killed (by stop) and reported
            bg.stop()
            time.sleep(0.05)
    try:
        text = out.read_text(errors="replace")
    except OSError:
        raise BenchmarkError("strace wrote no output",
                             detail=f"(log: {workdir / 'command.log'})") from None
    return parse(text, code)


# --- the phases of an OCI runtime CLI's start ------------------------------------------------

PHASES = ("cli", "create", "process", "exit")
PHASE_TEXT = {
    "cli": "the CLI's start: its exec until it makes its first process (the container's init)",
    "create": "from that until the container's process is exec'd (namespaces, mounts, cgroups, "
              "the init's own execs)",
    "process": "the container's process, from its exec until it exits",
    "exit": "from its exit until the CLI exits (reaping, state removal)",
}
SELF_EXECS = ("/proc/self/exe",)  # a runtime re-executing itself (runc init) is not the process
SELF_FDS = ("/proc/self/fd/", "/dev/fd/")  # nor an exec of its own cloned binary by descriptor


def container_exec(t: Trace) -> Event | None:
    """The exec of the container's process: the first exec that succeeded in a process other
    than the traced command's own, of a file that is not the runtime itself (``/proc/self/exe``,
    a descriptor: ``execveat(fd, "")`` or ``/proc/self/fd/N``)."""
    for e in t.events:
        if e.what != "exec" or e.pid == t.root:
            continue
        if e.detail and e.detail not in SELF_EXECS and not e.detail.startswith(SELF_FDS):
            return e
    return None


def phases(t: Trace) -> dict[str, float] | None:
    """An OCI runtime CLI's start (``runc``/``crun``/``youki run``) in four steps from the
    trace's timestamps (PHASES, PHASE_TEXT), in seconds; None when the trace does not show them
    (no process made, no container exec, no exits)."""
    if t.first is None or t.root is None:
        return None
    spawn = next((e for e in t.events if e.what == "spawn"), None)
    exe = container_exec(t)
    if spawn is None or exe is None or spawn.at > exe.at:
        return None
    gone = next((e for e in t.events if e.what == "exit" and e.pid == exe.pid and e.at >= exe.at),
                None)
    root_exit = [e for e in t.events if e.what == "exit" and e.pid == t.root]
    if gone is None or not root_exit:
        return None
    end = root_exit[-1].at
    if end < gone.at:
        return None
    return {"cli": spawn.at - t.first, "create": exe.at - spawn.at, "process": gone.at - exe.at,
            "exit": end - gone.at}


# --- the same counts in the kernel, with bpftrace ---------------------------------------------

UNISTD = (Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"), Path("/usr/include/asm/unistd_64.h"),
          Path("/usr/include/aarch64-linux-gnu/asm/unistd.h"), Path("/usr/include/asm-generic/unistd.h"))
_NR = re.compile(r"^#define __NR_([a-z0-9_]+)\s+(\d+)\s*$")
BPFTRACE_SHOWN = "bpftrace -c COMMAND (raw_syscalls tracepoints: every syscall of the tree, in the kernel)"
CLONE_THREAD = 0x00010000
KILLED = -1  # bpftrace: the command ended without exit_group (a signal); its code is unknown


def syscall_names(headers: Sequence[Path] = UNISTD) -> dict[int, str]:
    """syscall number -> name, from the kernel headers' table (linux-libc-dev)."""
    for h in headers:
        try:
            text = h.read_text()
        except OSError:
            continue
        names = {int(m.group(2)): m.group(1) for line in text.splitlines()
                 if (m := _NR.match(line)) is not None}
        if names:
            return names
    raise RequirementError("no kernel syscall table to name the syscalls bpftrace counts",
                           hint="apt-get install linux-libc-dev (asm/unistd_64.h), or use "
                           "the strace tracer")


def bpftrace_script(nth: int) -> str:
    """Follow ``cpid`` from its ``nth`` exec on (the wrapper's own execs and calls before the
    command's are not counted), and its descendants; count every syscall by number and process
    name, its failures and its time in the kernel; print the processes made (not threads), execs
    and exits with their times, and the command's exit status."""
    return (
        'BEGIN { printf("root %d %llu\\n", cpid, nsecs); }\n'
        "tracepoint:sched:sched_process_exec /pid == cpid/ "
        f"{{ @execs = @execs + 1; if (@execs == {int(nth)}) {{ @tree[cpid] = 1; }} }}\n"
        "tracepoint:sched:sched_process_fork /@tree[pid]/ { @tree[args->child_pid] = 1; }\n"
        f"tracepoint:task:task_newtask /@tree[pid] && !(args->clone_flags & {CLONE_THREAD:#x})/ "
        '{ printf("spawn %d %llu\\n", pid, nsecs); }\n'
        "tracepoint:sched:sched_process_exec /@tree[pid]/ "
        '{ printf("exec %d %llu %s\\n", pid, nsecs, str(args->filename)); }\n'
        "tracepoint:sched:sched_process_exit /@tree[tid] && pid == tid/ "
        '{ printf("exit %d %llu\\n", pid, nsecs); }\n'
        "tracepoint:sched:sched_process_exit /@tree[tid]/ { delete(@tree[tid]); }\n"
        "tracepoint:syscalls:sys_enter_exit_group /pid == cpid/ "
        '{ printf("status %d %llu\\n", args->error_code, nsecs); }\n'
        "tracepoint:raw_syscalls:sys_enter /@tree[pid]/ "
        "{ @calls[args->id, comm] = count(); @t0[tid] = nsecs; }\n"
        "tracepoint:raw_syscalls:sys_exit /@t0[tid]/ { @ns[args->id] = sum(nsecs - @t0[tid]); "
        "delete(@t0[tid]); if (args->ret < 0) { @errors[args->id, comm] = count(); } }\n"
        "END { clear(@tree); clear(@t0); clear(@execs); }\n"
    )


def bpftrace_docs(output: str) -> Iterator[dict[str, Any]]:
    """The JSON documents of bpftrace's ``-f json`` output (other lines are passed over)."""
    import json

    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict):
                yield doc


def parse_bpftrace(output: str, exit_code: int | None, names: Mapping[int, str]) -> Trace:
    """bpftrace's ``-f json`` output of ``bpftrace_script`` -> a Trace (its times from the
    command's exec, the first the script counted, to the root's exit; a runtime that re-executes
    itself, as youki does, execs again after it)."""
    t = Trace(exit_code=exit_code)
    execs: list[Event] = []
    status_seen = False
    for doc in bpftrace_docs(output):
        if doc.get("type") == "printf":
            words = str(doc.get("data", "")).split(maxsplit=3)
            if len(words) < 3 or not words[1].lstrip("-").isdigit() or not words[2].isdigit():
                continue
            if words[0] == "status":
                t.exit_code = int(words[1]) & 0xFF
                status_seen = True
                continue
            pid, at = int(words[1]), int(words[2]) / 1e9
            if words[0] == "root":
                t.root = pid
            elif words[0] in ("spawn", "exit"):
                t.events.append(Event(pid, at, words[0]))
            elif words[0] == "exec":
                execs.append(Event(pid, at, "exec", words[3].strip() if len(words) > 3 else ""))
            continue
        if doc.get("type") != "map":
            continue
        for map_name, entries in (doc.get("data") or {}).items():
            if not isinstance(entries, dict):
                continue
            for key, n in entries.items():
                nr, _, comm = str(key).partition(",")
                if not nr.lstrip("-").isdigit():
                    continue
                name = names.get(int(nr), f"syscall_{nr}")
                if map_name == "@ns":
                    t.seconds[name] = t.seconds.get(name, 0.0) + int(n) / 1e9
                elif map_name in ("@calls", "@errors"):
                    table = t.calls if map_name == "@calls" else t.errors
                    per = table.setdefault(name, {})
                    per[comm] = per.get(comm, 0) + int(n)
    t.events = sorted([*t.events, *execs], key=lambda e: e.at)
    own = [e for e in execs if e.pid == t.root]  # the command's exec first (counting began there)
    exits = [e for e in t.events if e.what == "exit" and e.pid == t.root]
    t.first = own[0].at if own else (t.events[0].at if t.events else None)
    t.last = exits[-1].at if exits else (t.events[-1].at if t.events else None)
    if exit_code is not None and not status_seen:  # ended without exit_group: by a signal
        t.exit_code = KILLED
    return t


def tracefs_mounted(mountinfo: Path = Path("/proc/self/mountinfo")) -> bool:
    try:
        text = mountinfo.read_text()
    except OSError:
        return False
    return any(line.split(" - ", 1)[-1].startswith("tracefs ") for line in text.splitlines())


def bpftrace_check(what: str = "syscalls", hint: str | None = "or use the strace tracer") -> None:
    """RequirementError unless bpftrace can run here (root, bpftrace, nsenter/unshare)."""
    if os.geteuid() != 0:
        raise RequirementError(f"counting {what} with bpftrace needs root", hint=hint)
    cmd.which("bpftrace")
    if not tracefs_mounted():
        cmd.which("unshare")
        cmd.which("nsenter")


def bpftrace_dir(workdir: Path) -> Path:
    """The trace's folder, made and resolved (bpftrace's -c splits its command at whitespace)."""
    workdir.mkdir(parents=True, exist_ok=True)
    wd = workdir.resolve()
    if any(c.isspace() for c in str(wd)):
        raise BenchmarkError(f"the trace directory {wd} contains whitespace (bpftrace -c splits)")
    return wd


def bpftrace_argv(wd: Path, program: Path, out: Path, argv: Sequence[str | os.PathLike[str]],
                  *, exec_: bool = False, then: str = "") -> tuple[list[str], bool]:
    """bpftrace running ``program`` with ``argv`` (its output to wd/command.log; ``exec_``: the
    shell execs it, so that it is the ``cpid``; ``then``: a shell line after it) as its command;
    where tracefs is not mounted, in a private mount namespace that mounts it, with ``argv``
    moved back into the caller's by nsenter (True: the nsenter is there)."""
    moved = not tracefs_mounted()
    line = shlex.join(str(a) for a in argv)
    if moved:  # back into the caller's mount namespace: the command must not see the tracer's
        line = f"{cmd.which('nsenter')} --mount=/proc/{os.getpid()}/ns/mnt -- {line}"
    wrapper = wd / "run.sh"
    wrapper.write_text(f"#!/bin/sh\n{'exec ' if exec_ else ''}{line} "
                       f">{shlex.quote(str(wd / 'command.log'))} 2>&1\n" + (then and then + "\n"))
    bt = ["bpftrace", "-f", "json", "-o", str(out), "-c", f"/bin/sh {wrapper}", str(program)]
    if moved:
        bt = ["unshare", "-m", "--propagation", "private", "sh", "-c",
              "mount -t tracefs nodev /sys/kernel/tracing && exec \"$@\"", "sh", *bt]
    return bt, moved


def bpftrace_env(env: Mapping[str, str] | None) -> dict[str, str]:
    out = dict(env if env is not None else os.environ)
    out.setdefault("BPFTRACE_MAP_KEYS_MAX", "65536")
    return out


def trace_bpftrace(argv: Sequence[str | os.PathLike[str]], workdir: Path,
                   env: Mapping[str, str] | None = None, timeout: float = 300.0) -> Trace:
    """Run ``argv`` under bpftrace (``bpftrace_script``) and return its Trace; the command runs
    as the script's ``cpid`` itself (a shell that execs it, into the caller's mount namespace
    when tracefs had to be mounted in a private one). A run past ``timeout`` is killed with its
    group (exit_code None)."""
    bpftrace_check()
    names = syscall_names()
    wd = bpftrace_dir(workdir)
    program = os.path.abspath(cmd.which(str(argv[0])))
    out = wd / "bpftrace.json"
    out.unlink(missing_ok=True)
    prog = wd / "syscalls.bt"
    bt, moved = bpftrace_argv(wd, prog, out, [program, *argv[1:]], exec_=True)
    prog.write_text(bpftrace_script(3 if moved else 2))  # the wrapper (sh), [nsenter,] the command
    run_env = bpftrace_env(env)
    with cmd.Background(bt, env=run_env, log=wd / "bpftrace.log") as bg:
        code = bg.wait(timeout)
        if code is None:
            bg.stop()
    try:
        text = out.read_text(errors="replace")
    except OSError:
        raise BenchmarkError("bpftrace wrote no output", detail=f"(log: {wd / 'bpftrace.log'})"
                             ) from None
    if code is not None and '"root ' not in text:  # bpftrace failed before it ran the command
        raise BenchmarkError("bpftrace did not run the traced command",
                             detail=f"(log: {wd / 'bpftrace.log'})")
    # the command's exit code is its exit_group's (bpftrace's own is bpftrace's)
    return parse_bpftrace(text, code, names)
