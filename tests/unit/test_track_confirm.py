"""track's A/B of a place (patchbench/track/confirm.py): each candidate is judged on its own
series, so two series of one scenario (a scan's values) that change at the same place keep their
own verdicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from patchbench.scenarios.steps import Pair
from patchbench.track import confirm, detect
from patchbench.track.database import CommitRow


@dataclass
class _Comp:
    alpha: float = 0.05
    min_effect: float = 0.02


class _Session:
    comp = _Comp()

    def __init__(self) -> None:
        self.looks: list[int] = []

    def measure(self, label: str, shas: list[str], factor: int = 1) -> object:
        self.looks.append(factor)
        return object()


def test_two_series_changing_at_one_place_are_judged_each_on_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = CommitRow("a" * 40, "before", "2026-01-01T00:00:00Z", 1)
    after = CommitRow("b" * 40, "after", "2026-01-02T00:00:00Z", 2)
    up = detect.ChangePoint(5, 1e-6, 1.0, 2.0)
    cands = [confirm.Candidate("run", series, "wall", before, after, up)
             for series in ("envs=0", "envs=20000")]

    def ab_pair(m: object, b: str, a: str, series: str, metric: str, *, level: float,
                min_effect: float) -> tuple[Pair, dict[str, Any]]:
        # the A/B shows the slowdown at envs=20000 only; envs=0 is the same
        if series == "envs=20000":
            return Pair(True, "2.000x [1.9, 2.1]", "more"), {"ratio": 2.0}
        return Pair(False, "1.000x [0.99, 1.01]", "same"), {"ratio": 1.0}

    monkeypatch.setattr(confirm, "ab_pair", ab_pair)
    s = _Session()
    judged, made = confirm.ab(s, cands, 4)  # type: ignore[arg-type]
    assert s.looks == [1] and len(made) == 1  # both decided at the first look
    assert judged[("envs=20000", "wall")].confirmed
    assert judged[("envs=20000", "wall")].figures == {"ratio": 2.0}
    assert not judged[("envs=0", "wall")].confirmed
    assert judged[("envs=0", "wall")].figures == {"ratio": 1.0}
