"""track's change points (patchbench/track/detect.py): a step in a series of ratios is found at
its place, with its direction and size; a series without a change, or with a burst of outliers,
flags none; counts of hangs likewise; the gate's t-test agrees with scipy's Welch test; the
series chart draws every point and a line per change."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from patchbench.track import detect, outputs
from patchbench.track.database import ChangeRow, CommitRow, SeriesPoint, Value


def test_a_step_is_found_at_its_place_with_its_direction() -> None:
    rng = np.random.default_rng(1)
    x = np.exp(rng.normal(0, 0.02, 120))
    x[70:] *= 1.10
    (cp,) = detect.ratio_changes(x.tolist(), min_magnitude=0.02)
    assert abs(cp.index - 70) <= 1 and cp.up
    assert cp.magnitude == pytest.approx(1.10, abs=0.02) and cp.p_value < 1e-6


def test_two_steps_either_way_are_both_found() -> None:
    rng = np.random.default_rng(2)
    x = np.exp(rng.normal(0, 0.03, 15))
    x[5:10] *= 3.0
    x[10:] *= 1.6
    cps = detect.ratio_changes(x.tolist())
    assert [c.index for c in cps] == [5, 10]
    assert [c.up for c in cps] == [True, False]


def test_no_change_and_a_burst_of_outliers_flag_nothing() -> None:
    rng = np.random.default_rng(3)
    flat = np.exp(rng.normal(0, 0.02, 365))
    assert detect.ratio_changes(flat.tolist()) == []
    burst = flat.copy()
    burst[200:203] *= [1.3, 0.8, 1.4]  # three noisy nights, not a change
    assert detect.ratio_changes(burst.tolist()) == []


def test_a_series_too_short_for_two_segments_has_no_change() -> None:
    assert detect.ratio_changes([1.0, 2.0, 2.0, 2.0, 1.0]) == []
    with pytest.raises(ValueError):
        detect.ratio_changes([1.0, -1.0, 1.0, 1.0, 1.0, 1.0])


def test_welch_agrees_with_scipy() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, 7), rng.normal(1, 3, 12)
    ours = detect.t_test(a, b)
    theirs = scipy_stats.ttest_ind(a, b, equal_var=False).pvalue
    assert ours == pytest.approx(theirs, rel=1e-6)


def test_hang_counts_step_is_found_and_a_constant_rate_is_not() -> None:
    rng = np.random.default_rng(5)
    events = rng.binomial(200, 0.002, 100)
    assert detect.count_changes(events.tolist(), [200] * 100) == []
    events[60:] = rng.binomial(200, 0.05, 40)
    (cp,) = detect.count_changes(events.tolist(), [200] * 100)
    assert abs(cp.index - 60) <= 1 and cp.up and cp.p_value < 1e-6
    assert detect.count_changes([0] * 20, [100] * 20) == []


def _point(i: int, ratio: float) -> SeriesPoint:
    sha = f"{i:040x}"
    return SeriesPoint(i, 1, "start", CommitRow(sha, f"commit {i}", "2026-11-01", i),
                       Value("", "wall", "slower", "s", ratio=ratio, ci_low=ratio * 0.95,
                             ci_high=ratio * 1.05))


def test_the_series_chart_draws_every_point_and_a_line_per_change() -> None:
    pts = [_point(i, 1.0 if i < 6 else 2.0) for i in range(12)]
    ch = ChangeRow(scenario="start", series="", metric="wall", before_sha=pts[5].commit.sha,
                   after_sha=pts[6].commit.sha, direction="regression", detect_p=1e-5,
                   magnitude=2.0, status="confirmed", found_at="2026", run_id=1,
                   culprit=pts[6].commit.sha)
    svg = outputs.series_chart("start: wall time", pts, [ch])
    assert svg is not None
    text = svg.decode()
    assert text.count('class="point"') == 12 and text.count('class="ci"') == 12
    assert outputs.RED in text and pts[6].commit.sha[:8] in text
    assert outputs.series_chart("empty", [], []) is None
    assert math.isfinite(ch.magnitude)
