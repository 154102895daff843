"""The gate on the real demo: an unchanged candidate passes (shown slower by less than the margin,
rounds added until it is), a planted 5 ms (about 4 % of a 130 ms start) fails."""

from __future__ import annotations

import shutil
from pathlib import Path

from patchbench import gate, pipeline, results
from patchbench.util.workspace import Switches, Workspace
from tests import support

ROOT = Path(__file__).resolve().parents[2]


def project(tmp_path: Path) -> Workspace:
    root = tmp_path / "project"
    for part in ("patches", "overlays", "demo"):
        shutil.copytree(ROOT / part, root / part)
    shutil.copy(ROOT / "matrix.yaml", root / "matrix.yaml")
    return Workspace(root=root, matrix=root / "matrix.yaml", builds=tmp_path / "builds",
                     reports=tmp_path / "reports")


def test_an_unchanged_candidate_passes_the_gate_and_a_planted_delay_fails_it(
        tmp_path: Path) -> None:
    ws = project(tmp_path)
    same, run_dir = support.compare(pipeline.load(ws), ws, "demo-unchanged",
                                    Switches(gate=True, seed=5, max_rounds=60))
    res = results.parse(same, "test")
    assert gate.failures(res) == [], same["stopping"]
    (stop,) = same["stopping"]
    assert stop["reason"] == "decided" and stop["margin"] is None  # each metric's min_effect
    assert stop["rule"].startswith("looks planned") and "pass" in stop["rule"]
    assert run_dir is not None
    md = (run_dir / "report.md").read_text()
    assert "shown slower by less than its margin" in md

    slow, _ = support.compare(pipeline.load(ws), ws, "demo-planted",
                              Switches(gate=True, seed=5, max_rounds=60))
    (why, *_) = gate.failures(results.parse(slow, "test"))
    assert "slower than the gate's margin" in why, why
