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


def fmt_ratio(c: Verdict | Pooled) -> str:
    if math.isnan(c.speedup):  # no round with finished runs of both (every run of one hung)
        return "-"
    text = f"{c.speedup:.2f}×"
    if c.ci_low is not None and c.ci_high is not None:
        text += f" [{c.ci_low:.2f}, {c.ci_high:.2f}]"
    return text


def fmt_p(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def fmt_ci(ci: list[float] | None) -> str:
    return f"[{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else "-"
