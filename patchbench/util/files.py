"""File helpers: atomic writes (a temporary file in the same directory, fsync, rename into place,
so an interrupted write leaves the old file or none, never half of a new one) and hashing."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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
