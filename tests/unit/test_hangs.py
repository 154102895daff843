"""Hang counting, evidence reading and Fisher's exact test (no go needed: evidence fixtures are
written as the launcher writes them)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from patchbench.analysis import stats
from patchbench.errors import ReportError
from patchbench.measure import hangs


def proc(pid: int, ppid: int, comm: str, state: str, **kw: Any) -> dict[str, Any]:
    base = {"pid": pid, "ppid": ppid, "pgid": 100, "comm": comm, "state": state,
            "sig_cgt": "0000000000010000", "sig_blk": "0000000000000000",
            "sig_ign": "0000000000000000", "sig_pnd": "0000000000000000",
            "shd_pnd": "0000000000000000", "wchan": "do_wait", "cmdline": comm, "threads": 1,
            "zombie": state.startswith("Z")}
    return {**base, **kw}


def write_evidence(d: Path, name: str, processes: list[dict[str, Any]], instance: int = 0,
                   time: str = "2026-11-30T02:00:00Z") -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(json.dumps({
        "schema": 1, "instance": instance, "argv": ["runc", "run", "x"], "pid": 100,
        "deadline_s": 2.0, "elapsed_s": 2.001, "time": time, "processes": processes,
        "findings": [], "killed": [p["pid"] for p in processes],
    }))


def test_a_zombie_under_a_sleeping_parent_is_the_lost_sigchld_signature(tmp_path: Path) -> None:
    write_evidence(tmp_path, "hang-b.json", [
        proc(100, 1, "runc", "S (sleeping)", wchan="futex_wait_queue",
             thread_wchans={"futex_wait_queue": 5, "ep_poll": 1}),
        proc(101, 100, "runc:[2:INIT]", "Z (zombie)", wchan="0"),
    ], instance=1, time="2026-11-30T02:00:01Z")
    # a zombie under a *running* parent is just a child about to be reaped
    write_evidence(tmp_path, "hang-a.json", [
        proc(100, 1, "runc", "R (running)"),
        proc(101, 100, "true", "Z (zombie)"),
    ])
    first, second = hangs.load_evidence(tmp_path)
    assert (first.instance, first.file) == (0, "hang-a.json")  # oldest first
    assert not first.lost_sigchld
    assert second.lost_sigchld
    ((zombie, parent),) = second.zombies_under_sleepers()
    assert (zombie.pid, parent.pid) == (101, 100)
    text = hangs.describe(second)
    assert "zombie child 101 (runc:[2:INIT]) under sleeping parent 100" in text
    assert hangs.LOST_SIGCHLD in text
    assert "futex_wait_queue x5" in text and "caught: SIGCHLD" in text
    assert "no zombie child under a sleeping parent" in hangs.describe(first)


def test_no_evidence_directory_means_no_hangs_and_a_bad_file_is_named(tmp_path: Path) -> None:
    assert hangs.load_evidence(tmp_path / "absent") == []
    (tmp_path / "hang-x.json").write_text("{not json")
    with pytest.raises(ReportError, match=r"hang-x\.json"):
        hangs.load_evidence(tmp_path)


def test_signal_masks_are_decoded() -> None:
    assert hangs.signal_names("0000000000010000") == ["SIGCHLD"]
    assert hangs.signal_names("0000000000000000") == []
    assert hangs.signal_names("0000000000004002") == ["SIGINT", "SIGTERM"]
    # bit 33 is signal 34: SIGRTMIN on Linux (glibc reserves 32 and 33)
    names = hangs.signal_names(format(1 << 33 | 1 << 34, "016x"))
    assert names[-1].startswith("SIGRTMIN")
    assert hangs.signal_names("zz") == ["?zz"]


def test_counting_hangs_and_the_gate_rule() -> None:
    codes = [0, 124, 0, 1, 124, None]
    assert hangs.count_hangs(codes) == 2
    c = hangs.HangCount.from_exit_codes("fix", codes)
    assert (c.hangs, c.runs, c.text) == (2, 6, "hangs: 2 of 6")
    with pytest.raises(ValueError):
        hangs.HangCount("x", 3, 2)
    counts = {
        "baseline": hangs.HangCount("baseline", 1, 3000),
        "fix": hangs.HangCount("fix", 0, 3000),
        "racy": hangs.HangCount("racy", 30, 3000),
    }
    fails = hangs.gate_failures(counts, "baseline")
    assert len(fails) == 1 and fails[0].startswith("racy: hangs: 30 of 3000 (baseline hangs: 1 of 3000")
    # the baseline's own hangs never fail the gate
    assert hangs.gate_failures({"baseline": hangs.HangCount("baseline", 5, 10)}, "baseline") == []
    # a single candidate hang fails it, even when not significant
    one = hangs.gate_failures({"baseline": counts["baseline"], "fix": hangs.HangCount("fix", 1, 3000)},
                              "baseline")
    assert len(one) == 1 and "p = 1" in one[0]
    cmp = hangs.compare_hangs(counts["baseline"], counts["racy"])
    assert cmp.p_value < 1e-6 and cmp.p_more < cmp.p_value


def test_fisher_exact_by_hand() -> None:
    # the tea-tasting table: p = 0.4857 (two-sided), 0.2429 (one-sided)
    assert stats.fisher_exact(3, 1, 1, 3) == pytest.approx(0.48571428, rel=1e-6)
    assert stats.fisher_exact(3, 1, 1, 3, alternative="greater") == pytest.approx(0.24285714, rel=1e-6)
    assert stats.fisher_exact(0, 10, 0, 10) == 1.0
    assert stats.fisher_exact(0, 0, 0, 0) == 1.0
    with pytest.raises(ValueError):
        stats.fisher_exact(-1, 1, 1, 1)
    with pytest.raises(ValueError):
        stats.fisher_exact(1, 1, 1, 1, alternative="sideways")


def test_fisher_exact_matches_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for _ in range(60):  # 180 p-values; 150 tables took 7 s, most of it in the large ones
        table = [rng.choice([0, 1, 2, 3, 7, rng.randint(0, 60), rng.randint(0, 4000)])
                 for _ in range(4)]
        a, b, c, d = table
        for alt in ("two-sided", "greater", "less"):
            expected = scipy_stats.fisher_exact([[a, b], [c, d]], alternative=alt).pvalue
            assert stats.fisher_exact(a, b, c, d, alternative=alt) == pytest.approx(
                expected, rel=1e-8, abs=1e-300), (table, alt)


@pytest.mark.skipif(not Path("/proc/self/wchan").is_file(),
                    reason="no /proc/PID/wchan here (a sandboxed kernel)")
def test_capture_saves_the_launchers_evidence_and_names_a_lost_sigchld(tmp_path: Path) -> None:
    """patchbench's own capture (stress hangs) writes what the launcher writes: here a parent
    that sleeps without reaping its exited child, the lost-SIGCHLD signature."""
    import subprocess
    import sys
    import time

    script = ("import os, time\n"
              "if os.fork() == 0:\n    os._exit(0)\n"
              "print('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the child has exited (a zombie), the parent sleeps
            tree = [hangs.ProcessInfo.model_validate(hangs._proc(x))
                    for x in hangs.tree_of(proc.pid)]
            if any(p.zombie for p in tree) and any(p.pid == proc.pid and p.sleeping for p in tree):
                break
            time.sleep(0.02)
        path = hangs.capture(proc.pid, ["python", "-c", "..."], 3, 1.0, 1.25, tmp_path / "ev")
    finally:
        proc.kill()
        proc.wait()
    ev = hangs.load_evidence_file(path)
    assert path.name.startswith("hang-") and path.name.endswith(f"-i3-pid{proc.pid}.json")
    assert (ev.instance, ev.pid, ev.deadline_s, ev.elapsed_s) == (3, proc.pid, 1.0, 1.25)
    parent, child = ev.processes
    assert parent.pid == proc.pid and parent.pgid == proc.pid and parent.sleeping
    assert len(parent.sig_cgt) == 16
    assert child.ppid == proc.pid and child.zombie
    assert ev.lost_sigchld and "lost-SIGCHLD" in ev.findings[0]
    assert ev.killed == [parent.pid, child.pid]
    assert hangs.load_evidence(tmp_path / "ev") == [ev]
