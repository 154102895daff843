"""The bisect search itself, apart from building and measuring: a first-parent chain
``commits[0]`` (good) .. ``commits[-1]`` (bad), and a ``probe`` that says of one commit whether
it is like good, like bad, undecided (after its whole budget of rounds) or unbuildable (skipped,
like ``git bisect skip``). Details: docs/internals.md."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Class = Literal["good", "bad", "undecided", "skipped"]


@dataclass
class Outcome:
    """Where the search ended: ``first_bad`` set when found; else ``lo``..``hi`` is the range
    (indices into the chain; the change is in ``commits[lo+1 .. hi]``)."""

    lo: int
    hi: int
    probed: list[tuple[int, Class]] = field(default_factory=list)
    why: str = ""

    @property
    def found(self) -> bool:
        return not self.why and self.hi - self.lo == 1

    @property
    def first_bad(self) -> int | None:
        return self.hi if self.found else None

    def skipped(self) -> list[int]:
        return [i for i, c in self.probed if c == "skipped"]


def pick(lo: int, hi: int, skipped: set[int]) -> int | None:
    """The untested, unskipped index strictly between ``lo`` and ``hi`` nearest the middle
    (the lower one on a tie), or None."""
    mid = (lo + hi) / 2
    candidates = [i for i in range(lo + 1, hi) if i not in skipped]
    if not candidates:
        return None
    return min(candidates, key=lambda i: (abs(i - mid), i))


def expected_steps(n_commits: int) -> int:
    """Steps a bisect of a chain of ``n_commits`` (both ends included) needs without skips:
    ceil(log2(n_commits - 1))."""
    between = max(1, n_commits - 1)
    return math.ceil(math.log2(between)) if between > 1 else 0


def search(n_commits: int, probe: Callable[[int], Class]) -> Outcome:
    """Bisect indices 0 (good) .. n_commits-1 (bad) with ``probe``."""
    if n_commits < 2:
        raise ValueError("a bisect needs at least two commits")
    out = Outcome(0, n_commits - 1)
    skipped: set[int] = set()
    while out.hi - out.lo > 1:
        i = pick(out.lo, out.hi, skipped)
        if i is None:
            out.why = "every commit between the last good and the first bad one was skipped"
            return out
        c = probe(i)
        out.probed.append((i, c))
        if c == "good":
            out.lo = i
        elif c == "bad":
            out.hi = i
        elif c == "skipped":
            skipped.add(i)
        else:
            out.why = (f"commit {i} of the range stayed undecided after its budget of rounds: "
                       "the change is somewhere in the range that is left")
            return out
    return out
