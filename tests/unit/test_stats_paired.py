"""The round-paired verdict of schema 3-4: t and F distributions without scipy, the exact Wilcoxon
signed-rank test, the paired comparison itself and the drift check."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from patchbench.analysis import stats

BASE = 0.126


def rounds_of(rng: np.random.Generator, R: int, n: int, *, cv: float = 0.05, drift: float = 0.0,
              ratio: float = 1.0) -> tuple[list[float], list[int], list[float], list[int]]:
    """Log-normal runs in R rounds of n per variant; each block gets its own drift factor."""
    sigma = math.sqrt(math.log1p(cv * cv))
    out = []
    for median in (BASE, BASE / ratio):
        d = rng.normal(0.0, drift, R) if drift else np.zeros(R)
        out.append(list((median * np.exp(d[:, None] + rng.normal(0.0, sigma, (R, n)))).ravel()))
    ids = [r for r in range(1, R + 1) for _ in range(n)]
    return out[0], ids, out[1], list(ids)


# --- distributions --------------------------------------------------------------------------------

def test_betainc_matches_scipy() -> None:
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(1)
    for _ in range(2000):
        a, b = float(rng.uniform(0.05, 300)), float(rng.uniform(0.05, 300))
        x = float(rng.uniform(0, 1))
        assert stats.betainc(a, b, x) == pytest.approx(float(special.betainc(a, b, x)),
                                                       rel=1e-9, abs=1e-14)
    assert stats.betainc(2.0, 3.0, 0.0) == 0.0
    assert stats.betainc(2.0, 3.0, 1.0) == 1.0
    with pytest.raises(ValueError):
        stats.betainc(0.0, 1.0, 0.5)
    with pytest.raises(ValueError):
        stats.betainc(1.0, 1.0, 1.5)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.10])
def test_t_quantiles_match_scipy_for_df_1_to_200(alpha: float) -> None:
    sstats = pytest.importorskip("scipy.stats")
    for df in range(1, 201):
        for p in (1 - alpha / 2, alpha / 2, 1 - alpha):
            assert stats.t_ppf(p, df) == pytest.approx(float(sstats.t.ppf(p, df)), abs=1e-6,
                                                       rel=1e-9)


def test_t_quantiles_match_scipy_for_arbitrary_levels_and_df() -> None:
    sstats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(2)
    for _ in range(500):
        p = float(rng.uniform(1e-6, 1 - 1e-6))
        df = float(rng.choice([rng.integers(1, 1000), rng.uniform(0.3, 50)]))
        assert stats.t_ppf(p, df) == pytest.approx(float(sstats.t.ppf(p, df)), abs=1e-6,
                                                   rel=1e-9)
    assert stats.t_ppf(0.5, 7) == 0.0
    for bad in (0.0, 1.0, -0.1, 1.2):
        with pytest.raises(ValueError):
            stats.t_ppf(bad, 5)
    with pytest.raises(ValueError):
        stats.t_ppf(0.9, 0)


def test_t_cdf_and_sf_match_scipy() -> None:
    sstats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for _ in range(3000):
        df = float(rng.choice([rng.integers(1, 400), rng.uniform(0.5, 30)]))
        t = float(rng.normal() * rng.choice([0.5, 3, 40]))
        assert stats.t_cdf(t, df) == pytest.approx(float(sstats.t.cdf(t, df)), abs=1e-10)
        sf = float(sstats.t.sf(t, df))
        assert stats.t_sf(t, df) == pytest.approx(sf, rel=1e-8, abs=1e-300)
    assert stats.t_sf(math.inf, 3) == 0.0 and stats.t_sf(-math.inf, 3) == 1.0
    assert stats.t_sf(0.0, 3) == pytest.approx(0.5)


def test_f_sf_matches_scipy() -> None:
    sstats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(4)
    for _ in range(2000):
        d1, d2 = int(rng.integers(1, 60)), int(rng.integers(1, 3000))
        f = float(rng.exponential(2.0))
        assert stats.f_sf(f, d1, d2) == pytest.approx(float(sstats.f.sf(f, d1, d2)), abs=1e-10)
    assert stats.f_sf(0.0, 3, 4) == 1.0
    assert stats.f_sf(math.inf, 3, 4) == 0.0


# --- Wilcoxon ------------------------------------------------------------------------------------

def test_wilcoxon_matches_scipy_exact_without_ties() -> None:
    sstats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    for _ in range(200):
        d = rng.normal(0.4, 1.0, int(rng.integers(1, 30)))
        expected = float(sstats.wilcoxon(d, method="exact").pvalue)
        got = stats.wilcoxon_signed_rank(d)
        assert got is not None and got == pytest.approx(expected, abs=1e-12)


def test_wilcoxon_with_ties_and_zeros_is_exact_over_all_sign_patterns() -> None:
    d = [1.0, -1.0, 2.0, 2.0, -3.0, 0.5, 0.5, -0.5, 0.0]
    x = np.array([v for v in d if v != 0])
    ranks, _ = stats._ranks(np.abs(x))
    w = ranks[x > 0].sum()
    sums = np.array([sum(r for r, s in zip(ranks, signs, strict=True) if s)
                     for signs in itertools.product([0, 1], repeat=x.size)])
    expected = min(1.0, 2 * min((sums <= w + 1e-9).mean(), (sums >= w - 1e-9).mean()))
    assert stats.wilcoxon_signed_rank(d) == pytest.approx(expected)
    assert stats.wilcoxon_signed_rank([0.0, 0.0]) is None
    assert stats.wilcoxon_signed_rank([1.0] * 6) == pytest.approx(2 / 64)


def test_wilcoxon_is_right_at_any_number_of_rounds() -> None:
    """Past the exact range the normal approximation (ties and continuity corrected) gives
    scipy's p; at 1,024 rounds and more the exact count of 2^n sign patterns would overflow."""
    sstats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(11)
    for n in (stats.WILCOXON_EXACT_MAX + 20, 1024, 1500, 5000):
        d = np.round(rng.normal(0.02, 1.0, n), 2)  # rounded: ties among |d|, a few zeros
        assert np.count_nonzero(d) > stats.WILCOXON_EXACT_MAX
        expected = float(sstats.wilcoxon(d, method="approx", correction=True).pvalue)
        got = stats.wilcoxon_signed_rank(d)
        assert got is not None and 0.0 < got < 1.0
        assert got == pytest.approx(expected, rel=1e-9)
    # at the boundary the exact and the approximate p agree to a few per cent
    d = rng.normal(0.1, 1.0, stats.WILCOXON_EXACT_MAX)
    exact = stats.wilcoxon_signed_rank(d)
    assert exact is not None
    assert exact == pytest.approx(stats._wilcoxon_normal(
        float(stats._ranks(np.abs(d))[0][d > 0].sum()), d.size, np.ones(d.size)), rel=0.05)


