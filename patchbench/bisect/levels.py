"""How a bisect spends alpha, so that its answer as a whole is wrong with probability at most
alpha (docs/bisect.md, "Error control"; details: docs/internals.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from patchbench.analysis import sequential

POWER = 0.80  # the power a step's runs are planned for (counts)


def looks(first: int, budget: int) -> list[int]:
    """The planned multipliers of the runs (and rounds): ``first``, then twice the last, up to
    ``budget``."""
    if first < 1:
        raise ValueError(f"the first look must be at 1x or more (got {first})")
    out = [first]
    while out[-1] * 2 <= budget:
        out.append(out[-1] * 2)
    return out


def per_comparison(share: float, factors: list[int], comparisons: int) -> float:
    """The level of each comparison of each look of a step that may spend ``share``."""
    return sequential.alpha_per_look(share, factors) / comparisons


@dataclass
class StepShares:
    """Alpha for the steps: ``plan`` splits what is left into one share per planned step and one
    held back; ``take`` gives the next step its share, or half of what is held back when no
    planned share is left. What is handed out never sums to more than ``alpha``."""

    alpha: float
    planned: list[float] = field(default_factory=list)
    held: float = 0.0

    def __post_init__(self) -> None:
        self.held = self.alpha

    def plan(self, steps: int) -> float:
        """Plan ``steps`` more steps from all that is left (unspent planned shares too); return
        one share."""
        left = self.held + sum(self.planned)
        share = left / (steps + 1)
        self.planned, self.held = [share] * steps, share
        return share

    def take(self) -> float:
        if self.planned:
            return self.planned.pop(0)
        self.held /= 2
        return self.held


def first_look(power: Callable[[int, float], float | None], runs: int, budget: int,
               share: float, comparisons: int) -> tuple[int | None, float | None]:
    """The smallest multiplier (1, 2, 4 ... up to ``budget``) at which a step's first look has
    ``POWER``, judged at the level its looks from there on leave it: ``power(runs, level)``
    answers for ``runs`` runs of each commit. Returns (multiplier, its power); (1, None) when the
    rule does not estimate power; (None, power at the budget) when no multiplier reaches it."""
    last = None
    for first in looks(1, budget):
        level = per_comparison(share, looks(first, budget), comparisons)
        p = power(runs * first, level)
        if p is None:
            return 1, None
        if p >= POWER:
            return first, p
        last = p
    return None, last
