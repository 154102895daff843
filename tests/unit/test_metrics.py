"""Every metric judged (patchbench.analysis.metrics), read from hyperfine 2's export
(patchbench.measure.hyperfine2), asked for in a scenario (config), and kept in results.json version 6
(the upgrade from 5), without running hyperfine (a script stands in where its answer matters)."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from patchbench import config, results
from patchbench.analysis import metrics as mx
from patchbench.analysis import paired
from patchbench.errors import BenchmarkError, RequirementError
from patchbench.measure import hyperfine2
from patchbench.scenarios.command import CommandConfig
from tests.unit.test_report_shows_effect_and_answer import doc

TICK = 0.004  # the kernel's accounting tick at HZ=250


def ticked(rng: np.random.Generator, cpu: np.ndarray, system_share: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """User and system time of runs of ``cpu`` seconds as the kernel splits them: by the ticks
    that land in each mode (a run without a tick is all user time), scaled to the precise total."""
    ticks = rng.poisson(cpu / TICK)
    sys_ticks = rng.binomial(ticks, system_share)
    share = np.where(ticks > 0, sys_ticks / np.maximum(ticks, 1), 0.0)
    return cpu * (1 - share), cpu * share


def rounds_of(n_rounds: int, per_round: int) -> list[int]:
    return [r for r in range(1, n_rounds + 1) for _ in range(per_round)]


def test_every_metric_has_a_unit_and_the_default_needs_no_pmu() -> None:
    assert next(iter(mx.METRICS)) == mx.WALL and mx.DEFAULT[0] == mx.WALL
    assert not any(mx.metric(n).counter for n in mx.DEFAULT)
    assert {mx.metric(n).unit for n in mx.METRICS} == {"s", "B", "count"}
    assert mx.ordered(["peak-rss", "cpu", "wall", "cpu"]) == ["wall", "cpu", "peak-rss"]
    # what may be 0 for a run is judged on round means; wall and peak memory never are 0
    assert [n for n in mx.METRICS if not mx.metric(n).round_means] == ["wall", "peak-rss"]


def test_a_metric_judged_on_round_means_is_the_ratio_of_mean_cpu_time() -> None:
    rng = np.random.default_rng(1)
    rounds = rounds_of(8, 3)
    base = [0.0, 0.004, 0.002] * 8  # a run may show 0 (below a tick)
    cand = [0.004, 0.002, 0.006] * 8
    base = [x + float(rng.uniform(0, 0.001)) * (x > 0) for x in base]
    means_b = [float(np.mean(base[3 * i:3 * i + 3])) for i in range(8)]
    means_c = [float(np.mean(cand[3 * i:3 * i + 3])) for i in range(8)]
    j = mx.judge("system", base, rounds, cand, rounds, alpha=0.05, min_effect=0.02)
    # the effect from the ratio and the baseline's level (geometric means of the round means)
    gm_b, gm_c = (float(np.exp(np.mean(np.log(m)))) for m in (means_b, means_c))
    assert j["effect"] == pytest.approx(gm_c - gm_b)
    assert j["verdict"] == "slower" and j["unit"] == "s" and j["estimand"] == mx.PER_ROUND
    assert j["baseline"] == pytest.approx(float(np.mean(base)))
    # the same judged by hand: one arithmetic mean per round through paired_verdict
    by_hand = paired.paired_verdict(means_b, range(1, 9), means_c, range(1, 9), alpha=0.05,
                                    min_effect=0.02)
    assert j["speedup"] == pytest.approx(by_hand.speedup)
    assert j["round_ratios"] == pytest.approx(list(by_hand.round_ratios))
    results.MetricVerdict(**j)  # the record results.json keeps


def test_a_round_whose_mean_is_zero_gives_no_ratio_and_no_answer() -> None:
    rounds = rounds_of(6, 2)
    base = [0.0, 0.0] + [0.001, 0.0] * 5  # round 1: every run below a tick
    cand = [0.004, 0.002] * 6
    j = mx.judge("system", base, rounds, cand, rounds, alpha=0.05, min_effect=0.02)
    assert j["verdict"] == "inconclusive" and j["p_value"] is None and j["mde"] is None
    assert "0 in every run of a round (1 of 6 rounds)" in j["note"]
    assert j["effect"] == pytest.approx((0.003 * 6 - 0.0005 * 5) / 6)
    assert j["effect_ci_low"] is not None and j["effect_ci_low"] > 0  # the effect is still given
    few = mx.judge("system", [0.0] * 4, rounds_of(2, 2), [0.001] * 4, rounds_of(2, 2),
                   alpha=0.05, min_effect=0.02)
    assert few["verdict"] == "withheld" and math.isnan(few["speedup"])


def test_peak_memory_is_judged_per_run_and_its_effect_is_in_bytes() -> None:
    rng = np.random.default_rng(3)
    rounds = rounds_of(10, 5)
    base = (3.2 * 2**20 + rng.integers(0, 8, 50) * 4096).tolist()
    cand = [b + 64 * 2**20 for b in base]
    j = mx.judge("peak-rss", base, rounds, cand, rounds, alpha=0.05, min_effect=0.02)
    assert j["verdict"] == "slower" and j["estimand"] == mx.PER_RUN and j["unit"] == "B"
    assert j["effect"] == pytest.approx(64 * 2**20, rel=0.01)


def test_an_aa_of_every_metric_stays_within_the_false_alarm_rate() -> None:
    """A/A, simulated: wall time log-normal with drift between blocks, CPU time log-normal
    around 4 ms split into user and system by ticks (most runs show 0 system time), peak memory
    in whole pages. Each metric says faster or slower in at most alpha of the replicates
    (a one-sided binomial bound: the rate may exceed 5 % by chance with p < 0.01 only)."""
    rng = np.random.default_rng(20261203)
    reps, n_rounds, per = 200, 10, 10
    rounds = rounds_of(n_rounds, per)
    alarms = dict.fromkeys(("wall", "cpu", "user", "system", "peak-rss"), 0)
    for _ in range(reps):
        data: dict[str, list[list[float]]] = {n: [] for n in alarms}
        drift = rng.normal(0, 0.03, (2, n_rounds)).repeat(per, axis=1)
        for side in range(2):
            wall = 0.02 * np.exp(rng.normal(0, 0.2, n_rounds * per) + drift[side])
            cpu = 0.004 * np.exp(rng.normal(0, 0.15, n_rounds * per) + drift[side])
            user, system = ticked(rng, cpu, 0.3)
            rss = 3.2 * 2**20 + rng.integers(0, 16, n_rounds * per) * 4096.0
            for n, v in (("wall", wall), ("cpu", cpu), ("user", user), ("system", system),
                         ("peak-rss", rss)):
                data[n].append(v.tolist())
        for n in alarms:
            j = mx.judge(n, data[n][0], rounds, data[n][1], rounds, alpha=0.05,
                         min_effect=0.02 if n in ("wall", "peak-rss") else 0.1)
            alarms[n] += j["verdict"] in ("faster", "slower")
    limit = 0.05 * reps + 2.33 * math.sqrt(0.05 * 0.95 * reps)  # 10 + 7.2 of 200
    assert all(count <= limit for count in alarms.values()), alarms


def test_a_known_cpu_change_is_found_and_a_sleep_is_not_cpu() -> None:
    """5 ms of CPU work on 4 ms: CPU slower by about 5 ms; 5 ms of sleep: CPU equivalent."""
    rng = np.random.default_rng(5)
    rounds = rounds_of(10, 10)
    cpu = 0.004 * np.exp(rng.normal(0, 0.15, 100))
    spin = 0.009 * np.exp(rng.normal(0, 0.15, 100))
    sleep = 0.004 * np.exp(rng.normal(0, 0.15, 100))
    j = mx.judge("cpu", cpu.tolist(), rounds, spin.tolist(), rounds, alpha=0.05, min_effect=0.1)
    assert j["verdict"] == "slower" and j["effect_ci_low"] < 0.005 < j["effect_ci_high"]
    k = mx.judge("cpu", cpu.tolist(), rounds, sleep.tolist(), rounds, alpha=0.05,
                 min_effect=0.1)
    assert k["verdict"] == "equivalent"


# --- hyperfine 2's export, read back --------------------------------------------------------


def run2(wall: float, cpu: float, rss: float = 3e6, code: int | None = 0) -> dict[str, Any]:
    def v(x: float, unit: str = "second") -> dict[str, Any]:
        return {"value": x, "unit": unit}
    return {"time_wall_clock": v(wall), "time_cpu": v(cpu), "time_user": v(cpu),
            "time_system": v(0.0), "memory_peak_resident": v(rss, "byte"), "exit_code": code}


def test_the_export_of_hyperfine_2_gives_every_run_of_every_metric() -> None:
    result = {"command": "x", "measurements": [run2(0.01, 0.002), run2(0.03, 0.004, code=None),
                                               run2(0.02, 0.003)]}
    got = hyperfine2.runs(result, ["wall", "cpu", "peak-rss"])
    assert got.times == [0.01, 0.03, 0.02] and got.exit_codes == [0, -1, 0]
    assert got.values == {"cpu": [0.002, 0.004, 0.003], "peak-rss": [3e6] * 3}
    assert hyperfine2.total(result) == pytest.approx(0.06)
    assert hyperfine2.kept({**result, "summary": {}, "name": "n"}) == {"command": "x", "name": "n"}
    old = {"times": [0.01, 0.02], "exit_codes": [0, 0], "median": 0.015, "user": 0.001}
    assert hyperfine2.runs(old, ["cpu"]).values == {} and hyperfine2.runs(old).times == [0.01, 0.02]
    broken = {"measurements": [{"time_wall_clock": {"value": 0.01}, "exit_code": 0}]}
    with pytest.raises(BenchmarkError, match="no cpu value for run 1"):
        hyperfine2.runs(broken, ["cpu"])


def test_the_metrics_option_puts_wall_time_first() -> None:
    assert hyperfine2.option(["peak-rss", "cpu"]) == [
        "--metrics", "time_wall_clock,time_cpu,memory_peak_resident"]
    assert hyperfine2.option([]) == []
    assert hyperfine2.parse_version("hyperfine 2.0.0") == (2, 0, 0)
    assert hyperfine2.parse_version("hyperfine 1.15") == (1, 15, 0)
    assert hyperfine2.parse_version("nothing") is None


def fake_hyperfine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """A hyperfine on PATH that says ``version`` and, like hyperfine 2 without a PMU, cannot
    open a hardware counter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "hyperfine"
    script.write_text(f"""#!/bin/sh
case "$*" in
  *--version*) echo "hyperfine {version}"; exit 0 ;;
  *instructions*|*cpu_cycles*) echo "Error: Metric 'instructions' is unavailable for 'true'." >&2; exit 1 ;;
esac
exit 0
""")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    hyperfine2.version.cache_clear()
    hyperfine2.available.cache_clear()


