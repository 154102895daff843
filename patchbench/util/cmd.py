"""The one wrapper for every external command (git, go, make, hyperfine, runc, docker, ...).
Details: docs/internals.md."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from patchbench import redact
from patchbench.errors import CommandError, PatchbenchError, RequirementError
from patchbench.util import procguard, progress

# --verbose: every command is logged ("+ argv") at DEBUG on this logger; the top level
# (cli.commands.workspace) turns it on from the workspace's verbosity, no module global
LOG = logging.getLogger("patchbench.command")
TAIL_LINES = 25

# What to install when a tool is missing (Debian package names).
INSTALL_HINTS = {
    "hyperfine": "cargo install hyperfine --version 2.0.0 --locked --ignore-rust-version (Debian ships 1.x)",
    "git": "apt-get install git",
    "go": "install Go from the official tarball or apt-get install golang",
    "runc": "build it with patchbench, or apt-get install runc",
    "busybox": "apt-get install busybox-static",
    "pkg-config": "apt-get install pkg-config",
    "make": "apt-get install make",
    "docker": "apt-get install docker.io (and start the engine)",
}


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


say = progress.say  # kept for callers; progress output lives in patchbench.util.progress


class _Stderr(logging.Handler):
    """Writes to whatever ``sys.stderr`` is when a record comes (not the one at set-up)."""

    def emit(self, record: logging.LogRecord) -> None:
        print(record.getMessage(), file=sys.stderr, flush=True)


def show_commands(flag: bool) -> None:
    """Print every command on stderr as ``+ argv`` (``--verbose``), or stop printing them."""
    if flag and not any(isinstance(h, _Stderr) for h in LOG.handlers):
        LOG.addHandler(_Stderr())
    LOG.setLevel(logging.DEBUG if flag else logging.WARNING)
    LOG.propagate = False
    LOG.disabled = False  # a library's logging.config call may have disabled existing loggers


def quote(argv: Sequence[str]) -> str:
    return shlex.join(str(a) for a in argv)


def which(tool: str) -> str:
    """Absolute path of ``tool``, or a RequirementError naming what to install."""
    if os.sep in tool:
        if os.access(tool, os.X_OK):
            return tool
        raise RequirementError(f"{tool} is not an executable file")
    found = shutil.which(tool)
    if found is None:
        hint = INSTALL_HINTS.get(tool, f"install {tool} and make sure it is on PATH")
        raise RequirementError(f"{tool!r} was not found on PATH", hint=hint)
    return found


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _kill_group(proc: subprocess.Popen[bytes], grace: float = 2.0) -> None:
    """SIGTERM the process group, give it ``grace`` seconds, then SIGKILL whatever is left of the
    group (its leader may have exited while children that ignore SIGTERM still run)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait for ``proc`` to exit, woken by the exit itself (a pidfd) rather than by
    ``Popen.wait``'s polling, which sleeps up to 50 ms past the exit; raise TimeoutExpired."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3+: Popen's own wait
        proc.wait(timeout=timeout)
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(max(0, int(timeout * 1000))):
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    proc.wait(timeout=5)  # reap: it has exited


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 600.0,
    log: Path | None = None,
    check: bool = True,
    input: str | None = None,
    error: type[PatchbenchError] = CommandError,
    what: str | None = None,
) -> Result:
    """Run ``argv`` and return its result; raise ``error`` on failure or timeout.

    With ``log``, stdout and stderr are appended to that file (and not returned); otherwise they
    are captured. ``what`` names the step in the error message ("build runc@abc", ...).
    """
    args = [str(a) for a in argv]
    args[0] = which(args[0])
    shown = redact.text(quote([Path(args[0]).name, *args[1:]]))  # logged: no credential
    LOG.debug("+ %s", shown)
    label = what or shown
    started = time.monotonic()
    logf: IO[bytes] | None = None
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        logf = open(log, "ab")  # noqa: SIM115 - closed in finally
        logf.write(f"+ {shown}\n".encode())
        if cwd is not None:
            logf.write(f"  (in {cwd})\n".encode())
        logf.flush()
    try:
        try:
            proc = procguard.popen(  # into the run's cgroup, if guarding
                args,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=logf if logf is not None else subprocess.PIPE,
                stderr=subprocess.STDOUT if logf is not None else subprocess.PIPE,
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise error(f"{label}: could not start: {getattr(exc, 'strerror', None) or exc}"
                        ) from None
        try:
            if logf is not None and input is None:  # no pipes: wait for the exit itself
                out_b, err_b = None, None
                _wait_exit(proc, timeout)
            else:
                out_b, err_b = proc.communicate(
                    input=input.encode() if input is not None else None, timeout=timeout
                )
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            # a process that left the group (a detached container) may still hold the pipes
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=5)
            raise error(
                f"{label}: timed out after {timeout:g} s and was killed",
                hint="raise the timeout in matrix.yaml if this step is legitimately slow",
                detail=_log_detail(log, None),
            ) from None
        except BaseException:
            # Ctrl-C or any other interruption: never leave the child's process group behind.
            _kill_group(proc)
            raise
    finally:
        if logf is not None:
            logf.close()
    seconds = time.monotonic() - started
    stdout = (out_b or b"").decode(errors="replace")
    stderr = (err_b or b"").decode(errors="replace")
    result = Result(tuple(args), proc.returncode, stdout, stderr, seconds)
    if check and proc.returncode != 0:
        raise error(
            f"{label}: exited with code {proc.returncode}",
            detail=_log_detail(log, stdout + stderr),
        )
    return result


