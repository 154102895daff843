"""The real command line: exit codes per error kind, --dry-run, an interrupted build (SIGINT),
and two invocations at once on one cache."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from patchbench import build
from patchbench.build import Variant
from patchbench.cli import commands as cli
from patchbench.util.workspace import Switches, Workspace
from tests import support
from tests.support import (
    REPO_ROOT,
    TARGET,
    Project,
    assert_nothing_left,
    git,
    invoke,
    invoke_argv,
    processes_with,
)

pytestmark = pytest.mark.integration


def dirs(project: Project) -> list[str]:
    return ["--matrix", str(project.matrix), "--builds", str(project.builds),
            "--reports", str(project.reports)]


def test_dry_run_of_the_demo_prints_the_plan_and_builds_nothing(tmp_path: Path) -> None:
    builds, reports = tmp_path / "builds", tmp_path / "reports"
    res = invoke("compare", "demo", "--dry-run", "--builds", str(builds), "--reports",
                 str(reports), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.count("build (host): go build -o slowstart .") == 2
    assert "variant per-sandbox-lock: worktree at d43fc88e35d5, apply as commits " \
           "patches/per-sandbox-lock/" in out
    for variant in ("baseline", "per-sandbox-lock"):
        assert (f"[{variant}] measure:  '{builds}/artifacts/demo/<{variant}>/bin/slowstart' "
                "-n 8 -boot 15ms") in out
    assert "dry run: nothing is fetched, built or run" in out
    assert not builds.exists()
    assert not reports.exists()
    assert not (tmp_path / "builds").exists()


def test_dry_run_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = Workspace(root=REPO_ROOT, matrix=REPO_ROOT / "matrix.yaml", builds=tmp_path / "b",
                   reports=tmp_path / "r")
    assert cli.do_compare(ws, "demo", Switches(dry_run=True, runs=6, rounds=3, warmup=0)) == 0
    out = capsys.readouterr().out
    assert ("6 runs per cell in 3 interleaved rounds (blocks of 2, each after 1 warm-up run), "
            "warmup 0") in out
    assert "go build -o slowstart ." in out
    assert not (tmp_path / "b").exists() and not (tmp_path / "r").exists()


def test_config_error_exit_code(project: Project) -> None:
    project.matrix.write_text(project.matrix.read_text().replace("runs: 4", "runz: 4"))
    res = invoke("compare", "fx", *dirs(project), cwd=project.root)
    assert res.returncode == 10
    assert "patchbench: config error: " in res.stderr
    assert "runz: unknown key (did you mean 'runs'?)" in res.stderr
    assert "Traceback" not in res.stderr
    assert not project.builds.exists()


def test_source_error_exit_code(project: Project) -> None:
    project.upstream.move_tag("v1", project.upstream.b)
    res = invoke("fetch", TARGET, *dirs(project), cwd=project.root)
    assert res.returncode == 11
    assert f"patchbench: source error: {TARGET}: ref 'v1' now points at " in res.stderr
    assert "Traceback" not in res.stderr
    assert not project.cache.exists()


def test_patch_error_exit_code(project: Project) -> None:
    project.write(candidates={"conflict": ["conflict"]})
    res = invoke("patch", "--check", *dirs(project), cwd=project.root)
    assert res.returncode == 12
    assert "patchbench: patch error: 1 series did not apply" in res.stderr
    assert "0002-conflict.patch: main.go: hunk #2" in res.stderr
    assert_nothing_left(project.builds, project.cache)


def test_build_error_exit_code(project: Project) -> None:
    project.write(candidates={"broken": ["broken"]})
    res = invoke("build", "--patch", "broken", *dirs(project), cwd=project.root)
    assert res.returncode == 14
    assert f"patchbench: build error: build {TARGET}/broken: exited with code 1" in res.stderr
    assert "undefinedGreetingForTests" in res.stderr
    assert_nothing_left(project.builds, project.cache)


SLEEP = "31.4159"  # a duration no other process uses, to find the build's sleep


def test_an_interrupted_build_is_not_cached(project: Project, tmp_path: Path) -> None:
    # the build sees its worktree and caches only (util/sandbox.py): the switch and the sign that
    # it started are files in the Go build cache it writes, which this test sees too
    loaded = project.write(commands=[["go", "build", "-o", "hello", "."]])
    gocache = Path(build.toolchains.cache_env(loaded.target(TARGET), {}, project.builds)
                   ["GOCACHE"])
    slow, started = gocache / f"slow-{tmp_path.name}", gocache / f"started-{tmp_path.name}"
    project.write(commands=[
        ["sh", "-c", f'if [ -e "$GOCACHE/{slow.name}" ]; then touch "$GOCACHE/{started.name}"; '
         f"sleep {SLEEP}; fi"],
        ["go", "build", "-o", "hello", "."],
    ])
    gocache.mkdir(parents=True, exist_ok=True)
    slow.touch()
    proc = subprocess.Popen(invoke_argv("build", "--target", TARGET, *dirs(project)),
                            cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the build never reached its slow step"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    deadline = time.monotonic() + 10
    while processes_with(f"sleep {SLEEP}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(f"sleep {SLEEP}") == []
    # nothing was stamped or left half-built
    artifacts = project.builds / "artifacts" / TARGET
    assert not artifacts.exists() or list(artifacts.iterdir()) == []
    assert_nothing_left(project.builds, project.cache)
    # the next build builds it afresh
    slow.unlink()
    started.unlink()
    (built,) = support.build(project.load(), project.options(), TARGET,
                                       [Variant("baseline", ())], [])
    assert not built.cached
    assert (built.path / build.STAMP).is_file()
    assert_nothing_left(project.builds, project.cache)


def test_two_invocations_at_once_on_one_cache(project: Project, tmp_path: Path) -> None:
    # a slow first step makes the two builds overlap
    project.write(commands=[["sleep", "1"], ["go", "build", "-o", "hello", "."]])
    procs = [subprocess.Popen(invoke_argv("build", "--patch", "greet", *dirs(project)),
                              cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    stderr = "".join(err for _, err in outs)
    assert stderr.count(f"patchbench: {TARGET}: fetched ") == 1
    assert stderr.count(f"patchbench: built {TARGET}/baseline") == 1
    assert stderr.count(f"patchbench: built {TARGET}/greet") == 1
    stdout = "".join(out for out, _ in outs)
    assert stdout.count(" cached ") == 2  # the other process's baseline and greet
    # a consistent cache: one stamped directory per variant, one pinned commit
    artifacts = sorted((project.builds / "artifacts" / TARGET).iterdir())
    assert len(artifacts) == 2
    assert all((d / build.STAMP).is_file() for d in artifacts)
    pins = git(project.cache, "for-each-ref", "--format=%(refname)", "refs/patchbench/pinned/")
    assert pins == f"refs/patchbench/pinned/{project.upstream.a}"
    assert_nothing_left(project.builds, project.cache)