def test_an_older_hyperfine_is_refused_with_the_install_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hyperfine(tmp_path, monkeypatch, "1.15.0")
    try:
        with pytest.raises(RequirementError) as err:
            hyperfine2.require()
        assert err.value.exit_code == 16 and "hyperfine 1.15.0" in err.value.message
        assert "cargo install hyperfine --version 2.0.0" in (err.value.hint or "")
    finally:
        hyperfine2.version.cache_clear()


def test_a_counter_this_machine_lacks_is_refused_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hyperfine(tmp_path, monkeypatch, "2.0.0")
    try:
        hyperfine2.check(["wall", "cpu", "peak-rss"], "scenario run")  # no counter: nothing to ask
        with pytest.raises(RequirementError) as err:
            hyperfine2.check(["wall", "instructions", "cycles"], "scenario run")
        assert err.value.exit_code == 16
        assert "scenario run: this machine cannot measure instructions, cycles" in \
            err.value.message
    finally:
        hyperfine2.version.cache_clear()
        hyperfine2.available.cache_clear()


# --- the scenario's metrics and the comparison's gate -----------------------------------------


def test_the_metrics_key_names_metrics_with_their_own_min_effect() -> None:
    sc = CommandConfig(name="r", command=["x"], metrics=["peak-rss", {"name": "cpu",
                                                                      "min_effect": 0.1}])
    assert sc.metric_names == ["wall", "cpu", "peak-rss"]  # wall time always, first
    assert sc.metric_min_effect("cpu", 0.02) == 0.1
    assert sc.metric_min_effect("peak-rss", 0.02) == 0.02
    assert CommandConfig(name="r", command=["x"]).metric_names == list(mx.DEFAULT)
    for bad, why in ((["cpus"], "unknown metric 'cpus' (did you mean 'cpu'?)"),
                     (["cpu", "cpu"], "each metric once"),
                     ([{"name": "wall", "min_effect": 0.1}], "the comparison's `min_effect`"),
                     ([{"name": "cpu", "min_effect": 2}], "less than 1")):
        with pytest.raises(ValueError, match=re.escape(why)):
            CommandConfig(name="r", command=["x"], metrics=bad)


