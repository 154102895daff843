"""A report of schema 5: the effect in time beside the ratio, the answer's words (an
inconclusive one with what the run could detect) and the rule in the statistics line; records of
the older rules keep their rendering (tests/unit/test_reproduce_reports.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from patchbench import results as results_mod
from patchbench.analysis import verdict
from patchbench.runs import document


def doc(rounds: int, runs: int, delay: float, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    ids = [r for r in range(1, rounds + 1) for _ in range(runs)]
    bt = (0.05 * np.exp(rng.normal(0, 0.02, len(ids)))).tolist()
    ct = (0.05 * np.exp(rng.normal(0, 0.02, len(ids))) + delay).tolist()
    rec = verdict.record(bt, ids, ct, ids, alpha=0.05, min_effect=0.02, seed=1)
    cell = {"n": len(ids), "median": 0.05, "mean": 0.05, "stdev": 0.001, "min": 0.04,
            "max": 0.06, "cv": 0.02, "noisy": False}
    return {
        "schema_version": 5, "tool": "t", "comparison": "fx", "target": "demo", "url": "u",
        "ref": "r", "commit": "c", "seed": 1, "settings": {"alpha": 0.05, "min_effect": 0.02},
        "started_at": "s", "builds": {},
        "machine": {"cpu_model": "cpu", "cpu_count": 2, "kernel": "k", "load_avg": [0.1] * 3},
        "scenarios": [{
            "name": "run", "kind": "command", "command": "x", "runs": len(ids),
            "rounds": rounds, "warmup": 0,
            "cells": [{"variant": v, "label": v, "summary": cell,
                       "samples": {"times": t, "rounds": ids}}
                      for v, t in (("baseline", bt), ("slow", ct))],
            "comparisons": [{"baseline": "baseline", "candidate": "slow",
                             "candidate_variant": "slow", **rec}]}]}


def test_a_found_delay_shows_its_size_in_milliseconds() -> None:
    res = results_mod.parse(doc(10, 5, 0.005, seed=1), "t")
    (comp,) = res.scenarios[0].comparisons  # type: ignore[union-attr]
    assert comp.verdict == "slower" and comp.effect_s is not None
    md = document.markdown(res)
    assert f"{comp.speedup:.2f}× [" in md and ", +5." in md and " ms [+" in md
    assert "statistics: round-paired — per round" in md and "TOST" in md
    assert "the change of the geometric-mean time" in md  # the effect's estimand, named
    assert "geometric mean baseline / geometric mean candidate" in md
    page = document.html(res, gate=[])
    assert f"{comp.speedup:.2f}× [" in page and ", +5." in page  # the effect in report.html too


def test_a_short_run_says_inconclusive_with_what_it_could_detect() -> None:
    res = results_mod.parse(doc(5, 2, 0.0015, seed=3), "t")
    (comp,) = res.scenarios[0].comparisons  # type: ignore[union-attr]
    assert comp.verdict == "inconclusive" and comp.mde is not None
    md = document.markdown(res)
    assert f"inconclusive (could detect ±{comp.mde:.1%})" in md
    assert "no significant difference" not in md


def test_the_html_report_shows_the_answer_and_the_closed_gate() -> None:
    from patchbench import gate

    res = results_mod.parse(doc(5, 2, 0.0015, seed=3), "t")
    page = document.html(res, gate=gate.failures(res))
    assert "inconclusive (could detect ±" in page
    assert "the gate fails closed" in page
