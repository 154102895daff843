"""Opt-in: track on runc's real history, around a known change. runc's merge of #4654 brought
d92dd2261 ("performance improvement: setup signal notify in a new go routine"): `runc run` got
faster, and the same change opened the race that lost SIGCHLD (#5208, fixed by 404181e4c).
Every first-parent commit from six before that merge to six after it is tracked with the
project's runc-signal:run scenario against the pinned runc; the speed-up must be found,
confirmed by its A/B and bisected into the merged branch, to d92dd2261 itself.

(Not #4448, runc's overlayfs speed-up of October 2024: the commits before it exec a memfd copy
of runc, and on this machine 1-2 % of those starts fail with "fork/exec /proc/self/fd/7:
permission denied", so track records them as failing and has no series before the change.)

    PATCHBENCH_TEST_RUNC_GIT=/path/to/runc.git python3 -m pytest -n 0 \\
        tests/integration/test_track_upstream.py

As root (runc runs containers), with a static busybox, Go and the module proxy (runc's builds
fetch its modules). A long test: 14 builds and measurements, two A/Bs, a bisect."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from patchbench.util.workspace import Workspace
from tests.integration.test_upstream_optin import GO_NETWORK_ENV, has_static_busybox
from tests.support import REPO_ROOT

pytestmark = pytest.mark.integration

RUNC_GIT = os.environ.get("PATCHBENCH_TEST_RUNC_GIT", "")
MERGE = "701516b57"  # merge #4654 into opencontainers/runc:main
CHANGE = "d92dd2261"  # performance improvement: setup signal notify in a new go routine


@pytest.fixture
def online_go(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GO_NETWORK_ENV.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)


def _git(*args: str) -> str:
    return subprocess.run(["git", "--git-dir", RUNC_GIT, *args], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.root
@pytest.mark.skipif(not RUNC_GIT, reason="set PATCHBENCH_TEST_RUNC_GIT to a runc git directory")
@pytest.mark.skipif(os.geteuid() != 0, reason="runc runs containers as root")
@pytest.mark.skipif(not has_static_busybox(), reason="needs a static busybox on PATH")
def test_track_finds_runc_signal_setup_speed_up(tmp_path: Path, online_go: None) -> None:
    from patchbench.cli import main

    merge, change = _git("rev-parse", MERGE), _git("rev-parse", CHANGE)
    main_chain = _git("rev-list", "--first-parent", "main").split()
    at = main_chain.index(merge)
    first, last = main_chain[at + 6], main_chain[max(at - 6, 0)]  # rev-list: newest first
    ws = Workspace(root=REPO_ROOT, matrix=REPO_ROOT / "matrix.yaml", builds=tmp_path / "builds",
                   reports=tmp_path / "reports", sources={"runc": RUNC_GIT})
    with pytest.raises(SystemExit) as exc:
        main.run(["track", "runc-signal", "--scenario", "run", "--range", f"{first}..{last}",
                  "--runs", "150", "--rounds", "50", "--seed", "5208", "--source",
                  f"runc={RUNC_GIT}", "--builds", str(ws.builds), "--reports", str(ws.reports)],
                 project=str(REPO_ROOT))
    assert exc.value.code in (0, 4)
    data = json.loads((ws.reports / "track" / "runc-signal" / "changes.json").read_text())
    faster = [c for c in data["changes"] if c["metric"] == "wall"
              and c["direction"] == "improvement"]
    assert faster, data
    (found,) = [c for c in faster if c["between"]["after"] == merge]
    assert found["ratio"] < 1.0 and found["ci"][1] < 1.0
    assert found["bisect"]["outcome"] == "found" and found["commit"] == change
