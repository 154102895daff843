"""Safety class 8 (docs/safety.md): after SIGKILL during a fetch or a build, the next run removes
the ``builds/sources/.<target>-*`` directories and the registered git worktrees the dead run left,
and only what dead runs left (a live run's scratch directories and untagged entries stay)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchbench import pipeline
from patchbench.util import cleanup
from tests import support
from tests.support import REPO_ROOT, TARGET, Project, invoke_argv, processes_with, worktrees

CHILD = """
import sys, time
from pathlib import Path
from patchbench.source import cache as source
builds, url, commit = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
def hang(*args, **kwargs):
    print("READY", flush=True)
    time.sleep(600)
source._fetch_into = hang  # a fetch that takes long (a slow network)
source.fetch(builds, "hello", url, "v1", commit, overridden=False)
"""


def test_tags_name_live_and_dead_processes() -> None:
    tag = cleanup.owner_tag()
    assert tag.startswith(f"p{os.getpid()}s")
    assert cleanup.alive(tag)
    pid, start = tag[1:].split("s")
    assert not cleanup.alive(f"p{pid}s{int(start) + 1}")  # the same pid, reused later
    child = subprocess.Popen(["true"])
    child.wait()
    assert not cleanup.alive(f"p{child.pid}s1")
    assert cleanup.alive("not-a-tag")


def start_fetch_child(builds: Path, project: Project) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(builds), str(project.upstream.path),
                             project.upstream.a], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "READY"
    return proc


def kill(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.integration
def test_sigkill_during_a_fetch_is_cleaned_by_the_next_run(project: Project) -> None:
    builds = project.builds
    dead = start_fetch_child(builds, project)
    kill(dead)
    live = start_fetch_child(builds, project)
    try:
        sources = builds / "sources"
        left = [p.name for p in sources.iterdir() if p.name.startswith(f".{TARGET}-")]
        assert any(f"-p{dead.pid}s" in n for n in left) and any(f"-p{live.pid}s" in n for n in left)
        (sources / f".{TARGET}-untagged").mkdir()  # not ours to judge: stays
        pipeline.load(project.options())  # the next run
        after = sorted(p.name for p in sources.iterdir() if p.name.startswith("."))
        assert not any(f"-p{dead.pid}s" in n for n in after), after
        assert any(f"-p{live.pid}s" in n for n in after), after
        assert f".{TARGET}-untagged" in after
    finally:
        kill(live)


@pytest.mark.integration
def test_sigkill_during_a_build_leaves_no_worktree_after_the_next_run(project: Project) -> None:
    marker = f"{time.time_ns() % 10**6}.25"
    project.write(commands=[["sleep", marker]])
    proc = subprocess.Popen(
        invoke_argv("build", "--target", TARGET, "--matrix", str(project.matrix), "--builds",
                    str(project.builds), "--reports", str(project.reports)),
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not processes_with(f"sleep {marker}"):
            assert time.monotonic() < deadline and proc.poll() is None, "the build never started"
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for line in processes_with(f"sleep {marker}"):  # the recipe runs in its own group
            # (its sandbox dies with patchbench: the sleep may be gone between the two lines)
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split(":")[0]), signal.SIGKILL)
    tmp = project.builds / "tmp"
    assert [p.name for p in tmp.iterdir()], "the killed build left nothing to clean"
    assert len(worktrees(project.cache)) == 2  # the bare repository and the dead build's
    pipeline.load(project.options())  # the next run
    assert list(tmp.iterdir()) == []
    assert worktrees(project.cache) == [str(project.cache)]


GUARDED_CHILD = """
import subprocess, sys, time
from patchbench.util import cleanup, procguard
guard = procguard.activate("faults-" + cleanup.cgroup_tag())
assert guard.available, guard.reason
procguard.popen(["sleep", sys.argv[1]], start_new_session=True)
print(guard.path, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="per-run cgroups need root")
def test_sigkill_of_a_guarded_run_leaves_a_cgroup_the_next_run_sweeps() -> None:
    marker = "61.2468"
    child = subprocess.Popen([sys.executable, "-c", GUARDED_CHILD, marker], cwd=REPO_ROOT,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    path = Path(child.stdout.readline().strip())
    # procguard.popen returns once the shell joined the cgroup, before it execs the sleep: a
    # process in the middle of execve shows an empty command line for a moment
    deadline = time.monotonic() + 5
    while not processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.is_dir() and processes_with(f"sleep {marker}")
    # no other test process's run sweeps this cgroup first (a worker beside this one once did:
    # the sleep was gone before this sweep looked)
    with support.CGROUP_SWEEP:
        os.kill(child.pid, signal.SIGKILL)  # no cleanup of its own
        child.wait()
        assert path.is_dir() and processes_with(f"sleep {marker}")  # left behind, in its cgroup
        assert path in cleanup.stale_cgroups()
        said = cleanup.sweep_cgroups()
    assert f"removed cgroup {path}, killing 1 process left in it" in said
    assert not path.exists()
    deadline = time.monotonic() + 10
    while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(f"sleep {marker}") == []
