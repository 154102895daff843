"""measure/reaper.py: hyperfine's calls run under a child subreaper that passes the command's
status through and reaps the orphans a measured command leaves (runc exec -d's processes)."""

from __future__ import annotations

import os
import subprocess
import time

from patchbench.measure import reaper


def run(script: str) -> tuple[int, float, int]:
    """The reaper's exit status and seconds running ``sh -c script``, and its pid."""
    t0 = time.monotonic()
    proc = subprocess.Popen([*reaper.argv(), "sh", "-c", script])
    code = proc.wait(timeout=30)
    return code, time.monotonic() - t0, proc.pid


def test_the_command_status_passes_through() -> None:
    assert run("exit 0")[0] == 0
    assert run("exit 3")[0] == 3
    assert run("kill -TERM $$")[0] == 128 + 15


def test_an_orphan_is_reaped_by_the_reaper_not_left_to_init(tmp_path: os.PathLike[str]) -> None:
    """The command leaves a child that outlives it by 0.3 s and then writes down its parent:
    the reaper (a child subreaper), not the machine's init; the reaper waits for it."""
    seen = f"{tmp_path}/ppid"
    orphan = f"sleep 0.3; read -r _ _ _ ppid _ < /proc/$$/stat; echo $ppid > {seen}"
    code, took, pid = run(f"sh -c '{orphan}' & exit 0")
    assert code == 0 and took >= 0.3
    with open(seen) as f:
        assert int(f.read()) == pid


def test_an_orphan_that_lives_on_holds_the_call_at_most_the_grace() -> None:
    code, took, _ = run("sleep 30 & exit 0")
    assert code == 0 and reaper.GRACE_S <= took < reaper.GRACE_S + 5


def test_a_missing_command_is_127() -> None:
    done = subprocess.run([*reaper.argv(), "no-such-command-here"], capture_output=True,
                          text=True, timeout=30, check=False)
    assert done.returncode == 127 and "no-such-command-here" in done.stderr
