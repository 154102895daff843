"""The A/B gate's rule, in one place: what the gate says of one gated metric of one comparison,
at a look while measuring (scenarios/budget.py) and on the saved run (patchbench.gate, which only
selects the gated metrics and adds each kind's own checks).

Non-inferiority against a margin: a candidate **passes** when its one-sided bound of the slowdown
at the look's level lies below the margin, **fails** when the other bound lies above it, and is
**undecided** otherwise (more rounds at the planned looks, patchbench.analysis.sequential; at the
last look it fails closed unless allowed). Wall time is called on the runs that did not stall
(patchbench.analysis.stalls), and a candidate that stalls more often than the baseline (Fisher's
exact test, one-sided, at the look's level) fails. A false pass needs a candidate's bound to be
wrong at some look: at most alpha, whatever the number of candidates and metrics (the gate passes
only when every one passes, an intersection-union test, so there is no multiplicity correction,
and none is applied). How many rounds a margin needs at a comparison's noise is said from its
first look."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from patchbench.analysis import stalls, stats
from patchbench.results import Results

POWER = 0.90  # the chance an unchanged candidate passes, that the rounds needed are quoted at
# --gate without --max-rounds: looks up to this many times a scenario's configured rounds
CAP_FACTOR = 20


class Call(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class GateCall:
    """One comparison at one look: the call, and the one-sided bounds it was made from."""

    call: Call
    slowdown: float  # the estimate: candidate / baseline - 1 (above 0: slower)
    low: float | None  # the one-sided lower bound of the slowdown at the look's level
    high: float | None  # the one-sided upper bound
    margin: float

    def text(self) -> str:
        est = f"{self.slowdown:+.1%}"
        if self.low is None or self.high is None:
            return f"{est}, no interval"
        return f"{est} [{self.low:+.1%}, {self.high:+.1%}] against a margin of +{self.margin:.1%}"


def call(speedup: float, low: float | None, high: float | None, margin: float) -> GateCall:
    """The call for a comparison whose ratio baseline / candidate is ``speedup`` with the
    one-sided bounds ``low`` and ``high`` (the 1 - 2 alpha interval of the record: each end is a
    one-sided bound at alpha): pass when the candidate is shown slower by less than ``margin``
    (the ratio's lower bound above 1 / (1 + margin)), fail when it is shown slower by more (its
    upper bound below it), else undecided."""
    if not margin > 0:
        raise ValueError(f"the gate's margin must be above 0 (got {margin})")
    edge = 1.0 / (1.0 + margin)
    slow = 1.0 / speedup - 1.0
    if low is None or high is None or not (low > 0 and high > 0):
        return GateCall(Call.UNDECIDED, slow, None, None, margin)
    bounds = (1.0 / high - 1.0, 1.0 / low - 1.0)  # the slowdown's, from the ratio's
    if low > edge:
        state = Call.PASS
    elif high < edge:
        state = Call.FAIL
    else:
        state = Call.UNDECIDED
    return GateCall(state, slow, bounds[0], bounds[1], margin)


@dataclass(frozen=True)
class Gated:
    """One gated metric of one comparison as the rule reads it: its verdict (withheld: too few
    rounds), the ratio baseline / candidate and its one-sided bounds at the look's ``level``
    (the 1 - 2 level interval; wall time's of the runs that did not stall), the margin (None:
    none to call against) and, for wall time, the comparison's stalls."""

    verdict: str
    speedup: float
    low: float | None
    high: float | None
    margin: float | None
    level: float
    rounds: int | None = None
    min_rounds: int | None = None
    stalls: stalls.Stalls | None = None


def decide(g: Gated) -> tuple[Call, str]:
    """The gate's call on ``g`` and why, in words."""
    if g.verdict == "withheld":
        return Call.UNDECIDED, (f"verdict withheld ({g.rounds} rounds, at least {g.min_rounds} "
                                "needed)")
    if g.stalls is not None and stalls_more(g.stalls, g.level):
        return Call.FAIL, f"stalls more often than the baseline ({g.stalls.text()})"
    if g.margin is None:
        return Call.UNDECIDED, ("no margin to call against (min_effect 0 and no gate_margin): "
                                "give the comparison a gate_margin")
    c = call(g.speedup, g.low, g.high, g.margin)
    if c.call is Call.FAIL:
        return c.call, f"slower than the gate's margin ({c.text()}, one-sided at alpha {g.level:.2g})"
    if c.call is Call.UNDECIDED:
        return c.call, f"not shown within the gate's margin in {g.rounds} rounds ({c.text()})"
    return c.call, f"shown within the gate's margin ({c.text()})"


def stalls_more(st: stalls.Stalls | Mapping[str, Any] | None, level: float) -> bool:
    """Whether the candidate stalls more often than the baseline (Fisher's exact test, one-sided,
    at ``level``): the gate fails it then, whatever its times say (patchbench.analysis.stalls)."""
    if st is None:
        return False
    p = st.p_more if isinstance(st, stalls.Stalls) else st.get("p_more")
    return p is not None and p < level


def rounds_needed(sd: float, margin: float, level: float, power: float = POWER) -> int:
    """The rounds at which an unchanged candidate's one-sided lower bound (at ``level``) clears
    the margin with probability ``power``, for per-round log ratios of sd ``sd``: the smallest R
    with (t_(1-level, R-1) + t_(power, R-1)) sd / sqrt(R) <= ln(1 + margin)."""
    delta = math.log1p(margin)
    if sd <= 0:
        return 2
    r = 2
    while r < 1_000_000:
        need = (stats.t_ppf(1 - level, r - 1) + stats.t_ppf(power, r - 1)) * sd / math.sqrt(r)
        if need <= delta:
            return r
        r = r + 1 if r < 64 else int(r * 1.05) + 1
    return r


@dataclass(frozen=True)
class Plan:
    """The gate's looks, planned before the first round up to the cap (alpha spent equally over
    them, so that no look's data changes the plan), and how many rounds the margin needs at the
    noise the first look saw."""

    looks: list[int]
    level: float  # each look's alpha
    needed: int | None  # the rounds an unchanged candidate needs to pass with POWER at ``level``
    capped: bool  # more than the cap: an unchanged candidate may well stay undecided


def plan(sd: float | None, margin: float, alpha: float, first: int, cap: int, block: int
         ) -> Plan:
    """:class:`Plan` of the configured rounds ``first`` and at most ``cap`` rounds in whole
    ``block``s, for per-round log ratios of sd ``sd`` (None: no estimate)."""
    from patchbench.analysis import sequential

    looks = sequential.planned_looks(first, max(cap, first), block)
    level = sequential.alpha_per_look(alpha, looks)
    needed = None if sd is None else rounds_needed(sd, margin, level)
    return Plan(looks, level, needed, needed is not None and needed > looks[-1])


def passed_text(results: Results) -> str:
    """Why a gate that found no failure passed, in a few words."""
    st = results.settings
    margin = f"the margin (+{st.gate_margin:.1%})" if st.gate_margin else "its margin"
    if results.gate_allow_inconclusive:
        return (f"no gated metric of any candidate shown slower than {margin}, every check "
                "passed; undecided ones let through (--gate-allow-inconclusive)")
    return (f"every gated metric of every candidate shown slower by less than {margin}, "
            "every check passed")
