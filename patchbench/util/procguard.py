"""Escaped processes are found: every measured command, setup and teardown runs inside a per-run
cgroup, so that its descendants are found even when they leave its process group or session
(``setsid``, double forks, daemons). What is still there once the command is done has escaped:
it is counted, reported with its command line and killed, and the run is flagged. The cgroup is
v2, else v1 ``freezer`` (frozen before the kill), else v1 ``pids``, else the v2 part of a hybrid
setup; without any (not root, macOS) escapes are not looked for and the run records that.
patchbench joins the cgroup itself while guarding (``activate``), so what it starts is inside
from its fork. docs/safety.md, class 9."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT = "patchbench"


@dataclass(frozen=True)
class Survivor:
    pid: int
    cmdline: str

    def as_dict(self) -> dict[str, object]:
        return {"pid": self.pid, "cmdline": self.cmdline}


@dataclass
class Found:
    """What escaped one step: who, and whether it was killed."""

    step: str
    survivors: list[Survivor] = field(default_factory=list)
    killed: bool = False
    variant: str | None = None  # the variant whose command it was, when it was one variant's

    def as_dict(self) -> dict[str, object]:
        return {"step": self.step, "count": len(self.survivors), "killed": self.killed,
                "processes": [s.as_dict() for s in self.survivors]}


def _hierarchy(root: Path) -> tuple[str, Path] | None:
    """(kind, base directory) of the cgroup hierarchy to use, or None."""
    if (root / "cgroup.controllers").is_file():
        return "v2", root
    for kind in ("freezer", "pids"):
        base = root / kind
        if (base / "cgroup.procs").is_file():
            return f"v1-{kind}", base
    if (root / "unified" / "cgroup.controllers").is_file():
        return "v2", root / "unified"
    return None


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return shlex.join(a.decode(errors="replace") for a in raw.rstrip(b"\0").split(b"\0")) or "?"


# Seconds a process still in the cgroup when a step ended is given to go before it counts as an
# escape: one killed at the end of the step (the launcher's kill of a run past its deadline)
# may still be exiting when its command returns; an escape is still there after it.
SETTLE = 0.2


class ProcGuard:
    """A per-run cgroup. Use as a context manager: it is created on entry, and whatever is left
    in it is killed and the cgroup removed on exit."""

    def __init__(self, run_id: str, *, root: Path = CGROUP_ROOT):
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", run_id)[:100] or "run"
        self.run_id = safe
        self.kind: str | None = None
        self.path: Path | None = None
        self.reason = ""
        self.found: list[Found] = []
        self.spared: set[int] = set()  # kept running on purpose (spare): never an escape
        # while guarding, patchbench itself is in the cgroup (``join_self``) and ``home`` is the
        # cgroup it came from: what it starts is inside without a join of its own
        self.home: Path | None = None
        found = _hierarchy(root)
        if found is None:
            self.reason = f"no cgroup hierarchy under {root}"
        else:
            self.kind, base = found
            self.path = base / PARENT / f"{safe}-{os.getpid()}"

    # --- life cycle -------------------------------------------------------------------------

    @property
    def available(self) -> bool:
        return self.path is not None and self.path.is_dir()

    def __enter__(self) -> ProcGuard:
        if self.path is not None:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                self.reason = f"cannot create {self.path}: {exc.strerror or exc}"
                self.path = None
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if not self.available or self.path is None:
            return
        self.leave_self()
        if self.pids():
            self.kill_all()
        with contextlib.suppress(OSError):
            self.path.rmdir()

    # --- joining ----------------------------------------------------------------------------

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` prefixed so that it joins the cgroup before it starts (and so does every
        process it starts). Unchanged when no cgroup is available."""
        if not self.available or self.path is None:
            return list(argv)
        procs = self.path / "cgroup.procs"
        return ["sh", "-c", f'echo $$ > {shlex.quote(str(procs))} && exec "$@"', "sh", *argv]

    def enter_pid(self, pid: int) -> None:
        """Move a running process (not its existing children) into the cgroup."""
        if self.available and self.path is not None:
            (self.path / "cgroup.procs").write_text(f"{pid}\n")

    def join_self(self) -> bool:
        """Put patchbench itself (all its threads) into the cgroup, remembering where it was:
        every process it starts from now on is inside from its fork, with no join of its own.
        A join of cgroup v1 waits for an RCU grace period unless another came just before
        (5-15 ms on this machine), which one join per command paid every time."""
        if not self.available or self.path is None or self.kind is None or self.home:
            return self.home is not None
        home = own_cgroup(self.kind, self.path.parent.parent)
        try:
            (self.path / "cgroup.procs").write_text("0\n")
        except OSError:
            return False
        self.home = home
        return True

    def leave_self(self) -> None:
        """Back to the cgroup patchbench came from (before the cgroup is frozen, killed or
        removed: never with it)."""
        if self.home is not None:
            (self.home / "cgroup.procs").write_text("0\n")
            self.home = None

    # --- finding and killing ----------------------------------------------------------------

    def pids(self) -> list[int]:
        if not self.available or self.path is None:
            return []
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return sorted(int(x) for x in text.split())

    def survivors(self) -> list[Survivor]:
        """Processes still in the cgroup (call once the wrapped command has returned), but not
        the ones patchbench keeps running on purpose (``spare``: a condition's CPU hogs)."""
        return [Survivor(pid, _cmdline(pid)) for pid in self.pids()
                if pid != os.getpid() and pid not in self.spared]

    def kill_all(self, timeout: float = 5.0) -> int:
        """SIGKILL everything in the cgroup; return how many processes there were."""
        if not self.available or self.path is None:
            return 0
        pids = [p for p in self.pids() if p != os.getpid()]
        if not pids:
            return 0
        home = self.home
        self.leave_self()  # not frozen or killed with what it kills
        try:
            self._kill(timeout)
        finally:
            if home is not None:
                self.join_self()
        return len(pids)

    def _kill(self, timeout: float) -> None:
        assert self.path is not None
        if self.kind == "v2" and (self.path / "cgroup.kill").exists():
            (self.path / "cgroup.kill").write_text("1\n")
        elif self.kind == "v1-freezer":
            state = self.path / "freezer.state"
            state.write_text("FROZEN\n")  # nothing forks while being killed
            self._signal_all()
            state.write_text("THAWED\n")
        deadline = time.monotonic() + timeout
        while self.pids() and time.monotonic() < deadline:
            self._signal_all()
            time.sleep(0.02)

    def _signal_all(self) -> None:
        for pid in self.pids():
            if pid != os.getpid():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def check(self, step: str, variant: str | None = None) -> Found | None:
        """After ``step`` (a command and its teardown, of ``variant`` when it is one variant's):
        find, record and kill what is left."""
        left = self.survivors()
        deadline = time.monotonic() + SETTLE
        while left and time.monotonic() < deadline:  # killed at the step's end and still exiting?
            time.sleep(0.005)
            left = self.survivors()
        if not left:
            return None
        found = Found(step, left, variant=variant)
        if self.spared & set(self.pids()):  # kill the survivors one by one, spare the hogs
            deadline = time.monotonic() + 5.0
            while (pids := [s.pid for s in self.survivors()]) and time.monotonic() < deadline:
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.02)
            found.killed = not self.survivors()
        else:
            self.kill_all()
            found.killed = not self.survivors()
        self.found.append(found)
        return found

    def report(self) -> dict[str, object]:
        """For results.json: whether escapes were looked for, and what was found."""
        return {"checked": self.available, "how": self.kind if self.available else self.reason,
                "escaped": [f.as_dict() for f in self.found],
                "count": sum(len(f.survivors) for f in self.found)}


