"""The blocks several kinds show: the timed kinds' round-paired details, hangs, ``verify`` checks
and charts, the k tables, and the evidence of hung runs and instances."""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial
from typing import Any, Protocol

from patchbench.analysis import paired
from patchbench.report import charts
from patchbench.report.blocks import (
    Block,
    Chart,
    Code,
    Inline,
    Link,
    Pre,
    Strong,
    bullets,
    heading,
    table,
    text,
)
from patchbench.report.metric_blocks import metric_blocks
from patchbench.report.numbers import fmt_p, fmt_ratio, fmt_time
from patchbench.results import Cell, Check, Stalls, Verdict


def links(names: list[str], limit: int | None = None) -> list[Inline]:
    """Links to evidence files (the first ``limit`` of them, then "and N more")."""
    shown = names if limit is None else names[:limit]
    out: list[Inline] = []
    for i, n in enumerate(shown):
        out += [", "] if i else []
        out.append(Link(n, n))
    if limit is not None and len(names) > limit:
        out.append(f" and {len(names) - limit} more")
    return out


def lost_sigchld(count: int) -> str:
    """The lost-SIGCHLD remark (empty when none)."""
    return (f"; {count} with a zombie child under a sleeping parent (the classic "
            "lost-SIGCHLD signature)") if count else ""


def account(summary: str | None) -> list[Inline]:
    """The link to the readable account of every hang, if there is one."""
    if not summary:
        return []
    return [" A readable account of every hang: ", Link(summary, summary), "."]


def paired_blocks(comparisons: list[Verdict]) -> list[Block]:
    """The round-paired details: per-round ratios, the drift check and the pooled figures
    (descriptive only); report.html charts the per-round ratios. What a drift or a withheld
    verdict means is in the run's warnings."""
    comps = [c for c in comparisons if c.paired]
    if not comps:
        return []
    rows = []
    for c in comps:
        drift = "-"
        if c.drift is not None:
            drift = (f"{'**drift**' if c.drift.flagged else 'none seen'} (spread "
                     f"{math.sqrt(c.drift.ratio):.1f}× the noise's, p {fmt_p(c.drift.p_value)})")
        pooled = "-"
        if c.pooled is not None:
            pooled = f"{fmt_ratio(c.pooled)}, p {fmt_p(c.pooled.p_value)}"
        rows.append([c.candidate, str(c.rounds), " ".join(f"{x:.3f}" for x in c.round_ratios),
                     drift, fmt_p(c.wilcoxon_p), pooled])
    what = ("geometric mean baseline / geometric mean candidate in each round; the verdict is "
            "the t interval on their logs, tested against ±min_effect")
    out: list[Block] = [text(f"Per-round ratios ({what}). Pooled figures assume independent "
                             "runs: descriptive only."),
                        table(["candidate", "rounds", "per-round ratios", "drift between blocks",
                               "Wilcoxon p", "pooled ratio [CI], p (MWU)"], rows)]
    stalled = [(c.candidate, c.stalls) for c in comps if c.stalls is not None]
    if stalled:
        out.append(bullets([stall_text(name, st) for name, st in stalled]))
    return out + estimand_blocks(comps)


def stall_text(candidate: str, st: Stalls) -> str:
    """A comparison's stalls in words: how many, the threshold, what the gate does with them."""
    bounds = (f" ({_ratio_ci(st.speedup, st.low, st.high)}, its one-sided bounds)"
              if st.speedup is not None else "")
    fisher = (f" and asks whether the candidate stalls more (Fisher p {fmt_p(st.p_more)})"
              if st.p_more is not None else "")
    return (f"{candidate}: {st.baseline} of {st.baseline_runs} baseline and {st.candidate} of "
            f"{st.candidate_runs} candidate runs stalled (at least {st.factor:g}× the median, "
            f"{fmt_time(st.threshold_s)}): kept in the verdict; the gate calls wall time on the "
            f"other runs{bounds}{fisher}")


def _ratio_ci(ratio: float, low: float | None, high: float | None) -> str:
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"{ratio:.3f}×{ci}"