# --- paired comparison ---------------------------------------------------------------------------

def test_paired_rounds_computes_the_t_interval_on_per_round_log_ratios() -> None:
    sstats = pytest.importorskip("scipy.stats")
    base = {1: [1.00, 1.10, 1.30], 2: [1.20, 1.00, 1.05], 3: [0.95, 1.15, 1.00],
            4: [1.40, 1.30, 1.35], 5: [1.02, 1.01, 1.03], 6: [1.10, 1.11, 1.12]}
    cand = {1: [0.90, 0.95], 2: [1.00, 0.90, 0.92, 0.99], 3: [1.00, 0.97, 0.99],
            4: [1.20, 1.25, 1.22], 5: [0.99, 0.94, 1.00], 6: [1.00, 1.02, 1.05]}
    bt = [t for r in base for t in base[r]]
    br = [r for r in base for _ in base[r]]
    ct = [t for r in cand for t in cand[r]]
    cr = [r for r in cand for _ in cand[r]]
    d = np.array([math.log(np.median(base[r]) / np.median(cand[r])) for r in base])
    c = stats.paired_rounds(bt, br, ct, cr, alpha=0.10, min_effect=0.02)
    q = float(sstats.t.ppf(0.95, 5))
    se = d.std(ddof=1) / math.sqrt(6)
    assert c.rounds == 6 and c.round_ids == (1, 2, 3, 4, 5, 6)
    assert c.speedup == pytest.approx(math.exp(d.mean()))
    assert c.ci_low == pytest.approx(math.exp(d.mean() - q * se))
    assert c.ci_high == pytest.approx(math.exp(d.mean() + q * se))
    assert c.p_value == pytest.approx(float(sstats.ttest_1samp(d, 0.0).pvalue), rel=1e-9)
    assert c.round_ratios == pytest.approx([np.median(base[r]) / np.median(cand[r]) for r in base])
    assert c.wilcoxon_p == pytest.approx(float(sstats.wilcoxon(d, method="exact").pvalue))
    assert c.verdict == "faster" and c.p_value < 0.10 and c.ci_low > 1
    assert c.note == "" and not c.withheld


