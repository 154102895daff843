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


def test_a_value_soon_is_computed_in_the_window_and_given_after_it() -> None:
    threads: list[str] = []

    def probe() -> str:
        threads.append(threading.current_thread().name)
        return "hyperfine 1.19.0"

    value = idle.soon(probe)
    with idle.window():
        pass
    assert value.result() == "hyperfine 1.19.0" and value.result() == "hyperfine 1.19.0"
    assert threads == ["patchbench-idle"]  # once, in the window


def test_a_value_soon_without_a_window_is_computed_when_asked() -> None:
    threads: list[str] = []
    value = idle.soon(lambda: threads.append(threading.current_thread().name) or 7)
    try:
        assert threads == []  # not before it is asked
        assert value.result() == 7 and threads == [threading.current_thread().name]
    finally:
        idle.run_pending()  # the registration is spent: done already, so nothing runs again
    assert len(threads) == 1


def test_a_value_whose_window_attempt_failed_is_computed_again_with_its_error() -> None:
    calls: list[int] = []

    def flaky() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("systemd-detect-virt vanished")
        return 3

    value = idle.soon(flaky)
    with idle.window():
        pass
    assert value.result() == 3 and len(calls) == 2  # the window's failure is not kept

    broken = idle.soon(lambda: (_ for _ in ()).throw(ValueError("no such tool")))
    with idle.window():
        pass
    with pytest.raises(ValueError, match="no such tool"):
        broken.result()  # raised where the value is used


def test_asking_during_the_window_waits_for_its_attempt() -> None:
    began = threading.Event()
    calls: list[str] = []

    def slow() -> str:
        calls.append(threading.current_thread().name)
        began.set()
        time.sleep(0.05)
        return "go version go1.26.8"

    value = idle.soon(slow)
    with idle.window():
        assert began.wait(10)
        assert value.result() == "go version go1.26.8"  # waited, not computed a second time
    assert calls == ["patchbench-idle"]


def test_beside_runs_in_a_thread_and_hands_back_its_value_or_its_error() -> None:
    release = threading.Event()

    def check() -> str:
        assert release.wait(10)
        return "passed"

    job = idle.beside(check)
    release.set()  # the caller goes on while the job waits: it runs beside the caller
    assert job.result() == "passed"

    def failing() -> str:
        raise RuntimeError("verify could not start")

    with pytest.raises(RuntimeError, match="verify could not start"):
        idle.beside(failing).result()


def test_work_that_waits_for_commands_runs_beside_the_rest_in_a_window() -> None:
    other_ran = threading.Event()
    seen: list[bool] = []

    def probe() -> None:  # given first, it would hold up the rest in one thread
        seen.append(other_ran.wait(5))

    idle.later(probe, waits=True)
    idle.later(other_ran.set)
    with idle.window():
        pass
    assert seen == [True]


def test_an_interrupted_window_still_waits_for_all_its_work(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    done: list[str] = []

    def slow(name: str) -> None:
        time.sleep(0.05)
        done.append(name)

    real = threading.Thread.join
    calls: list[int] = []

    def join(self: threading.Thread, timeout: float | None = None) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt  # Ctrl-C while waiting for the first thread
        real(self, timeout)

    monkeypatch.setattr(threading.Thread, "join", join)
    idle.later(lambda: slow("imports"))
    idle.later(lambda: slow("probes"), waits=True)
    with pytest.raises(KeyboardInterrupt), idle.window():
        pass
    assert sorted(done) == ["imports", "probes"]  # both ended before the window was left
