"""Numbers as report text (plain text, no markup): times, ratios with their CI, p-values."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchbench.results import AABuild, Pooled, Samples, Verdict


def fmt_time(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_delta(seconds: float) -> str:
    """A signed difference of times: +5.12 ms, -310.0 µs."""
    sign = "+" if seconds >= 0 else "-"
    return sign + fmt_time(abs(seconds))


def fmt_effect(c: Verdict) -> str:
    """Schema 5: the effect in time (candidate minus baseline) with its CI; "" before."""
    if c.effect_s is None or math.isnan(c.effect_s):
        return ""
    text = fmt_delta(c.effect_s)
    if c.effect_ci_low_s is not None and c.effect_ci_high_s is not None:
        text += f" [{fmt_delta(c.effect_ci_low_s)}, {fmt_delta(c.effect_ci_high_s)}]"
    return text


def fmt_ratio(c: Verdict | Pooled) -> str:
    """The speedup with its CI and, from schema 5 on, the effect in time beside it."""
    if math.isnan(c.speedup):  # no round with finished runs of both (every run of one hung)
        return "-"
    text = f"{c.speedup:.2f}×"
    if c.ci_low is not None and c.ci_high is not None:
        text += f" [{c.ci_low:.2f}, {c.ci_high:.2f}]"
    from patchbench.results import Verdict

    effect = fmt_effect(c) if isinstance(c, Verdict) else ""  # a Pooled has none
    if effect:
        text += f", {effect}"
    return text


def fmt_verdict(c: Verdict) -> str:
    """The verdict as stored; schema 5's inconclusive one says what the run could detect."""
    if c.rule5 and c.verdict == "inconclusive" and c.mde is not None:
        return f"inconclusive (could detect ±{c.mde:.1%})"
    return str(c.verdict)


OLD_RULE = "rule of schema 3–4"  # the round-paired rule of per-round medians


def rejudged(c: Verdict, base: Samples, cand: Samples) -> str | None:
    """A comparison judged by the round-paired rule of schema 3-4, judged again from its raw
    samples by the current rule (patchbench.analysis.paired): its verdict as text where it
    differs from the recorded one, else None. "No significant difference" becoming equivalent or
    inconclusive is a split of the old answer, not a difference; pooled records (schema 1-2) and
    schema 5's are not judged again."""
    if c.rule5 or not c.paired or not set(base.rounds) & set(cand.rounds):
        return None
    from patchbench.analysis import paired, stats

    v = paired.paired_verdict(base.times, base.rounds, cand.times, cand.rounds, alpha=c.alpha,
                              min_effect=c.min_effect, min_rounds=c.min_rounds or stats.MIN_ROUNDS)
    now = str(v.verdict)
    split = c.verdict == "no significant difference" and now in ("equivalent", "inconclusive")
    if now == c.verdict or split:
        return None
    if now == "inconclusive" and v.mde is not None:
        return f"inconclusive, could detect ±{v.mde:.1%}"
    return now


def fmt_verdict_now(c: Verdict, base: Samples, cand: Samples) -> str:
    """``fmt_verdict``, and beside a verdict of an older rule the current rule's where they
    differ: "faster (rule of schema 3–4); schema 5: inconclusive, could detect ±5.3%"."""
    now = rejudged(c, base, cand)
    if now is None:
        return fmt_verdict(c)
    return f"{fmt_verdict(c)} ({OLD_RULE}); schema 5: {now}"


def fmt_p(p: float | None, *, exact: bool = False) -> str:
    """``exact`` (report format 2): every p as it is, ``4.1e-35``; else below 1e-4 "<1e-4"."""
    if p is None:
        return "-"
    return f"{p:.2g}" if p >= 1e-4 or exact else "<1e-4"


def fmt_ci(ci: list[float] | None) -> str:
    return f"[{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else "-"


def fmt_aa(aa: AABuild) -> tuple[str, str]:
    """Which A/A a run did, and how its two builds differ: (label, explanation)."""
    if aa.kind == "layout":
        return ("layout", f"the baseline against {aa.twin}, a second build of it that differs "
                f"only in code layout ({aa.method}: {aa.why}); {aa.note}")
    return ("same binary", f"the baseline against itself ({aa.twin}: {aa.note}): the noise "
            "floor without build-to-build layout effects")
