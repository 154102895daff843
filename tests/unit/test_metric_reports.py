"""What a run of results version 6 shows of its metrics: the words (only from answers), the
summary's last column, report.md's and report.html's sections, the gate's chosen metrics, diff,
merge and the exports, from synthetic runs."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from patchbench import gate, results
from patchbench.analysis import metrics as mx
from patchbench.analysis import verdict
from patchbench.report import metric_blocks
from patchbench.runs import diff, document, export, merge

PER, ROUNDS = 10, 10
IDS = [r for r in range(1, ROUNDS + 1) for _ in range(PER)]


def side(rng: np.random.Generator, wall: float, cpu: float, rss: float) -> dict[str, list[float]]:
    """One variant's runs: log-normal wall and CPU time (CPU split half user, half system) and
    peak memory in whole pages."""
    w = wall * np.exp(rng.normal(0, 0.05, len(IDS)))
    c = cpu * np.exp(rng.normal(0, 0.05, len(IDS)))
    return {"times": w.tolist(), "cpu": c.tolist(), "user": (c / 2).tolist(),
            "system": (c / 2).tolist(),
            "peak-rss": (rss + rng.integers(0, 4, len(IDS)) * 4096.0).tolist()}


def metric_doc(candidates: dict[str, tuple[float, float, float]], *, seed: int = 1,
               gate_metrics: list[str] | None = None) -> dict[str, Any]:
    """A results version 6 document: a baseline of 20 ms wall, 4 ms CPU and 3 MiB, and each
    candidate's (wall, CPU, peak memory), every metric judged as compare does."""
    rng = np.random.default_rng(seed)
    runs = {"baseline": side(rng, 0.02, 0.004, 3 * 2**20)}
    runs.update({name: side(rng, *spec) for name, spec in candidates.items()})
    summary = {"n": len(IDS), "median": 0.02, "mean": 0.02, "stdev": 0.001, "min": 0.01,
               "max": 0.03, "cv": 0.05, "noisy": False}
    cells = [{"variant": v, "label": v, "summary": summary,
              "samples": {"times": r["times"], "rounds": IDS, "exit_codes": [0] * len(IDS),
                          "metrics": {m: r[m] for m in mx.DEFAULT if m != "wall"}}}
             for v, r in runs.items()]
    b = runs["baseline"]
    comparisons = []
    for name in candidates:
        c = runs[name]
        rec = verdict.record(b["times"], IDS, c["times"], IDS, alpha=0.05, min_effect=0.02,
                             seed=1)
        ms = {m: mx.judge(m, b[m], IDS, c[m], IDS, alpha=0.05,
                          min_effect=0.1 if m in ("cpu", "user", "system") else 0.02)
              for m in mx.DEFAULT if m != "wall"}
        comparisons.append({"baseline": "baseline", "candidate": name,
                            "candidate_variant": name, **rec, "metrics": ms})
    return {
        "schema_version": 6, "tool": "t", "comparison": "fx", "target": "demo", "url": "u",
        "ref": "r", "commit": "c", "seed": 1, "settings": {"alpha": 0.05, "min_effect": 0.02},
        "started_at": "s", "builds": {}, "report_format": 2,
        "machine": {"cpu_model": "cpu", "cpu_count": 2, "kernel": "k", "load_avg": [0.1] * 3,
                    "system": "Linux", "machine": "x86_64"},
        "gate": True, "gate_metrics": gate_metrics or ["wall"],
        "scenarios": [{"name": "run", "kind": "command", "command": "x", "runs": len(IDS),
                       "rounds": ROUNDS, "warmup": 0, "metrics": list(mx.DEFAULT),
                       "cells": cells, "comparisons": comparisons}]}


PLANTED = {"spin": (0.025, 0.009, 3 * 2**20), "sleep": (0.025, 0.004, 3 * 2**20),
           "alloc": (0.02, 0.004, 67 * 2**20), "parallel": (0.015, 0.006, 3 * 2**20),
           "removed": (0.015, 0.0005, 3 * 2**20)}


def comparison(res: results.Results, name: str) -> results.Verdict:
    sc = res.scenarios[0]
    assert isinstance(sc, results.TimedResult)
    return next(c for c in sc.comparisons if c.candidate == name)


def test_the_words_tell_waiting_from_work_and_call_out_memory() -> None:
    res = results.parse(metric_doc(PLANTED), "t")
    sc = res.scenarios[0]
    assert isinstance(sc, results.TimedResult)
    cells = {c.label: c for c in sc.cells}
    said = {name: " | ".join(metric_blocks.words(comparison(res, name), cells))
            for name in PLANTED}
    assert "about as much: work added" in said["spin"]
    assert "the extra time is waiting" in said["sleep"] and "CPU time is equivalent" in said["sleep"]
    assert "peak memory (RSS) larger by 64" in said["alloc"] and "MiB" in said["alloc"]
    assert "more work done in parallel" in said["parallel"]
    # 5 ms less wall time, 3.5 ms less CPU time: part work removed, the rest waiting
    assert "part work removed, the rest (-1." in said["removed"], said["removed"]
    # without the runs, how much of the wall change CPU time accounts for is not said
    assert "is not decided" in metric_blocks.words(comparison(res, "spin"))[0]
    for name in ("spin", "sleep"):
        assert "peak memory" not in said[name]  # equivalent memory: nothing to say