def test_runs_may_come_in_any_order_and_unpaired_rounds_are_left_out() -> None:
    rng = np.random.default_rng(6)
    bt, br, ct, cr = rounds_of(rng, 8, 5, ratio=1.1)
    ref = stats.paired_rounds(bt, br, ct, cr, alpha=0.05, min_effect=0.02)
    perm = rng.permutation(len(bt))
    shuffled = stats.paired_rounds([bt[i] for i in perm], [br[i] for i in perm], ct, cr,
                                   alpha=0.05, min_effect=0.02)
    assert shuffled == ref
    extra = stats.paired_rounds([*bt, 9.0, 9.0], [*br, 99, 99], ct, cr, alpha=0.05,
                                min_effect=0.02)
    assert extra.rounds == 8 and extra.speedup == pytest.approx(ref.speedup)


@pytest.mark.parametrize("ratio,verdict", [(1.25, "faster"), (0.8, "slower")])
def test_clear_effects_get_their_sign(ratio: float, verdict: str) -> None:
    c = stats.paired_rounds(*rounds_of(np.random.default_rng(7), 10, 4, ratio=ratio), alpha=0.05,
                            min_effect=0.02)
    assert c.verdict == verdict
    assert c.speedup == pytest.approx(ratio, rel=0.03)
    assert c.ci_low is not None and c.ci_high is not None
    assert c.ci_low <= ratio <= c.ci_high
    assert c.p_value is not None and c.p_value < 1e-6


def test_a_significant_effect_below_min_effect_is_no_significant_difference() -> None:
    data = rounds_of(np.random.default_rng(8), 20, 20, cv=0.002, ratio=1.01)
    c = stats.paired_rounds(*data, alpha=0.05, min_effect=0.02)
    assert c.p_value is not None and c.p_value < 1e-6
    assert c.verdict == "no significant difference"
    assert stats.paired_rounds(*data, alpha=0.05, min_effect=0.005).verdict == "faster"


def test_fewer_than_min_rounds_withhold_the_verdict_but_give_the_estimate() -> None:
    data = rounds_of(np.random.default_rng(9), 3, 10, ratio=1.5)
    c = stats.paired_rounds(*data, alpha=0.05, min_effect=0.02)
    assert c.verdict == "withheld" and c.withheld
    assert c.rounds == 3 and c.min_rounds == 5
    assert "3 rounds" in c.note and "at least 5 needed" in c.note
    assert c.speedup == pytest.approx(1.5, rel=0.05)
    assert c.ci_low is not None and c.p_value is not None
    assert stats.paired_rounds(*data, alpha=0.05, min_effect=0.02, min_rounds=3).verdict == "faster"