# --- the run's guard, consulted by patchbench.util.cmd ----------------------------------------

_ACTIVE: ProcGuard | None = None
ESCAPED = "escaped process"  # the prefix of the warnings the gate fails on
# the baseline's own escapes are reported but fail no candidate (as in stress and soak)
ESCAPED_BASELINE = "escaped process of the baseline (reported, not gated)"


def activate(run_id: str) -> ProcGuard:
    """Start guarding: patchbench joins the run's cgroup, so every command it starts from now on
    is inside from its fork (or, when it could not join, joins before it runs anything), until
    ``deactivate``."""
    global _ACTIVE
    guard = ProcGuard(run_id).__enter__()
    _ACTIVE = guard if guard.available else None
    if _ACTIVE is not None:
        guard.join_self()
    return guard


def active() -> ProcGuard | None:
    return _ACTIVE


def spare(pid: int) -> None:
    """``pid`` is kept running on purpose beside the measured commands (a condition's CPU hog):
    not an escape; killed with the cgroup at the end if it is still there."""
    if _ACTIVE is not None:
        _ACTIVE.spared.add(pid)


def unspare(pid: int) -> None:
    if _ACTIVE is not None:
        _ACTIVE.spared.discard(pid)


# While guarding, patchbench is in the run's cgroup itself (``ProcGuard.join_self``) and what it
# starts is inside from its fork. When it could not join, a command joins on its own through this
# POSIX shell prologue (not a Python preexec_fn, which made every spawn a full fork() of the
# interpreter): the shell writes "0" (itself) into cgroup.procs, stops itself until popen has seen
# it joined and continues it (so that an ``exempt`` right after popen cannot be undone by a late
# join), and execs the command under the same pid, so not even the command's first child can be
# missed. $0 is the cgroup.procs path; the command follows as "$@", never as an option.
SHELL = "/bin/sh"
JOIN_FAILED_EXIT_CODE = 125
_JOIN = (f'echo 0 > "$0" || {{ echo "patchbench: cannot join the cgroup of $0" >&2; '
         f'exit {JOIN_FAILED_EXIT_CODE}; }}; kill -STOP $$; exec "$@"')


