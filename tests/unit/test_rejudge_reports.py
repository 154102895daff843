"""One live rule: every saved run is read through patchbench.analysis.rejudge, and
benchmarks/rejudge_reports.py lists what it changes in the committed reports."""

from __future__ import annotations

import importlib.util
import sys

from patchbench import results
from patchbench.analysis import paired, rejudge
from patchbench.analysis.paired import Verdict
from patchbench.results import TimedResult
from tests.support import REPO_ROOT, committed_reports


def test_every_committed_comparison_is_judged_by_the_live_rule_when_read() -> None:
    for path in committed_reports("*/*/results.json"):
        old = results.load(path)
        new = rejudge.rejudge(old)
        comps = [c for sc in new.scenarios if isinstance(sc, TimedResult)
                 for c in sc.comparisons]
        assert all(c.method == paired.METHOD for c in comps), path
        assert not rejudge.stale(new)
        assert rejudge.rejudge(new) is new  # a run of the live rule is left as it is
        olds = [c for sc in old.scenarios if isinstance(sc, TimedResult) for c in sc.comparisons]
        for o, n in zip(olds, comps, strict=True):  # the run's own settings are kept
            assert (n.alpha, n.min_effect, n.candidate, n.hangs) == (
                o.alpha, o.min_effect, o.candidate, o.hangs)
            assert (n.metrics is None) == (o.metrics is None)


def test_the_table_marks_every_changed_answer() -> None:
    path = REPO_ROOT / "benchmarks" / "rejudge_reports.py"
    spec = importlib.util.spec_from_file_location("rejudge_reports", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rejudge_reports"] = mod
    spec.loader.exec_module(mod)
    rows = mod.rows(committed_reports("*/*/results.json"))
    assert len(rows) >= 30
    assert {r[8] for r in rows} <= {str(v) for v in Verdict}
    for r in rows:
        assert (r[-1] == "**changed**") == (r[6] != r[8])
