"""The tool cleans up after itself, even after SIGKILL: the next run removes what dead runs left,
and only that. Every scratch directory and cgroup a run makes carries its owner in its name
(``p<pid>s<start>``: the process id and its start time since boot, given at creation, so a live
run's directory never looks ownerless); it is removed only when no process with that id and start
time exists, and a dead run's git worktrees are pruned. What carries no owner tag is left alone.
docs/safety.md, class 8."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

TAG_RE = re.compile(r"-(p(\d+)s(\d+))-")


def stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` from its field 3 on (the state; index 0 here), or None when the
    process does not exist; OSError when it exists but cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # the command name (field 2) is in parentheses and may contain spaces or ')'
    return stat[stat.rfind(")") + 2:].split()


def _start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or None when it does not exist."""
    try:
        fields = stat_fields(pid)
    except OSError:
        return -1  # unreadable: exists, start unknown
    if fields is None:
        return None
    try:
        return int(fields[19])  # field 22 overall; fields here start at field 3
    except (IndexError, ValueError):
        return -1


@functools.cache
def owner_tag() -> str:
    """This process's tag, to put in the name of every scratch directory it creates."""
    pid = os.getpid()
    return f"p{pid}s{max(_start_time(pid) or 0, 0)}"


def alive(tag: str) -> bool:
    """Whether the process named by ``tag`` (``p<pid>s<start>``) still runs."""
    m = re.fullmatch(r"p(\d+)s(\d+)", tag)
    if not m:
        return True  # not ours: never treated as dead
    pid, start = int(m.group(1)), int(m.group(2))
    if not Path("/proc/self/stat").exists():  # no procfs: the pid alone
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    now = _start_time(pid)
    if now is None:
        return False
    return now in (-1, start) or start == 0


def dead_entries(directory: Path) -> list[Path]:
    """Entries of ``directory`` whose names carry the tag of a process that no longer runs."""
    if not directory.is_dir():
        return []
    out = []
    for entry in sorted(directory.iterdir()):
        m = TAG_RE.search(entry.name)
        if m and not alive(m.group(1)):
            out.append(entry)
    return out


def sweep(builds: Path) -> list[Path]:
    """Remove what dead runs left under ``builds``; return what was removed."""
    removed: list[Path] = []
    sources = builds / "sources"
    for directory in (sources, builds / "tmp"):
        for entry in dead_entries(directory):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    entry.unlink()
            if not entry.exists():
                removed.append(entry)
    if sources.is_dir():
        # worktrees of dead runs: their directories are gone now; git drops the registrations
        from patchbench.util.git import run_git

        for repo in sorted(sources.glob("*.git")):
            # not in an entry that points git elsewhere (source/integrity.py refuses it)
            if (repo / "worktrees").is_dir() and not repo.is_symlink() \
                    and not (repo / "commondir").exists():
                run_git(["worktree", "prune"], cwd=repo, check=False)
    return removed


# --- cgroups of dead runs ---------------------------------------------------------------------

CGROUP_ROOT = Path("/sys/fs/cgroup")
# procguard's per-run cgroups live under <hierarchy>/patchbench/, the quota cgroups of conditions
# are <hierarchy>/patchbench-cond-*; both names carry their run's owner tag
CGROUP_PARENT = "patchbench"
CGROUP_COND_GLOB = "patchbench-cond-*"


def sweep_all(builds: Path, cgroups: Path = CGROUP_ROOT) -> list[str]:
    """``sweep`` and ``sweep_cgroups``: what dead runs left, said in a line each."""
    out = [f"removed {p.relative_to(builds)}, left by a run that no longer runs"
           for p in sweep(builds)]
    return out + sweep_cgroups(cgroups)


@functools.cache
def pid_namespace() -> int:
    """The inode of this process's PID namespace (0 when it cannot be read). A pid in an owner
    tag means something only in the namespace that wrote it."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def cgroup_tag() -> str:
    """The owner tag for a cgroup's name: ``owner_tag()`` and the PID namespace, since cgroup
    trees are shared across PID namespaces (a container with the host's cgroups)."""
    return f"{owner_tag()}n{pid_namespace()}"


CGROUP_TAG_RE = re.compile(r"-p(\d+)s(\d+)n(\d+)-")


def _hierarchies(root: Path) -> list[Path]:
    """The cgroup hierarchies under ``root``: the root itself on cgroup v2; on v1 each mounted
    controller and the hybrid ``unified`` tree (each counted once)."""
    if (root / "cgroup.controllers").is_file():
        return [root]  # v2: its children are cgroups, not hierarchies
    bases: dict[Path, Path] = {}
    candidates = []
    with contextlib.suppress(OSError):
        # v1 names some hierarchies twice (cpu -> cpu,cpuacct): the symlinks are skipped
        candidates = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    for base in candidates:
        if (base / "cgroup.procs").is_file():
            bases.setdefault(base.resolve(), base)
    return list(bases.values())


def stale_cgroups(root: Path = CGROUP_ROOT) -> list[Path]:
    """patchbench's cgroups whose run no longer runs (killed with SIGKILL before its cleanup):
    named with a tag of this PID namespace whose process is gone. A tag of another namespace,
    or none, is never judged."""
    out = []
    ours = pid_namespace()
    for base in _hierarchies(root):
        parent = base / CGROUP_PARENT
        found = sorted(parent.iterdir()) if parent.is_dir() else []
        found += sorted(base.glob(CGROUP_COND_GLOB))
        for cg in found:
            m = CGROUP_TAG_RE.search(cg.name + "-")
            if (cg.is_dir() and m and int(m.group(3)) == ours
                    and not alive(f"p{m.group(1)}s{m.group(2)}")):
                out.append(cg)
    return out


def members(cg: Path) -> list[int]:
    """The pids in a cgroup as this process sees them; 0 stands for a process of another PID
    namespace (the kernel cannot name it here)."""
    try:
        return [int(x) for x in (cg / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def kill_and_remove(cg: Path, *, wait: float = 2.0,
                    remove: Callable[[Path], None] = os.rmdir) -> tuple[list[int], str | None]:
    """SIGKILL every member of ``cg`` and remove it, retrying while the killed members exit.
    Returns the pids killed and, when it could not go, why. A cgroup holding a process of
    another PID namespace (listed as 0) is left alone: ``os.kill(0)`` would hit our own group."""
    import signal
    import time

    pids = members(cg)
    if any(p <= 0 for p in pids):
        return [], "it holds processes of another PID namespace"
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait
    while True:
        try:
            remove(cg)
            return pids, None
        except OSError as exc:
            if exc.errno == errno.EBUSY and time.monotonic() < deadline:
                time.sleep(0.05)  # the killed members are still exiting
                continue
            return pids, exc.strerror or str(exc)


def sweep_cgroups(root: Path = CGROUP_ROOT, *, remove: Callable[[Path], None] = os.rmdir,
                  wait: float = 2.0) -> list[str]:
    """Kill what a dead run left in its cgroups and remove them; say what was done. Cgroups
    that cannot be removed (not root, still busy after ``wait``) are named and left."""
    done = []
    for cg in stale_cgroups(root):
        pids, why = kill_and_remove(cg, wait=wait, remove=remove)
        if why is not None:
            done.append(f"cgroup {cg} of a dead run could not be removed: {why}")
            continue
        plural = "es" if len(pids) != 1 else ""
        killed = f", killing {len(pids)} process{plural} left in it" if pids else ""
        done.append(f"removed cgroup {cg}{killed}")
    return done