def popen(args: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(args, **kwargs)``, in the active run's cgroup when guarding: started
    behind a shell prologue that joins it and then execs ``args`` under the same pid (the exit
    code, signals and process group stay the command's); returns once the command is in the
    cgroup, or has ended (a shell that could not join exits 125 and says why on stderr)."""
    guard = _ACTIVE
    if guard is None or guard.path is None or guard.home is not None:
        return subprocess.Popen(list(args), **kwargs)  # not guarding, or inside from its fork
    proc: subprocess.Popen[bytes] = subprocess.Popen(
        [SHELL, "-c", _JOIN, str(guard.path / "cgroup.procs"), *args], **kwargs)
    try:  # joined and stopped, or ended; WNOWAIT: Popen still reaps it
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WSTOPPED | os.WNOWAIT)
        if info is not None and info.si_code == os.CLD_STOPPED:
            os.kill(proc.pid, signal.SIGCONT)
    except BaseException:  # Ctrl-C while waiting: the command does not run on its own
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return proc


def own_cgroup(kind: str, base: Path, proc_cgroup: Path = Path("/proc/self/cgroup")) -> Path:
    """The cgroup this process is in, in the hierarchy of ``kind`` mounted at ``base``."""
    want = "" if kind == "v2" else kind.removeprefix("v1-")
    for line in proc_cgroup.read_text().splitlines():
        hid, ctrls, path = line.split(":", 2)
        if (not want and hid == "0" and not ctrls) or (want and want in ctrls.split(",")):
            return base / path.lstrip("/")
    return base


def exempt(pid: int) -> bool:
    """Move ``pid`` out of the active run's cgroup, back to the one patchbench runs in: for a
    service a runtime starts on purpose and keeps across commands (one containerd per variant),
    which the per-command escape check would otherwise kill. The runtime accounts for what that
    service leaves. False when not guarding."""
    guard = _ACTIVE
    if guard is None or guard.path is None or guard.kind is None:
        return False
    base = guard.path.parent.parent  # <hierarchy>/patchbench/<run>
    home = guard.home or own_cgroup(guard.kind, base)
    (home / "cgroup.procs").write_text(f"{pid}\n")
    return True


def check_active(step: str, variant: str | None = None) -> Found | None:
    """After ``step`` (of ``variant``) and its teardown: find, record and kill what outlived it."""
    return _ACTIVE.check(step, variant) if _ACTIVE is not None else None


def _prefix(found: Found) -> str:
    return ESCAPED_BASELINE if found.variant == "baseline" else ESCAPED


def deactivate(guard: ProcGuard) -> list[str]:
    """Stop guarding: what is still in the cgroup is found and killed; returns the run's
    warnings, one per step that left something behind (or one saying escapes were not
    looked for)."""
    global _ACTIVE
    try:
        guard.check("after the last scenario") if guard.available else None
        warnings = [
            f"{_prefix(f)}: {f.step}: "
            f"{len(f.survivors)} process{'es' if len(f.survivors) > 1 else ''}"
            f" outlived the command{' and were killed' if f.killed else ' (could not be killed)'}: "
            + "; ".join(f"{s.cmdline} (pid {s.pid})" for s in f.survivors[:5])
            for f in guard.found]
        if not guard.available:
            warnings.append(f"escaped processes were not looked for ({guard.reason})")
        return warnings
    finally:
        _ACTIVE = None
        guard.close()
