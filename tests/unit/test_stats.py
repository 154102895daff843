"""Statistics: summaries, the ratio of medians with its bootstrap CI, the verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

from patchbench.analysis import paired, stats


def sample(median: float, n: int, seed: int, sigma: float = 0.05) -> list[float]:
    """Log-normal run times with the given median."""
    rng = np.random.default_rng(seed)
    return list(median * np.exp(rng.normal(0.0, sigma, n)))


def test_summarize() -> None:
    s = stats.summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.median, s.mean, s.min, s.max) == (4, 2.5, 2.5, 1.0, 4.0)
    assert s.stdev == pytest.approx(math.sqrt(5 / 3))
    assert s.cv == pytest.approx(math.sqrt(5 / 3) / 2.5)
    assert s.noisy


def test_summarize_quiet_and_single() -> None:
    s = stats.summarize([0.100, 0.101, 0.099, 0.100])
    assert not s.noisy
    one = stats.summarize([0.5])
    assert (one.n, one.median, one.stdev, one.cv) == (1, 0.5, 0.0, 0.0)


def test_summarize_nothing() -> None:
    with pytest.raises(ValueError):
        stats.summarize([])


def test_identical_distributions_are_no_significant_difference() -> None:
    a = sample(0.1, 40, seed=1)
    c = stats.compare(a, list(a), seed=3)
    assert c.verdict == "no significant difference"
    assert c.speedup == pytest.approx(1.0)
    assert c.ci_low is not None and c.ci_high is not None
    assert c.ci_low <= 1.0 <= c.ci_high
    assert c.p_value is not None and c.p_value > 0.5


@pytest.mark.parametrize("seed", range(5))
def test_two_samples_of_one_distribution_are_no_significant_difference(seed: int) -> None:
    c = stats.compare(sample(0.1, 40, seed=seed), sample(0.1, 40, seed=100 + seed), seed=seed)
    assert c.verdict == "no significant difference"
    assert c.ci_low is not None and c.ci_high is not None


def test_a_clearly_faster_candidate() -> None:
    c = stats.compare(sample(0.12, 30, seed=1), sample(0.06, 30, seed=2), seed=0)
    assert c.verdict == "faster"
    assert c.speedup == pytest.approx(2.0, rel=0.05)
    assert c.ci_low is not None and c.ci_low > 1.0
    assert c.p_value is not None and c.p_value < 0.001


def test_a_clearly_slower_candidate() -> None:
    c = stats.compare(sample(0.06, 30, seed=1), sample(0.09, 30, seed=2), seed=0)
    assert c.verdict == "slower"
    assert c.speedup == pytest.approx(2 / 3, rel=0.05)
    assert c.ci_high is not None and c.ci_high < 1.0


def test_a_significant_but_tiny_effect_is_below_min_effect() -> None:
    base = sample(0.1, 400, seed=1, sigma=0.002)
    cand = sample(0.1 / 1.01, 400, seed=2, sigma=0.002)
    c = stats.compare(base, cand, min_effect=0.02, seed=0)
    assert c.p_value is not None and c.p_value < 1e-6
    assert c.verdict == "no significant difference"
    assert stats.compare(base, cand, min_effect=0.005, seed=0).verdict == "faster"


def test_too_few_samples_give_no_verdict() -> None:
    c = stats.compare([0.2, 0.2], [0.1, 0.1])
    assert (c.p_value, c.ci_low, c.ci_high) == (None, None, None)
    assert c.speedup == pytest.approx(2.0)
    assert c.verdict == "no significant difference"


def test_ci_contains_the_true_ratio() -> None:
    true_ratio = 1.25
    c = stats.compare(sample(0.125, 200, seed=7), sample(0.1, 200, seed=8), seed=1)
    assert c.ci_low is not None and c.ci_high is not None
    assert c.ci_low <= true_ratio <= c.ci_high
    assert c.ci_high - c.ci_low < 0.1


def test_ci_coverage_is_near_its_level() -> None:
    true_ratio = 1.1
    covered = 0
    trials = 40
    for seed in range(trials):
        ci = stats.bootstrap_ratio_ci(sample(0.11, 60, seed=2 * seed),
                                      sample(0.1, 60, seed=2 * seed + 1), seed=seed,
                                      resamples=2000)
        assert ci is not None
        covered += ci[0] <= true_ratio <= ci[1]
    assert covered >= 0.85 * trials


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    a, b = sample(0.1, 30, seed=1), sample(0.09, 30, seed=2)
    assert stats.bootstrap_ratio_ci(a, b, seed=5) == stats.bootstrap_ratio_ci(a, b, seed=5)


def test_as_dict_round_trips() -> None:
    c = stats.compare(sample(0.1, 10, seed=1), sample(0.1, 10, seed=2))
    d = c.as_dict()
    assert set(d) == {"speedup", "ci_low", "ci_high", "p_value", "verdict", "alpha",
                      "min_effect"}
    assert d["verdict"] == c.verdict


def test_slope() -> None:
    assert stats.slope([1, 2, 4], [0.02, 0.04, 0.08]) == pytest.approx(0.02)
    assert math.isnan(stats.slope([2, 2], [0.1, 0.2]))


def test_median_ci_brackets_the_sample_median_and_narrows_with_more_data() -> None:
    rng = np.random.default_rng(7)
    small = [float(x) for x in rng.normal(10.0, 1.0, 30)]
    large = [float(x) for x in rng.normal(10.0, 1.0, 3000)]
    ci_small = stats.median_ci(small, seed=1)
    ci_large = stats.median_ci(large, seed=1)
    assert ci_small is not None and ci_large is not None
    assert ci_small[0] <= float(np.median(small)) <= ci_small[1]
    assert ci_large[0] <= float(np.median(large)) <= ci_large[1]
    assert ci_large[1] - ci_large[0] < ci_small[1] - ci_small[0]
    assert stats.median_ci([1.0, 2.0], seed=1) is None
    assert stats.median_ci(small, seed=3) == stats.median_ci(small, seed=3)


def test_mann_whitney_u_matches_scipy_asymptotic() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(11)
    for _ in range(100):
        a = [round(float(x), 1) for x in rng.normal(0.0, 1.0, int(rng.integers(3, 60)))]
        b = [round(float(x), 1) for x in rng.normal(0.3, 1.0, int(rng.integers(3, 60)))]
        expected = scipy_stats.mannwhitneyu(a, b, method="asymptotic").pvalue
        assert stats.mann_whitney_u(a, b) == pytest.approx(float(expected), abs=1e-9)


def test_holm_adjusted_p_values() -> None:
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([]) == []


@pytest.mark.parametrize("size", [3, 4, 5, 10, 101, 1000])
def test_resampled_medians_are_numpys_medians_of_the_same_draws(size: int) -> None:
    """The rank-partition shortcut gives np.median's values bit for bit, ties and even sizes too."""
    gen = np.random.default_rng(size)
    for a in (gen.lognormal(0, 0.3, size), np.round(gen.lognormal(0, 0.3, size), 1)):
        draws = np.random.default_rng(7).integers(0, size, (500, size))
        expected = np.median(a[draws], axis=1)
        got = stats._resampled_medians(a, np.random.default_rng(7), 500, chunk=500)
        assert np.array_equal(got, expected)


def test_the_resolution_is_the_smallest_gap_between_distinct_times() -> None:
    a, b = np.array([0.004, 0.002, 0.004]), np.array([0.0055, 0.002])
    assert paired.resolution(a, b) == pytest.approx(0.0015)
    assert paired.resolution(np.array([0.003, 0.003]), np.array([0.003])) is None
