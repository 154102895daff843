"""The round-paired verdict of schema 3-4: t and F distributions without scipy, the exact Wilcoxon
signed-rank test, the paired comparison itself and the drift check."""

from __future__ import annotations

import itertools
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