def estimand_blocks(comparisons: list[Verdict]) -> list[Block]:
    """What the rule compares (for comparisons judged by the current rule), and, where the
    variants' shapes differ, the ratios of means and 90th percentiles beside it."""
    current = [c for c in comparisons if c.method == paired.METHOD]
    if not current:
        return []
    out: list[Block] = [text(f"Compared: {paired.ESTIMAND}; a ratio above 1 means the "
                             "candidate is faster.")]
    differ = [c for c in current if c.also is not None]
    if not differ:
        return out
    rows = []
    for c in differ:
        a = c.also
        assert a is not None
        rows.append([c.candidate, f"{a.sd_ratio:.2f}× (p {fmt_p(a.shape_p)})",
                     _ratio_ci(c.speedup, c.ci_low, c.ci_high),
                     _ratio_ci(a.mean_ratio, a.mean_ci_low, a.mean_ci_high),
                     _ratio_ci(a.p90_ratio, a.p90_ci_low, a.p90_ci_high), a.disagree or "-"])
    return [*out, text("The variants' shapes differ (the candidate's spread within a round "
                       "against the baseline's): the ratios of means and of 90th percentiles "
                       "(baseline / candidate, with their intervals) beside the geometric means':"),
            table(["candidate", "spread", "geometric mean", "mean", "90th percentile",
                   "disagree"], rows)]


def hang_blocks(sc: Any) -> list[Block]:
    """Runs with deadlines (results version 4; a command or burst result): the rule, the
    conditions, and per candidate its hangs against the baseline's (Fisher's exact test) with the
    evidence saved before each kill."""
    if sc.deadline_s is None:
        return []
    out: list[Block] = [text(
        f"Each run had a {sc.deadline_s:g} s deadline: a run past it is a hang, its evidence "
        "saved, its process group killed; hangs are counted (n above counts the runs that "
        "finished) and left out of the timing.")]
    if sc.conditions:
        out += [text("Conditions (each its own set of interleaved cells):"),
                bullets([[Code(c.name), f": {c.summary}"] for c in sc.conditions])]
    if not any(c.hangs is not None and (c.hangs.hangs or c.hangs.warmup_hangs)
               for c in sc.cells):
        return [*out, text("No run hung.")]
    rows = []
    for c in sc.comparisons:
        if c.hangs is not None:
            t = c.hangs
            rows.append([c.candidate, f"{t.hangs} of {t.runs}",
                         f"{t.baseline_hangs} of {t.baseline_runs}", fmt_p(t.p_value),
                         fmt_p(t.p_more)])
    out.append(table(["candidate", "hangs", "baseline hangs", "p (Fisher, two-sided)",
                      "p (hangs more, one-sided)"], rows))
    seen = []
    for cell in sc.cells:
        h = cell.hangs
        if h is None or not h.evidence:
            continue
        seen.append([f"{cell.label}: {len(h.evidence)} evidence files (warmup runs included)"
                     f"{lost_sigchld(h.lost_sigchld)}: ", *links(h.evidence, 5)])
    if seen:
        out += [text("What was seen:", *account(sc.evidence_summary)), bullets(seen)]
    return out


def timed_blocks(sc: Any, *, deadlines: bool) -> list[Block]:
    """What report.md shows of a timed scenario after its detail table: the round-paired details,
    every other metric's verdicts with what they say (results version 6), and (``deadlines``: a
    kind whose runs have deadlines) the hangs."""
    if not sc.cells:
        return []
    return (paired_blocks(sc.comparisons) + metric_blocks(sc)
            + (hang_blocks(sc) if deadlines else []))


def _failed_output(checks: dict[str, Check]) -> list[Block]:
    """The output a failed check ended with, whole (run_verify keeps its last lines)."""
    return [b for v, c in checks.items() if not c.passed and c.output.strip()
            for b in (text(f"{v}: the last lines of its output:"), Pre(c.output))]


def verify_blocks(checks: dict[str, Check] | None) -> list[Block]:
    """report.md (and the console): the ``verify`` check of every variant."""
    if not checks:
        return []
    items: list[list[Inline]] = []
    longer: list[Block] = []  # outputs of several lines, each in a fence of its own below
    for variant, v in checks.items():
        if not v.passed:
            items.append([f"{variant}: FAILED (exit {v.exit_code})"])
            continue
        output = v.output[:300]
        if "\n" in output.strip("\n"):
            items.append([f"{variant}: passed — its output below"])
            longer += [text(f"{variant}:"), Pre(output)]
        else:  # a code span its text cannot close (report/markdown.py)
            items.append([f"{variant}: passed — ", Code(output.strip("\n"))])
    return [text("Check after measuring (", Code("verify"), "):"), bullets(items), *longer,
            *_failed_output(checks)]


def verify_page(checks: dict[str, Check] | None) -> list[Block]:
    """report.html: the ``verify`` check of every variant."""
    if not checks:
        return []
    items: list[list[Inline]] = []
    for v, c in checks.items():
        passed: list[Inline] = [" ", Code(c.output[:500])] if c.passed else []
        items.append([Strong(v), f": {'passed' if c.passed else 'FAILED'} (exit {c.exit_code})",
                      *passed])
    return [heading("Check after measuring (verify)"), bullets(items, "verify"),
            *_failed_output(checks)]


