"""A reaper around each hyperfine call: ``python3 -I -S reaper.py -- hyperfine ...``.
Details: docs/internals.md."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 1.0  # how long orphans still running may keep the call once the command is done


def _subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"reaper: cannot become a child subreaper: {os.strerror(ctypes.get_errno())}",
              file=sys.stderr)


def _rest(until: float) -> None:
    """Reap the orphans left, until none is left or ``until`` (the monotonic clock) passes."""
    while time.monotonic() < until:
        try:
            got, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if got == 0:
            time.sleep(0.005)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: reaper.py -- CMD [ARGS...]", file=sys.stderr)
        return 2
    _subreaper()
    try:
        pid = os.posix_spawnp(argv[0], argv, dict(os.environ))
    except OSError as exc:
        print(f"reaper: {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda n, _f: os.kill(pid, n))
    code = 1
    while True:
        try:
            got, status = os.wait()
        except ChildProcessError:
            break
        if got == pid:
            code = os.waitstatus_to_exitcode(status)
            break
    _rest(time.monotonic() + GRACE_S)
    return code if code >= 0 else 128 - code


def argv() -> list[str]:
    """The prefix that runs a command under this reaper."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), "--"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
