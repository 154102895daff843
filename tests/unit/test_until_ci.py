"""``--until-ci PCT --max-rounds N``: the planned looks, alpha spent over them, the
``more`` callback of ``bench.measure`` on synthetic samples, and what the saved run and report.md
say about the stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchbench import build, results, scenarios
from patchbench.analysis import paired, sequential
from patchbench.errors import ConfigError
from patchbench.measure import bench
from patchbench.measure.bench import Cell, Invocation, Samples
from patchbench.runs import document
from patchbench.scenarios.command import CommandConfig
from patchbench.scenarios.stopping import precision_rule
from patchbench.util.layout import Layout
from tests.unit.test_report_shows_effect_and_answer import doc


def test_the_looks_grow_by_half_in_whole_blocks_and_end_at_the_budget() -> None:
    assert sequential.planned_looks(5, 20, 2) == [5, 8, 12, 18, 20]
    assert sequential.planned_looks(5, 60, 2) == [5, 8, 12, 18, 28, 42, 60]
    assert sequential.planned_looks(10, 10, 2) == [10]  # no budget beyond: one look
    assert sequential.planned_looks(5, 40, 6) == [5, 12, 18, 30, 40]  # three variants: blocks of 6
    assert sequential.planned_looks(1, 4, 2) == [1, 2, 4]
    with pytest.raises(ValueError):
        sequential.planned_looks(10, 5, 2)
    assert sequential.alpha_per_look(0.05, [5, 8, 12, 18, 20]) == pytest.approx(0.01)


def test_the_rule_stops_at_the_target_or_the_budget_and_otherwise_goes_to_the_next_look() -> None:
    looks = [5, 8, 12]
    assert sequential.decide(looks, 5, [0.05, 0.01], 0.03) == sequential.Decision(3, "")
    assert sequential.decide(looks, 8, [0.02, 0.03], 0.03) == sequential.Decision(0, "target")
    assert sequential.decide(looks, 8, [0.02, None], 0.03) == sequential.Decision(4, "")
    assert sequential.decide(looks, 12, [0.05], 0.03) == sequential.Decision(0, "budget")
    assert sequential.decide(looks, 5, [], 0.03).add == 3  # nothing to measure: no early stop
    assert sequential.half_width(1.0 / 1.02, 1.02) == pytest.approx(0.02)
    assert sequential.half_width(None, 1.1) is None
    assert sequential.describe(23, "target", 0.019, 0.02) == \
        "stopped at round 23: CI half-width 1.9 % <= 2 %"
    assert sequential.describe(20, "budget", 0.031, 0.02) == \
        "stopped at round 20: budget spent (CI half-width 3.1 %, target 2 %)"


class NoisyHyperfine:
    """Stands in for bench.hyperfine and bench.hyperfine_many: log-normal times, the candidate
    ``ratio`` times the baseline's, CV ``cv``."""

    def __init__(self, cv: float, ratio: float = 1.0, seed: int = 1):
        self.rng = np.random.default_rng(seed)
        self.cv, self.ratio = cv, ratio
        self.rounds: list[int] = []

    def __call__(self, inv: Invocation, *, runs: int, warmup: int, per_run_timeout: float,
                 export: Path, log: Path, name: str) -> dict[str, Any]:
        self.rounds.append(int(name.rsplit("round ", 1)[1].split("/")[0]))
        centre = 0.1 * (self.ratio if inv.command[0] != "baseline" else 1.0)
        times = (centre * np.exp(self.rng.normal(0, self.cv, runs))).tolist()
        return {"times": times, "exit_codes": [0] * runs, "median": float(np.median(times))}

    def many(self, invs: list[Invocation], *, names: list[str], name: str,
             **kw: Any) -> list[dict[str, Any]]:
        """bench.hyperfine_many (a round's cells in one call): each command as one call."""
        return [self(inv, name=n, **kw) for inv, n in zip(invs, names, strict=True)]


def context(tmp_path: Path, until: sequential.UntilCI | None, rounds: int = 5
            ) -> scenarios.ScenarioContext[CommandConfig]:
    built = [build.Built(build.Variant(v, ()), tmp_path / v, {"artifacts": {}}, True)
             for v in ("baseline", "fix")]
    sc = CommandConfig(name="run", command=["x"], runs=4 * rounds, rounds=rounds)
    return scenarios.ScenarioContext(
        scenario=sc, built=built, runtime=None, workdir=tmp_path / "w", seed=3,
        layout=Layout(tmp_path / "b", tmp_path / "r"), project_root=tmp_path, alpha=0.05,
        min_effect=0.02, until=until)


