"""Work the tool can do while nothing is measured (issue 21: the tool's own cost).

A comparison spends a fixed part of its wall time on things it needs only after measuring (numpy
for the statistics, the results models, the report modules: about 0.15 s). ``later`` registers
such work; a ``window`` is a stretch in which the machine runs only unmeasured runs (the warmups,
patchbench.measure.bench): the pending work runs in a thread meanwhile, and the window's end
waits for it, so it never overlaps a measured run. Work no window took is done by ``run_pending``
(or simply when it is first needed), as before. The work must be safe to run twice and to fail:
a failure here is ignored, and the same step fails again, with its proper error, where it is
really used.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

_PENDING: list[Callable[[], None]] = []


def later(fn: Callable[[], None]) -> None:
    """Do ``fn`` in the next window (or at ``run_pending``); once, however often it is given."""
    if fn not in _PENDING:
        _PENDING.append(fn)


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
    if not work:
        yield
        return
    thread = threading.Thread(target=_quietly, args=(work,), name="patchbench-idle", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def run_pending() -> None:
    """Do what no window took, here and now."""
    _quietly(_take())
