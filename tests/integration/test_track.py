"""track on a fixture history of 30 commits (tests/track_history.py: a 10 ms slowdown planted at
commit 12, a speed-up to 2 ms at commit 22), with the real git, go and hyperfine: every second
commit measured interleaved with the reference (v1.0.0), both changes found on the wall-time
series, confirmed by an A/B and bisected to their commits (exit 4: a regression confirmed); a
second run measures nothing again; an interrupted run (SIGTERM) resumes without measuring a
commit twice; the dashboard renders in headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchbench.track import database as track_store
from patchbench.util.workspace import Workspace
from tests import support
from tests.track_history import SLOWDOWN_AT, SPEEDUP_AT, TrackHistory, make_track_history

pytestmark = pytest.mark.integration
# opt-in: copy the screenshot there to look at it (read at import: the session clears
# PATCHBENCH_* variables)
KEEP = os.environ.get("PATCHBENCH_TEST_KEEP_SCREENSHOTS", "")

# a start of about 3 ms against 13 ms (the slowdown) and 5 ms (the speed-up): steps large
# beside a loaded machine's noise (a point's ratio moved by 20 % at a load average of 12), so
# 15 points show both; the A/B and the bisect measure again at 2x and 4x when undecided
SCENARIO = {"name": "start", "command": ["{slowstart}", "-n", "2", "-boot", "1ms"], "warmup": 1,
            "runs": 24, "rounds": 6, "timeout": 5}


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> TrackHistory:
    return make_track_history(tmp_path_factory.mktemp("track-history") / "slowstart")


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One builds folder for the module: a commit built by one test is found by the next."""
    return tmp_path_factory.mktemp("track-builds")


def _project(root: Path, history: TrackHistory, go_version: str) -> None:
    # a comparison needs a candidate; track measures its baseline (no series) at each commit
    shutil.copytree(support.REPO_ROOT / "patches" / "demo-plus-5ms",
                    root / "patches" / "demo-plus-5ms")
    support.write_matrix(root, {
        "version": 1,
        "targets": {"demo": {
            "description": "the track fixture history", "url": str(history.path),
            "ref": "v1.0.0", "commit": history.shas[0],
            "toolchain": {"kind": "go", "version": go_version},
            "build": {"commands": [["go", "build", "-o", "slowstart", "."]],
                      "artifacts": ["slowstart"], "timeout": 120}}},
        "comparisons": {"demo-track": {"target": "demo",
                                       "candidates": {"plus-5ms": ["demo-plus-5ms"]},
                                       "scenarios": [SCENARIO]}},
    })


def _argv(ws: Workspace, *more: str) -> list[str]:
    return ["track", "demo-track", "--project", str(ws.root), "--builds", str(ws.builds),
            "--reports", str(ws.reports), *more]


@dataclass
class Tracked:
    ws: Workspace
    code: int
    out: str
    seconds: float
    changes: dict[str, Any]


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory, history: TrackHistory, builds: Path,
            go_version: str) -> Tracked:
    from patchbench.cli import main

    root = tmp_path_factory.mktemp("track-project")
    _project(root, history, go_version)
    ws = Workspace(root=root, matrix=root / "matrix.yaml", builds=builds,
                   reports=root / "reports")
    started = time.monotonic()
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit) as exc:
        main.run(_argv(ws, "--range", f"v1.0.0..{history.shas[-1]}", "--every", "2",
                       "--seed", "11"))
    seconds = time.monotonic() - started
    out = buf.getvalue()
    print(out)
    print(f"track of the fixture history: {seconds:.1f} s, exit {exc.value.code}")
    data = json.loads((ws.reports / "track" / "demo-track" / "changes.json").read_text())
    return Tracked(ws, int(exc.value.code or 0), out, seconds, data)


