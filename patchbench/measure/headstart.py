"""A head start for a comparison's warmups (issue 21: the tool's own cost).

Before its first measured run a warm ``compare`` spends about 0.4 s importing its modules,
validating matrix.yaml and finding its cached builds, and then runs the warmups (the demo's: 0.45
s). Nothing is measured in either, so they can overlap.

- **Kept.** The first warmup call of a run's first scenario (one hyperfine call for every cell,
  ``bench._warm_up``, as ``bench.hyperfine_call`` makes it: no prepare, cleanup or wrap) is kept
  in ``builds/headstart/NAME.json``: its argv with the run's folder as ``{run}``, its timeout,
  every file it runs (each command's program and every word naming a file, all absolute regular
  files) by sha256 and identity (device, inode, size, mtime, ctime), and how many runs in a row
  built another call than the one kept before. A call that names a file otherwise (relative, a
  link, a program from PATH) or holds a credential is not kept.
- **Started.** The next ``compare NAME`` with the same options, matrix bytes, patchbench code
  (util/facts.code_key) and current folder starts that call at once (``begin``), before its own
  imports, when the last run built it too and every file has its kept identity; in a folder of
  its own under builds/tmp and a cgroup of its own.
- **Taken, or ended.** When the run reaches its first warmups it builds the call again and takes
  the early one only if it is the same argv and timeout over files of the same identity
  (``claim``); each file's sha256 is checked again while the call runs, and a difference ends
  it and runs the warmups again. A taken call is waited for, its files are moved into the run's
  folder, and its cgroup is checked for escaped processes, recorded with the run's. Otherwise
  (another call, another scenario measured first, an error, Ctrl-C, the comparison's end) it is
  killed, what it left is found (and recorded when the run is guarding), and its folder and
  cgroup go. Nothing of a warmup is recorded, and nothing of an early call runs beside a measured
  run (``close``): a head start changes no sample.

The kept file is untrusted input: a regular file, never through a link, bounded, of exactly the
shape above, and as root, it, every file it runs and all their parent folders up to / owned by
root and writable by no one else (the rule builds/ is held to); anything else is ignored. It
holds no environment (the early call inherits the environment the run's own call would) and no
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

from patchbench import redact
from patchbench.errors import BenchmarkError, ConfigError, PatchbenchError
from patchbench.util import cleanup, command, files, idle, ownership, procguard
from patchbench.util.facts import code_key
from patchbench.util.layout import Layout
from patchbench.util.names import NAME_RE
from patchbench.util.progress import say

PLAN_VERSION = 1
MAX_PLAN_BYTES = 1 << 16
MAX_ARGS = 512
MAX_ARG_CHARS = 1 << 14
MAX_FILES = 64
MAX_MATRIX_BYTES = 1 << 22
RUN = "{run}"  # the run's folder in a kept call
NAME = re.compile(NAME_RE)  # the matrix's rule for names
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


def named_files(argv: list[str] | tuple[str, ...]) -> list[str] | None:
    """The files a kept call runs: every word of the commands it hands hyperfine (after ``--``)
    that names an existing path, as a whole or after an ``=`` (``-x=/path``), outside the run's
    folder; each must be an absolute path of a regular file, not a link, and each command's
    program must be one. None when the call cannot be kept so (a relative or linked path, a
    program from PATH, a command shlex cannot split): its files could change unseen."""
    found: list[str] = []
    for cmd in argv[argv.index("--") + 1:] if "--" in argv else []:
        try:
            words = shlex.split(cmd)
        except ValueError:
            return None
        if not words or not words[0].startswith("/"):
            return None
        if RUN in words[0]:
            return None  # a program in the run's folder: nothing to hash it against
        for i, word in enumerate(words):
            for part in {word, word.partition("=")[2]} - {""}:
                if RUN in part:
                    if not part.startswith(RUN + "/") or RUN in part[len(RUN):] or \
                            ".." in part.split("/"):
                        return None  # only a path inside the run's folder
                    continue
                if not (i == 0 or os.path.lexists(part)):
                    continue
                if not part.startswith("/") or os.path.islink(part) or \
                        not os.path.isfile(part):
                    return None
                if part not in found:
                    found.append(part)
    return found


SHAPE = ["hyperfine", "-N", "-i", "--style", "basic", "--runs", None, "--warmup", "0",
         "--export-json", None]
EXPORT = re.compile(r"^\{run\}/[A-Za-z0-9._-]+\.json$")


def shaped(argv: list[str] | tuple[str, ...]) -> bool:
    """Whether ``argv`` is a warmup call as ``bench.hyperfine_call`` makes it with no prepare,
    cleanup or wrap: its runs, no warmup of its own, its export in the run's folder, the
    metrics, one ``--command-name`` per command, and the commands after ``--``."""
    head, rest = list(argv[:len(SHAPE)]), list(argv[len(SHAPE):])
    if len(head) != len(SHAPE) or any(w is not None and h != w for h, w in zip(head, SHAPE,
                                                                                strict=True)):
        return False
    if not re.fullmatch(r"[1-9][0-9]{0,3}", head[6]) or not EXPORT.match(head[10]):
        return False
    if rest[:1] == ["--metrics"] and len(rest) > 1 and re.fullmatch(r"[a-z_]+(,[a-z_]+)*",
                                                                      rest[1]):
        rest = rest[2:]  # the metrics hyperfine records (measure/engine.py)
    if "--" not in rest:
        return False
    names, commands = rest[:rest.index("--")], rest[rest.index("--") + 1:]
    return len(commands) >= 2 and names == [x for c in names[1::2] for x in ("--command-name", c)] \
        and len(names) == 2 * len(commands) and not any(n.startswith("-") for n in names[1::2])


def identity(path: str) -> tuple[int, ...] | None:
    """A regular file's device, inode, size, mtime and ctime (never through a link); None for
    anything else."""
    try:
        st = os.lstat(path)
    except (OSError, ValueError):  # ValueError: a NUL in it
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _hashes(paths: list[str]) -> tuple[tuple[str, str], ...] | None:
    """(path, sha256) of each of ``paths``, never through a link; None if any cannot be read."""
    try:
        return tuple((p, files.sha256_file(Path(p), follow=False)) for p in paths)
    except (OSError, ValueError):
        return None


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


def read(path: Path, want: str) -> tuple[Call, int] | None:
    """The call kept at ``path`` under the key ``want`` and how many runs in a row built
    another call, if the file is sound (see the module's doc); None otherwise."""
    root = os.geteuid() == 0
    trust = ownership.Trust.from_environment()
    try:
        if not _real(str(path)):
            return None  # a link somewhere on its path: a swap could hide another file
        if root:  # the file and its parents up to / before it is read
            ownership.check_paths([(path, False)], trust)
        data = json.loads(files.read_regular(path, MAX_PLAN_BYTES).decode("utf-8"))
    except (OSError, ValueError, RuntimeError, ConfigError):  # missing, unsafe, too large, ...
        return None
    if not isinstance(data, dict) or \
            set(data) != {"version", "key", "argv", "timeout", "files", "misses"}:
        return None
    argv, timeout, kept, misses = data["argv"], data["timeout"], data["files"], data["misses"]
    if data["version"] != PLAN_VERSION or data["key"] != want or \
            not _is_text_list(argv, MAX_ARGS) or not shaped(argv):
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or \
            not math.isfinite(timeout) or not 0 < timeout <= 1e6:
        return None
    if type(misses) is not int or not 0 <= misses <= 1 << 30:
        return None
    if not isinstance(kept, dict) or len(kept) > MAX_FILES or not all(
            isinstance(p, str) and _real(p) and _is_kept_file(f) for p, f in kept.items()):
        return None  # each an absolute, normal path with no link on it
    named = named_files(argv)
    if named is None or not set(named) <= set(kept):
        return None  # it runs a file it did not keep
    if root:  # every file it runs, and their parents, as builds/ is held to
        try:
            ownership.check_paths([(Path(p), False) for p in kept], trust)
        except (OSError, ValueError, RuntimeError, ConfigError):
            return None
    return Call(tuple(argv), float(timeout), tuple(sorted(
        (p, f["sha256"], tuple(f["identity"])) for p, f in kept.items()))), misses


def _real(path: str) -> bool:
    """Whether ``path`` is absolute, normal (no ``.``, ``..`` or ``//``), without a NUL, and
    has no link on it (itself or a folder on its way): what it names is what its parents'
    ownership check saw."""
    try:
        return path.startswith("/") and "\0" not in path and os.path.normpath(path) == path \
            and os.path.realpath(path) == path
    except (OSError, ValueError):
        return False


def _is_kept_file(value: object) -> bool:
    if not isinstance(value, dict) or set(value) != {"sha256", "identity"}:
        return False
    digest, ident = value["sha256"], value["identity"]
    return files.is_sha256(digest) and isinstance(ident, list) \
        and len(ident) == 5 and all(type(x) is int and x >= 0 for x in ident)


class Early:
    """The kept call, started in a folder and a cgroup of its own."""

    def __init__(self, call: Call, layout: Layout) -> None:
        self.call = call
        self.ended = False
        layout.tmp.mkdir(parents=True, exist_ok=True)
        # the owner tag: swept by cleanup.sweep if this process dies without its ``finally``
        self.scratch = layout.tmp / f"headstart-{cleanup.owner_tag()}-{secrets.token_hex(3)}"
        self.scratch.mkdir()
        self.guard = procguard.ProcGuard(f"headstart-{cleanup.cgroup_tag()}").__enter__()
        self.bg: command.Background | None = None
        try:
            argv = [a.replace(RUN, str(self.scratch)) for a in call.argv]
            self.log = self.scratch / "headstart.log"
            self.log.write_text(f"+ {redact.text(command.quote(argv))}  (started early: "
                                "measure/headstart.py)\n")
            self.bg = command.Background(self.guard.wrap(argv), log=self.log)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.guard.close()  # what is left in it is killed
        shutil.rmtree(self.scratch, ignore_errors=True)

    def end(self, step: str, variant: str | None = None, *, gated: bool = True
            ) -> procguard.Found | None:
        """However it is left (taken, dropped, an error, Ctrl-C): killed if it still runs,
        what outlived it found, killed and recorded with the run's findings when the run is
        guarding (so the run reports it and the gate counts it), its folder and cgroup gone.
        Once; None after."""
        if self.ended:
            return None
        self.ended = True
        try:
            if self.bg is not None:
                self.bg.stop()
            found = self.guard.check(step, variant)
            run = procguard.active()
            if found is not None and run is not None:
                found.gated = gated
                run.found.append(found)
            return found
        finally:
            self.close()

    def finish(self, workdir: Path, name: str, log: Path) -> bool:
        """Wait for it (its timeout counted from its start; BenchmarkError as ``command.run``
        raises it), its log appended to ``log`` either way. Every file it runs is hashed again
        first, while it runs (hashlib lets the GIL go): False when one differs from the kept
        hash (its warmups ran another binary: it is stopped, and the caller runs them again);
        else its files are moved into ``workdir``: True."""
        assert self.bg is not None  # started, or __init__ raised
        try:
            if not self.call.same_content():
                self.bg.stop()
                command.LOG.debug("head start dropped: a file it ran differs from its hash")
                return False
            self.bg.finish(self.call.timeout, what=name, error=BenchmarkError)
        finally:
            _append(self.log, log)
        try:
            for src in sorted(self.scratch.rglob("*")):
                if src == self.log or not src.is_file() or src.is_symlink():
                    continue
                dest = workdir / src.relative_to(self.scratch)
                dest.parent.mkdir(parents=True, exist_ok=True)
                if dest.name.endswith(".log") and dest.exists():
                    _append(src, dest)
                elif not dest.exists():
                    os.replace(src, dest)
        except OSError as exc:
            raise BenchmarkError(f"{name}: the warmups started early ran, but their files could "
                                 f"not be moved into {workdir}: {exc.strerror or exc}") from None
        return True


def _append(src: Path, dest: Path) -> None:
    with contextlib.suppress(OSError), open(src, "rb") as f, open(dest, "ab") as out:
        shutil.copyfileobj(f, out)


class Session:
    """One ``compare``: where its call is kept, under which key, the kept call, and the early
    call if it was started."""

    def __init__(self, layout: Layout, comparison: str, want: str) -> None:
        self.layout = layout
        self.plan = layout.head_start(comparison)
        self.want = want
        self.kept: Call | None = None
        self.misses = 0
        self.early: Early | None = None
        self.taken: Early | None = None
        self.closed = False

    def start(self) -> None:
        """Read the kept call; start it if the last run built it too (no miss) and every file
        it runs is unchanged (its identity)."""
        found = read(self.plan, self.want)
        if found is None:
            return
        self.kept, self.misses = found
        if self.misses or not self.kept.unchanged():
            return  # the call differs from run to run (a {id} in it), or a file was written
        try:
            self.early = Early(self.kept, self.layout)
        except (OSError, PatchbenchError):
            self.early = None  # no hyperfine, no builds/tmp: the warmups run as always

    def claim(self, argv: list[str], timeout: float, workdir: Path) -> Early | None:
        """The early call, if ``argv`` (with ``timeout``, in ``workdir``) is the run's first
        warmup call, the same as the kept one, and every file it runs is unchanged (its
        identity; its sha256 is checked again in ``Early.finish``); else None, the early call
        ended. The run's call is kept for the next run (with a count of the runs in a row
        whose call differed from the one kept before: such a call is not started)."""
        if self.closed:
            return None
        if any(RUN in a for a in argv):  # could not be told from the run's folder
            self.close()
            return None
        self.closed = True
        kept = tuple(a.replace(str(workdir), RUN) for a in argv)
        same = self.kept is not None and self.kept.argv == kept and self.kept.timeout == timeout
        early, self.early = self.early, None
        if early is not None and same and early.call.unchanged():
            say("  warmups: started early, as the last run's (builds/headstart)")
            self.taken = early  # the caller ends it; close() too, if the caller never got it
            return early
        if early is not None:
            early.end("warmups started early from builds/headstart, then not taken", gated=False)
        misses = 0 if same or self.kept is None else self.misses + 1
        idle.later(lambda: self._keep(kept, timeout, misses))  # while the warmups run
        return None

    def close(self) -> None:
        """No call of this run is taken or kept from now on; an early one is ended."""
        self.closed = True
        early, self.early = self.early, None
        if early is not None:
            early.end("warmups started early from builds/headstart, then not taken", gated=False)
        taken, self.taken = self.taken, None
        if taken is not None:  # ended by its caller by now (Early.end acts once)
            taken.end("warmups started early from builds/headstart")

    def _keep(self, argv: tuple[str, ...], timeout: float, misses: int) -> None:
        if not shaped(argv) or any(redact.text(a) != a for a in argv):
            return  # not a call as hyperfine_call makes it; a credential: never written down
        paths = named_files(argv)
        if paths is None:
            return  # it runs a file that could change unseen
        before = [identity(p) for p in paths]
        found = _hashes(paths)
        if found is None or any(i is None for i in before) or \
                before != [identity(p) for p in paths]:
            return  # a file that changed while it was hashed: kept next time
        kept = tuple((p, d, i) for (p, d), i in zip(found, before, strict=True) if i is not None)
        data = {"version": PLAN_VERSION, "key": self.want, **Call(argv, timeout, kept).as_dict(),
                "misses": misses}
        with contextlib.suppress(OSError):  # a builds/ that cannot be written: no head start
            files.write_json_atomic(self.plan, data)


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


def close() -> None:
    """No call is taken from now on (a scenario's measuring starts without one): an early call
    is ended before anything is measured beside it."""
    if _SESSION is not None:
        _SESSION.close()


def end() -> None:
    """However the comparison ends."""
    global _SESSION
    session, _SESSION = _SESSION, None
    if session is not None:
        session.close()
