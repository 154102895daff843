"""A bisect's error control without builds: the planned looks, alpha shared over the planned
steps (and what is held back for steps beyond them), the first look raised for counts until it
has the power, Fisher's power and the runs it needs, the one-sided count comparison in either
direction, a time comparison over several conditions, and the bisect.json rule field."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from patchbench.analysis import stats
from patchbench.bisect import levels, record, render
from patchbench.measure import hangs
from patchbench.scenarios import steps


def test_looks_double_up_to_the_budget() -> None:
    assert levels.looks(1, 4) == [1, 2, 4]
    assert levels.looks(1, 3) == [1, 2]
    assert levels.looks(1, 1) == [1]
    assert levels.looks(2, 8) == [2, 4, 8]
    assert levels.looks(4, 4) == [4]
    with pytest.raises(ValueError):
        levels.looks(0, 4)
    # each comparison of each look: the share over the looks, then over the comparisons
    assert levels.per_comparison(0.05 / 7, [1, 2, 4], 2) == pytest.approx(0.05 / 42)


def test_the_steps_never_spend_more_than_alpha() -> None:
    shares = levels.StepShares(0.05)
    assert shares.plan(6) == pytest.approx(0.05 / 7)
    taken = [shares.take() for _ in range(6)]
    assert taken == [pytest.approx(0.05 / 7)] * 6
    extra = [shares.take() for _ in range(3)]  # beyond the plan: half of what is held back
    assert extra == [pytest.approx(0.05 / 7 / 2), pytest.approx(0.05 / 28), pytest.approx(0.05 / 56)]
    shares.plan(4)  # a merged branch: what is left, planned again
    taken += extra + [shares.take() for _ in range(30)]
    assert sum(taken) < 0.05
    unspent = levels.StepShares(0.05)
    unspent.plan(6)
    unspent.take()  # the chain ended after one step: its unspent shares go to the branch
    assert unspent.plan(2) == pytest.approx((0.05 - 0.05 / 7) / 3)


def test_the_first_look_is_raised_until_it_has_the_power() -> None:
    asked: list[tuple[int, float]] = []

    def power(runs: int, level: float) -> float:
        asked.append((runs, level))
        return 0.9 if runs >= 300 else 0.2

    first, p = levels.first_look(power, 100, 4, 0.01, 1)
    assert (first, p) == (4, 0.9)
    # at 4x there is one look left, so it is judged at the whole share
    assert asked == [(100, pytest.approx(0.01 / 3)), (200, pytest.approx(0.01 / 2)),
                     (400, pytest.approx(0.01))]
    assert levels.first_look(power, 100, 2, 0.01, 1) == (None, 0.2)  # the budget cannot
    assert levels.first_look(lambda n, level: None, 100, 4, 0.01, 2) == (1, None)  # time


def test_fisher_power_is_exact() -> None:
    runs, low, high, level = 40, 0.05, 0.3, 0.01

    def binom(k: int, p: float) -> float:
        return math.comb(runs, k) * p**k * (1 - p) ** (runs - k)

    brute = math.fsum(binom(x, high) * binom(y, low) for x in range(runs + 1)
                      for y in range(runs + 1)
                      if stats.fisher_exact(x, runs - x, y, runs - y, "greater") < level)
    assert hangs.fisher_power(runs, low, high, level) == pytest.approx(brute, rel=1e-9)
    assert hangs.fisher_power(runs, high, low, level) == 0.0  # not this way
    # a rate of 4 in 3000 against none: 3000 runs are hopeless, the runs needed are about 9000
    assert hangs.fisher_power(3000, 0.0, 4 / 3000, 0.0024) < 0.1
    need = hangs.runs_for_power(0.0, 4 / 3000, 0.0024, 0.8)
    assert need is not None and 8000 < need < 11000
    assert hangs.fisher_power(need, 0.0, 4 / 3000, 0.0024) >= 0.8
    assert hangs.runs_for_power(0.01, 0.01, 0.05, 0.8) is None


def test_fisher_power_by_the_normal_approximation_when_many_hang() -> None:
    exact = hangs.fisher_power(3000, 0.02, 0.03, 0.01)  # 150 hangs expected: exact
    assert 0.4 < exact < 0.7
    many = hangs.fisher_power(30000, 0.02, 0.03, 0.01)  # 1500: the normal approximation
    assert many > 0.99


def test_small_counts_against_none() -> None:
    def two(k: int) -> float:
        return hangs.compare_hangs(hangs.HangCount("good", 0, 3000),
                                   hangs.HangCount("bad", k, 3000)).p_value

    assert two(2) == pytest.approx(0.5, abs=1e-3)
    assert two(5) > 0.05 > two(6)  # 6 is the smallest count significant against 0
    cmp = hangs.compare_hangs(hangs.HangCount("good", 0, 3000), hangs.HangCount("bad", 5, 3000))
    assert cmp.p_more == pytest.approx(1 / 32, rel=0.01) and cmp.p_less == 1.0


def counts_of(table: dict[str, tuple[int, int]]) -> Any:
    return table  # ByCount reads it through its counts function


def test_a_count_comparison_says_which_way_one_sided() -> None:
    rule = steps.ByCount(lambda result, variant: result[variant])  # type: ignore[index]
    result = counts_of({"good": (0, 3000), "bad": (5, 3000), "mid": (0, 3000)})
    more = rule.pair(result, "good", "bad", alpha=0.05, min_effect=0.02, seed=0)
    # two-sided p 0.062: no difference; one-sided 0.031: more hangs
    assert more.differs is False and more.shift == more.way == "more"
    assert more.p_way == pytest.approx(1 / 32, rel=0.01)
    assert more.text == ("hangs 5 of 3000 vs 0 of 3000, Fisher p 0.062 (one-sided: more 0.031, "
                         "fewer 1)")
    fewer = rule.pair(result, "bad", "mid", alpha=0.05, min_effect=0.02, seed=0)
    assert fewer.shift == fewer.way == "less" and fewer.differs is False
    none = rule.pair(result, "good", "mid", alpha=0.05, min_effect=0.02, seed=0)
    assert none.shift is none.way is None and none.differs is False  # never shown the same
    assert rule.ways == ("more hangs", "fewer hangs") and not rule.shows_same
    power = rule.power(result, "good", "bad", 3000, 0.01)
    assert power == pytest.approx(hangs.fisher_power(3000, 0.0, 5 / 3000, 0.01))
    assert rule.power(result, "bad", "good", 3000, 0.01) == power  # either way round


def verdict(v: str, speedup: float = 1.0, p: float = 0.01, **kw: Any) -> dict[str, Any]:
    return {"verdict": v, "ci_low": speedup * 0.99, "ci_high": speedup * 1.01,
            "speedup": speedup, "p_value": p, "note": "too few rounds", "alpha": 0.05,
            "resolution_s": None, **kw}


def test_a_time_comparison_over_conditions() -> None:
    slower, faster = verdict("slower", 0.9), verdict("faster", 1.1)
    same, unclear = verdict("equivalent", p=0.6), verdict("inconclusive", p=0.6)
    one = steps.judged_pair([(None, slower)])
    assert (one.differs, one.shift, one.way, one.p_way) == (True, "more", "more", 0.005)
    assert one.text == "1.111x [1.100, 1.122], p 0.01 (slower)"
    assert steps.judged_pair([(None, faster)]).shift == "less"
    assert steps.judged_pair([("a", slower), ("b", unclear)]).shift == "more"
    both = steps.judged_pair([("a", slower), ("b", faster)])
    assert both.differs is True and both.shift is both.way is None
    assert steps.judged_pair([("a", same), ("b", same)]).shift == "same"
    assert steps.judged_pair([("a", same), ("b", unclear)]).shift is None
    held = steps.judged_pair([("a", slower), ("b", verdict("withheld"))])
    assert held.differs is None and held.text == "withheld: too few rounds"
    # a metric without a ratio (0 in every run: no speedup, no p) is said, never formatted as one
    bare = {**unclear, "speedup": None, "ci_low": None, "ci_high": None, "p_value": None}
    none = steps.judged_pair([(None, bare)])
    assert none.text == "no ratio (inconclusive)" and none.way is None and none.shift is None
    nan = steps.judged_pair([(None, {**bare, "speedup": float("nan"), "p_value": float("nan")})])
    assert nan.text == "no ratio (inconclusive)" and nan.way is None


def test_a_time_comparison_shows_a_way_without_the_margin() -> None:
    # 1.5 % slower, significant (one-sided p 0.002) but not beyond min_effect: inconclusive, with
    # a way; a step reads the way (its ends have shown a change beyond min_effect already)
    small = steps.judged_pair([(None, verdict("inconclusive", 1 / 1.015, p=0.004))])
    assert (small.differs, small.shift, small.way, small.p_way) == (False, None, "more", 0.002)
    assert steps.judged_pair([(None, verdict("inconclusive", 1 / 1.015, p=0.2))]).way is None
    # equivalent and significant at once: the same, and a way
    tight = steps.judged_pair([(None, verdict("equivalent", 1.005, p=0.001))])
    assert (tight.shift, tight.way) == ("same", "less")
    # zero spread: the clock's resolution bounds it, the verdict says the way
    coarse = verdict("inconclusive", 0.95, p=0.002, resolution_s=0.001)
    assert steps.judged_pair([(None, coarse)]).way is None
    coarse["verdict"] = "slower"
    assert steps.judged_pair([(None, coarse)]).way == "more"


def a_bisect(**kw: Any) -> dict[str, Any]:
    commit = {"sha": "a" * 40, "subject": "s", "author_date": "2026-11-01"}
    return {"tool": "t", "target": "t", "comparison": "c", "scenario": "s",
            "scenario_kind": "command", "alpha": 0.05, "min_effect": 0.02, "budget": 4,
            "seed": 0, "started_at": "", "good": commit, "bad": {**commit, "sha": "b" * 40},
            "chain": 9, "expected_steps": 3, "outcome": "no-difference", **kw}


def test_bisect_json_keeps_the_rule_it_was_judged_by() -> None:
    old = record.parse_bisect(a_bisect(schema_version=1))
    assert old.rule == record.BISECT1_METHOD and old.spending is None
    assert "levels:" not in render.markdown(old)
    with pytest.raises(ValidationError, match="schema 1 has no"):
        record.parse_bisect(a_bisect(schema_version=1, method=record.BISECT2_METHOD))
    with pytest.raises(ValidationError, match="of schema 2"):
        record.parse_bisect(a_bisect(schema_version=1, outcome="underpowered"))
    spending = {"ends_looks": [1, 2, 4], "ends_level": 0.05 / 3, "direction": "more",
                "planned_steps": 3, "step_looks": [1, 2, 4], "comparisons": 2,
                "step_level": 0.05 / 4 / 3 / 2}
    new = record.parse_bisect(a_bisect(spending=spending))
    assert new.schema_version == 2 and new.rule == record.BISECT2_METHOD
    line = render.headline(new)[2]
    assert line.startswith("levels: alpha 0.05 for the ends, at 0.017 per look (1x/2x/4x); then")
    assert "each of a look's 2 comparisons at 0.0021" in line
    assert record.parse_bisect(new.model_dump(mode="json")) == new


def test_the_ends_are_measured_again_until_they_differ_or_are_shown_the_same() -> None:
    from patchbench.bisect import judge

    unclear, same, slower = judge.Pair(False, ""), judge.Pair(False, "", "same"), \
        judge.Pair(True, "", "more", "more", 0.001)
    for answers, expected in (([unclear, unclear, slower], (slower, 4)),
                              ([unclear, same, slower], (same, 2)),
                              ([unclear, unclear, unclear], (unclear, 4)),
                              ([judge.Pair(None, ""), slower, unclear], (slower, 2))):
        asked: list[int] = []

        def look(factor: int, answers: list[judge.Pair] = answers,
                 asked: list[int] = asked) -> judge.Pair:
            asked.append(factor)
            return answers[len(asked) - 1]

        assert judge.ends(look, [1, 2, 4]) == expected
        assert asked == [1, 2, 4][:len(asked)] and asked[-1] == expected[1]


def test_a_step_is_measured_again_while_undecided() -> None:
    from patchbench.bisect import judge

    unclear, faster = judge.Pair(False, ""), judge.Pair(True, "", "less", "less", 0.001)
    answers = [(unclear, unclear), (unclear, faster), (unclear, unclear)]
    j = judge.step(lambda f: answers[{1: 0, 2: 1, 4: 2}[f]], [1, 2, 4], "more",
                   ("slower", "faster"))
    assert (j.cls, j.why, j.factors) == ("good", "faster than bad, p 0.001", [1, 2])
    j = judge.step(lambda f: (unclear, unclear), [2, 4], "more", ("slower", "faster"))
    assert (j.cls, j.factors) == ("undecided", [2, 4])


def test_a_bisect_of_rare_hangs_starts_its_steps_at_more_runs_or_refuses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from patchbench.bisect import judge, run

    counts = {"good": (0, 12000), "bad": (16, 12000)}  # the ends at 4x: 0 -> 4 in 3000
    monkeypatch.setattr(judge, "value", lambda m, sha: steps.Value(
        f"hangs {counts[sha][0]} of {counts[sha][1]}", hangs=counts[sha][0], runs=counts[sha][1]))
    rule = steps.ByCount(lambda result, variant: counts[variant])
    monkeypatch.setattr(judge, "power", lambda m, ref, sha, runs, level: rule.power(
        None, ref, sha, runs, level))  # type: ignore[arg-type]

    def bisect(budget: int) -> tuple[int | None, record.Bisect]:
        rec = record.parse_bisect(a_bisect(spending={"ends_looks": [1], "ends_level": 0.05}))
        share = levels.StepShares(0.05).plan(6)
        return run._first_look(rec, rule, None, "good", "bad", 3000, budget,  # type: ignore[arg-type]
                               share), rec

    first, rec = bisect(4)  # 3000 runs are hopeless; at 4x, a single look at the whole share
    assert first == 4 and rec.spending is not None
    assert rec.spending.power.startswith("a step's first look (12000 runs of each commit) tells "
                                         "hangs 16 of 12000 from hangs 0 of 12000 with power 9")
    first, rec = bisect(2)
    need = hangs.runs_for_power(0.0, 16 / 12000, 0.05 / 7, levels.POWER)
    assert first is None and need is not None and rec.why == (
        f"a step needs about {need} runs of each commit to tell hangs 16 of 12000 from hangs 0 of "
        f"12000 with 80% power (one-sided, at 0.0071), the budget allows 6000 (3000 runs x "
        "budget 2)")


def test_an_underpowered_bisect_exits_10_with_the_runs_it_needs(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from patchbench.bisect import run
    from patchbench.cli import bisect_cmd
    from patchbench.errors import ConfigError

    rec = record.parse_bisect(a_bisect(
        outcome="underpowered", why="a step needs about 9000 runs of each commit",
        spending={"ends_looks": [1, 2, 4], "ends_level": 0.05 / 3}))
    from types import SimpleNamespace

    from patchbench.bisect import session

    monkeypatch.setattr(bisect_cmd, "load_project", lambda ws: None)
    monkeypatch.setattr(session, "scenario_of",
                        lambda project, spec: SimpleNamespace(target="t", spec=spec))
    monkeypatch.setattr(run, "bisect", lambda *a, **kw: (rec, tmp_path))
    with pytest.raises(ConfigError, match="a step needs about 9000 runs") as exc:
        bisect_cmd.do_bisect(None, "t", "a", "b", "c:s", seed=0, budget=4,  # type: ignore[arg-type]
                             dry_run=False)
    assert exc.value.exit_code == 10
    assert "refused before the first step: a step needs about 9000 runs" in capsys.readouterr().out
