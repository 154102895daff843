"""util/locks.py: flock on a file of its own, across processes and threads, never through a link,
released when its holder dies, and a second take by the same thread said as a bug."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from patchbench.errors import SourceError
from patchbench.util import locks

HOLD = """
import sys, time
from pathlib import Path
from patchbench.util import locks
with locks.locked(Path(sys.argv[1]), "build-x"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(lock_dir: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock_dir), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_another_process_holding_it_is_waited_for_then_refused(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    proc = _holder(tmp_path / "locks", 30)
    try:
        started = time.monotonic()
        with pytest.raises(SourceError, match=r"has held .*build-x\.lock for 0\.3 s"), \
                locks.locked(tmp_path / "locks", "build-x", timeout=0.3):
            pass
        assert time.monotonic() - started >= 0.3
        assert "waiting for another patchbench process" in capsys.readouterr().err
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holder_leaves_nothing_to_clean(tmp_path: Path) -> None:
    proc = _holder(tmp_path / "locks", 30)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (tmp_path / "locks" / "build-x.lock").exists()  # the file stays, the lock went
    with locks.locked(tmp_path / "locks", "build-x", timeout=0):
        pass


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "build-x.lock").symlink_to(target)
    with pytest.raises(SourceError, match="is a symbolic link"), \
            locks.locked(tmp_path / "locks", "build-x"):
        pass
    assert target.read_text() == "keep me\n"


def test_a_lock_file_with_content_is_never_truncated(tmp_path: Path) -> None:
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "build-x.lock").write_text("left by an older version\n")
    with locks.locked(tmp_path / "locks", "build-x"):
        pass
    assert (tmp_path / "locks" / "build-x.lock").read_text() == "left by an older version\n"


def test_taking_again_what_this_thread_holds_is_a_bug_not_a_wait(tmp_path: Path) -> None:
    with locks.locked(tmp_path / "locks", "build-x"):
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="already held by this thread"), \
                locks.locked(tmp_path / "locks", "build-x", timeout=5):
            pass
        assert time.monotonic() - started < 1
        with locks.locked(tmp_path / "locks", "build-y"):  # another lock: fine
            pass
    with locks.locked(tmp_path / "locks", "build-x", timeout=0):  # and released after
        pass


def test_the_same_lock_through_a_linked_folder_is_still_the_same_lock(tmp_path: Path) -> None:
    (tmp_path / "locks").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "locks")
    with locks.locked(tmp_path / "locks", "build-x"), \
            pytest.raises(RuntimeError, match="already held by this thread"), \
            locks.locked(tmp_path / "via", "build-x", timeout=5):
        pass


def test_a_second_run_on_one_builds_dir_is_told_it_waits(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    lock_dir = tmp_path / "builds" / "locks"
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with locks.locked(lock_dir, "build-x"):
            held.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(5)
    threading.Timer(0.2, release.set).start()
    started = time.monotonic()
    with locks.locked(lock_dir, "build-x"):
        waited = time.monotonic() - started
    t.join()
    assert waited > 0.1
    err = capsys.readouterr().err
    assert f"waiting for another patchbench process using {tmp_path / 'builds'}" in err
    assert "build-x.lock" in err
