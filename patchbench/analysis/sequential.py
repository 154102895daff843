"""Stopping by precision (``--until-ci PCT --max-rounds N``): after the configured rounds, rounds
are added until the CI half-width of every timed comparison of a scenario reaches PCT or the
budget is spent, without the false alarms of optional stopping: the looks are planned before the
first round (geometrically spaced, whole blocks of the balanced order), and each is judged at
alpha / K for K looks (Bonferroni), the level the saved comparison records. Its sibling
``--budget DURATION`` (:class:`Budget`) adds rounds until every gated metric of every
comparison is decided or the time is spent, the looks planned from the pace of the configured
rounds, alpha spent over them the same way. docs/statistics.md ("Stopping rules");
benchmarks/stats_calibration.py calibrates it."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

GROWTH = 1.5
MAX_BUDGET_S = 86_400.0  # --budget: at most a day, as a scenario's timeout
RULE = ("looks planned at the configured rounds, then about 1.5x more each (whole blocks of the "
        "balanced order), the budget last; alpha spent equally over the planned looks "
        "(Bonferroni): each look judged at alpha / looks")


def planned_looks(first: int, budget: int, block: int) -> list[int]:
    """The rounds at which the rule may stop: ``first``, then ceil(GROWTH x last) rounded up to
    whole blocks of ``block`` rounds (at least one block more), capped by ``budget``."""
    if first < 1 or block < 1:
        raise ValueError(f"first ({first}) and block ({block}) must be at least 1")
    if budget < first:
        raise ValueError(f"the budget ({budget} rounds) is below the configured rounds ({first})")
    looks = [first]
    while looks[-1] < budget:
        nxt = max(math.ceil(GROWTH * looks[-1]), looks[-1] + 1)
        nxt = math.ceil(nxt / block) * block
        looks.append(min(nxt, budget))
    return looks


def alpha_per_look(alpha: float, looks: Sequence[int]) -> float:
    """The level of each look: alpha spent equally over the planned looks."""
    if not looks:
        raise ValueError("no looks planned")
    return alpha / len(looks)


def half_width(ci_low: float | None, ci_high: float | None) -> float | None:
    """A ratio interval's half-width as a fraction: half its width on the log scale, as a
    factor (exp(ln(high / low) / 2) - 1); None without an interval."""
    if ci_low is None or ci_high is None or not ci_low > 0 or not ci_high > 0:
        return None
    if math.isnan(ci_low) or math.isnan(ci_high):
        return None
    return math.expm1((math.log(ci_high) - math.log(ci_low)) / 2)


@dataclass(frozen=True)
class UntilCI:
    """``--until-ci PCT --max-rounds N``: the half-width asked for (a fraction), the budget of
    rounds per scenario, and the nominal alpha spent over the looks."""

    target: float
    max_rounds: int
    alpha: float


@dataclass(frozen=True)
class Decision:
    """What the rule says at a look: the rounds to add (0: stop) and why it stopped."""

    add: int
    reason: str  # "" (go on), "target" or "budget"


def decide(looks: Sequence[int], done: int, widths: Sequence[float | None], target: float
           ) -> Decision:
    """At ``done`` rounds, with the comparisons' half-widths ``widths``: stop when every one is
    at most ``target`` (and there is at least one), or when no planned look is left; else add
    the rounds to the next planned look."""
    if widths and all(w is not None and w <= target for w in widths):
        return Decision(0, "target")
    later = [r for r in looks if r > done]
    if not later:
        return Decision(0, "budget")
    return Decision(later[0] - done, "")


def describe(stopped_at: int, reason: str, width: float | None, target: float) -> str:
    """``stopped at round 23: CI half-width 1.9 % <= 2 %`` or ``... budget spent``."""
    shown = f"{width * 100:.1f} %" if width is not None else "none"
    if reason == "target":
        return f"stopped at round {stopped_at}: CI half-width {shown} <= {target * 100:.3g} %"
    return (f"stopped at round {stopped_at}: budget spent (CI half-width {shown}, "
            f"target {target * 100:.3g} %)")


# --- --budget: the best answer in the time given ---------------------------------------------

BUDGET_RULE = ("looks planned at the configured rounds, then about 1.5x more each (whole blocks "
               "of the balanced order) up to the rounds the time left allows at the pace of the "
               "configured rounds; alpha spent equally over the planned looks (Bonferroni); "
               "stopped when every gated metric of every comparison is decided (faster, slower "
               "or equivalent), or the time is spent")
GATE_RULE = ("looks planned at the configured rounds, then about 1.5x more each (whole blocks of "
             "the balanced order) up to the cap (and the time --budget leaves, if given); alpha "
             "spent equally over the planned looks (Bonferroni); stopped when the gate calls "
             "every gated metric of every comparison: pass (shown slower by less than the "
             "margin) or fail (shown slower by more)")


@dataclass
class Budget:
    """``compare --budget DURATION``: ``seconds`` of measuring for the whole comparison, spent
    until every gated metric (``metrics``) of every comparison has an answer; ``sets`` the sets
    of interleaved rounds (a timed scenario, per condition) that have not finished yet, each
    given an equal share of the time left when it starts; ``deadline``, the monotonic clock's
    time it ends, is set when the first set starts (what comes before measuring is not
    counted)."""

    seconds: float | None  # None: no time limit (``--gate`` alone: rounds up to ``max_rounds``)
    alpha: float
    metrics: tuple[str, ...]
    sets: int
    deadline: float | None = None
    # --gate: a set stops when every gated metric is called pass or fail (patchbench.analysis.
    # gating), against ``margin`` (the comparison's gate_margin; None: each metric's min_effect),
    # not when its verdict is an answer
    gate: bool = False
    margin: float | None = None
    max_rounds: int | None = None  # --max-rounds: the rounds a set may reach (else a default)

    def share(self, now: float) -> float | None:
        """The seconds a set starting ``now`` may take (None: no time limit)."""
        if self.seconds is None:
            return None
        if self.deadline is None:
            self.deadline = now + self.seconds
        return max(0.0, self.deadline - now) / max(1, self.sets)


def budget_rounds(done: int, elapsed: float, share: float, block: int,
                  most: int | None = None) -> int:
    """The rounds a set may reach when ``done`` rounds took ``elapsed`` seconds of its ``share``:
    as many as the pace allows (and at most ``most``), in whole blocks of ``block`` rounds, never
    fewer than ``done``."""
    if done < 1 or elapsed <= 0:
        return done
    fit = int(share / (elapsed / done))
    if most is not None:
        fit = min(fit, most)
    return max(done, fit - fit % block)


def decided(verdicts: Sequence[str]) -> bool:
    """Whether every verdict is an answer: faster, slower or equivalent (none inconclusive or
    withheld); False for none."""
    return bool(verdicts) and all(v in ("faster", "slower", "equivalent") for v in verdicts)


def parse_duration(text: str) -> float:
    """``5m``, ``30s``, ``1h``, ``1m30s`` or a number of seconds -> seconds; a ValueError for
    anything else, or for a duration that is not above 0."""
    t = text.strip().lower()
    try:
        seconds = float(t)
    except ValueError:
        parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?", t)
        if not t or parts is None:
            raise ValueError(f"{text!r} is not a duration (e.g. 30s, 5m, 1h)") from None
        h, m, s = (float(x) if x else 0.0 for x in parts.groups())
        seconds = 3600 * h + 60 * m + s
    if not seconds > 0 or not math.isfinite(seconds):
        raise ValueError(f"{text!r}: a duration above 0 is needed")
    if seconds > MAX_BUDGET_S:
        raise ValueError(f"{text!r}: at most {fmt_duration(MAX_BUDGET_S)} (a day)")
    return seconds


def fmt_duration(seconds: float) -> str:
    """``2m05s``, ``45s``, ``1h02m``."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"
