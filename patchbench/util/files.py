"""File helpers: atomic writes (a temporary file in the same directory, fsync, rename into place,
so an interrupted write leaves the old file or none, never half of a new one) and hashing.

A temporary file is made by ``mkstemp`` (``O_CREAT | O_EXCL`` with a random name: never through
a link another user planted, never over a file that exists), named ``.<name>.patchbench-tmp-*``,
so that what a killed process left can be told from the user's files and swept
(``sweep_staged``) by the next command that holds the folder's lock."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

STAGED = ".patchbench-tmp-"  # in the name of every temporary file and folder made here


def write_text_atomic(path: Path, text: str, *, mode: int = 0o644,
                      check: Callable[[Path], None] | None = None, exclusive: bool = False) -> None:
    """Write ``text`` to a new temporary file beside ``path`` and rename it over ``path``;
    ``check(tmp)`` may look at the complete file first and raise to leave ``path`` as it was.
    ``exclusive``: ``path`` must not exist; the file is linked into place (FileExistsError if
    it exists by then), never over another."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{STAGED}", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)  # mkstemp makes 0600; results are meant to be shared
        if check is not None:
            check(Path(tmp))
        if exclusive:
            os.link(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def staged_dir(parent: Path, name: str) -> Path:
    """A new empty folder in ``parent`` (mkdtemp: a random name, made by us, never a link), to
    be filled and then renamed to its real name."""
    return Path(tempfile.mkdtemp(prefix=f".{name}{STAGED}", dir=parent))


def sweep_staged(folder: Path) -> list[Path]:
    """Remove the temporary files and folders that a killed patchbench left directly in
    ``folder`` (the caller holds the lock every writer there holds); return what was removed.
    Only entries owned by this user are touched, never through a link."""
    import shutil

    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not (entry.name.startswith(".") and STAGED in entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if st.st_uid != os.geteuid():
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def finite(data: Any) -> Any:
    """``data`` with every NaN or infinite float as None: strict JSON has no NaN (jq and
    JavaScript refuse a file that holds one), so "no value" is written as null."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [finite(v) for v in data]
    return data


def write_json_atomic(path: Path, data: Any) -> None:
    """Strict JSON, written atomically (a NaN is written as null, never as ``NaN``)."""
    write_text_atomic(path, json.dumps(finite(data), indent=2, sort_keys=False,
                                       allow_nan=False) + "\n")


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a file read back as untrusted input: a regular file (never read through a
    link: the last component is opened with O_NOFOLLOW) of at most ``limit`` bytes. OSError when
    it cannot be opened (ELOOP: a link), ValueError when it is not a regular file or too large."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if st.st_size > limit:
            raise ValueError(f"{path} is over {limit} bytes")
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(limit + 1)
        if len(raw) > limit:
            raise ValueError(f"{path} is over {limit} bytes")
        return raw
    finally:
        os.close(fd)


def append_regular(path: Path, text: str) -> None:
    """Append ``text`` to an existing regular file: never through a link (O_NOFOLLOW), never
    waiting on a FIFO (O_NONBLOCK), never to anything but a regular file (ValueError)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not a regular file")
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def is_sha256(value: object) -> bool:
    """Whether ``value`` is a sha256 as patchbench writes one (64 lowercase hex digits, nothing
    else): the check of every hash read back from a file."""
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def sha256_file(path: Path, *, follow: bool = True) -> str:
    """The file's sha256; ``follow=False``: never through a link (OSError, ELOOP)."""
    h = hashlib.sha256()
    flags = os.O_RDONLY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    with os.fdopen(os.open(path, flags), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_digest(root: Path) -> tuple[str, int]:
    """sha256 over the sorted relative paths and contents of a directory, and its total size
    (what the build records for a directory artifact, and what the cache check compares)."""
    h = hashlib.sha256()
    size = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            h.update(f"{rel}\0link:{os.readlink(path)}\n".encode())
            continue
        h.update(f"{rel}\0{sha256_file(path)}\n".encode())
        size += path.stat().st_size
    return h.hexdigest(), size
