"""Numbers as report text (plain text, no markup): times, ratios with their CI, p-values."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchbench.results import AABuild, MetricVerdict, Pooled, Verdict


def fmt_time(seconds: float | None) -> str:
    """A time in the unit its size asks for, by its magnitude: a negative one (a fitted
    intercept, a difference) in the same unit as the positive one of that size."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    sign, size = ("-" if seconds < 0 else ""), abs(seconds)
    if size >= 1:
        return f"{sign}{size:.3f} s"
    if size >= 1e-3:
        return f"{sign}{size * 1e3:.2f} ms"
    return f"{sign}{size * 1e6:.1f} µs"


def fmt_bytes(n: float) -> str:
    """Binary units: 3.20 MiB, 64.0 MiB, 812 KiB."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}" if abs(n) < 100 * size else f"{n / size:.0f} {unit}"
    return f"{n:.0f} B"


def fmt_count(n: float) -> str:
    """1.23 G, 45.6 M, 789 k, 12."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g}"


def fmt_in(value: float | None, metric: str) -> str:
    """A value of ``metric`` in its unit (times as fmt_time, bytes in KiB/MiB, counts)."""
    if value is None or math.isnan(value):
        return "-"
    from patchbench.analysis.metrics import metric as of

    quantity = of(metric).quantity
    if quantity == "time":
        return fmt_time(value)
    return fmt_bytes(value) if quantity == "memory" else fmt_count(value)


def fmt_effect_in(value: float | None, metric: str) -> str:
    """A signed difference of ``metric`` in its unit: +5.12 ms, +64.0 MiB; "" without one."""
    if value is None or math.isnan(value):
        return ""
    return ("+" if value >= 0 else "-") + fmt_in(abs(value), metric)


# the answers of a metric other than time said in its terms: "faster" is less of it
METRIC_WORDS = {"memory": {"faster": "smaller", "slower": "larger"},
                "count": {"faster": "fewer", "slower": "more"}}


def metric_verdict_word(verdict: str, metric: str) -> str:
    """``verdict`` as said of ``metric``: peak memory is larger or smaller, counts more or
    fewer, times slower or faster."""
    from patchbench.analysis.metrics import metric as of

    return METRIC_WORDS.get(of(metric).quantity, {}).get(verdict, verdict)


def fmt_metric_verdict(m: MetricVerdict) -> str:
    """A metric's verdict, compact: ``cpu slower +5.10 ms``, ``peak-rss equivalent``,
    ``system inconclusive``."""
    word = metric_verdict_word(m.verdict, m.metric)
    effect = fmt_effect_in(m.effect, m.metric) if m.verdict in ("faster", "slower") else ""
    return f"{m.metric} {word}" + (f" {effect}" if effect else "")


def fmt_metric_ratio(m: MetricVerdict) -> str:
    """A metric's ratio baseline / candidate with its CI, and its effect with its CI."""
    text = "-" if math.isnan(m.speedup) else f"{m.speedup:.2f}×"
    if m.ci_low is not None and m.ci_high is not None:
        text += f" [{m.ci_low:.2f}, {m.ci_high:.2f}]"
    effect = fmt_effect_in(m.effect, m.metric)
    if effect:
        text += f", {effect}"
        if m.effect_ci_low is not None and m.effect_ci_high is not None:
            text += (f" [{fmt_effect_in(m.effect_ci_low, m.metric)}, "
                     f"{fmt_effect_in(m.effect_ci_high, m.metric)}]")
    return text


def fmt_metric_answer(m: MetricVerdict) -> str:
    """A metric's verdict in its words, with what an inconclusive one could have detected."""
    word = metric_verdict_word(m.verdict, m.metric)
    if m.verdict == "inconclusive" and m.mde is not None:
        return f"{word} (could detect ±{m.mde:.1%})"
    return word


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
    """The verdict as stored; an inconclusive one says what the run could detect."""
    if c.verdict == "inconclusive" and c.mde is not None:
        return f"inconclusive (could detect ±{c.mde:.1%})"
    return str(c.verdict)


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


def fmt_series(series: list[dict[str, Any]], *, upstream: bool = True) -> str:
    """A build's series as the builds table shows them: each name, with (``upstream``: report
    format 3) the upstream commits its patches are (``origin: upstream, commit:<sha>[, pr:<N>]``
    in the manifest) and their pull requests; a manifest is read back untrusted, so anything
    else in it is left out."""
    out = []
    for s in series if isinstance(series, list) else []:
        if not isinstance(s, dict):
            continue
        if not upstream:
            out.append(str(s.get("name", "?")))
            continue
        shas: list[str] = []
        prs: list[str] = []
        for p in s.get("patches") or []:
            origin = p.get("origin") if isinstance(p, dict) else None
            if not isinstance(origin, str):
                continue
            shas += [m[:12] for m in re.findall(r"\bcommit:([0-9a-f]{7,40})\b", origin)]
            prs += [f"#{n}" for n in re.findall(r"\bpr:([0-9]{1,9})\b", origin)]
        notes = ([f"upstream {', '.join(dict.fromkeys(shas))}"] if shas else []) + (
            [f"PR {', '.join(dict.fromkeys(prs))}"] if prs else [])
        out.append(str(s.get("name", "?")) + (f" ({'; '.join(notes)})" if notes else ""))
    return ", ".join(out) or "(none)"
