"""history's second look (bisect/run._second_looks): the points a measurement leaves undecided
against the first commit are measured again with it, at 2x and then 4x the runs and rounds, only
those, and each point is judged by the measurement that decided it (or the last one made)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from patchbench.bisect import judge, run
from patchbench.bisect.session import Measurement


@dataclass
class FakeSession:
    """Measures nothing: records what was asked for and at which factor."""

    asked: list[tuple[list[str], int]] = field(default_factory=list)

    @dataclass
    class comp:  # read as Session.comp is
        alpha = 0.05
        min_effect = 0.02

    def measure(self, label: str, shas: list[str], factor: int = 1) -> Measurement:
        self.asked.append((shas, factor))
        return Measurement(label=label, commits=shas, factor=factor, seed=0,
                           result=None, warnings=[])  # type: ignore[arg-type]


def verdicts(table: dict[tuple[str, int], bool | None]) -> Any:
    """judge.pair answering from ``table`` by (commit, factor of the measurement)."""
    def pair(m: Measurement, ref: str, sha: str, alpha: float, min_effect: float) -> judge.Pair:
        return judge.Pair(table[(sha, m.factor)], f"{sha} at {m.factor}x")
    return pair


def first_measurement(shas: list[str]) -> Measurement:
    return Measurement(label="history", commits=shas, factor=1, seed=0,
                       result=None, warnings=[])  # type: ignore[arg-type]


def test_only_the_undecided_points_are_measured_again_until_decided(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge, "pair", verdicts({
        ("b", 1): True, ("c", 1): None, ("d", 1): None,
        ("c", 2): False, ("d", 2): None,
        ("d", 4): True}))
    s = FakeSession()
    m = first_measurement(["a", "b", "c", "d"])
    by, made = run._second_looks(s, m, "a", ["b", "c", "d"], budget=4)  # type: ignore[arg-type]
    assert s.asked == [(["a", "c", "d"], 2), (["a", "d"], 4)]  # the first always with them
    assert [x.factor for x in made] == [1, 2, 4] and made[0] is m
    assert "b" not in by  # decided by the first measurement
    assert by["c"].factor == 2 and by["d"].factor == 4


@pytest.mark.parametrize("budget, factors", [(1, [1]), (2, [1, 2]), (3, [1, 2]), (4, [1, 2, 4])])
def test_the_budget_bounds_the_second_looks(monkeypatch: pytest.MonkeyPatch, budget: int,
                                            factors: list[int]) -> None:
    monkeypatch.setattr(judge, "pair", verdicts({("b", f): None for f in (1, 2, 4)}))
    s = FakeSession()
    by, made = run._second_looks(s, first_measurement(["a", "b"]), "a", ["b"],  # type: ignore[arg-type]
                                 budget=budget)
    assert [x.factor for x in made] == factors
    assert by.get("b", made[0]).factor == factors[-1]  # judged by the last look


def test_nothing_undecided_measures_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge, "pair", verdicts({("b", 1): False, ("c", 1): True}))
    s = FakeSession()
    by, made = run._second_looks(s, first_measurement(["a", "b", "c"]), "a",  # type: ignore[arg-type]
                                 ["b", "c"], budget=4)
    assert s.asked == [] and by == {} and len(made) == 1
