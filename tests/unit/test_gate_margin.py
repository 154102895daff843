"""The gate's rule for comparisons of the current verdict rule: non-inferiority against a margin
(patchbench.analysis.gating), how many rounds a margin needs, and what the gate says."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from patchbench import gate, results
from patchbench.analysis import gating, paired, sequential
from tests.unit.test_gate import cell

MARGIN = 0.02


def test_a_call_is_made_from_the_one_sided_bounds_against_the_margin() -> None:
    edge = 1 / (1 + MARGIN)  # the ratio baseline / candidate of a candidate slower by the margin
    assert gating.call(1.0, 0.99, 1.01, MARGIN).call is gating.Call.PASS
    assert gating.call(0.95, 0.94, 0.96, MARGIN).call is gating.Call.FAIL
    assert gating.call(0.99, 0.97, 1.01, MARGIN).call is gating.Call.UNDECIDED
    assert gating.call(1.0, edge, 1.05, MARGIN).call is gating.Call.UNDECIDED  # on the edge
    assert gating.call(1.0, None, None, MARGIN).call is gating.Call.UNDECIDED
    c = gating.call(0.95, 0.94, 0.96, MARGIN)
    assert c.slowdown == pytest.approx(1 / 0.95 - 1)
    assert c.low == pytest.approx(1 / 0.96 - 1) and c.high == pytest.approx(1 / 0.94 - 1)
    assert "against a margin of +2.0%" in c.text()
    with pytest.raises(ValueError):
        gating.call(1.0, 0.99, 1.01, 0.0)


def test_the_rounds_a_margin_needs_grow_with_the_noise_and_the_level() -> None:
    quiet = gating.rounds_needed(0.02, MARGIN, 0.01)
    noisy = gating.rounds_needed(0.04, MARGIN, 0.01)
    assert quiet < noisy
    assert gating.rounds_needed(0.02, MARGIN, 0.001) > quiet
    # about ((z_0.99 + z_0.9) sd / ln 1.02)^2, a little more for t's heavier tails
    normal = ((2.326 + 1.2816) * 0.04 / math.log1p(MARGIN)) ** 2
    assert normal <= noisy <= 1.2 * normal + 3


def test_the_looks_are_planned_before_the_first_round_up_to_the_cap() -> None:
    p = gating.plan(0.02, MARGIN, 0.05, 10, 200, 2)
    assert p.looks == sequential.planned_looks(10, 200, 2) and p.looks[-1] == 200
    assert p.level == pytest.approx(0.05 / len(p.looks))
    assert p.needed == gating.rounds_needed(0.02, MARGIN, p.level) and not p.capped
    assert gating.plan(0.2, MARGIN, 0.05, 10, 200, 2).capped  # far more than 200 needed


def judged(speedup: float, low: float, high: float, *, method: str = paired.METHOD,
           rounds: int = 20) -> dict[str, Any]:
    return {"baseline": "baseline", "candidate": "fix", "candidate_variant": "fix",
            "speedup": speedup, "ci_low": low, "ci_high": high, "p_value": 0.5,
            "verdict": "inconclusive", "alpha": 0.01, "min_effect": 0.02, "method": method,
            "rounds": rounds, "min_rounds": 5, "p_slower": 0.5, "equivalence_low": low,
            "equivalence_high": high, "mde": 0.05}


def run(*comparisons: dict[str, Any], margin: float | None = None,
        allow: bool = False) -> results.Results:
    head = {"description": "", "command": "x", "runs": 3, "rounds": 1, "warmup": 0}
    return results.parse({
        "schema_version": 6, "tool": "t", "comparison": "c", "target": "t", "url": "u",
        "ref": "r", "commit": "c", "seed": 1, "started_at": "s", "machine": {}, "builds": {},
        "settings": {"alpha": 0.05, "min_effect": 0.02, "gate_margin": margin},
        "gate": True, "gate_allow_inconclusive": allow,
        "scenarios": [{"name": "run", "kind": "command", **head,
                       "cells": [cell("baseline"), cell("fix")],
                       "comparisons": list(comparisons)}]}, "test")


def test_an_unchanged_candidate_shown_within_the_margin_passes_though_inconclusive() -> None:
    """The closed gate failed most unchanged candidates: "inconclusive" against ±min_effect is
    not a reason to fail when the interval excludes a slowdown beyond the margin."""
    res = run(judged(1.001, 0.99, 1.012))
    assert gate.failures(res) == []
    assert "shown slower by less than its margin" in gating.passed_text(res)  # min_effect's
    given = run(judged(1.001, 0.99, 1.012), margin=0.03)
    assert "shown slower by less than the margin (+3.0%)" in gating.passed_text(given)


def test_a_candidate_slower_than_the_margin_fails() -> None:
    (why,) = gate.failures(run(judged(0.95, 0.94, 0.96)))
    assert "slower than the gate's margin" in why and "+5.3%" in why


def test_an_undecided_candidate_fails_closed_unless_allowed() -> None:
    (why,) = gate.failures(run(judged(0.99, 0.97, 1.01)))
    assert "not shown within the gate's margin in 20 rounds" in why
    assert "fails closed" in why
    assert gate.failures(run(judged(0.99, 0.97, 1.01), allow=True), allow_inconclusive=True) == []
    assert gate.let_through(run(judged(0.99, 0.97, 1.01), allow=True))


def test_the_margin_is_the_runs_own_or_min_effect() -> None:
    within_5 = judged(0.975, 0.965, 0.985)  # slower by about 2.6 %, [1.5 %, 3.6 %]
    assert gate.failures(run(within_5, margin=0.05)) == []
    assert gate.failures(run(within_5))  # against min_effect's 2 %: undecided, fails closed


def test_a_candidate_that_stalls_more_often_fails_and_wall_is_called_without_stalls() -> None:
    rec = judged(0.5, 0.4, 0.6)  # every run: much slower, but only by its stalls
    rec["stalls"] = {"baseline": 0, "baseline_runs": 60, "candidate": 6, "candidate_runs": 60,
                     "threshold_s": 0.5, "p_more": 0.004, "factor": 5.0, "speedup": 1.0,
                     "low": 0.995, "high": 1.005}
    (why,) = gate.failures(run(rec))
    assert why.startswith("run fix: stalls more often than the baseline (0 of 60 baseline runs")
    rec["stalls"]["p_more"] = 0.4  # as many stalls as chance gives: called on the rest: passes
    assert gate.failures(run(rec)) == []


def test_the_gate_passes_unchanged_and_fails_slower_candidates_in_simulation() -> None:
    """A small version of benchmarks/gate_calibration.py: lognormal runs (CV 5 %) with a drift
    per block, looks at 10 rounds and up; every unchanged candidate of 40 passes, every one
    slower by twice the margin fails (called so, or left undecided at the cap: closed)."""
    rng = np.random.default_rng(4)
    looks = sequential.planned_looks(10, 200, 2)
    level = sequential.alpha_per_look(0.05, looks)

    def gated(factor: float) -> gating.Call:
        b = 0.1 * np.exp(rng.normal(0, 0.03, (200, 1)) + rng.normal(0, 0.05, (200, 4)))
        c = 0.1 * factor * np.exp(rng.normal(0, 0.03, (200, 1)) + rng.normal(0, 0.05, (200, 4)))
        for done in looks:
            ids = [r for r in range(done) for _ in range(4)]
            v = paired.paired_verdict(b[:done].ravel().tolist(), ids, c[:done].ravel().tolist(),
                                      ids, alpha=level, min_effect=0.02)
            call = gating.call(v.speedup, v.equivalence_low, v.equivalence_high, MARGIN).call
            if call is not gating.Call.UNDECIDED:
                return call
        return gating.Call.UNDECIDED

    assert all(gated(1.0) is gating.Call.PASS for _ in range(40))
    assert all(gated(1.0 + 2 * MARGIN) is not gating.Call.PASS for _ in range(40))
