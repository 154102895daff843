"""Unsafe ownership is refused when running as root, the way ssh's StrictModes does: patchbench as
root runs the commands of matrix.yaml, applies patches and overlays and runs what it finds under
builds/, so if another user could change any of them that user could run code as root. Before
anything is read, these paths and their parents must be owned by root (or ``$SUDO_UID``) and
writable by no one else (a sticky parent such as /tmp may be world-writable). Nothing is checked
when not root. docs/safety.md, class 4."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchbench.errors import ConfigError


@dataclass(frozen=True)
class Trust:
    """Who may own and write what patchbench reads as root."""

    uids: frozenset[int]
    gids: frozenset[int]

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> Trust:
        env = os.environ if environ is None else environ
        uids, gids = {0}, {0}
        for key, dest in (("SUDO_UID", uids), ("SUDO_GID", gids)):
            value = env.get(key, "")
            if value.isdigit():
                dest.add(int(value))
        return cls(frozenset(uids), frozenset(gids))


def problem(path: Path, st: os.stat_result, trust: Trust, *, parent: bool = False) -> str | None:
    """Why ``path`` (with ``st``) is unsafe, or None."""
    if st.st_uid not in trust.uids:
        return f"is owned by uid {st.st_uid}, not root"
    mode = st.st_mode
    if stat.S_ISLNK(mode):  # a link's own mode means nothing; its target is checked too
        return None
    sticky_dir = parent and stat.S_ISDIR(mode) and bool(mode & stat.S_ISVTX)
    if mode & stat.S_IWOTH and not sticky_dir:
        return "is writable by every user"
    if mode & stat.S_IWGRP and st.st_gid not in trust.gids and not sticky_dir:
        return f"is writable by group {st.st_gid}"
    return None


def read_kept(path: Path, limit: int) -> Any:
    """The JSON document of a file patchbench kept for itself under builds/ (a hash, a list's
    rows), read back as untrusted input: a regular file, never through a link, of at most
    ``limit`` bytes (files.read_regular), UTF-8, and as root only when it and its folder are
    owned by root (or $SUDO_UID) and writable by no one else. OSError or ValueError otherwise:
    the caller then computes what the file would have said. Its shape is the caller's to check."""
    from patchbench.util.files import read_regular

    if os.geteuid() == 0:
        trust = Trust.from_environment()
        for p in (path.parent, path):
            why = problem(p, os.lstat(p), trust)
            if why is not None:
                raise ValueError(f"{p} {why}")
    return json.loads(read_regular(path, limit).decode("utf-8"))


def _fix(path: Path, why: str) -> str:
    if "owned" in why:
        return f"chown root:root {path} (or run patchbench as the user who owns it, without root)"
    return f"chmod go-w {path}"


def _tree(root: Path) -> Iterator[Path]:
    """``root`` and everything under it, without following symlinks."""
    yield root
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            yield Path(dirpath) / name


def check_paths(paths: Iterable[tuple[Path, bool]], trust: Trust) -> None:
    """Check each (path, recursive) and the parents of each; raise ConfigError at the first
    unsafe one. A link anywhere (the path itself, or inside a recursive tree) is judged by what
    it resolves to as well: that target (its whole tree, if a folder of a recursive path) and its
    parents are checked like the path itself."""
    seen: set[Path] = set()
    work = list(paths)
    while work:
        start, recursive = work.pop(0)
        if not start.exists() and not start.is_symlink():
            continue
        resolved = start.resolve()
        candidates = [(p, False) for p in ([start] if start.is_symlink() else [])]
        candidates += [(p, False) for p in (_tree(resolved) if recursive else [resolved])]
        if not recursive and resolved.is_dir():
            candidates += [(child, False) for child in sorted(resolved.iterdir())
                           if child.is_dir() and not child.is_symlink()]
        candidates += [(p, True) for p in resolved.parents]
        for path, is_parent in candidates:
            if path in seen:
                continue
            seen.add(path)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode) and path != start and not is_parent:
                work.append((path, recursive))  # a link inside the tree: judge its target too
            why = problem(path, st, trust, parent=is_parent)
            if why:
                what = "a parent directory of " + str(start) if is_parent else str(path)
                raise ConfigError(
                    f"{path} {why}; patchbench runs as root and refuses to use it"
                    + ("" if what == str(path) else f" ({what})"),
                    hint=f"fix: {_fix(path, why)}",
                )


def check_project(matrix: Path, root: Path, builds: Path, *, euid: int | None = None,
                  environ: dict[str, str] | None = None) -> None:
    """The one call at load: matrix.yaml, patches/, overlays/ and builds/ (when root)."""
    if (os.geteuid() if euid is None else euid) != 0:
        return
    trust = Trust.from_environment(environ)
    check_paths([(matrix, False), (root / "patches", True), (root / "overlays", True),
                 (builds, False)], trust)


def _components(path: Path) -> list[Path]:
    return [*reversed(path.parents), path]


def check_output(path: Path, *, base: Path | None = None, euid: int | None = None) -> None:
    """Before writing ``path`` (a folder or a file): refuse what another user could have planted.

    - Below ``base`` (``reports/``, ``--out``), no component may be a symbolic link: the tool
      writes there only into folders it made itself.
    - Anywhere on the way, a link, folder or file owned by another user (not us, not root) in a
      world-writable folder (a shared /tmp) is refused, the way ssh's StrictModes refuses it.
    - The same holds for the path with its links resolved.

    A refusal is a ReportError (exit 18) naming the path and its owner."""
    from patchbench.errors import ReportError

    me = os.geteuid() if euid is None else euid
    literal = Path(os.path.abspath(path))
    top = Path(os.path.abspath(base)) if base is not None else None
    for candidates, links_checked in ((_components(literal), True),
                                      (_components(literal.resolve()), False)):
        for p in candidates:
            try:
                st = os.lstat(p)
            except OSError:
                break  # from here on nothing exists yet: the tool makes it
            below = top is not None and top in p.parents
            if links_checked and below and stat.S_ISLNK(st.st_mode):
                raise ReportError(f"{p} is a symbolic link below {top}; patchbench writes there "
                                  "only into folders it made, never through a link",
                                  hint=f"remove the link: rm {p}")
            if p == p.parent or st.st_uid in (me, 0):
                continue
            try:
                pst = os.lstat(p.parent)
            except OSError:
                continue
            if pst.st_mode & stat.S_IWOTH:
                what = "a link" if stat.S_ISLNK(st.st_mode) else (
                    "a folder" if stat.S_ISDIR(st.st_mode) else "a file")
                raise ReportError(
                    f"{p} is {what} owned by uid {st.st_uid} in the world-writable folder "
                    f"{p.parent}; patchbench refuses to write through it",
                    hint="choose an output place that only you (or root) can change")
