"""benchmarks/bisect_calibration.py: its chain has the truth it claims, its intervals are exact,
a quick run prints the table, and a rule that errs is reported as failing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.support import REPO_ROOT


@pytest.fixture(scope="module")
def calib() -> ModuleType:
    path = REPO_ROOT / "benchmarks" / "bisect_calibration.py"
    spec = importlib.util.spec_from_file_location("bisect_calibration", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bisect_calibration"] = mod
    spec.loader.exec_module(mod)
    return mod


def cell(calib: ModuleType, name: str) -> object:
    return next(c for c in calib.CELLS if c.name == name)


def test_the_chain_changes_at_its_first_bad_commit(calib: ModuleType) -> None:
    sim = calib.Sim(cell(calib, "time-step-cv10"), np.random.default_rng(1), 20)
    assert [sim.truth(i) for i in (0, 19, 20, 63)] == [1.0, 1.0, 1.05, 1.05]
    c, good = sim._times([40, 0], 2)
    assert c.size == good.size == 2 * calib.ROUNDS * 20
    assert float(np.exp(np.log(c).mean() - np.log(good).mean())) == pytest.approx(1.05, abs=0.03)
    assert sim.runs_used == 2 * c.size
    flaky = calib.Sim(cell(calib, "hangs-none-150"), np.random.default_rng(2), None)
    counts = flaky._counts({"good": 0, "bad": 63}, 4)
    assert counts["good"][1] == 4 * calib.HANG_RUNS
    assert 400 < counts["bad"][0] < 800  # 150 in 3000 of 12000 runs: 600 expected


def test_clopper_pearson_intervals(calib: ModuleType) -> None:
    assert calib.clopper_pearson(0, 10)[1] == pytest.approx(0.3085, abs=1e-4)
    lo, hi = calib.clopper_pearson(50, 1000)
    assert (lo, hi) == (pytest.approx(0.0373, abs=1e-4), pytest.approx(0.0654, abs=1e-4))


def test_a_quick_run_prints_the_table(calib: ModuleType, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bisect.md"
    calib.main(["--quick", "--jobs", "1", "--cells", "hangs-step-0-4", "hangs-none-2",
                "--out", str(out)])
    text = out.read_text()
    assert "| hangs 0 -> 4/3000 | spent | 10 |" in text
    assert "| 2/3000 hangs at every commit | schema-1 | 10 |" in text
    assert "**Result: the rule of schema 2" in text and text in capsys.readouterr().out


def test_a_rule_that_errs_is_reported_as_failing(calib: ModuleType) -> None:
    import argparse
    from collections import Counter

    args = argparse.Namespace(argv=[], jobs=1)
    index = [c.name for c in calib.CELLS].index("hangs-step-0-4")

    def judged(wrong: int, rule: str = "spent") -> tuple[str, bool]:
        t = calib.Tally(1000, Counter({"right": 1000 - wrong, "wrong": wrong}), 6000, 1, 0)
        return calib.report({(index, rule): t}, args, 1.0, ((0.0,), (0.0,)))

    text, ok = judged(10)  # 1.0 % [0.48, 1.83]
    assert ok and "| 1.00 [0.48, 1.83] | yes |" in text
    text, ok = judged(45)  # 4.5 %, but its upper bound is above 5 %
    assert not ok and "| 4.50 [3.30, 5.98] | **no** |" in text
    assert judged(100, "schema-1")[1]  # the contrast's misses do not fail the calibration