def _log_detail(log: Path | None, output: str | None) -> str:
    if log is not None:
        try:
            text = log.read_text(errors="replace")
        except OSError:
            text = ""
        return f"{tail(text)}\n(full log: {log})"
    return tail(output or "")


class Background:
    """A command started in its own process group and left running (stress rounds, detached
    containers). Always ``stop()`` it, or use it as a context manager."""

    def __init__(
        self,
        argv: Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        log: Path | None = None,
    ):
        args = [str(a) for a in argv]
        args[0] = which(args[0])
        self.argv = tuple(args)
        self.log = log
        LOG.debug("+ %s &", redact.text(quote(args)))
        self._logf: IO[bytes] | None = open(log, "ab") if log is not None else None  # noqa: SIM115
        try:
            self.proc = procguard.popen(  # into the run's cgroup, if guarding
                args,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=self._logf if self._logf is not None else subprocess.DEVNULL,
                stderr=subprocess.STDOUT if self._logf is not None else subprocess.DEVNULL,
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            if self._logf is not None:
                self._logf.close()
            raise CommandError(f"{quote(args)}: could not start: "
                               f"{getattr(exc, 'strerror', None) or exc}") from None
        self.started = time.monotonic()

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None when it is still running after ``timeout`` seconds."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def finish(self, timeout: float, *, what: str,
               error: type[PatchbenchError] = CommandError) -> None:
        """Wait for it to end as ``run`` waits for a command: ``timeout`` seconds from its start,
        then killed with its group and ``error``; ``error`` too when it exits non-zero (with the
        tail of its log). On any other way out (Ctrl-C) it is stopped."""
        try:
            _wait_exit(self.proc, max(0.0, timeout - (time.monotonic() - self.started)))
        except subprocess.TimeoutExpired:
            self.stop()
            raise error(f"{what}: timed out after {timeout:g} s and was killed",
                        hint="raise the timeout in matrix.yaml if this step is legitimately slow",
                        detail=_log_detail(self.log, None)) from None
        except BaseException:
            self.stop()
            raise
        self.stop()  # ended: closes the log
        if self.proc.returncode != 0:
            raise error(f"{what}: exited with code {self.proc.returncode}",
                        detail=_log_detail(self.log, ""))

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            _kill_group(self.proc)
        if self._logf is not None:
            self._logf.close()
            self._logf = None

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
