"""benchmarks/stats_calibration.py: its simulation has the noise, drift and ratio it claims, and
a tiny run produces the markdown tables."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.support import REPO_ROOT


@pytest.fixture(scope="module")
def calib() -> ModuleType:
    path = REPO_ROOT / "benchmarks" / "stats_calibration.py"
    spec = importlib.util.spec_from_file_location("stats_calibration", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["stats_calibration"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_simulation_has_the_noise_drift_and_ratio_it_claims(calib: ModuleType) -> None:
    rng = np.random.default_rng(1)
    bt, br, ct, cr = calib.simulate(rng, 400, 50, cv=0.20, drift=0.0, ratio=1.10)
    assert br == cr and len(bt) == len(ct) == 400 * 50 and set(br) == set(range(1, 401))
    b = np.asarray(bt)
    assert float(b.std() / b.mean()) == pytest.approx(0.20, rel=0.05)
    assert float(np.median(bt) / np.median(ct)) == pytest.approx(1.10, rel=0.01)
    # with drift and no noise, every block is one constant: the drift factor of that block
    bt, br, ct, _ = calib.simulate(rng, 2000, 3, cv=0.0, drift=0.05, ratio=1.0)
    blocks = np.log(np.asarray(bt).reshape(2000, 3) / calib.BASE_MEDIAN)
    assert np.allclose(blocks, blocks[:, :1])
    assert float(blocks[:, 0].std()) == pytest.approx(0.05, rel=0.06)
    other = np.log(np.asarray(ct).reshape(2000, 3)[:, 0] / calib.BASE_MEDIAN)
    assert abs(float(np.corrcoef(blocks[:, 0], other)[0, 1])) < 0.1  # each block its own
    assert not math.isnan(sum(bt))


def test_a_tiny_run_prints_both_tables(calib: ModuleType, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "calib.md"
    assert calib.main(["--replicates", "3", "--old-replicates", "1", "--old-resamples", "50",
                       "--old-ratios", "1.0", "--out", str(out)]) == 0
    text = out.read_text()
    assert text == capsys.readouterr().out
    assert "## New rule" in text and "## Old rule" in text
    rows = [line for line in text.splitlines() if line.startswith("| demo | 10x4 |")]
    assert len(rows) == 2 * len(calib.CVS) * len(calib.DRIFTS)
    assert str(tmp_path) not in text  # the command line shown leaves out absolute paths
