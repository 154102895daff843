"""What ``track`` prints (patchbench/cli/track_cmd.py): each change with its series (a scan's
value), so that two lines of one scenario are told apart, and each culprit of the run's
regressions once."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchbench.cli import track_cmd
from patchbench.track import tracking, walk
from patchbench.track.database import ChangeRow, Track
from patchbench.util.workspace import Workspace

BEFORE, AFTER = "a" * 40, "b" * 40


def _change(series: str, ratio: float, cid: int) -> ChangeRow:
    return ChangeRow(scenario="run", series=series, metric="wall", before_sha=BEFORE,
                     after_sha=AFTER, direction="regression", detect_p=1e-6, magnitude=ratio,
                     status="confirmed", found_at="2026-12-05T00:00:00Z", run_id=1,
                     ab={"ratio": ratio, "ci": [ratio * 0.9, ratio * 1.1], "p": 1e-4,
                         "verdict": "slower"},
                     culprit=AFTER, culprit_subject="env: quadratic again", id=cid)


def test_changes_are_printed_with_their_series_and_culprits_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    changes = [_change("envs=0", 1.2, 1), _change("envs=20000", 13.4, 2)]
    tr = Track(1, "env", "runc", "https://example.invalid/runc.git", "main", "c" * 40, "now")

    def track(*args: object, **kw: object) -> tracking.Outcome:
        return tracking.Outcome(tr, tmp_path, walk.Walked(), new=changes, changes=changes)

    monkeypatch.setattr(track_cmd, "load_project", lambda ws: None)
    monkeypatch.setattr(tracking, "track", track)
    ws = Workspace(root=tmp_path, matrix=tmp_path / "matrix.yaml", builds=tmp_path / "b",
                   reports=tmp_path / "r")
    code = track_cmd.do_track(ws, "env", range_=None, every=1, db=None, branch=None, only=(),
                              runs=None, rounds=None, seed=None, budget=4)
    out = capsys.readouterr().out
    assert code == tracking.REGRESSION_EXIT_CODE
    assert "  run [envs=0] wall time regression between" in out and "1.200x" in out
    assert "  run [envs=20000] wall time regression between" in out and "13.400x" in out
    (last,) = [line for line in out.splitlines() if line.startswith("regression confirmed")]
    assert last.count(AFTER[:12]) == 1
