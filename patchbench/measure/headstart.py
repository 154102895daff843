"""A head start for a comparison's warmups (issue 21: the tool's own cost).

Before its first measured run a warm ``compare`` spends about 0.4 s importing its modules,
validating matrix.yaml and finding its cached builds, and then runs the warmups (the demo's: 0.45
s). Nothing is measured in either, so they can overlap. The first warmup call of a run (one
hyperfine call for every cell, ``bench._warm_up``) is kept in ``builds/headstart/NAME.json``: its
argv with the run's folder as ``{run}``, its timeout, and the sha256 of every file it names. The
next ``compare NAME`` with the same options, the same matrix bytes and the same patchbench code
(the key ``list`` keeps its rows under, util/facts.code_key), from the same folder, starts that
call at once (``begin``), before its own imports, once every file hashes as kept, in a folder of
its own under builds/tmp and a cgroup of its own. When the run reaches its warmups it builds the
call again and takes the early one only if it is the same call (argv and timeout) and every file
still hashes the same (``claim``); then it waits for it, moves its files into the run's folder,
and checks its cgroup for escaped processes as it checks its own. Otherwise the early call is
killed and the warmups run as before. Nothing of a warmup is recorded, so a head start changes
no sample; the measured runs start after the warmups, as always.

The kept file is untrusted input: a regular file, never through a link, bounded, of a known
shape, and as root owned by root and writable by no one else, as is every file it runs and every
parent folder of these up to / (the rule builds/ is held to); anything else is ignored. It holds
no environment (the early call inherits the environment the run's own call would) and no
secret. ``PATCHBENCH_HEAD_START=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import secrets
import shlex
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchbench.errors import BenchmarkError, ConfigError, PatchbenchError
from patchbench.util import cleanup, command, files, idle, ownership, procguard
from patchbench.util.facts import code_key
from patchbench.util.layout import Layout
from patchbench.util.progress import say

PLAN_VERSION = 1
MAX_PLAN_BYTES = 1 << 16
MAX_ARGS = 512
MAX_ARG_CHARS = 1 << 14
MAX_FILES = 64
MAX_MATRIX_BYTES = 1 << 22
RUN = "{run}"  # the run's folder in a kept call
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
OFF = "PATCHBENCH_HEAD_START"


@dataclass(frozen=True)
class Call:
    """A warmup call: its argv (the run's folder as ``RUN``), its timeout, and every file it
    names with its sha256 and its identity (``identity``)."""

    argv: tuple[str, ...]
    timeout: float
    files: tuple[tuple[str, str, tuple[int, ...]], ...]  # (path, sha256, identity)

    def as_dict(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "timeout": self.timeout,
                "files": {p: {"sha256": d, "identity": list(i)} for p, d, i in self.files}}

    def unchanged(self) -> bool:
        """Whether every file it names is the one it was hashed as: the same identity (a file
        written since has another mtime, ctime or inode)."""
        return all(identity(p) == i for p, _, i in self.files)

    def same_content(self) -> bool:
        """Whether every file it names still has the sha256 it was kept with."""
        found = _hashes([p for p, _, _ in self.files])
        return found is not None and [d for _, d in found] == [d for _, d, _ in self.files]


def named_files(argv: list[str] | tuple[str, ...]) -> list[str]:
    """The absolute paths of regular files among ``argv``'s words and the words of the commands
    it hands hyperfine (after ``--``), outside the run's folder: what the call runs."""
    words: list[str] = []
    after = False
    for arg in argv:
        if after:
            with contextlib.suppress(ValueError):
                words += shlex.split(arg)
        else:
            words.append(arg)
            after = arg == "--"
    found = []
    for word in words:
        if word.startswith("/") and RUN not in word and word not in found:
            with contextlib.suppress(OSError):
                if os.path.isfile(word) and not os.path.islink(word):
                    found.append(word)
    return found


def identity(path: str) -> tuple[int, ...] | None:
    """A regular file's device, inode, size, mtime and ctime (never through a link); None for
    anything else."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _hashes(paths: list[str]) -> tuple[tuple[str, str], ...] | None:
    """(path, sha256) of each of ``paths``: regular files, never through a link; None if any
    is not one."""
    out = []
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            h = hashlib.sha256()
            with os.fdopen(fd, "rb", closefd=False) as f:
                for block in iter(lambda f=f: f.read(1 << 20), b""):  # type: ignore[misc]
                    h.update(block)
        finally:
            os.close(fd)
        out.append((path, h.hexdigest()))
    return tuple(out)


def key(matrix: Path, comparison: str, options: Mapping[str, Any]) -> str | None:
    """What a kept call is valid for: the comparison, the command's options, the current
    folder, the matrix (path and bytes) and patchbench's code; None when the matrix cannot be
    read (the run itself will say why)."""
    try:
        raw = files.read_regular(matrix, MAX_MATRIX_BYTES)
    except (OSError, ValueError):
        return None
    h = hashlib.sha256()
    h.update(f"patchbench head start {PLAN_VERSION}\0{comparison}\0".encode())
    h.update(json.dumps(dict(options), sort_keys=True, default=str).encode())
    h.update(f"\0{os.getcwd()}\0{matrix.resolve()}\0".encode())
    h.update(raw)
    code_key(h)
    return h.hexdigest()


def _is_text_list(value: object, limit: int) -> bool:
    return isinstance(value, list) and 0 < len(value) <= limit and all(
        isinstance(x, str) and 0 < len(x) <= MAX_ARG_CHARS and "\0" not in x for x in value)


def read(path: Path, want: str) -> Call | None:
    """The call kept at ``path`` under the key ``want``, if the file is sound (see the module's
    doc); None otherwise."""
    try:
        data = json.loads(files.read_regular(path, MAX_PLAN_BYTES).decode("utf-8"))
    except (OSError, ValueError):  # missing, a link, too large, not UTF-8 JSON
        return None
    if not isinstance(data, dict) or set(data) != {"version", "key", "argv", "timeout", "files"}:
        return None
    argv, timeout, kept = data["argv"], data["timeout"], data["files"]
    if data["version"] != PLAN_VERSION or data["key"] != want or not _is_text_list(argv, MAX_ARGS):
        return None
    if argv[0] != "hyperfine" or "--" not in argv:  # a hyperfine call, its commands after --
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or \
            not math.isfinite(timeout) or not 0 < timeout <= 1e6:
        return None
    if not isinstance(kept, dict) or len(kept) > MAX_FILES or not all(
            isinstance(p, str) and p.startswith("/") and _is_kept_file(f) for p, f in kept.items()):
        return None
    if os.geteuid() == 0:  # the file, every file it runs, and all their parents up to /
        try:
            ownership.check_paths([(path, False), *((Path(p), False) for p in kept)],
                                  ownership.Trust.from_environment())
        except ConfigError:
            return None  # another user could have written one of them
    return Call(tuple(argv), float(timeout), tuple(sorted(
        (p, f["sha256"], tuple(f["identity"])) for p, f in kept.items())))


def _is_kept_file(value: object) -> bool:
    if not isinstance(value, dict) or set(value) != {"sha256", "identity"}:
        return False
    digest, ident = value["sha256"], value["identity"]
    return isinstance(digest, str) and bool(HEX64.match(digest)) and isinstance(ident, list) \
        and len(ident) == 5 and all(type(x) is int and x >= 0 for x in ident)


class Early:
    """The kept call, started in a folder and a cgroup of its own."""

    def __init__(self, call: Call, layout: Layout) -> None:
        self.call = call
        layout.tmp.mkdir(parents=True, exist_ok=True)
        # the owner tag: swept by cleanup.sweep if this process dies without its ``finally``
        self.scratch = layout.tmp / f"headstart-{cleanup.owner_tag()}-{secrets.token_hex(3)}"
        self.scratch.mkdir()
        self.guard = procguard.ProcGuard(f"headstart-{cleanup.cgroup_tag()}").__enter__()
        argv = [a.replace(RUN, str(self.scratch)) for a in call.argv]
        self.log = self.scratch / "headstart.log"
        self.log.write_text(f"+ {command.quote(argv)}  (started early: measure/headstart.py)\n")
        try:
            self.bg = command.Background(self.guard.wrap(argv), log=self.log)
        except BaseException:
            self.close()
            raise

    def stop(self) -> None:
        """Kill it (its process group and its cgroup); its files go."""
        bg = getattr(self, "bg", None)
        if bg is not None:
            bg.stop()
        self.close()

    def close(self) -> None:
        self.guard.close()  # what is left in it is killed
        shutil.rmtree(self.scratch, ignore_errors=True)

    @property
    def started(self) -> float:
        """When it started (``time.monotonic``)."""
        return self.bg.started

    def finish(self, workdir: Path, name: str, log: Path) -> bool:
        """Wait for it (its timeout counted from its start; BenchmarkError as ``command.run``
        raises it), its log appended to ``log`` either way. Every file it runs is hashed again
        meanwhile: False when one differs from the kept hash (its warmups ran another binary:
        the caller runs them again); else its files are moved into ``workdir``: True."""
        same = self.call.same_content()  # while it runs: hashlib lets the GIL go
        try:
            self.bg.finish(self.call.timeout, what=name, error=BenchmarkError)
        finally:
            _append(self.log, log)
        if not same:
            command.LOG.debug("head start dropped: a file it ran differs from its kept hash")
            return False
        for src in sorted(self.scratch.rglob("*")):
            if src == self.log or not src.is_file() or src.is_symlink():
                continue
            dest = workdir / src.relative_to(self.scratch)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.name.endswith(".log") and dest.exists():
                _append(src, dest)
            else:
                os.replace(src, dest)
        return True

    def check(self, step: str, variant: str | None) -> procguard.Found | None:
        """What outlived the early call: found and killed, and recorded with the run's own
        findings (so the run reports it and the gate counts it)."""
        found = self.guard.check(step, variant)
        run = procguard.active()
        if found is not None and run is not None:
            run.found.append(found)
        return found


def _append(src: Path, dest: Path) -> None:
    with contextlib.suppress(OSError), open(src, "rb") as f, open(dest, "ab") as out:
        shutil.copyfileobj(f, out)


class Session:
    """One ``compare``: where its call is kept, under which key, and its early call if any."""

    def __init__(self, layout: Layout, comparison: str, want: str) -> None:
        self.layout = layout
        self.plan = layout.head_start(comparison)
        self.want = want
        self.early: Early | None = None
        self.claimed = False

    def start(self) -> None:
        """Start the kept call, if there is one for this key and every file it names hashes as
        kept."""
        call = read(self.plan, self.want)
        if call is None or not set(named_files(call.argv)) <= {p for p, _, _ in call.files} or \
                not call.unchanged():
            return  # none, or it runs a file not kept, or one written since
        try:
            self.early = Early(call, self.layout)
        except (OSError, PatchbenchError):
            self.early = None  # no hyperfine, no builds/tmp: the warmups run as always

    def claim(self, argv: list[str], timeout: float, workdir: Path) -> Early | None:
        """The early call, if it is the run's first warmup call ``argv`` (with ``timeout``, in
        ``workdir``) and every file it names still hashes as kept; else None (the early call,
        if any, is stopped). A call made without a head start is kept for the next run."""
        if self.claimed:
            return None
        self.claimed = True
        kept = tuple(a.replace(str(workdir), RUN) for a in argv)
        if any(RUN in a for a in argv):  # could not be told from the run's folder
            self.drop("its call names {run} itself")
            return None
        early = self.early
        if early is not None:
            if early.call.argv == kept and early.call.timeout == timeout and \
                    early.call.unchanged():  # hashed again once it has ended (Early.finish)
                self.early = None  # the caller's now
                say("  warmups: started early, as the last run's (builds/headstart)")
                return early
            self.drop("the call differs from the kept one")
        idle.later(lambda: self._keep(kept, timeout))  # while the warmups run
        return None

    def drop(self, why: str) -> None:
        if self.early is not None:
            self.early.stop()
            self.early = None
            command.LOG.debug("head start dropped: %s", why)

    def _keep(self, argv: tuple[str, ...], timeout: float) -> None:
        paths = named_files(argv)
        before = [identity(p) for p in paths]
        found = _hashes(paths)
        if found is None or any(i is None for i in before) or \
                before != [identity(p) for p in paths]:
            return  # a file that changed while it was hashed: kept next time
        kept = tuple((p, d, i) for (p, d), i in zip(found, before, strict=True) if i is not None)
        data = {"version": PLAN_VERSION, "key": self.want, **Call(argv, timeout, kept).as_dict()}
        with contextlib.suppress(OSError):  # a builds/ that cannot be written: no head start
            files.write_json_atomic(self.plan, data)

    def end(self) -> None:
        """However the comparison ends: an early call never taken is stopped."""
        self.drop("the comparison ended before its warmups")


_SESSION: Session | None = None


def begin(layout: Layout, matrix: Path, comparison: str, options: Mapping[str, Any]) -> None:
    """A ``compare`` starts: its kept warmup call starts now, if there is one (see the module's
    doc). ``end`` must follow, in a ``finally``."""
    global _SESSION
    end()
    if os.environ.get(OFF, "") == "0" or not NAME.match(comparison):
        return
    want = key(matrix, comparison, options)
    if want is None:
        return
    _SESSION = Session(layout, comparison, want)
    _SESSION.start()


def claim(argv: list[str], timeout: float, workdir: Path) -> Early | None:
    """For ``bench._warm_up``: the early call if it is this one (``Session.claim``)."""
    return _SESSION.claim(argv, timeout, workdir) if _SESSION is not None else None


def end() -> None:
    global _SESSION
    session, _SESSION = _SESSION, None
    if session is not None:
        session.end()

