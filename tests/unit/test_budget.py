"""``compare --budget DURATION``: the duration parsed, the rounds the pace allows, and the ``more``
callback of ``bench.measure`` on synthetic runs of hyperfine 2's form (wall and CPU time): it
stops when every gated metric is decided, spends alpha over the looks it planned, and says the
half-width per metric at each look and the MDE reached."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchbench import build, results, scenarios
from patchbench.analysis import sequential
from patchbench.measure import bench
from patchbench.measure.bench import Cell, Invocation
from patchbench.runs import document
from patchbench.scenarios import budget
from patchbench.scenarios.command import CommandConfig
from patchbench.scenarios.stopping import precision_rule
from patchbench.util.layout import Layout
from tests.unit.test_report_shows_effect_and_answer import doc


def test_a_duration_is_read_in_seconds_minutes_or_hours() -> None:
    assert sequential.parse_duration("30s") == 30
    assert sequential.parse_duration("5m") == 300
    assert sequential.parse_duration("1h") == 3600
    assert sequential.parse_duration("1m30s") == 90
    assert sequential.parse_duration("45") == 45
    for bad in ("", "5x", "-3", "0s", "m"):
        with pytest.raises(ValueError):
            sequential.parse_duration(bad)
    assert sequential.fmt_duration(125) == "2m05s" and sequential.fmt_duration(7) == "7s"


def test_the_pace_of_the_first_rounds_plans_how_far_the_share_reaches() -> None:
    assert sequential.budget_rounds(10, 20.0, 100.0, 2) == 50  # 2 s a round: 50 rounds
    assert sequential.budget_rounds(10, 20.0, 101.0, 4) == 48  # whole blocks of 4
    assert sequential.budget_rounds(10, 20.0, 5.0, 2) == 10  # never fewer than done
    b = sequential.Budget(seconds=60, alpha=0.05, metrics=("wall",), sets=3)
    assert b.share(100.0) == 20.0 and b.deadline == 160.0  # the clock starts with the first set
    b.sets = 2
    assert b.share(130.0) == 15.0
    assert sequential.decided(["slower", "equivalent"]) and not sequential.decided([])
    assert not sequential.decided(["slower", "inconclusive"])


class Clock:
    """The monotonic clock scenarios/budget.py reads, advanced only by the fake hyperfine."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class Hyperfine2:
    """Stands in for bench.hyperfine and bench.hyperfine_many with results of hyperfine 2's
    form: the candidate ``ratio`` times the baseline's wall time and ``cpu_ratio`` times its CPU
    time, CV ``cv`` each; command ``i`` (from 0) advances ``clock`` by ``cost(i)`` seconds (the
    pace the budget sees)."""

    def __init__(self, cv: float, ratio: float, cpu_ratio: float, clock: Clock,
                 cost: Callable[[int], float] = lambda i: 1.0):
        self.rng = np.random.default_rng(7)
        self.cv, self.ratio, self.cpu_ratio = cv, ratio, cpu_ratio
        self.clock, self.cost, self.calls = clock, cost, 0

    def __call__(self, inv: Invocation, *, runs: int, **kw: Any) -> dict[str, Any]:
        self.clock.now += self.cost(self.calls)
        self.calls += 1
        cand = inv.command[0] != "baseline"
        wall = 0.02 * (self.ratio if cand else 1) * np.exp(self.rng.normal(0, self.cv, runs))
        cpu = 0.004 * (self.cpu_ratio if cand else 1) * np.exp(self.rng.normal(0, self.cv, runs))

        def v(x: float) -> dict[str, Any]:
            return {"value": float(x), "unit": "second"}
        return {"command": inv.command[0], "measurements": [
            {"time_wall_clock": v(w), "time_cpu": v(c), "time_user": v(c), "time_system": v(0),
             "memory_peak_resident": {"value": 3e6, "unit": "byte"}, "exit_code": 0}
            for w, c in zip(wall, cpu, strict=True)]}

    def many(self, invs: list[Invocation], *, names: list[str], name: str,
             **kw: Any) -> list[dict[str, Any]]:
        return [self(inv, **kw) for inv in invs]


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: Hyperfine2, seconds: float,
        metrics: tuple[str, ...]) -> tuple[scenarios.ScenarioContext[CommandConfig], list[Any]]:
    built = [build.Built(build.Variant(v, ()), tmp_path / v, {"artifacts": {}}, True)
             for v in ("baseline", "fix")]
    sc = CommandConfig(name="run", command=["x"], runs=20, rounds=5,
                       metrics=["wall", {"name": "cpu", "min_effect": 0.1}])
    given = budget.start(seconds, 0.05, metrics, [sc])
    ctx = scenarios.ScenarioContext(
        scenario=sc, built=built, runtime=None, workdir=tmp_path / "w", seed=3,
        layout=Layout(tmp_path / "b", tmp_path / "r"), project_root=tmp_path, alpha=0.05,
        min_effect=0.02, until=given)
    monkeypatch.setattr(bench, "hyperfine", fake)
    monkeypatch.setattr(bench, "hyperfine_many", fake.many)
    monkeypatch.setattr(budget, "time", fake.clock)
    cells = [Cell("baseline"), Cell("fix")]
    _, order = bench.measure("run", cells, lambda c: Invocation(command=[c.variant],
                                                                 metrics=("wall", "cpu")),
                             runs=20, rounds=5, warmup=0, timeout=5, seed=3,
                             workdir=tmp_path / "w", more=precision_rule(ctx, cells, 3))
    assert given.sets == 0  # the set finished: its share is given back
    return ctx, order


