"""Work the tool can do while nothing is measured (issue 21: the tool's own cost).

A comparison spends a fixed part of its wall time on things it needs only after measuring (numpy
for the statistics, the results models, the report modules: about 0.15 s). ``later`` registers
such work; a ``window`` is a stretch in which the machine runs only unmeasured runs (the warmups,
patchbench.measure.bench): the pending work runs in a thread meanwhile, and the window's end
waits for it, so it never overlaps a measured run. Work no window took is done by ``run_pending``
(or simply when it is first needed), as before. The work must be safe to run twice and to fail:
a failure here is ignored, and the same step fails again, with its proper error, where it is
really used.

``soon`` is the same for work whose value is needed later (the machine's tool versions, recorded
in results.json): the window computes it, and ``Soon.result`` returns it, computing it there and
then when no window came (or the window's attempt failed). ``beside`` runs work in a thread while
the caller does other unmeasured work after measuring (the verify checks and each candidate's
comparison during the cells' statistics; scenarios/base.statistics_ready first loads numpy and
builds the record models in the caller's thread, which two threads must not do at once).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

_PENDING: list[Callable[[], None]] = []
_WAITING: set[Callable[[], None]] = set()  # of them, the work that mostly waits for commands


def later(fn: Callable[[], None], *, waits: bool = False) -> None:
    """Do ``fn`` in the next window (or at ``run_pending``); once, however often it is given.
    ``waits``: it spends its time waiting for commands (the machine's probes), so a window runs
    it in a thread of its own, beside the work that needs the interpreter (imports, models)."""
    if fn not in _PENDING:
        _PENDING.append(fn)
    if waits:
        _WAITING.add(fn)


def _take() -> list[Callable[[], None]]:
    work = list(_PENDING)
    _PENDING.clear()
    return work


def _quietly(work: list[Callable[[], None]]) -> None:
    for fn in work:
        with contextlib.suppress(Exception):  # done again, with its error, where it is used
            fn()


@contextlib.contextmanager
def window() -> Iterator[None]:
    """While the body runs only unmeasured work, the pending work runs in a thread; leaving the
    window waits for it (on an error or Ctrl-C too, so nothing of it outlives the window)."""
    work = _take()
    waiting = [fn for fn in work if fn in _WAITING]
    _WAITING.clear()
    groups = [g for g in ([fn for fn in work if fn not in waiting], waiting) if g]
    threads = [threading.Thread(target=_quietly, args=(g,), name="patchbench-idle", daemon=True)
               for g in groups]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        _join(threads)


def _join(threads: list[threading.Thread]) -> None:
    """Join every one of ``threads`` until it has ended, even when a join is interrupted (Ctrl-C:
    raised once they all have ended, so nothing of the window outlives it)."""
    interrupted: BaseException | None = None
    for thread in threads:
        while thread.is_alive():
            try:
                thread.join()
            except BaseException as exc:  # joined again: it is short work
                interrupted = interrupted or exc
    if interrupted is not None:
        raise interrupted


def run_pending() -> None:
    """Do what no window took, here and now."""
    _WAITING.clear()
    _quietly(_take())


class Soon(Generic[T]):
    """A value computed in the next window, or by ``result`` when none came first."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._lock = threading.Lock()
        self._done = False
        self._value: T | None = None

    def _compute(self) -> None:
        with self._lock:  # a result() during the window waits for the window's attempt
            if not self._done:
                self._value = self._fn()
                self._done = True

    def result(self) -> T:
        self._compute()  # the window's failure is raised here, by doing it again
        return self._value  # type: ignore[return-value]  # _done: set by _fn's return


def soon(fn: Callable[[], T], *, waits: bool = False) -> Soon[T]:
    """``fn()``, computed in the next window if one comes before ``result`` is asked
    (``waits``: see ``later``)."""
    value = Soon(fn)
    later(value._compute, waits=waits)
    return value


class Beside(Generic[T]):
    """``fn`` running in a thread; ``result`` waits for it and returns its value or raises its
    error."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), name="patchbench-beside",
                                        daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def join(self) -> None:
        """Wait for it to end, whatever it returns or raises; a Ctrl-C meanwhile is raised once
        it has ended (``_join``), so it never outlives the step that started it."""
        _join([self._thread])

    def result(self) -> T:
        self.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # no error: fn returned it


def beside(fn: Callable[[], T]) -> Beside[T]:
    """Start ``fn`` in a thread now, for work that may overlap the caller's own unmeasured work
    (never a measured run: call it after the last one). What no window took is done first, so
    that two threads never build the same deferred model. The caller joins it on every way out
    (``join`` in a ``finally``): nothing it starts may outlive the step that started it."""
    run_pending()
    return Beside(fn)


def clear() -> None:
    """Forget the pending work (a comparison that ended before any window took it)."""
    _PENDING.clear()
    _WAITING.clear()
