"""Exclusive locks shared by every patchbench process using one builds/ directory.

A lock is ``flock(2)`` on a file of its own, opened without following a link (builds/ is the
tool's, and a link planted there must not make it open another file) and never truncated or
written. The kernel drops the lock when its holder ends, however it ends, so a killed run leaves
nothing to clean. (These were filelock's, whose import alone cost about 10 ms of every
comparison.)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from patchbench.errors import SourceError

POLL_MIN = 0.01  # s: the first wait between two tries; doubled up to POLL_MAX
POLL_MAX = 0.05  # filelock's interval: a released lock is taken within 50 ms

_HELD: set[tuple[int, str]] = set()  # (thread, lock file): what each thread holds
_HELD_GUARD = threading.Lock()


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SourceError(f"{path} is a symbolic link; a lock file must be a regular file",
                              hint="remove it: patchbench makes it again") from None
        raise SourceError(
            f"cannot open the lock file {path}: {exc.strerror}",
            hint="check the owner and permissions of it and its folder (a lock made by another "
                 "user, by sudo for one, cannot be opened by this one)") from None


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _acquire(fd: int, timeout: float, on_wait: Callable[[], None] | None = None) -> bool:
    """Lock ``fd`` exclusively, trying again with growing pauses for up to ``timeout`` seconds;
    ``on_wait`` is called once if the first try finds it held. False: still held at the end."""
    if _try(fd):
        return True
    if on_wait is not None:
        on_wait()
    deadline = time.monotonic() + timeout
    pause = POLL_MIN
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, POLL_MAX)
        if _try(fd):
            return True


@contextlib.contextmanager
def held(path: Path, timeout: float, *, on_timeout: Callable[[], Exception],
         on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold ``path`` (made if missing) for the body; ``on_timeout()`` is raised when another
    process (or thread) still holds it after ``timeout`` seconds. Taking again a lock this thread
    holds is a bug (it would wait for itself), said as one."""
    key = (threading.get_ident(), os.path.realpath(path.parent) + os.sep + path.name)
    with _HELD_GUARD:
        if key in _HELD:
            raise RuntimeError(f"{path} is already held by this thread")
        _HELD.add(key)
    try:
        fd = _open(path)
        try:
            if not _acquire(fd, timeout, on_wait):
                raise on_timeout()
            yield  # closing the file (below) releases the lock
        finally:
            os.close(fd)
    finally:
        with _HELD_GUARD:
            _HELD.discard(key)


@contextlib.contextmanager
def locked(locks: Path, name: str, timeout: float = 3600.0) -> Iterator[None]:
    """Hold ``locks/<name>.lock`` (``locks`` is a Layout's ``locks`` directory, made if missing)."""
    locks.mkdir(parents=True, exist_ok=True)
    path = locks / f"{name}.lock"

    def waiting() -> None:  # two runs on one builds dir: said, then waited for
        from patchbench.util.progress import say

        say(f"waiting for another patchbench process using {locks.parent} (it holds {name}.lock)")

    def too_long() -> Exception:
        return SourceError(
            f"another patchbench process has held {path} for {timeout:g} s",
            hint="wait for it to finish; the lock goes with the process that holds it",
        )

    with held(path, timeout, on_wait=waiting, on_timeout=too_long):
        yield