def test_a_clear_change_is_decided_at_the_first_look(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, order = run(tmp_path, monkeypatch, Hyperfine2(0.02, 1.25, 2.0, Clock()), 30.0,
                     ("wall", "cpu"))
    (stop,) = ctx.stops
    assert stop.reason == "decided" and stop.stopped_at == 5 and len(order) == 5
    assert stop.target is None and stop.budget_s == 30.0 and stop.metrics == ["wall", "cpu"]
    assert stop.seconds == 10.0  # five rounds of two commands of 1 s each
    assert stop.planned_looks == [5, 8, 12, 14]  # 2 s a round: 15 rounds fit, in blocks of 2
    assert set(stop.looks[0].widths) == {"wall", "cpu"}
    assert all(w is not None and w > 0 for w in stop.looks[0].widths.values())
    assert set(stop.mde) == {"wall", "cpu"} and all(v is not None for v in stop.mde.values())
    assert ctx.alphas[""] == stop.alpha_per_look == pytest.approx(0.05 / 4)  # its set's level


def test_an_undecided_metric_adds_rounds_until_the_looks_are_spent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 10 % change of CPU time against its 10 % min_effect at a CV of 30 %: neither beyond it
    nor within it; 100 s at 2 s a round reach 50 rounds, and the set goes look by look there."""
    ctx, order = run(tmp_path, monkeypatch, Hyperfine2(0.3, 1.0, 1.10, Clock()), 100.0,
                     ("cpu",))
    (stop,) = ctx.stops
    assert stop.planned_looks == [5, 8, 12, 18, 28, 42, 50]
    assert stop.reason == "budget" and stop.stopped_at == 50 == len(order)
    assert [look.rounds for look in stop.looks] == stop.planned_looks
    assert stop.metrics == ["cpu"] and list(stop.looks[-1].widths) == ["cpu"]


def test_a_slower_pace_stops_the_set_before_a_look_it_cannot_reach(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first five rounds take 2 s each (looks planned to round 50 of 100 s), the later ones
    10 s: at round 12 the next look (18) would end past the share."""
    fake = Hyperfine2(0.3, 1.0, 1.10, Clock(), cost=lambda i: 1.0 if i < 10 else 5.0)
    ctx, order = run(tmp_path, monkeypatch, fake, 100.0, ("cpu",))
    (stop,) = ctx.stops
    assert stop.planned_looks[-1] == 50
    assert stop.reason == "time" and stop.stopped_at == 12 == len(order)


def test_the_report_says_the_budget_the_half_widths_and_the_mde() -> None:
    data = doc(10, 5, 0.005, seed=1)
    data["stopping"] = [{
        "scenario": "run", "target": None, "max_rounds": 24, "alpha": 0.05,
        "alpha_per_look": 0.0125, "planned_looks": [10, 16, 20, 24],
        "looks": [{"rounds": 10, "half_width": 0.03, "widths": {"wall": 0.03, "cpu": 0.01}}],
        "stopped_at": 10, "reason": "decided", "rule": sequential.BUDGET_RULE,
        "budget_s": 30.0, "metrics": ["wall", "cpu"], "seconds": 6.2,
        "mde": {"wall": 0.041, "cpu": 0.02}}]
    res = results.parse(data, "t")
    md = document.markdown(res)
    assert "`--budget 30s` for the gated metrics wall, cpu" in md
    assert "round 10: wall ±3.0 %, cpu ±1.0 %" in md
    said = ("stopped at round 10 after 0.1 min of measuring (--budget 30s): every gated metric "
            "decided; CI half-width reached: wall ±3.0 %, cpu ±1.0 %; MDE reached: wall ±4.1 %, "
            "cpu ±2.0 %")
    assert said in md
    assert document.stopping_text(res) == [f"run: {said}"]


def test_a_decided_candidate_stops_and_the_time_goes_to_the_undecided_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two candidates: one 25 % faster (decided at the first look), one with CPU time 10 % up
    against a 10 % min_effect at a CV of 30 % (never decided). The first stops being measured
    after the first look; the rounds after it run the baseline and the other only, and the
    looks were planned for that faster pace (the baseline and one candidate a round)."""
    class PerVariant(Hyperfine2):
        def __call__(self, inv: Invocation, *, runs: int, **kw: Any) -> dict[str, Any]:
            self.ratio, self.cpu_ratio = {"baseline": (1.0, 1.0), "fix": (1.25, 2.0),
                                          "other": (1.0, 1.10)}[inv.command[0]]
            return super().__call__(inv, runs=runs, **kw)

    fake = PerVariant(0.3, 1.0, 1.0, Clock())
    built = [build.Built(build.Variant(v, ()), tmp_path / v, {"artifacts": {}}, True)
             for v in ("baseline", "fix", "other")]
    sc = CommandConfig(name="run", command=["x"], runs=18, rounds=6,
                       metrics=["wall", {"name": "cpu", "min_effect": 0.1}])
    given = budget.start(60.0, 0.05, ("cpu",), [sc])
    ctx = scenarios.ScenarioContext(
        scenario=sc, built=built, runtime=None, workdir=tmp_path / "w", seed=3,
        layout=Layout(tmp_path / "b", tmp_path / "r"), project_root=tmp_path, alpha=0.05,
        min_effect=0.02, until=given)
    monkeypatch.setattr(bench, "hyperfine", fake)
    monkeypatch.setattr(bench, "hyperfine_many", fake.many)
    monkeypatch.setattr(budget, "time", fake.clock)
    cells = [Cell("baseline"), Cell("fix"), Cell("other")]
    samples, order = bench.measure(
        "run", cells, lambda c: Invocation(command=[c.variant], metrics=("wall", "cpu")),
        runs=18, rounds=6, warmup=0, timeout=5, seed=3, workdir=tmp_path / "w",
        more=precision_rule(ctx, cells, 3))
    (stop,) = ctx.stops
    assert list(stop.dropped) == ["fix"]
    at = stop.dropped["fix"]  # a look before the last
    assert at in stop.planned_looks and at < stop.stopped_at == len(order)
    assert samples[cells[1]].rounds[-1] == at and samples[cells[2]].rounds[-1] == len(order)
    assert all(len(row) == 3 for row in order[:at])
    assert all(sorted(row) == ["baseline", "other"] for row in order[at:])
    # 6 rounds of 3 commands took 18 s; planned at the pace of 2 commands a round (2 s), the
    # 60 s reach 30 rounds (at 3 s a round: 20)
    assert stop.planned_looks[-1] == 30 and stop.reason in ("budget", "time")
    assert f"decided earlier and no longer measured: fix at round {at}" in \
        budget.describe(stop.stopped_at, stop.reason, stop.seconds, stop.budget_s, stop.mde,
                        stop.looks[-1].widths, stop.dropped)


def test_the_rounds_needed_come_from_the_rounds_not_back_from_the_interval() -> None:
    """The first look's "needs about N rounds" takes the sd of the per-round log ratios
    (widened as the verdict's); inverting the interval, whose degrees of freedom the widening
    cuts, overstated it (a run on 2026-12-05 said 234,737 rounds and passed at 124)."""
    import math

    from patchbench.analysis import gating

    rng = np.random.default_rng(3)
    d = rng.normal(0, 0.02, 10)
    rec = {"round_ratios": np.exp(d).tolist(), "round_ids": list(range(1, 11))}
    sd = budget._sd(rec, None)
    assert sd is not None and 0.999 * float(d.std(ddof=1)) <= sd < 2 * float(d.std(ddof=1))
    assert budget._sd({"round_ratios": [1.0], "round_ids": [1]}, None) is None
    assert gating.rounds_needed(sd, 0.02, 0.05 / 9) < 1000
    assert math.isfinite(sd)