def timed_charts(data: dict[str, Any]) -> list[Block]:
    """report.html's charts of a timed scenario (``data``: the scenario as results.json holds it):
    every run per cell, and the speedup within each round."""
    return [
        Chart("distribution", partial(charts.distribution_chart, data),
              "Every run per cell with a box of the quartiles; the black diamond is the median "
              "and its bar the 95% bootstrap CI of the median."),
        Chart("rounds", partial(charts.round_ratio_chart, data),
              "Speedup within each round (baseline median / candidate median of that round's "
              "runs): a drift during the run shows as a slope; the band is the overall 95% CI."),
    ]


def round_evidence(sc: Any) -> list[Block]:
    """The hung instances of a stress-like kind's rounds (``rounds_detail``), each with the
    evidence saved before its kill (nothing when none hung)."""
    seen = [[f"{r.variant} round {r.round}: ", *links(r.evidence)] for r in sc.rounds_detail
            if r.evidence]
    if not seen:
        return []
    return [text("Hung instances, with the evidence saved before the kill:",
                 *account(sc.evidence_summary)), bullets(seen)]


def images_line(images: dict[str, str], runc: dict[str, str] | None) -> Block:
    """The containerd kinds' images (identical for every variant) and the runc they ran."""
    return text("Images (identical for every variant): "
                + ", ".join(f"L={n} `{d}`" for n, d in images.items())
                + (f". runc: {runc.get('version', '').splitlines()[0]} "
                   f"(sha256 {runc.get('sha256', '')[:12]})" if runc else "") + ".")


class Phases(Protocol):
    """One build's phases at one k, as k_tables reads them (the burst kind's ``PhaseCell``)."""

    @property
    def median(self) -> Mapping[str, float]: ...

    @property
    def total_median(self) -> float: ...


def k_tables(name: str, ks: list[int], cells: list[Cell], comparisons: list[Verdict], *,
             overhead: dict[str, float] | None = None, slopes: dict[str, float] | None = None,
             phases: Mapping[str, Mapping[str, Phases]] | None = None,
             phase_names: list[str] | None = None) -> list[Block]:
    """report.html's table per k (cells with a ``k`` parameter): each variant's median (the
    last cell of that variant and k), the speedup of the cell labelled "VARIANT k=K", the launcher
    overhead; the slopes; the phases. ``name``: the table's (the burst kind's name)."""
    if not ks:
        return []
    variants = list(dict.fromkeys(c.variant for c in cells))
    by_k = {(c.variant, int(c.params["k"])): c for c in cells}
    comps = {c.candidate: c for c in comparisons}
    rows = []
    for k in ks:
        row = [str(k)]
        row += [fmt_time(by_k[(v, k)].summary.median) if (v, k) in by_k else "-"
                for v in variants]
        row += [fmt_ratio(comps[f"{v} k={k}"]) if f"{v} k={k}" in comps else "-"
                for v in variants[1:]]
        row.append(fmt_time((overhead or {}).get(str(k))))
        rows.append(row)
    out: list[Block] = [table(["k at once", *variants,
                               *[f"speedup {v} [95% CI]" for v in variants[1:]],
                               "launcher overhead"], rows, name)]
    if slopes:
        out.append(text("Slope (least squares over the medians): "
                        + ", ".join(f"{v} {s * 1e3:.2f} ms per extra instance"
                                    for v, s in slopes.items()) + "."))
    phase_rows = []
    for build, per_k in (phases or {}).items():
        for kk, ph in per_k.items():
            names = phase_names or list(ph.median)
            phase_rows.append([build, kk, *[fmt_time(ph.median.get(n)) for n in names],
                               fmt_time(ph.total_median)])
    if phase_rows and phases:
        names = phase_names or list(next(iter(next(iter(phases.values())).values())).median)
        out += [heading("Phases (medians over every instance)"),
                table(["build", "k", *names, "total"], phase_rows, "phases")]
    return out


def k_chart(name: str, data: dict[str, Any]) -> Block:
    """report.html's chart per k (``data``: a scenario with ``k`` and cells, as results.json
    holds it): time against k, and the speedup per k. ``name``: the chart's (the burst kind's)."""
    return Chart(name, partial(charts.burst_chart, data),
                 "Burst scan: seconds until the last of k instances exits (median, 95% CI bars), "
                 "and the speedup per k with its 95% CI.")
