"""Per-run deadlines in the launcher (real go): a command past its deadline is killed with its
whole process group, its evidence is saved first, the launcher exits 124, and a zombie child
under a sleeping parent is named as the lost-SIGCHLD signature."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from patchbench.measure import hangs
from patchbench.measure import launcher as launcher_tool
from patchbench.util.layout import Layout
from tests.support import processes_with

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("launcher")
    return launcher_tool.build(Layout(base / "builds", base / "reports"))


def run(launcher: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(launcher), *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def test_a_hang_is_killed_at_its_deadline_with_evidence(launcher: Path, tmp_path: Path) -> None:
    marker = f"pbtest-{uuid.uuid4().hex[:8]}"
    ev_dir, rec = tmp_path / "evidence", tmp_path / "rec.jsonl"
    t0 = time.monotonic()
    # a background child as well: killing only the command itself would leave it running
    res = run(launcher, "-k", "1", "-deadline", "500ms", "-evidence", str(ev_dir), "-o", str(rec),
              "--", "sh", "-c", f"sleep 30.417 & sleep 31.417; : {marker}")
    took = time.monotonic() - t0
    assert res.returncode == hangs.HANG_EXIT_CODE, res.stderr
    assert took < 5, took
    assert "passed its 500ms deadline" in res.stderr
    record = json.loads(rec.read_text())
    assert record["hung"] == [True] and record["exit_codes"] == [hangs.HANG_EXIT_CODE]
    assert 0.5 <= record["latencies"][0] < 3
    (ev,) = hangs.load_evidence(ev_dir)
    assert ev.argv[-1].endswith(marker) and ev.deadline_s == 0.5
    comms = sorted(p.comm for p in ev.processes)
    assert comms == ["sh", "sleep", "sleep"]
    assert ev.processes[0].pid == ev.pid  # the command first, then its children
    for p in ev.processes:
        assert p.state.startswith("S") and p.wchan not in ("", "0")
        assert len(p.sig_cgt) == 16 and len(p.sig_blk) == 16 and len(p.sig_pnd) == 16
    assert {p.pgid for p in ev.processes} == {ev.pid}
    assert not ev.lost_sigchld
    assert "no zombie child under a sleeping parent" in hangs.describe(ev)
    time.sleep(0.2)
    assert processes_with(marker) == []
    assert processes_with("sleep 30.417") == [] and processes_with("sleep 31.417") == []


def test_a_zombie_under_a_sleeping_parent_is_recognised(launcher: Path, tmp_path: Path) -> None:
    ev_dir = tmp_path / "evidence"
    # `true &` forks a child that exits at once; exec makes the parent a `sleep` that never
    # waits: the zombie stays under a sleeping parent, as when a SIGCHLD is lost
    res = run(launcher, "-k", "2", "-deadline", "300ms", "-evidence", str(ev_dir), "--",
              "sh", "-c", "true & exec sleep 20")
    assert res.returncode == hangs.HANG_EXIT_CODE
    evs = hangs.load_evidence(ev_dir)
    assert sorted(e.instance for e in evs) == [0, 1]
    for ev in evs:
        assert ev.lost_sigchld
        ((zombie, parent),) = ev.zombies_under_sleepers()
        assert zombie.state.startswith("Z") and zombie.ppid == parent.pid == ev.pid
        assert parent.comm == "sleep" and parent.wchan not in ("", "0")
        assert any(hangs.LOST_SIGCHLD in f for f in ev.findings)  # the launcher says so too
        assert hangs.LOST_SIGCHLD in hangs.describe(ev)


def test_runs_within_the_deadline_are_not_hangs(launcher: Path, tmp_path: Path) -> None:
    ev_dir, rec = tmp_path / "evidence", tmp_path / "rec.jsonl"
    res = run(launcher, "-k", "3", "-deadline", "10s", "-evidence", str(ev_dir), "-o", str(rec),
              "--", "sh", "-c", "exit 3")
    assert res.returncode == 1  # failures, not hangs
    record = json.loads(rec.read_text())
    assert record["hung"] == [False] * 3 and record["exit_codes"] == [3] * 3
    assert not ev_dir.exists()
    ok = run(launcher, "-k", "2", "-deadline", "10s", "--", "true")
    assert ok.returncode == 0


def test_a_hang_wins_over_a_failure_and_phases_stop_at_it(launcher: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    res = run(launcher, "-k", "1", "-deadline", "300ms", "-o", str(rec), "--",
              "sleep", "10", "--then", "true")
    assert res.returncode == hangs.HANG_EXIT_CODE
    record = json.loads(rec.read_text())
    assert len(record["phases"][0]) == 1  # the second phase never ran


def test_a_stopped_launcher_takes_its_commands_along(launcher: Path) -> None:
    sleep = f"sleep 40.{uuid.uuid4().int % 10**6:06d}"  # unique among this machine's processes
    proc = subprocess.Popen([str(launcher), "-k", "2", "-deadline", "60s", "--", "sh", "-c",
                             f"{sleep}; true"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(processes_with(sleep)) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(processes_with(sleep)) == 5  # the launcher, 2 sh and their 2 sleeps
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 128 + signal.SIGTERM
        time.sleep(0.2)
        assert processes_with(sleep) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_escaped_processes_are_seen_only_when_asked(launcher: Path, tmp_path: Path) -> None:
    sleep = f"sleep 41.{uuid.uuid4().int % 10**6:06d}"
    for flag, expect in (("-escapes", 1), ("", 0)):
        rec = tmp_path / f"rec{flag}.jsonl"
        args = ["-k", "1", "-n", "2", "-deadline", "5s", "-o", str(rec)]
        res = run(launcher, *args, *([flag] if flag else []), "--", "sh", "-c",
                  # rep 0 forks nothing (a background `[ 0 = 1 ] && …` subshell may outlive
                  # the command by a moment on a loaded machine, and be seen, rightly, as escaped)
                  f"if [ {{rep}} = 1 ]; then {sleep} >/dev/null 2>&1 & fi; true")
        assert res.returncode == 0, res.stderr
        lines = [json.loads(x) for x in rec.read_text().splitlines()]
        assert [r["rep"] for r in lines] == [0, 1]
        escaped = [e for r in lines for e in r.get("escaped") or []]
        assert len(escaped) == expect
        if expect:
            assert processes_with(sleep) == []  # killed
        else:
            assert len(processes_with(sleep)) == 1  # left alone, as runc exec -d's process
            for line in processes_with(sleep):
                os.kill(int(line.split(":")[0]), signal.SIGKILL)