def test_one_round_gives_an_estimate_only() -> None:
    c = stats.paired_rounds([2.0, 2.2, 2.1], [1, 1, 1], [1.0, 1.1, 1.05], [1, 1, 1], alpha=0.05,
                            min_effect=0.02)
    assert c.speedup == pytest.approx(2.0)
    assert (c.ci_low, c.ci_high, c.p_value, c.drift) == (None, None, None, None)
    assert c.verdict == "withheld" and "1 round with runs" in c.note


def test_identical_rounds_are_no_significant_difference() -> None:
    bt, br, _, _ = rounds_of(np.random.default_rng(10), 6, 4)
    c = stats.paired_rounds(bt, br, list(bt), list(br), alpha=0.05, min_effect=0.02)
    assert (c.speedup, c.ci_low, c.ci_high, c.p_value) == (1.0, 1.0, 1.0, 1.0)
    assert c.verdict == "no significant difference"
    assert c.wilcoxon_p is None  # every d_r is 0


def test_bad_input_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="2 times but 1 round"):
        stats.paired_rounds([1.0, 2.0], [1], [1.0], [1], alpha=0.05, min_effect=0.02)
    with pytest.raises(ValueError, match="positive"):
        stats.paired_rounds([0.0], [1], [1.0], [1], alpha=0.05, min_effect=0.02)
    with pytest.raises(ValueError, match="no round"):
        stats.paired_rounds([1.0], [1], [1.0], [2], alpha=0.05, min_effect=0.02)
    with pytest.raises(ValueError, match="alpha"):
        stats.paired_rounds([1.0], [1], [1.0], [1], alpha=1.5, min_effect=0.02)


def test_as_dict_is_json_ready() -> None:
    c = stats.paired_rounds(*rounds_of(np.random.default_rng(11), 7, 3), alpha=0.05,
                            min_effect=0.02)
    d = json.loads(json.dumps(c.as_dict()))
    assert d["verdict"] == c.verdict and d["rounds"] == 7
    assert d["round_ids"] == list(range(1, 8)) and len(d["round_ratios"]) == 7
    assert set(d["drift"]) >= {"flagged", "ratio", "p_value", "drift_sd", "meaning"}
    assert d["wilcoxon_p"] is not None


def test_under_block_drift_the_paired_rule_holds_where_the_pooled_rule_fails() -> None:
    """CI setting (5 rounds x 8), CV 5 %, a 5 % drift per block: A/A comparisons."""
    rng = np.random.default_rng(12)
    paired_alarms = pooled_alarms = covered = 0
    trials = 200
    for i in range(trials):
        bt, br, ct, cr = rounds_of(rng, 5, 8, drift=0.05)
        p = stats.paired_rounds(bt, br, ct, cr, alpha=0.05, min_effect=0.02)
        paired_alarms += p.verdict in ("faster", "slower")
        assert p.ci_low is not None and p.ci_high is not None
        covered += p.ci_low <= 1.0 <= p.ci_high
        pooled_alarms += stats.compare(bt, ct, seed=i, resamples=400).verdict != (
            "no significant difference")
    assert paired_alarms <= 0.09 * trials
    assert covered >= 0.91 * trials
    assert pooled_alarms >= 0.15 * trials


def test_coverage_and_power_without_drift() -> None:
    rng = np.random.default_rng(13)
    covered = faster = 0
    trials = 300
    for _ in range(trials):
        c = stats.paired_rounds(*rounds_of(rng, 10, 4, ratio=1.05), alpha=0.05, min_effect=0.02)
        assert c.ci_low is not None and c.ci_high is not None
        covered += c.ci_low <= 1.05 <= c.ci_high
        faster += c.verdict == "faster"
        assert c.verdict != "slower"
    assert 0.92 * trials <= covered <= 0.98 * trials
    assert faster >= 0.8 * trials


