"""All progress output goes through here, on stderr: stdout is for results (tables, paths).
Details: docs/internals.md."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TextIO


def say(msg: str) -> None:
    """A progress line or a warning for the person at the terminal."""
    print(f"patchbench: {msg}", file=sys.stderr, flush=True)


def step(label: str, detail: str) -> None:
    """One step of a long measurement (a round of a cell, a stress round)."""
    say(f"  {label:<28} {detail}")





Clock = Callable[[], float]
PLAIN_EVERY = 30.0  # seconds between plain "still building" lines when stderr is not a terminal


def is_enabled(stream: TextIO) -> bool:
    """Progress is shown only on a terminal, and never with PATCHBENCH_NO_PROGRESS set."""
    if os.environ.get("PATCHBENCH_NO_PROGRESS", "") not in ("", "0"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def fmt_duration(seconds: float) -> str:
    """``7s``, ``1m05s``, ``2h03m``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def last_line(path: Path, max_bytes: int = 8192) -> str:
    """The last non-empty line of a (growing) log file, read from its end; "" when none."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            tail = f.read().decode(errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.replace("\r", "\n").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def estimate_left(durations: list[float], remaining: int) -> float | None:
    """Seconds left: the mean duration of the rounds done so far times the rounds left."""
    if not durations:
        return None
    return sum(durations) / len(durations) * remaining


def round_text(r: int, total: int, elapsed: float, left: float | None) -> str:
    text = f"round {r}/{total} · {fmt_duration(elapsed)} elapsed"
    return text + (f" · ETA {fmt_duration(left)}" if left is not None else " · ETA …")


class StatusLine:
    """One status line on ``stream`` (stderr), rewritten in place; does nothing when disabled."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = is_enabled(self.stream) if enabled is None else enabled
        self._lock = threading.Lock()
        self._shown = False

    def width(self) -> int:
        return max(20, shutil.get_terminal_size((100, 24)).columns - 1)

    def update(self, text: str) -> None:
        if not self.enabled:
            return
        text = " ".join(text.split())
        if len(text) > self.width():
            text = text[: self.width() - 1] + "…"
        with self._lock:
            self.stream.write("\r\x1b[2K" + text)
            self.stream.flush()
            self._shown = True

    def clear(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self._shown:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
                self._shown = False


class BuildTicker:
    """``with BuildTicker("runc baseline", log):`` shows the elapsed time and the log's last line
    until the block ends."""

    def __init__(self, label: str, log: Path, status: StatusLine | None = None,
                 interval: float = 0.5, clock: Clock = time.monotonic,
                 plain_every: float = PLAIN_EVERY):
        self.plain_every = plain_every
        self.label = label
        self.log = log
        self.status = status or StatusLine()
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def text(self) -> str:
        line = last_line(self.log)
        return (f"building {self.label} · {fmt_duration(self.clock() - self.started)}"
                + (f" · {line}" if line else ""))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.status.update(self.text())

    def _plain(self) -> None:  # not a terminal (a CI log): a plain line now and then
        while not self._stop.wait(self.plain_every):
            say(self.text().replace("building", "still building", 1))

    def __enter__(self) -> BuildTicker:
        self.started = self.clock()
        if self.status.enabled:
            self.status.update(self.text())
            self._thread = threading.Thread(target=self._run, name="build-ticker", daemon=True)
        elif self.plain_every > 0:
            self._thread = threading.Thread(target=self._plain, name="build-ticker", daemon=True)
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self.status.clear()


class RoundProgress:
    """Call :meth:`start` at the beginning of each round; it shows ``round r/R`` with the time
    left, estimated from the rounds already done."""

    def __init__(self, total: int, status: StatusLine | None = None,
                 clock: Clock = time.monotonic, label: str = ""):
        self.total = total
        self.status = status or StatusLine()
        self.clock = clock
        self.label = label
        self.began = clock()
        self.durations: list[float] = []
        self._round_started: float | None = None

    def start(self, r: int) -> str:
        now = self.clock()
        if self._round_started is not None:
            self.durations.append(now - self._round_started)
        self._round_started = now
        text = round_text(r, self.total, now - self.began,
                          estimate_left(self.durations, self.total - r + 1))
        if self.label:
            text = f"{self.label}: {text}"
        self.status.update(text)
        return text

    def spread(self, rounds: int) -> None:
        """The round started last was ``rounds`` rounds run as one call: its time so far is
        split evenly between them (the last one's ends at the next ``start`` or ``finish``)."""
        if self._round_started is None or rounds < 2:
            return
        now = self.clock()
        each = (now - self._round_started) / rounds
        self.durations += [each] * (rounds - 1)
        self._round_started = now - each

    def finish(self) -> None:
        if self._round_started is not None:
            self.durations.append(self.clock() - self._round_started)
            self._round_started = None
        self.status.clear()
