"""The planted-effect check: the speedup a known delay implies, whether a comparison's CI covers
it, and reading the delay from a build's ``-delay-only`` output (a fake binary here)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from patchbench.analysis import paired, planted
from patchbench.errors import CommandError


def test_expected_speedup_of_a_delay() -> None:
    assert planted.expected_speedup([0.125], 0.005) == pytest.approx(0.125 / 0.130)
    # the geometric mean of the per-round medians is the reference
    assert planted.expected_speedup([0.1, 0.4], 0.01) == pytest.approx(0.2 / 0.21)
    with pytest.raises(ValueError):
        planted.expected_speedup([], 0.005)
    with pytest.raises(ValueError):
        planted.expected_speedup([0.1, 0.0], 0.005)


def simulated(delay: float, seed: int) -> tuple[paired.PairedVerdict, list[float]]:
    rng = np.random.default_rng(seed)
    R, n = 10, 4
    base = 0.126 * np.exp(rng.normal(0, 0.01, (R, n)))
    cand = 0.126 * np.exp(rng.normal(0, 0.01, (R, n))) + delay
    ids = [r for r in range(1, R + 1) for _ in range(n)]
    p = paired.paired_verdict(list(base.ravel()), ids, list(cand.ravel()), ids, alpha=0.05,
                              min_effect=0.02)
    return p, [float(np.median(row)) for row in base]


def test_a_comparison_that_finds_the_planted_delay_passes() -> None:
    p, medians = simulated(0.005, seed=1)
    res = planted.check(p, medians, [0.00502, 0.00510, 0.00505])
    assert res.delay == pytest.approx(0.00505)
    assert res.expected_speedup == pytest.approx(planted.expected_speedup(medians, 0.00505))
    assert (res.verdict, res.right_sign, res.covered, res.ok) == ("slower", True, True, True)
    assert res.as_dict()["ok"] is True


def test_a_ci_that_misses_the_measured_delay_fails() -> None:
    p, medians = simulated(0.005, seed=2)
    # a delay twice as long as the one the runs contain is not covered
    res = planted.check(p, medians, [0.010])
    assert res.right_sign and not res.covered and not res.ok
    # and a comparison of two equal builds does not find a planted delay
    p0, medians0 = simulated(0.0, seed=3)
    res0 = planted.check(p0, medians0, [0.005])
    assert not res0.right_sign and not res0.ok
    with pytest.raises(ValueError):
        planted.check(p, medians, [])


def fake_binary(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "slowstart"
    exe.write_text(f"#!{sys.executable}\nimport sys\nassert sys.argv[1:] == ['-delay-only']\n"
                   f"{body}\n")
    exe.chmod(0o755)
    return exe


def test_measure_delay_reads_the_builds_json(tmp_path: Path) -> None:
    exe = fake_binary(tmp_path, 'print(\'{"delay_seconds": 0.005123456}\')')
    delays = planted.measure_delay(exe, runs=3)
    assert delays == [0.005123456] * 3
    assert not math.isnan(sum(delays))


def test_measure_delay_on_a_build_without_the_flag_is_one_error(tmp_path: Path) -> None:
    exe = fake_binary(tmp_path, "print('booted')")
    with pytest.raises(CommandError, match="printed no delay_seconds"):
        planted.measure_delay(exe, runs=1)


def test_the_band_absorbs_the_models_own_error_and_nothing_more() -> None:
    # a precise comparison (CI +-0.05 %) of a run that grew by 5.25 ms for a measured 5.16 ms
    # delay: outside the point estimate, inside the 5 % band
    class Precise:
        def __init__(self, growth: float) -> None:
            self.speedup = 0.1231 / (0.1231 + growth)
            self.ci_low, self.ci_high = self.speedup * 0.9995, self.speedup * 1.0005
            self.verdict = "slower"

    medians = [0.1231] * 8
    near = planted.check(Precise(0.00525), medians, [0.00516])
    assert not (near.ci_low or 0) <= near.expected_speedup <= (near.ci_high or 0)
    assert near.covered and near.ok
    assert near.band[0] < near.expected_speedup < near.band[1]
    # a growth 10 % off the delay is a miss, and so is anything with no tolerance at all
    assert not planted.check(Precise(0.00568), medians, [0.00516]).covered
    assert not planted.check(Precise(0.00525), medians, [0.00516], tolerance=0.0).covered
    with pytest.raises(ValueError):
        planted.check(Precise(0.005), medians, [0.005], tolerance=1.0)
