"""What the metrics besides wall time say, as report blocks: each metric's verdict per candidate
(report.md and report.html), a small multiple per metric (report.html), and the words.

The words read wall time against CPU time (user + system), as a runtime engineer would: a change
of wall time without one of CPU time is waiting (a sleep, I/O, a lock, another process) or work
overlapped, not work removed; both changing by about as much is work removed (or added); CPU time
up while wall time goes down is more work done in parallel. Where the CPU change lies (user space
or the kernel), and a change of peak memory beyond its own min_effect, are said too. Every
statement comes from verdicts that are answers (faster, slower, equivalent), never from an
inconclusive or withheld one: an inconclusive metric says nothing here."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from patchbench.analysis import metrics as mx
from patchbench.report import charts
from patchbench.report.blocks import Block, Chart, Heading, bullets, table, text
from patchbench.report.numbers import (
    fmt_effect_in,
    fmt_in,
    fmt_metric_answer,
    fmt_metric_ratio,
    metric_verdict_word,
)
from patchbench.results import MetricVerdict, Verdict

CHANGED = ("faster", "slower")


def _interval(effect: float | None, low: float | None, high: float | None
              ) -> tuple[float, float] | None:
    if effect is None or math.isnan(effect):
        return None
    if low is None or high is None:
        return effect, effect
    return low, high


def _similar(a: tuple[float, float], b: tuple[float, float]) -> int:
    """0 when two effects' intervals overlap (their sizes cannot be told apart); else 1 when the
    second is larger in size, -1 when smaller (both intervals on the same side of 0)."""
    if a[0] <= b[1] and b[0] <= a[1]:
        return 0
    return 1 if min(abs(b[0]), abs(b[1])) > max(abs(a[0]), abs(a[1])) else -1


def _pct(m: MetricVerdict) -> str:
    if m.baseline and m.candidate is not None and m.baseline > 0:
        return f"{(m.candidate / m.baseline - 1) * 100:+.0f} %"
    return ""


def wall_and_cpu(c: Verdict, cpu: MetricVerdict) -> str | None:
    """The sentence wall time and CPU time make together, or None when either is not an answer
    (or both are "equivalent": nothing changed)."""
    wall, w = c.verdict, _interval(c.effect_s, c.effect_ci_low_s, c.effect_ci_high_s)
    cv, k = cpu.verdict, _interval(cpu.effect, cpu.effect_ci_low, cpu.effect_ci_high)
    if not (mx.decided(wall) and mx.decided(cv)) or w is None or k is None:
        return None
    dw, dc = fmt_effect_in(c.effect_s, mx.WALL), fmt_effect_in(cpu.effect, "cpu")
    within = f"within ±{cpu.min_effect:.0%}"
    if wall in CHANGED and cv == "equivalent":
        if wall == "slower":
            return (f"wall time {dw} while CPU time is equivalent ({within}): the extra time is "
                    "waiting (a sleep, I/O, a lock, another process), not work added")
        return (f"wall time {dw} while CPU time is equivalent ({within}): the work was "
                "overlapped or the process waited less, not work removed")
    if wall == "equivalent" and cv in CHANGED:
        if cv == "slower":
            return (f"CPU time {dc} for an equivalent wall time: the extra work ran in parallel "
                    "or while the process would have waited anyway")
        return (f"CPU time {dc} for an equivalent wall time: the work removed was off the "
                "critical path (it ran in parallel or while the process waited)")
    if wall in CHANGED and cv in CHANGED and wall != cv:
        if wall == "faster":
            return (f"wall time {dw} while CPU time rose ({dc}): more work done in parallel "
                    "(spread over more cores or threads)")
        return (f"wall time {dw} while CPU time fell ({dc}): less work done in parallel "
                "(serialised, or waiting where work ran before)")
    if wall in CHANGED and cv == wall:
        size = _similar(w, k)
        if wall == "faster":
            if size == 0:
                return (f"wall time {dw}, CPU time {dc}, about as much: work removed")
            if size > 0:
                return (f"CPU time {dc}, more than wall time ({dw}): work removed, part of it "
                        "from work that ran in parallel")
            return (f"wall time {dw}, of which CPU time {dc}: part work removed, the rest "
                    "waiting removed or work overlapped")
        if size == 0:
            return f"wall time {dw}, CPU time {dc}, about as much: work added"
        if size > 0:
            return (f"CPU time {dc}, more than wall time ({dw}): work added, part of it in "
                    "parallel")
        return (f"wall time {dw}, of which CPU time {dc}: part work added, the rest waiting")
    return None


def where_cpu(c: Verdict) -> str | None:
    """Where a change of CPU time lies: user space or the kernel (one changed the same way,
    the other equivalent)."""
    ms = c.metrics or {}
    cpu, user, system = ms.get("cpu"), ms.get("user"), ms.get("system")
    if cpu is None or user is None or system is None or cpu.verdict not in CHANGED:
        return None
    if user.verdict == cpu.verdict and system.verdict == "equivalent":
        return (f"the CPU change is in user space (user time {fmt_effect_in(user.effect, 'user')}"
                "; system time equivalent)")
    if system.verdict == cpu.verdict and user.verdict == "equivalent":
        return (f"the CPU change is in the kernel (system time "
                f"{fmt_effect_in(system.effect, 'system')}; user time equivalent)")
    return None


def words(c: Verdict) -> list[str]:
    """What one comparison's metrics say together (empty without metric verdicts)."""
    if not c.metrics or not c.rule5:
        return []
    out: list[str] = []
    cpu = c.metrics.get("cpu")
    said = wall_and_cpu(c, cpu) if cpu is not None else None
    out += [said] if said else []
    where = where_cpu(c)
    out += [where] if where else []
    for name, m in c.metrics.items():
        if name in ("cpu", "user", "system") or m.verdict not in CHANGED:
            continue
        pct = _pct(m)
        out.append(f"{mx.metric(name).label} {metric_verdict_word(m.verdict, name)} by "
                   f"{fmt_in(abs(m.effect), name)}" + (f" ({pct})" if pct else "")
                   + f", beyond its min_effect of {m.min_effect:.0%}")
    return out