def test_an_undecided_verdict_gives_no_word_but_what_the_rest_shows() -> None:
    res = results.parse(metric_doc({"sleep": PLANTED["sleep"]}), "t")
    c = comparison(res, "sleep")
    assert c.metrics is not None
    cpu = c.metrics["cpu"].model_copy(update={"verdict": "inconclusive"})
    quiet = c.model_copy(update={"metrics": {**c.metrics, "cpu": cpu}})
    assert metric_blocks.words(quiet) == []
    wall_unsure = c.model_copy(update={"verdict": "inconclusive"})
    assert metric_blocks.words(wall_unsure) == []
    # with the runs, the part of the wall change CPU time does not account for is an interval
    # of its own: above 0 here (5 ms slept), so the extra time is said to be waiting
    sc = res.scenarios[0]
    assert isinstance(sc, results.TimedResult)
    cells = {cell.label: cell for cell in sc.cells}
    (said,) = metric_blocks.words(quiet, cells)
    assert "CPU time is undecided" in said and "is waiting" in said, said
    assert metric_blocks.words(wall_unsure, cells) == []
    # a spin under an undecided CPU time: CPU accounts for the wall change, nothing is said
    spin = results.parse(metric_doc({"spin": PLANTED["spin"]}), "t")
    s = comparison(spin, "spin")
    assert s.metrics is not None
    undecided = s.model_copy(update={"metrics": {**s.metrics, "cpu": s.metrics["cpu"].model_copy(
        update={"verdict": "inconclusive"})}})
    spin_sc = spin.scenarios[0]
    assert isinstance(spin_sc, results.TimedResult)
    assert metric_blocks.words(undecided, {cell.label: cell for cell in spin_sc.cells}) == []


def test_the_summary_keeps_one_line_per_candidate_with_the_metrics_beside_wall_time() -> None:
    res = results.parse(metric_doc(PLANTED), "t")
    headers = document.summary_rows(res), document.summary_headers(res)
    rows, names = headers
    assert names[-2:] == ["verdict", "other metrics"] and len(rows) == len(PLANTED)
    spin = next(r for r in rows if r[1] == "spin")
    assert spin[-2] == "slower" and spin[-1].startswith("cpu slower +5.")
    alloc = next(r for r in rows if r[1] == "alloc")
    assert "peak-rss larger +64" in alloc[-1]
    md = document.markdown(res, gate=gate.failures(res))
    assert re.search(r"\| spin +\| cpu +\| 3\.\d+ ms +\| 9\.\d+ ms", md)
    assert "What the metrics say" in md and "the extra time is waiting" in md
    page = document.html(res, gate=gate.failures(res))
    assert 'data-chart="metrics"' in page and 'class="metrics"' in page
    assert 'class="words"' in page


def test_the_gate_fails_on_the_metrics_it_names_and_only_those() -> None:
    doc = metric_doc({"sleep": PLANTED["sleep"], "cpuonly": (0.02, 0.009, 3 * 2**20)})
    wall_only = gate.failures(results.parse(doc, "t"), allow_inconclusive=True)
    assert any(f.startswith("run sleep: slower than the gate's margin") for f in wall_only)
    assert not any("cpuonly" in f for f in wall_only)
    both = gate.failures(results.parse({**doc, "gate_metrics": ["wall", "cpu"]}, "t"),
                         allow_inconclusive=True)
    assert any(f.startswith("run cpuonly cpu: slower than the gate's margin") for f in both)
    assert [j.metric for j in gate.gated(results.parse({**doc, "gate_metrics": ["cpu"]}, "t"))
            ] == ["cpu", "cpu"]


def test_diff_merge_and_the_exports_carry_every_metric() -> None:
    a = results.parse(metric_doc({"spin": PLANTED["spin"]}, seed=1), "a")
    b = results.parse(metric_doc({"spin": PLANTED["spin"]}, seed=2), "b")
    d = diff.diff_runs(a, b)
    assert {m.metric for m in d.metrics} == {"cpu", "user", "system", "peak-rss"}
    assert "other metrics: each one's round-paired ratio" in diff.render_diff(d)
    m = merge.merge_runs([("one", a), ("two", b)])
    md = merge.render_markdown(m)
    assert "## Other metrics" in md and re.search(r"\| run spin +\| cpu +\| 0\.4\d× ", md)
    csv = export.export(a, "csv")["results.csv"].splitlines()
    assert csv[0].endswith("exit_code,cpu_s,user_s,system_s,peak_rss_bytes")
    assert len(csv[1].split(",")) == 12
    bench = export.export(a, "benchstat")["benchstat/spin.txt"]
    assert " ns/op\t" in bench and " cpu-ns/op\t" in bench and " peak-RSS-B" in bench
    bmf = json.loads(export.export(a, "bmf")["bmf.json"])
    entry = bmf["run/spin"]
    assert set(entry) == {"latency", "cpu-time", "user-time", "system-time", "peak-rss"}
    assert entry["peak-rss"]["value"] == pytest.approx(3 * 2**20, rel=0.01)
    assert entry["cpu-time"]["value"] == pytest.approx(9e6, rel=0.1)  # nanoseconds