def test_track_finds_confirms_and_names_both_changes(tracked: Tracked,
                                                     history: TrackHistory) -> None:
    assert tracked.code == 4, tracked.out  # a regression was confirmed
    changes = [c for c in tracked.changes["changes"] if c["metric"] == "wall"]
    by_direction = {c["direction"]: c for c in changes}
    assert set(by_direction) == {"regression", "improvement"}, tracked.changes
    slow, fast = by_direction["regression"], by_direction["improvement"]
    assert slow["commit"] == history.slowdown and "slowdown" in slow["subject"]
    assert fast["commit"] == history.speedup and "speed-up" in fast["subject"]
    assert slow["ratio"] > 1.5 and slow["ci"][0] > 1.0  # after / before
    assert fast["ratio"] < 0.8 and fast["ci"][1] < 1.0
    folder = tracked.ws.reports / "track" / "demo-track"
    for c in (slow, fast):
        # every second commit was measured: the points either side are 2 apart, so each change
        # was bisected between them, by bisect itself (its report folder named)
        before, after = c["between"]["before"], c["between"]["after"]
        assert history.shas.index(after) - history.shas.index(before) == 2
        assert c["bisect"]["outcome"] == "found" and c["bisect"]["first_bad"] == c["commit"]
        bisect_json = tracked.ws.reports / c["bisect"]["report"] / "bisect.json"
        assert json.loads(bisect_json.read_text())["first_bad"]["sha"] == c["commit"]
        ab = json.loads((folder / c["ab"]["file"]).read_text())
        assert ab["before"] == before and ab["after"] == after and ab["measurements"]
    assert tracked.changes["reference"] == history.shas[0]
    # v1.0.0..main every second and the last, the reference not measured against itself
    assert tracked.changes["commits_measured"] == 15
    assert {SLOWDOWN_AT, SPEEDUP_AT} <= {history.shas.index(c["commit"]) for c in changes}
    md = (folder / "summary.md").read_text()
    assert history.slowdown[:12] in md and history.speedup[:12] in md
    page = (folder / "index.html").read_text()
    assert page.count('<img class="chart"') >= 1 and '<table class="changes">' in page
    for text in (md, page, json.dumps(tracked.changes)):
        assert str(tracked.ws.builds) not in text and str(tracked.ws.root) not in text


