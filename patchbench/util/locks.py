"""Exclusive locks shared by every patchbench process using one builds/ directory."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from patchbench.errors import SourceError


@contextlib.contextmanager
def locked(locks: Path, name: str, timeout: float = 3600.0) -> Iterator[None]:
    """Hold ``locks/<name>.lock`` (``locks`` is a Layout's ``locks`` directory)."""
    from filelock import FileLock, Timeout  # here: it imports asyncio (10 ms for `invoke list`)

    locks.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(locks / f"{name}.lock"), timeout=timeout)
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:  # two runs on one builds dir: said, then waited for
            from patchbench.util.progress import say

            say(f"waiting for another patchbench process using {locks.parent} "
                f"(it holds {name}.lock)")
            lock.acquire()
    except Timeout:
        raise SourceError(
            f"another patchbench process has held {locks / name}.lock for {timeout:g} s",
            hint="wait for it to finish, or remove the lock file if no such process runs",
        ) from None
    try:
        yield
    finally:
        lock.release()
