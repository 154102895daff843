"""The comparison record (paired verdict at the top, pooled figures descriptive), its warnings,
and the chart of the per-round ratios."""

from __future__ import annotations

import json

import numpy as np

from patchbench.analysis import paired, stats, verdict


def runs(R: int, n: int, ratio: float, seed: int, drift: float = 0.0
         ) -> tuple[list[float], list[int], list[float], list[int]]:
    rng = np.random.default_rng(seed)
    ids = [r for r in range(1, R + 1) for _ in range(n)]
    out = []
    for median in (0.126, 0.126 / ratio):
        d = rng.normal(0, drift, R)[:, None] if drift else 0.0
        out.append(list((median * np.exp(d + rng.normal(0, 0.02, (R, n)))).ravel()))
    return out[0], ids, out[1], list(ids)


def test_the_record_has_the_paired_verdict_on_top_and_the_pooled_one_below() -> None:
    bt, br, ct, cr = runs(10, 4, 1.2, seed=1)
    rec = verdict.record(bt, br, ct, cr, alpha=0.05, min_effect=0.02, seed=3)
    judged = paired.paired_verdict(bt, br, ct, cr, alpha=0.05, min_effect=0.02)
    pooled = stats.compare(bt, ct, alpha=0.05, min_effect=0.02, seed=3)
    for key in ("speedup", "ci_low", "ci_high", "p_value", "verdict", "alpha", "min_effect"):
        assert rec[key] == getattr(judged, key)
        assert rec["pooled"][key] == getattr(pooled, key)
    assert rec["rounds"] == 10 and len(rec["round_ratios"]) == 10
    assert rec["verdict"] == "faster" and rec["method"] == paired.METHOD
    assert rec["effect_s"] < 0 and rec["mde"] is not None
    assert "independent runs" in rec["pooled"]["assumes"]
    assert json.loads(json.dumps(rec)) == rec


def test_withheld_and_drift_notes() -> None:
    rec = verdict.record(*runs(3, 8, 1.1, seed=2), alpha=0.05, min_effect=0.02, seed=0)
    (note,) = verdict.notes("start-8 cand", rec)
    assert "verdict withheld: 3 rounds" in note and "--rounds 5" in note
    drifting = verdict.record(*runs(25, 20, 1.0, seed=3, drift=0.05), alpha=0.05,
                              min_effect=0.02, seed=0)
    assert drifting["drift"]["flagged"]
    assert any(n.startswith("run cand: drift: ") for n in verdict.notes("run cand", drifting))
    quiet = verdict.record(*runs(10, 4, 1.0, seed=4), alpha=0.05, min_effect=0.02, seed=0)
    assert not quiet["drift"]["flagged"] and verdict.notes("x", quiet) == []


def test_an_inconclusive_verdict_says_what_the_run_could_detect() -> None:
    rec = verdict.record(*runs(5, 2, 1.0, seed=5), alpha=0.05, min_effect=0.01, seed=0)
    assert rec["verdict"] == "inconclusive"
    (note,) = verdict.notes("run cand", rec)
    assert note.startswith("run cand: inconclusive: neither a change beyond ±1% nor")
    assert f"could detect changes of ±{rec['mde']:.1%} or more (80% power)" in note