# --- drift check ---------------------------------------------------------------------------------

def test_drift_check_statistic_by_hand() -> None:
    sstats = pytest.importorskip("scipy.stats")
    base = {1: [1.0, 1.2], 2: [1.5, 1.4, 1.6], 3: [1.1, 1.0]}
    cand = {1: [1.0, 1.1], 2: [1.0, 1.05], 3: [1.2, 1.1, 1.3]}
    bt, br = [t for r in base for t in base[r]], [r for r in base for _ in base[r]]
    ct, cr = [t for r in cand for t in cand[r]], [r for r in cand for _ in cand[r]]
    blocks = [np.log(g[r]) for r in base for g in (base, cand)]
    dfw = sum(b.size - 1 for b in blocks)
    within = sum(((b - b.mean()) ** 2).sum() for b in blocks) / dfw
    e = [np.log(base[r]).mean() - np.log(cand[r]).mean() for r in base]
    expected = within * np.mean([1 / len(base[r]) + 1 / len(cand[r]) for r in base])
    f = np.var(e, ddof=1) / expected
    dc = stats.drift_check(bt, br, ct, cr)
    assert dc is not None
    assert (dc.df_between, dc.df_within) == (2, dfw)
    assert dc.ratio == pytest.approx(f)
    assert dc.p_value == pytest.approx(float(sstats.f.sf(f, 2, dfw)))
    assert dc.observed_sd == pytest.approx(math.sqrt(np.var(e, ddof=1)))
    assert dc.expected_sd == pytest.approx(math.sqrt(expected))
    assert dc.flagged == (dc.p_value < stats.DRIFT_ALPHA)


def test_drift_check_rarely_fires_without_drift() -> None:
    rng = np.random.default_rng(14)
    trials = 400
    flagged = below_10 = 0
    for i in range(trials):
        R, n = [(10, 4), (5, 8), (25, 20)][i % 3]
        dc = stats.drift_check(*rounds_of(rng, R, n, cv=[0.05, 0.2, 0.35][i % 3], ratio=1.07))
        assert dc is not None
        flagged += dc.flagged
        below_10 += dc.p_value < 0.10
        if not dc.flagged:
            assert "no sign of drift" in dc.meaning
    assert flagged <= 0.03 * trials  # its threshold is 1 %
    assert 0.06 * trials <= below_10 <= 0.14 * trials  # p is uniform under no drift


def test_drift_check_fires_on_drift_and_estimates_its_size() -> None:
    rng = np.random.default_rng(15)
    fired = 0
    for _ in range(100):
        dc = stats.drift_check(*rounds_of(rng, 25, 20, cv=0.05, drift=0.03))
        assert dc is not None
        fired += dc.flagged
    assert fired >= 95
    big = stats.drift_check(*rounds_of(rng, 300, 10, cv=0.05, drift=0.04))
    assert big is not None and big.flagged
    assert big.drift_sd == pytest.approx(0.04, rel=0.15)
    assert "not independent" in big.meaning and f"{100 * big.drift_sd:.1f} %" in big.meaning
    paired = stats.paired_rounds(*rounds_of(rng, 25, 20, cv=0.05, drift=0.05), alpha=0.05,
                                 min_effect=0.02)
    assert paired.drift is not None and paired.drift.flagged


def test_drift_check_needs_two_rounds_and_repeated_runs() -> None:
    assert stats.drift_check([1.0, 1.1], [1, 1], [1.0, 1.2], [1, 1]) is None
    assert stats.drift_check([1.0, 1.1], [1, 2], [1.0, 1.2], [1, 2]) is None
    # constant blocks (a coarse clock): no within-round noise to compare the spread with
    assert stats.drift_check([1.0, 1.0, 2.0, 2.0], [1, 1, 2, 2], [1.0, 1.0, 1.0, 1.0],
                             [1, 1, 2, 2]) is None
