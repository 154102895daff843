"""Terminal progress: shown on a terminal only, rewritten in place; build elapsed time with the
log's last line; round r/R with the time left estimated from the rounds done."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from patchbench.util import progress as p


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_durations() -> None:
    assert p.fmt_duration(7.4) == "7s"
    assert p.fmt_duration(65) == "1m05s"
    assert p.fmt_duration(2 * 3600 + 3 * 60 + 9) == "2h03m"
    assert p.fmt_duration(-3) == "0s"


def test_quiet_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PATCHBENCH_NO_PROGRESS", raising=False)
    pipe = io.StringIO()
    status = p.StatusLine(pipe)
    assert not status.enabled
    rp = p.RoundProgress(3, status)
    rp.start(1)
    rp.finish()
    assert pipe.getvalue() == ""
    assert p.StatusLine(Tty()).enabled
    monkeypatch.setenv("PATCHBENCH_NO_PROGRESS", "1")
    assert not p.StatusLine(Tty()).enabled


def test_round_progress_estimates_the_time_left() -> None:
    tty, clock = Tty(), Clock()
    rp = p.RoundProgress(4, p.StatusLine(tty, enabled=True), clock=clock, label="start-8")
    assert rp.start(1) == "start-8: round 1/4 · 0s elapsed · ETA …"
    clock.now += 10
    assert rp.start(2) == "start-8: round 2/4 · 10s elapsed · ETA 30s"  # 3 rounds of 10 s left
    clock.now += 20
    assert rp.start(3) == "start-8: round 3/4 · 30s elapsed · ETA 30s"  # mean 15 s, 2 left
    clock.now += 15
    rp.finish()
    assert rp.durations == [10, 20, 15]
    out = tty.getvalue()
    assert out.count("\r\x1b[2K") == 4 and out.endswith("\r\x1b[2K")  # cleared at the end
    assert "\n" not in out


def test_status_line_is_one_line_cut_to_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    tty = Tty()
    status = p.StatusLine(tty, enabled=True)
    monkeypatch.setattr(status, "width", lambda: 20)
    status.update("a\nb " + "x" * 50)
    assert tty.getvalue() == "\r\x1b[2K" + ("a b " + "x" * 50)[:19] + "…"


def test_last_line_of_a_growing_log(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    assert p.last_line(log) == ""
    log.write_text("+ go build\ncompiling a\n\n")
    assert p.last_line(log) == "compiling a"
    with open(log, "a") as f:
        f.write("x" * 10000 + "\nlinking\r")
    assert p.last_line(log) == "linking"


def test_build_ticker_shows_elapsed_time_and_the_log(tmp_path: Path) -> None:
    log = tmp_path / "b.log"
    log.write_text("step one\n")
    tty = Tty()
    with p.BuildTicker("demo baseline", log, p.StatusLine(tty, enabled=True), interval=0.01):
        time.sleep(0.05)
        with open(log, "a") as f:
            f.write("step two\n")
        time.sleep(0.1)
    out = tty.getvalue()
    assert "building demo baseline · 0s · step one" in out
    assert "building demo baseline · 0s · step two" in out
    assert out.endswith("\r\x1b[2K")


def test_build_ticker_is_silent_off_a_terminal(tmp_path: Path) -> None:
    pipe = io.StringIO()
    with p.BuildTicker("x", tmp_path / "none.log", p.StatusLine(pipe), interval=0.01) as t:
        time.sleep(0.03)
        assert t.text() == "building x · 0s"
    assert pipe.getvalue() == ""


def test_build_ticker_prints_plain_lines_off_a_terminal(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "b.log"
    log.write_text("compiling\n")
    pipe = io.StringIO()
    with p.BuildTicker("runc/baseline", log, p.StatusLine(pipe), plain_every=0.02):
        time.sleep(0.1)
    assert pipe.getvalue() == ""  # nothing rewritten in place
    err = capsys.readouterr().err
    assert "patchbench: still building runc/baseline · 0s · compiling" in err


def test_a_call_of_several_rounds_spreads_its_time_over_them() -> None:
    tty, clock = Tty(), Clock()
    rp = p.RoundProgress(6, p.StatusLine(tty, enabled=True), clock=clock)
    rp.start(1)
    clock.now += 4
    rp.start(2)  # rounds 2-4 in one call of 12 s
    clock.now += 12
    rp.spread(3)
    assert rp.durations == [4, 4, 4]  # the call's last round ends at the next start
    assert rp.start(5) == "round 5/6 · 16s elapsed · ETA 8s"
    rp.spread(1)  # one round: nothing to spread
    clock.now += 2
    rp.finish()
    assert rp.durations == [4, 4, 4, 4, 2]