def test_a_gate_on_a_metric_a_scenario_does_not_measure_is_refused() -> None:
    comp = {"target": "t", "candidates": {"fix": ["fix"]}, "gate": ["wall", "cpu"],
            "scenarios": [{"name": "run", "command": ["x"], "metrics": ["wall", "peak-rss"]}]}
    with pytest.raises(ValidationError, match="gate: 'cpu' is not among the metrics of "
                                              "scenario run"):
        config.Comparison.model_validate(comp)
    with pytest.raises(ValidationError, match="unknown metric 'walls'"):
        config.Comparison.model_validate({**comp, "gate": ["walls"]})
    assert config.Comparison.model_validate({**comp, "gate": ["peak-rss"]}).gate == ["peak-rss"]
    default = {k: v for k, v in comp.items() if k != "gate"}
    assert config.Comparison.model_validate(default).gate == ["wall"]
    assert config.gate_problems(["cpu"], []) == []  # no timed scenario: nothing to lack


# --- results.json version 6 -------------------------------------------------------------------


def test_a_version_5_file_reads_its_user_and_system_arrays_as_metrics() -> None:
    data = doc(10, 4, 0.0, seed=2)
    assert data["schema_version"] == 5
    cell = data["scenarios"][0]["cells"][0]
    n = len(cell["samples"]["times"])
    cell["samples"]["user"] = [0.001] * n
    cell["samples"]["system"] = [0.002] * n
    res = results.parse(data, "t")
    assert res.schema_version == 8
    got = res.scenarios[0].cells[0].samples.metrics  # type: ignore[attr-defined]
    assert got["user"] == [0.001] * n and got["system"] == [0.002] * n
    assert got["cpu"] == pytest.approx([0.003] * n)
    assert "peak-rss" not in got
    other = res.scenarios[0].cells[1].samples.metrics  # type: ignore[attr-defined]
    assert other == {}  # empty arrays (what hyperfine 1.x gave): nothing
    assert res.scenarios[0].comparisons[0].metrics is None  # type: ignore[attr-defined]
    assert res.gate_metrics is None and "gate_metrics" not in res.dump()
