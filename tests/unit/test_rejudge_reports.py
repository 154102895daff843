"""benchmarks/rejudge_reports.py: the committed reports' comparisons beside the rule of schema 5
(the reports themselves keep their verdicts)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from patchbench.analysis.paired import Verdict
from tests.support import REPO_ROOT, committed_reports


def test_every_paired_comparison_gets_a_new_answer_beside_its_old_one(tmp_path: Path) -> None:
    path = REPO_ROOT / "benchmarks" / "rejudge_reports.py"
    spec = importlib.util.spec_from_file_location("rejudge_reports", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rejudge_reports"] = mod
    spec.loader.exec_module(mod)
    # the committed runs only (a local `invoke compare` may have added others under reports/)
    for src in committed_reports("*/*/results.json"):
        dest = tmp_path / src.relative_to(REPO_ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    rows = mod.rows(tmp_path / "reports")
    assert len(rows) >= 30
    assert {r[8] for r in rows} <= {str(v) for v in Verdict}
    assert "no significant difference" not in {r[8] for r in rows}
    for r in rows:  # a split of "no significant difference" is not a difference
        if r[5] == "no significant difference" and r[8] in ("equivalent", "inconclusive"):
            assert r[-1] == ""
        if r[-1]:
            assert r[5] != r[8]
