"""A run saved under the round-paired rule of schema 3-4: its report shows the recorded verdict
and, only where the current rule (schema 5) judges the same raw samples differently, both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np

from patchbench import results as results_mod
from patchbench.analysis import paired, stats
from patchbench.runs import document

IDS = [r for r in range(1, 11) for _ in range(4)]  # 10 rounds of 4 runs


def samples(seed: int) -> tuple[list[float], list[float]]:
    """A true 3 % speedup at 3 % noise: near the 2 % margin, where the two rules can differ."""
    rng = np.random.default_rng(seed)
    bt = (0.1 * np.exp(rng.normal(0, 0.03, len(IDS)))).tolist()
    ct = (0.1 / 1.03 * np.exp(rng.normal(0, 0.03, len(IDS)))).tolist()
    return bt, ct


def old_doc(bt: list[float], ct: list[float]) -> dict[str, Any]:
    """A schema-4 results document whose comparison the old rule judged (stats.paired_rounds)."""
    old = stats.paired_rounds(bt, IDS, ct, IDS, alpha=0.05, min_effect=0.02)
    rec = {k: v for k, v in asdict(old).items() if k != "drift"}
    rec["round_ids"], rec["round_ratios"] = list(old.round_ids), list(old.round_ratios)
    cell = {"n": len(IDS), "median": 0.1, "mean": 0.1, "stdev": 0.003, "min": 0.09,
            "max": 0.11, "cv": 0.03, "noisy": False}
    return {
        "schema_version": 4, "tool": "t", "comparison": "fx", "target": "demo", "url": "u",
        "ref": "r", "commit": "c", "seed": 1, "settings": {"alpha": 0.05, "min_effect": 0.02},
        "started_at": "s", "builds": {},
        "machine": {"cpu_model": "cpu", "cpu_count": 2, "kernel": "k", "load_avg": [0.1] * 3},
        "scenarios": [{
            "name": "run", "kind": "command", "command": "x", "runs": len(IDS), "rounds": 10,
            "warmup": 0,
            "cells": [{"variant": v, "label": v, "summary": cell,
                       "samples": {"times": t, "rounds": IDS}}
                      for v, t in (("baseline", bt), ("fast", ct))],
            "comparisons": [{"baseline": "baseline", "candidate": "fast",
                             "candidate_variant": "fast", **rec}]}]}


def first_seed(old: str, new: str) -> int:
    """The first seed whose samples the old rule calls ``old`` and the current one ``new``."""
    for seed in range(200):
        bt, ct = samples(seed)
        o = stats.paired_rounds(bt, IDS, ct, IDS, alpha=0.05, min_effect=0.02)
        n = paired.paired_verdict(bt, IDS, ct, IDS, alpha=0.05, min_effect=0.02)
        if (o.verdict, str(n.verdict)) == (old, new):
            return seed
    raise AssertionError(f"no seed gives {old} under the old rule and {new} under schema 5")


def verdict_cell(doc: dict[str, Any]) -> str:
    (row,) = document.summary_rows(results_mod.parse(doc, "test"))
    return row[-1]


def test_where_the_rules_differ_the_report_shows_both() -> None:
    bt, ct = samples(first_seed("faster", "inconclusive"))
    now = paired.paired_verdict(bt, IDS, ct, IDS, alpha=0.05, min_effect=0.02)
    assert now.mde is not None
    want = f"faster (rule of schema 3–4); schema 5: inconclusive, could detect ±{now.mde:.1%}"
    doc = old_doc(bt, ct)
    assert verdict_cell(doc) == want
    res = results_mod.parse(doc, "test")
    assert want in document.markdown(res)
    assert want in document.html(res)
    assert res.scenarios[0].comparisons[0].verdict == "faster"  # the record is not changed


def test_where_they_agree_or_the_old_answer_only_splits_nothing_changes() -> None:
    cases: list[tuple[str, str, Callable[[str], bool]]] = [
        ("faster", "faster", lambda cell: cell == "faster"),
        ("no significant difference", "inconclusive",
         lambda cell: cell == "no significant difference")]
    for old, new, ok in cases:
        bt, ct = samples(first_seed(old, new))
        assert ok(verdict_cell(old_doc(bt, ct))), (old, new)


def test_a_record_of_the_current_rule_is_not_judged_again() -> None:
    bt, ct = samples(first_seed("faster", "inconclusive"))
    doc = old_doc(bt, ct)
    v = paired.paired_verdict(bt, IDS, ct, IDS, alpha=0.05, min_effect=0.02)
    comp = doc["scenarios"][0]["comparisons"][0]
    comp.update(method=paired.METHOD, verdict="faster", mde=v.mde)  # a tampered schema-5 record
    doc["schema_version"] = 5
    assert verdict_cell(doc) == "faster"