def measure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ctx: scenarios.ScenarioContext[Any],
            fake: NoisyHyperfine) -> tuple[dict[Cell, Samples], list[list[str]]]:
    monkeypatch.setattr(bench, "hyperfine", fake)
    monkeypatch.setattr(bench, "hyperfine_many", fake.many)
    cells = [Cell("baseline"), Cell("fix")]
    return bench.measure("run", cells, lambda c: Invocation(command=[c.variant]), runs=20,
                         rounds=5, warmup=0, timeout=5, seed=3, workdir=tmp_path / "w",
                         more=precision_rule(ctx, cells, 3))


def test_quiet_samples_stop_at_the_first_look_that_reaches_the_target(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = context(tmp_path, sequential.UntilCI(target=0.03, max_rounds=20, alpha=0.05))
    samples, order = measure(tmp_path, monkeypatch, ctx, NoisyHyperfine(cv=0.01))
    (stop,) = ctx.stops
    assert stop.reason == "target" and stop.stopped_at == 5 and len(order) == 5
    assert stop.planned_looks == [5, 8, 12, 18, 20]
    assert ctx.alpha == pytest.approx(0.01) == stop.alpha_per_look  # the comparisons' level
    assert stop.looks[-1].half_width is not None and stop.looks[-1].half_width <= 0.03
    assert max(samples[Cell("fix")].rounds) == 5


def test_noisy_samples_add_rounds_look_by_look_until_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = context(tmp_path, sequential.UntilCI(target=0.001, max_rounds=20, alpha=0.05))
    fake = NoisyHyperfine(cv=0.2)
    samples, order = measure(tmp_path, monkeypatch, ctx, fake)
    (stop,) = ctx.stops
    assert stop.reason == "budget" and stop.stopped_at == 20
    assert [look.rounds for look in stop.looks] == [5, 8, 12, 18, 20]
    assert all(look.half_width is not None and look.half_width > 0.001 for look in stop.looks)
    # the order is the balanced order of 20 rounds, every round once per cell
    cells = [Cell("baseline"), Cell("fix")]
    assert order == [[c.label for c in r] for r in bench.schedule(cells, 20, 3)]
    assert sorted(set(fake.rounds)) == list(range(1, 21))
    assert samples[Cell("fix")].rounds == [r for r in range(1, 21) for _ in range(4)]
    # the looks' widths are those of the verdict at the look's level, with the signs of the
    # order the rounds ran in (as the saved verdict has them)
    sb, sk = samples[Cell("baseline")], samples[Cell("fix")]
    v = paired.paired_verdict(sb.times, sb.rounds, sk.times, sk.rounds, alpha=0.01,
                              min_effect=0.02,
                              signs=paired.neighbour_signs(order, "baseline", "fix"))
    assert stop.looks[-1].half_width == pytest.approx(sequential.half_width(v.ci_low, v.ci_high))


def test_without_the_option_or_a_candidate_there_is_no_rule(tmp_path: Path) -> None:
    assert precision_rule(context(tmp_path, None), [Cell("baseline"), Cell("fix")], 1) is None
    ctx = context(tmp_path, sequential.UntilCI(target=0.03, max_rounds=20, alpha=0.05))
    assert precision_rule(ctx, [Cell("overhead")], 1) is None  # the burst kind's launcher cost
    with pytest.raises(ConfigError, match="--max-rounds 4"):
        precision_rule(context(tmp_path, sequential.UntilCI(0.03, 4, 0.05)),
                       [Cell("baseline"), Cell("fix")], 1)


def test_the_saved_run_and_report_say_where_and_why_it_stopped() -> None:
    data = doc(10, 5, 0.005, seed=1)
    plain = results.parse(data, "t")
    assert "stopping" not in plain.dump()  # a run without --until-ci: no key at all
    stop = {"scenario": "run", "target": 0.03, "max_rounds": 20, "alpha": 0.05,
            "alpha_per_look": 0.01, "planned_looks": [5, 8, 12, 18, 20],
            "looks": [{"rounds": 5, "half_width": 0.05}, {"rounds": 8, "half_width": 0.04},
                      {"rounds": 12, "half_width": 0.021}],
            "stopped_at": 12, "reason": "target", "rule": sequential.RULE}
    res = results.parse({**data, "stopping": [stop]}, "t")
    assert res.dump()["stopping"][0]["stopped_at"] == 12
    md = document.markdown(res)
    assert "stopped at round 12: CI half-width 2.1 % <= 3 %" in md
    assert "`--until-ci 3 --max-rounds 20`, looks planned at rounds 5, 8, 12, 18, 20" in md
    assert "each judged at alpha 0.01 (0.05 spent over 5 looks)" in md
    assert "stopped at round" not in document.markdown(plain)
