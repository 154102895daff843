"""Numbers as report text (plain text, no markup): times, ratios with their CI, p-values."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchbench.results import Pooled, Verdict


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


def fmt_p(p: float | None, *, exact: bool = False) -> str:
    """``exact`` (report format 2): every p as it is, ``4.1e-35``; else below 1e-4 "<1e-4"."""
    if p is None:
        return "-"
    return f"{p:.2g}" if p >= 1e-4 or exact else "<1e-4"


def fmt_ci(ci: list[float] | None) -> str:
    return f"[{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else "-"
