"""util/idle: the tool's pending work runs in a window (in a thread, joined when the window ends,
on an error too), once however often it was given; a failure in it is not the window's."""

from __future__ import annotations

import threading
import time

import pytest

from patchbench.util import idle


def test_a_window_runs_the_work_beside_its_body_and_waits_for_it() -> None:
    began, done = threading.Event(), threading.Event()
    threads: list[str] = []

    def work() -> None:
        threads.append(threading.current_thread().name)
        began.set()
        time.sleep(0.05)
        done.set()

    idle.later(work)
    idle.later(work)  # given twice: done once
    with idle.window():
        assert began.wait(10)  # beside the body, not after it
    assert done.is_set() and threads == ["patchbench-idle"]
    idle.run_pending()  # nothing left
    assert threads == ["patchbench-idle"]


def test_a_failing_work_is_not_the_windows_error_and_the_rest_still_runs() -> None:
    ran: list[str] = []

    def broken() -> None:
        raise ImportError("no such module")

    idle.later(broken)
    idle.later(lambda: ran.append("after"))
    with idle.window():
        pass
    assert ran == ["after"]


def test_the_work_ends_with_the_window_when_its_body_fails() -> None:
    done = threading.Event()

    def work() -> None:
        time.sleep(0.05)
        done.set()

    idle.later(work)
    with pytest.raises(KeyboardInterrupt), idle.window():
        raise KeyboardInterrupt
    assert done.is_set()  # nothing of it outlives the window