def test_a_second_run_measures_nothing_again(tracked: Tracked, history: TrackHistory,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from patchbench.cli import main

    with pytest.raises(SystemExit) as exc:
        main.run(_argv(tracked.ws, "--range", f"v1.0.0..{history.shas[-1]}", "--every", "2"))
    out = capsys.readouterr().out
    assert exc.value.code == 0, out  # nothing new: the changes were confirmed by the first run
    assert "0 point(s) measured now, 15 already in the database" in out
    db = track_store.open_store(None, tracked.ws.reports / "track" / "track.db")
    try:
        tr = db.find_track("demo-track")
        assert tr is not None
        assert [s for _, s in db.run_statuses(tr)] == ["finished", "finished"]
        assert len(db.changes(tr)) == len(tracked.changes["changes"]) + len(
            tracked.changes["not_confirmed"])
    finally:
        db.close()


def test_an_interrupted_track_resumes_without_measuring_a_commit_twice(
        tmp_path: Path, history: TrackHistory, builds: Path, go_version: str) -> None:
    """A run stopped by SIGTERM after its second point (as a cancelled CI job is), then run
    again: the second run measures only the commits the first did not, each once."""
    root = tmp_path / "project"
    _project(root, history, go_version)
    ws = Workspace(root=root, matrix=root / "matrix.yaml", builds=builds,
                   reports=tmp_path / "reports")
    db_file = ws.reports / "track" / "track.db"
    last = history.shas[8]  # 8 commits after the reference
    argv = [sys.executable, "-m", "patchbench", *_argv(ws, "--range", f"v1.0.0..{last}",
                                                       "--seed", "5", "--scenario", "start")]
    env = {**os.environ, "PYTHONPATH": str(support.REPO_ROOT)}
    proc = subprocess.Popen(argv, cwd=support.REPO_ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    try:
        while True:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the first run measured no two points in 300 s"
            if db_file.exists():
                db = track_store.open_store(None, db_file)
                try:
                    tr = db.find_track("demo-track")
                    if tr is not None and db.point_count(tr) >= 2:
                        break
                finally:
                    db.close()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    res = subprocess.run(argv, cwd=support.REPO_ROOT, env=env, capture_output=True, text=True,
                         timeout=900, check=False)
    assert res.returncode == 0, res.stderr
    db = track_store.open_store(None, db_file)
    try:
        tr = db.find_track("demo-track")
        assert tr is not None
        points = db.points_by_run(tr)
        runs = db.run_statuses(tr)
    finally:
        db.close()
    shas = [sha for _, _, sha in points]
    assert sorted(shas) == sorted(history.shas[1:9])  # each commit once
    first, second = runs[0][0], runs[1][0]
    assert [s for _, s in runs] == ["interrupted", "finished"]
    done_first = [sha for run, _, sha in points if run == first]
    done_second = [sha for run, _, sha in points if run == second]
    assert len(done_first) >= 2 and len(done_second) == 8 - len(done_first)
    assert f"{len(done_second)} point(s) measured now, {len(done_first)} already" in res.stdout


def test_the_dashboard_renders_in_chromium(tracked: Tracked, tmp_path: Path) -> None:
    from tests.browser import Chromium

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed: run `bash .ci/install`")
    page = tracked.ws.reports / "track" / "demo-track" / "index.html"
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace(
        "</body>", '<script>addEventListener("load", () => { for (const i of document.images) '
        "{ i.dataset.naturalWidth = i.naturalWidth; } document.body.dataset.loaded = '1'; });"
        "</script></body>", 1))
    browser = Chromium(chromium, tmp_path / "profile", timeout=120)
    try:
        tab = browser.open(probe.as_uri(), width=1280, height=2000)
        dom = tab.dom()
        tab.close()
        tab = browser.open(page.as_uri(), width=1280, height=2000)
        shot = tab.screenshot(tmp_path / "track.png")
        tab.close()
    finally:
        browser.close()
    assert 'data-loaded="1"' in dom
    assert '<table class="changes">' in dom and '<table class="latest">' in dom
    widths = [int(w) for w in __import__("re").findall(r'data-natural-width="(\d+)"', dom)]
    assert widths and all(w >= 800 for w in widths)  # every chart decoded
    if KEEP:
        shutil.copy(shot, Path(KEEP) / "track-dashboard.png")
    from PIL import Image

    with Image.open(shot) as im:
        rgb = np.asarray(im.convert("RGB")).astype(np.uint32)
    assert rgb.shape[:2] == (2000, 1280)
    colors = np.unique((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2])
    assert len(colors) > 100, "the screenshot is (nearly) uniform: blank"
    red = ((rgb[..., 0] > 180) & (rgb[..., 1] < 80) & (rgb[..., 2] < 80)).sum()
    green = ((rgb[..., 1] > 130) & (rgb[..., 0] < 90) & (rgb[..., 2] < 90)).sum()
    assert red > 50 and green > 50  # the regression's line and the improvement's, drawn


@pytest.mark.parametrize("given", ["v1.0.0", "v1.0.0..", "..main", "--upload-pack=x..main"])
def test_a_malformed_range_is_refused_before_anything_is_fetched(tmp_path: Path,
                                                                 given: str) -> None:
    from tests.faults.scaffold_support import run_cli

    root = tmp_path / "project"
    _project(root, TrackHistory(tmp_path / "nowhere", ["0" * 40]), "1.22.4")
    ws = Workspace(root=root, matrix=root / "matrix.yaml", builds=tmp_path / "builds",
                   reports=tmp_path / "reports")
    code, out, err = run_cli(_argv(ws, "--range", given))
    assert code == 10, out + err  # a usage error, not the source that cannot be fetched
    assert "fetching" not in err and not (ws.builds / "sources").exists()
    assert not (ws.reports / "track").exists()  # no database, no run recorded as failed


def test_a_commit_whose_measurement_was_cut_short_is_measured_by_the_next_run(
        tmp_path: Path, history: TrackHistory, builds: Path, go_version: str) -> None:
    """Following the branch (no --range): a run stopped while it measured a commit left that
    commit recorded without its point; the next run measures it, not only the commits after it.
    """
    from tests.faults.scaffold_support import run_cli

    root = tmp_path / "project"
    _project(root, history, go_version)
    ws = Workspace(root=root, matrix=root / "matrix.yaml", builds=builds,
                   reports=tmp_path / "reports")
    done, cut, head = history.shas[26], history.shas[28], history.shas[-1]
    db = track_store.open_store(None, ws.reports / "track" / "track.db")
    try:  # what the earlier runs left: a point at 26; 28 recorded, its measurement cut short
        tr = db.track("demo-track", target="demo", url=str(history.path), branch="main",
                      reference=history.shas[0])
        run = db.start_run(tr, 1, "an earlier run")
        for sha, depth in ((done, 27), (cut, 29)):
            db.add_commit(tr, sha, "earlier", "2026-10-02T00:00:00Z", depth)
        assert db.add_point(tr, run, scenario="start", sha=done, kind="command", factor=1,
                            seed=1, result={}, warnings=[], values=[track_store.Value(
                                series="", metric="wall", verdict="same", unit="s",
                                ratio=1.0)]) is not None
        db.finish_run(run, "interrupted")
    finally:
        db.close()
    code, out, err = run_cli(_argv(ws, "--scenario", "start", "--runs", "6", "--rounds", "3",
                                   "--seed", "3"))
    assert code in (0, 4), out + err
    db = track_store.open_store(None, ws.reports / "track" / "track.db")
    try:
        tr = db.find_track("demo-track")
        assert tr is not None
        measured = {sha for _, sha in db.measured(tr)}
    finally:
        db.close()
    assert measured == {done, history.shas[27], cut, head}, err


def test_a_commit_whose_runs_fail_is_recorded_and_the_track_goes_on(
        tmp_path: Path, history: TrackHistory, builds: Path, go_version: str) -> None:
    """A commit of the branch whose program fails its runs (upstream runc failed 1-2 % of its
    starts for a while on this machine) is recorded with the error, listed as failing, and
    the track measures the commits after it; a second run does not measure it again."""
    from tests.faults.scaffold_support import run_cli

    repo = tmp_path / "upstream"
    support.git(tmp_path, "clone", "-q", str(history.path), str(repo))
    main_go = repo / "main.go"
    good = main_go.read_text()
    main_go.write_text(good.replace("func main() {\n", "func main() {\n\tos.Exit(3)\n", 1))
    broken = support._commit_all(repo, "slowstart: exit at once (a broken commit)").strip()
    main_go.write_text(good)
    fixed = support._commit_all(repo, "slowstart: start again").strip()
    root = tmp_path / "project"
    _project(root, TrackHistory(repo, [*history.shas, broken, fixed]), go_version)
    ws = Workspace(root=root, matrix=root / "matrix.yaml", builds=builds,
                   reports=tmp_path / "reports")
    argv = _argv(ws, "--range", f"{history.shas[-1]}..{fixed}", "--runs", "6", "--rounds", "3",
                 "--seed", "5")
    code, out, err = run_cli(argv)
    assert code in (0, 4), out + err
    assert f"start at {broken[:12]}: its runs failed" in err, err
    assert "1 commit(s) failing" in out, out
    data = json.loads((ws.reports / "track" / "demo-track" / "changes.json").read_text())
    [failed] = data["failing"]
    assert failed["commit"] == broken and "runs failed" in failed["why"]
    assert "exit codes [3]" in failed["why"]
    db = track_store.open_store(None, ws.reports / "track" / "track.db")
    try:
        tr = db.find_track("demo-track")
        assert tr is not None
        assert {sha for _, sha in db.measured(tr)} == {history.shas[-1], fixed}
    finally:
        db.close()
    summary = (ws.reports / "track" / "demo-track" / "summary.md").read_text()
    assert "## Failing commits" in summary and broken[:12] in summary
    code, out, err = run_cli(argv)  # again: nothing measured, the broken commit not retried
    assert code in (0, 4), out + err
    assert "0 point(s) measured now" in out and f"start at {broken[:12]}: its" not in err, out


def test_a_confirmation_whose_runs_failed_is_tried_again_by_the_next_run(
        tmp_path: Path, history: TrackHistory, builds: Path, go_version: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs that fail in the A/B that confirms a change (both commits ran in the walk: a flake)
    leave the change unjudged, not stored, and the track writes its outputs; the next run
    confirms it."""
    from patchbench.errors import RunsFailed
    from patchbench.track import confirm
    from tests.faults.scaffold_support import run_cli

    root = tmp_path / "project"
    _project(root, history, go_version)
    ws = Workspace(root=root, matrix=root / "matrix.yaml", builds=builds,
                   reports=tmp_path / "reports")
    argv = _argv(ws, "--range", f"{history.shas[2]}..{history.shas[20]}", "--every", "2",
                 "--seed", "7")
    calls: list[str] = []

    def failing(ss: Any, cands: list[Any], budget: int) -> Any:
        calls.append(cands[0].after.sha)
        raise RunsFailed("start round 1/6: 1 of 4 runs failed (exit codes [1])",
                         variant=cands[0].after.sha[:12])

    monkeypatch.setattr(confirm, "ab", failing)
    code, out, err = run_cli(argv)
    assert code == 0, out + err
    assert calls == [history.slowdown], (calls, err)
    assert "runs failed" in err and "the next run tries again" in err, err
    folder = ws.reports / "track" / "demo-track"
    data = json.loads((folder / "changes.json").read_text())
    assert data["changes"] == [] and data["not_confirmed"] == [] and data["failing"] == []
    monkeypatch.undo()
    code, out, err = run_cli(argv)
    assert code == 4, out + err  # the slowdown, confirmed now
    data = json.loads((folder / "changes.json").read_text())
    assert [c["commit"] for c in data["changes"] if c["metric"] == "wall"] == [history.slowdown]
