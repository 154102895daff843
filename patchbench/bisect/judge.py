"""How one commit compares with another in a measurement, and how a bisect step is classified.
Details: docs/internals.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from patchbench.bisect.record import step_rule
from patchbench.bisect.search import Class
from patchbench.bisect.session import Measurement
from patchbench.scenarios.steps import Pair, Value

__all__ = ["Direction", "Pair", "Step", "Value", "classify", "ends", "pair", "power", "step",
           "value"]

Direction = Literal["more", "less"]  # how bad differs from good: slower (more hangs), or faster
OPPOSITE: dict[Direction, Direction] = {"more": "less", "less": "more"}


def value(m: Measurement, sha: str) -> Value:
    return step_rule(m.result.kind).value(m.result, sha[:12])


def pair(m: Measurement, ref: str, sha: str, alpha: float, min_effect: float) -> Pair:
    """Commit ``sha`` against commit ``ref``, both measured (interleaved) in ``m``."""
    return step_rule(m.result.kind).pair(m.result, ref[:12], sha[:12], alpha=alpha,
                                         min_effect=min_effect, seed=m.seed)


def power(m: Measurement, ref: str, sha: str, runs: int, level: float) -> float | None:
    """The chance that a comparison of ``runs`` runs each, at ``level``, tells a commit like
    ``sha`` from one like ``ref`` as ``m`` measured them (None: the kind's rule does not say)."""
    return step_rule(m.result.kind).power(m.result, ref[:12], sha[:12], runs, level)


def classify(vs_good: Pair, vs_bad: Pair, direction: Direction,
             ways: tuple[str, str] = ("more", "less")) -> tuple[Class, str]:
    """The step's class and why, from its commit against good and against bad; ``direction``
    is how bad differs from good ("more": slower, or hangs more), ``ways`` how the rule words
    "more" and "less" (its ``ways``: "slower", "faster")."""
    back = OPPOSITE[direction]
    word: dict[Direction, str] = {"more": ways[0], "less": ways[1]}

    def way(p: Pair, w: Direction, end: str) -> str | None:
        return f"{word[w]} than {end}, p {p.p_way:.2g}" if p.way == w else None

    for_good = [x for x in ("the same as good" if vs_good.shift == "same" else None,
                            way(vs_bad, back, "bad")) if x]
    for_bad = [x for x in ("the same as bad" if vs_bad.shift == "same" else None,
                           way(vs_good, direction, "good")) if x]
    if for_good and not for_bad:
        return "good", "; ".join(for_good)
    if for_bad and not for_good:
        return "bad", "; ".join(for_bad)
    if for_good:
        return "undecided", "; ".join(for_good + for_bad) + ": evidence for both sides"
    beyond = [x for x in (way(vs_good, back, "good"), way(vs_bad, direction, "bad")) if x]
    if beyond:
        return "undecided", "; ".join(beyond) + ": beyond an end, evidence for neither side"
    if vs_good.differs is None or vs_bad.differs is None:
        return "undecided", "withheld: no verdict"
    return "undecided", "no evidence for either side"


def ends(look: Callable[[int], Pair], factors: list[int]) -> tuple[Pair, int]:
    """Bad against good at each planned look (``look(factor)`` measures them at that multiplier
    of the runs and judges them) until they differ, are shown the same, or no look is left:
    the last comparison and its multiplier."""
    for factor in factors:
        shown = look(factor)
        if shown.differs is True or shown.shift == "same":
            break
    return shown, factor


@dataclass
class Step:
    """A step judged: its class and why, the last look's comparisons, the multipliers tried."""

    cls: Class
    why: str
    vs_good: Pair
    vs_bad: Pair
    factors: list[int] = field(default_factory=list)


def step(look: Callable[[int], tuple[Pair, Pair]], factors: list[int], direction: Direction,
         ways: tuple[str, str]) -> Step:
    """A step's commit at each planned look (``look(factor)``: it against good and against bad)
    until it is put on a side or no look is left."""
    tried: list[int] = []
    for factor in factors:
        vs_good, vs_bad = look(factor)
        tried.append(factor)
        cls, why = classify(vs_good, vs_bad, direction, ways)
        if cls != "undecided":
            break
    return Step(cls, why, vs_good, vs_bad, tried)