def _judged(comparisons: list[Verdict]) -> list[Verdict]:
    return [c for c in comparisons if c.metrics]


def metric_table(comparisons: list[Verdict]) -> list[Block]:
    """Every metric besides wall time, per candidate: each variant's mean per run, the ratio with
    its CI and the effect in the metric's unit, and the answer."""
    rows = []
    for c in _judged(comparisons):
        for name, m in (c.metrics or {}).items():
            rows.append([c.candidate, name, fmt_in(m.baseline, name), fmt_in(m.candidate, name),
                         fmt_metric_ratio(m), fmt_metric_answer(m)])
    if not rows:
        return []
    return [text("Every metric besides wall time (the summary's), each judged by the same "
                 "round-paired rule with its own min_effect; ratio = baseline / candidate (above "
                 "1: the candidate has less of it), effect = candidate − baseline, per run. CPU, "
                 "user and system time and the counters pair each round's arithmetic means (a run "
                 "may show 0: the kernel accounts them by ticks)."),
            table(["candidate", "metric", "baseline (mean)", "candidate (mean)",
                   "ratio [95% CI], effect [95% CI]", "answer"], rows, "metrics")]


def said(comparisons: list[Verdict]) -> list[Block]:
    """The words of every comparison, as one list (nothing when none has anything to say)."""
    items = [[f"{c.candidate}: {w}"] for c in _judged(comparisons) for w in words(c)]
    if not items:
        return []
    return [text("What the metrics say (from verdicts that are answers only):"),
            bullets(items, "words")]


def notes(comparisons: list[Verdict]) -> list[Block]:
    """Why a metric could not be judged (its verdict's note), per candidate."""
    items = [[f"{c.candidate} {name}: {m.note}"] for c in _judged(comparisons)
             for name, m in (c.metrics or {}).items() if m.note]
    return [bullets(items, "metric-notes")] if items else []


def metric_blocks(comparisons: list[Verdict]) -> list[Block]:
    """report.md's part: the table, the words and the notes."""
    return metric_table(comparisons) + said(comparisons) + notes(comparisons)


def metric_page(sc: Any) -> list[Block]:
    """report.html's part of a timed scenario: a heading, the table, the words, the notes and a
    small multiple of every metric (``sc``: a timed result)."""
    comps = list(sc.comparisons)
    if not _judged(comps):
        return []
    data = sc.model_dump(mode="json")
    return [Heading("Metrics"), *metric_blocks(comps),
            Chart("metrics", partial(charts.metrics_chart, data),
                  "One panel per metric: every run of every cell (dots) and its mean (bar); "
                  "wall time first.")]
