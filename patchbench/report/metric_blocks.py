"""What the metrics besides wall time say, as report blocks: each metric's verdict per candidate
(report.md and report.html), a small multiple per metric (report.html), and the words.
Details: docs/internals.md."""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial
from typing import Any

from patchbench.analysis import metrics as mx
from patchbench.report import charts
from patchbench.report.blocks import Block, Chart, bullets, heading, table, text
from patchbench.report.numbers import (
    fmt_effect_in,
    fmt_in,
    fmt_metric_answer,
    fmt_metric_ratio,
    metric_verdict_word,
)
from patchbench.results import Cell, MetricVerdict, Verdict

CHANGED = ("faster", "slower")


Rest = tuple[float, float | None, float | None]


def _pct(m: MetricVerdict) -> str:
    if m.baseline and m.candidate is not None and m.baseline > 0:
        return f"{(m.candidate / m.baseline - 1) * 100:+.0f} %"
    return ""


def rest_of(c: Verdict, cells: Mapping[str, Cell]) -> Rest | None:
    """The part of the candidate's wall-time change that CPU time does not account for, with
    its interval (patchbench.analysis.metrics.rest), from the cells' runs; None without them."""
    base, cand = cells.get(c.baseline), cells.get(c.candidate)
    if base is None or cand is None:
        return None
    b, k = base.samples, cand.samples
    if any(len(s.metrics.get("cpu", [])) != len(s.times) for s in (b, k)):
        return None
    return mx.rest(b.times, b.metrics["cpu"], b.rounds, k.times, k.metrics["cpu"], k.rounds,
                   alpha=c.alpha)


def _same_size(rest: Rest | None, wall: float) -> int | None:
    """Whether CPU time moved by about as much as wall time (0), less (-1: the rest goes the
    wall change's way) or more (1), from the rest's interval; None when it cannot tell (the
    interval holds 0 but reaches beyond half the wall change)."""
    if rest is None:
        return None
    mean, lo, hi = rest
    lo, hi = (mean, mean) if lo is None or hi is None else (lo, hi)
    if lo > 0 or hi < 0:  # the rest is not 0
        return -1 if (mean > 0) == (wall > 0) else 1
    return 0 if max(abs(lo), abs(hi)) <= abs(wall) / 2 else None


def wall_and_cpu(c: Verdict, cpu: MetricVerdict, rest: Rest | None = None) -> str | None:
    """The sentence wall time and CPU time make together, or None when either is not an answer
    (or both are "equivalent": nothing changed); with CPU time undecided, what the rest's
    interval shows (:func:`_waiting`). ``rest``: the part of the wall change CPU time
    does not account for (:func:`rest_of`), which tells "about as much" from "part of it"."""
    wall, cv = c.verdict, cpu.verdict
    if c.effect_s is None or math.isnan(c.effect_s):
        return None
    if wall in CHANGED and cv == "inconclusive":
        return _waiting(c, rest)
    if not (mx.decided(wall) and mx.decided(cv)):
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
        size = _same_size(rest, c.effect_s)
        left = _fmt_rest(rest) if rest is not None else ""
        removed = "removed" if wall == "faster" else "added"
        if size == 0:
            return f"wall time {dw}, CPU time {dc}, about as much: work {removed}"
        if size == 1:
            return (f"CPU time {dc}, more than wall time ({dw}): work {removed}, part of it "
                    "work that runs in parallel")
        if size == -1:
            waited = "waiting removed or work overlapped" if wall == "faster" else "waiting"
            return (f"wall time {dw}, of which CPU time {dc}: part work {removed}, the rest "
                    f"({left}) {waited}")
        return (f"wall time {dw}, CPU time {dc}: work {removed}; how much of the wall-time "
                "change it accounts for is not decided" + (f" (the rest: {left})" if left else ""))
    return None


def _fmt_rest(rest: Rest) -> str:
    """The rest in ms, with its interval when it has one."""
    mean, lo, hi = rest
    out = fmt_effect_in(mean, mx.WALL)
    if lo is not None and hi is not None:
        out += f" [{fmt_effect_in(lo, mx.WALL)}, {fmt_effect_in(hi, mx.WALL)}]"
    return out


def _waiting(c: Verdict, rest: Rest | None) -> str | None:
    """Wall time changed and CPU time is not decided: when the part of the wall change that CPU
    time does not account for (its interval) lies on the wall change's side of 0, that part is
    waiting (more of it, or less), whatever CPU time did; else nothing is said."""
    if rest is None or c.effect_s is None:
        return None
    _, lo, hi = rest
    if lo is None or hi is None:
        return None
    dw = fmt_effect_in(c.effect_s, mx.WALL)
    left = _fmt_rest(rest)
    if c.verdict == "slower" and lo > 0:
        return (f"wall time {dw} while CPU time is undecided: the part of it CPU time does not "
                f"account for, {left}, is waiting (a sleep, I/O, a lock, another process)")
    if c.verdict == "faster" and hi < 0:
        return (f"wall time {dw} while CPU time is undecided: the part of it CPU time does not "
                f"account for, {left}, is less waiting or work overlapped")
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


def words(c: Verdict, cells: Mapping[str, Cell] | None = None) -> list[str]:
    """What one comparison's metrics say together (empty without metric verdicts); ``cells``
    (label -> cell) give the runs that tell how much of wall time CPU time accounts for."""
    if not c.metrics:
        return []
    out: list[str] = []
    cpu = c.metrics.get("cpu")
    said = (wall_and_cpu(c, cpu, rest_of(c, cells or {})) if cpu is not None else None)
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


def said(sc: Any) -> list[Block]:
    """The words of every comparison of a timed scenario ``sc``, as one list (nothing when none
    has anything to say)."""
    cells = {cell.label: cell for cell in sc.cells}
    items = [[f"{c.candidate}: {w}"] for c in _judged(list(sc.comparisons))
             for w in words(c, cells)]
    if not items:
        return []
    return [text("What the metrics say (from verdicts that are answers only):"),
            bullets(items, "words")]


def notes(comparisons: list[Verdict]) -> list[Block]:
    """Why a metric could not be judged (its verdict's note), per candidate."""
    items = [[f"{c.candidate} {name}: {m.note}"] for c in _judged(comparisons)
             for name, m in (c.metrics or {}).items() if m.note]
    return [bullets(items, "metric-notes")] if items else []


def metric_blocks(sc: Any) -> list[Block]:
    """report.md's part of a timed scenario ``sc``: the table, the words and the notes."""
    comps = list(sc.comparisons)
    return metric_table(comps) + said(sc) + notes(comps)


def metric_page(sc: Any) -> list[Block]:
    """report.html's part of a timed scenario: a heading, the table, the words, the notes and a
    small multiple of every metric (``sc``: a timed result)."""
    comps = list(sc.comparisons)
    if not _judged(comps):
        return []
    data = sc.model_dump(mode="json")
    return [heading("Metrics"), *metric_blocks(sc),
            Chart("metrics", partial(charts.metrics_chart, data),
                  "One panel per metric: every run of every cell (dots) and its mean (bar); "
                  "wall time first.")]
