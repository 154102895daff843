"""The live rule's new parts: stalls counted apart, the metrics' family, the widened standard
error's degrees of freedom, the verdict across hosts and the machine fingerprint."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from patchbench.analysis import gating, hosts, paired, stalls, verdict
from patchbench.analysis import metrics as mx
from patchbench.measure import machine


@dataclass
class Runs:
    times: list[float]
    rounds: list[int]
    metrics: dict[str, list[float]] = field(default_factory=dict)


def runs(rng: np.random.Generator, rounds: int, level: float, cv: float = 0.03, n: int = 4,
         stall_at: tuple[int, ...] = ()) -> Runs:
    t = level * np.exp(rng.normal(0, cv, rounds * n))
    for i in stall_at:
        t[i] *= 10
    ids = [r for r in range(1, rounds + 1) for _ in range(n)]
    return Runs(t.tolist(), ids, {"cpu": (0.5 * t).tolist(), "peak-rss": [3e7] * t.size})


def test_a_stall_is_counted_and_the_gate_judges_the_runs_without_it() -> None:
    rng = np.random.default_rng(1)
    b, c = runs(rng, 20, 0.1, stall_at=(7,)), runs(rng, 20, 0.1, stall_at=(3, 50))
    st, kb, kc = stalls.count(b.times, c.times)
    assert (st.baseline, st.candidate, st.baseline_runs, st.candidate_runs) == (1, 2, 80, 80)
    assert st.threshold_s == pytest.approx(5 * float(np.median(b.times + c.times)))
    assert st.p_more is not None and st.p_more > 0.3  # 2 of 80 against 1 of 80: no evidence
    j = verdict.judge(b, c, alpha=0.05, min_effect=0.02, seed=0, metrics={"cpu": 0.02})
    assert j.record["stalls"]["candidate"] == 2
    clean = paired.paired_verdict(stalls.pick(b.times, kb), stalls.pick(b.rounds, kb),
                                  stalls.pick(c.times, kc), stalls.pick(c.rounds, kc),
                                  alpha=0.05, min_effect=0.02)
    every = paired.paired_verdict(b.times, b.rounds, c.times, c.rounds, alpha=0.05,
                                  min_effect=0.02)
    # the verdict keeps every run (a patch that removes stalls is faster by them); the gate's
    # bounds are of the runs that did not stall
    assert j.record["speedup"] == pytest.approx(every.speedup, rel=1e-12)
    assert j.stalls.speedup == pytest.approx(clean.speedup, rel=1e-12)
    assert j.stalls.low == pytest.approx(clean.equivalence_low, rel=1e-12)
    assert j.metrics["cpu"]["rounds"] == 20
    assert any("stalled" in n and "judged apart by the gate" in n
               for n in verdict.notes("s c", j.record))
    # with every run kept, one stall at 10x widens the interval many times over
    assert every.ci_low is not None and every.ci_high is not None
    assert clean.ci_low is not None and clean.ci_high is not None
    assert math.log(every.ci_high / every.ci_low) > 5 * math.log(clean.ci_high / clean.ci_low)


def test_a_candidate_that_stalls_more_often_fails_the_gate() -> None:
    rng = np.random.default_rng(2)
    b, c = runs(rng, 20, 0.1), runs(rng, 20, 0.1, stall_at=tuple(range(0, 80, 8)))
    st, _, _ = stalls.count(b.times, c.times)
    assert st.candidate == 10 and st.baseline == 0
    assert gating.stalls_more(st, 0.05) and not gating.stalls_more(None, 0.05)
    st2, _, _ = stalls.count(c.times, b.times)  # the baseline stalls more: no failure
    assert not gating.stalls_more(st2, 0.05)


def test_a_candidate_slower_in_every_run_is_judged_by_its_times_not_counted_as_stalls() -> None:
    rng = np.random.default_rng(3)
    b, c = runs(rng, 10, 0.1), runs(rng, 10, 0.8)  # 8x slower in every run
    st, _, _ = stalls.count(b.times, c.times)
    assert not st.any
    j = verdict.judge(b, c, alpha=0.05, min_effect=0.02, seed=0)
    assert j.record["verdict"] == "slower"


def rec(verdict_: str, p: float = 0.001, side: float = 0.001, alpha: float = 0.05
        ) -> dict[str, object]:
    return {"verdict": verdict_, "p_value": p, "p_slower": side, "p_faster": side,
            "alpha": alpha, "note": ""}


def test_the_other_metrics_are_called_only_when_the_gated_ones_changed() -> None:
    family = {"wall": rec("equivalent"), "cpu": rec("slower"), "user": rec("equivalent")}
    assert mx.family(family, ["wall"]) == ["cpu"]
    assert family["cpu"]["verdict"] == "inconclusive"
    assert "only when every gated metric (wall) changed" in str(family["cpu"]["note"])
    assert family["user"]["verdict"] == "equivalent"  # an equivalent answer stays
    changed = {"wall": rec("slower"), "cpu": rec("slower", 0.001, 0.001),
               "user": rec("slower", 0.03, 0.03), "system": rec("faster", 0.04, 0.04)}
    # Holm among the three others: 0.003, then 0.03 * 2 = 0.06 and 0.04: not below 0.05
    assert mx.family(changed, ["wall"]) == ["user", "system"]
    assert changed["cpu"]["verdict"] == "slower" and changed["wall"]["verdict"] == "slower"
    assert "after Holm across the 3 the other metrics" in str(changed["user"]["note"])
    notes = verdict.notes("s c user", changed["user"])  # type: ignore[arg-type]
    assert notes and "not called slower" in notes[0] and "neither" not in notes[0]


def test_several_gated_metrics_are_holm_corrected_among_themselves() -> None:
    # Holm's first step takes 2 x 0.03 = 0.06: neither stands, and the others are not released
    fam = {"wall": rec("slower", 0.03, 0.03), "cpu": rec("slower", 0.04, 0.04),
           "user": rec("slower")}
    assert mx.family(fam, ["wall", "cpu"]) == ["wall", "cpu", "user"]
    fam = {"wall": rec("slower", 0.001, 0.001), "cpu": rec("slower", 0.04, 0.04),
           "user": rec("slower")}
    assert mx.family(fam, ["wall", "cpu"]) == []  # 0.002, then 0.04: both stand, user released


def test_the_degrees_of_freedom_are_cut_only_when_the_error_is_widened() -> None:
    d = np.array([0.01, 0.02, 0.015, 0.03, 0.025, 0.02, 0.01, 0.0, -0.01, 0.005])
    sd, df = paired.widened(d, list(range(1, 11)), None)
    assert sd > float(d.std(ddof=1)) and 1 <= df < 9
    assert df == pytest.approx(max(1.0, math.floor(100 * 9 * (d.var(ddof=1) / sd**2) ** 3) / 100))
    alt = np.array([0.02, -0.02] * 5)  # neighbours anti-correlated: nothing added
    assert paired.widened(alt, list(range(1, 11)), None) == (pytest.approx(float(alt.std(ddof=1))),
                                                             9.0)


def test_hosts_that_agree_give_one_verdict_and_a_host_alone_makes_it_host_dependent() -> None:
    rng = np.random.default_rng(4)
    slow = {f"h{i}": np.exp(-math.log(1.08) + rng.normal(0, 0.01, 20)).tolist()
            for i in range(4)}
    v = hosts.across(slow, alpha=0.05, min_effect=0.02)
    assert v.verdict == "slower" and len(v.hosts) == 4
    assert v.ci_high is not None and v.ci_high < 1 / 1.02
    mixed = {f"h{i}": np.exp(rng.normal(0, 0.01, 20)).tolist() for i in range(4)}
    mixed["h0"] = np.exp(-math.log(1.10) + rng.normal(0, 0.01, 20)).tolist()
    m = hosts.across(mixed, alpha=0.05, min_effect=0.02)
    assert m.verdict == hosts.HOST_DEPENDENT
    assert m.heterogeneity_p is not None and m.heterogeneity_p < 0.001
    assert "each host's own verdict" in m.note
    one = hosts.across({"h0": slow["h0"]}, alpha=0.05, min_effect=0.02)
    assert one.verdict == "withheld"


def test_hosts_that_differ_only_a_little_keep_the_class_answer() -> None:
    rng = np.random.default_rng(6)
    near = {f"h{i}": np.exp(-math.log(1.08) + off + rng.normal(0, 0.002, 30)).tolist()
            for i, off in enumerate((0.006, -0.004, 0.0, 0.002))}
    v = hosts.across(near, alpha=0.05, min_effect=0.02)
    assert v.heterogeneity_p is not None and v.heterogeneity_p < 0.001
    assert v.verdict == "slower" and "by less than ±2%" in v.note


def test_the_interval_over_hosts_holds_their_offsets() -> None:
    """Three hosts whose rounds are tight but whose offsets differ: the pooled rounds would
    call the A/A different; over hosts the interval is as wide as the offsets."""
    rng = np.random.default_rng(5)
    aa = {f"h{i}": np.exp(off + rng.normal(0, 0.002, 30)).tolist()
          for i, off in enumerate((0.03, -0.025, 0.0))}
    v = hosts.across(aa, alpha=0.05, min_effect=0.02)
    assert v.verdict == hosts.HOST_DEPENDENT
    assert v.ci_low is not None and v.ci_high is not None and v.ci_low < 1 < v.ci_high


def test_the_fingerprint_hashes_the_class_fields_only() -> None:
    a = {"cpu_model": "X", "microcode": "0x1", "kernel": "6.1", "numa_nodes": 1,
         "cpu_count": 2, "instance_type": None, "load_avg": [0.1, 0.2, 0.3]}
    b = {**a, "load_avg": [5.0, 5.0, 5.0], "date": "later"}
    assert machine.fingerprint(a) == machine.fingerprint(b)
    assert machine.fingerprint(a) != machine.fingerprint({**a, "microcode": "0x2"})
    assert machine.fingerprint(a) != machine.fingerprint({**a, "numa_nodes": 2})
    assert machine.describe(a) == "X, microcode 0x1, 2 CPUs, 1 NUMA node, kernel 6.1"


def test_the_instance_type_is_read_from_files_already_on_the_machine(
        tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    from pathlib import Path

    base = Path(str(tmp_path))
    data = base / "instance-data.json"
    data.write_text(json.dumps({"v1": {"instance_type": "m7i.large"}}))
    monkeypatch.setattr(machine, "CLOUD_INIT", str(data))
    monkeypatch.setattr(machine, "DMI_PRODUCT", str(base / "none"))
    assert machine._instance_type() == "m7i.large"
    data.write_text("not json")
    product = base / "product_name"
    product.write_text("c7g.xlarge\n")
    monkeypatch.setattr(machine, "DMI_PRODUCT", str(product))
    assert machine._instance_type() == "c7g.xlarge"
    product.write_text("Standard PC (Q35 + ICH9, 2009)\n")
    assert machine._instance_type() is None
