"""results.json -> markdown: the printed summary and report.md. Each scenario's own part is its
kind's ``report`` (a list of patchbench.report.blocks), formatted here; only data goes in;
nothing here measures or writes."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tabulate import tabulate

from patchbench.analysis import gating, sequential
from patchbench.analysis.sequential import fmt_duration
from patchbench.report.blocks import (
    Block,
    Bullets,
    Chart,
    Code,
    Data,
    Heading,
    Image,
    Inline,
    Link,
    Output,
    Pre,
    Strong,
    Table,
    Text,
)
from patchbench.report.numbers import (
    fmt_aa,
    fmt_ci,
    fmt_delta,
    fmt_metric_verdict,
    fmt_p,
    fmt_ratio,
    fmt_series,
    fmt_time,
    fmt_verdict,
    fmt_verdict_now,
)
from patchbench.results import (
    PAIRED6_METHOD,
    SKEW_METHODS,
    Results,
    ScenarioResult,
    Stopping,
    TimedResult,
)
from patchbench.scenarios import KINDS, budget
from patchbench.util.escape import md_cell, md_code, md_fence, md_plain, md_text

__all__ = ["fmt_ci", "fmt_delta", "fmt_p", "fmt_ratio", "fmt_time", "fmt_verdict", "md_table",
           "render", "summary_table"]


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]], fmt: str = "github",
             *, numparse: bool = False) -> str:
    """The one markdown table: GitHub's pipes (``fmt``: tabulate's other formats, for a
    terminal); cells as they are unless ``numparse`` (numbers aligned as numbers)."""
    return tabulate(rows, headers=list(headers), tablefmt=fmt, disable_numparse=not numparse)


def inline(parts: Sequence[Inline]) -> str:
    out = []
    for p in parts:
        if isinstance(p, Code):
            out.append(md_code(p.text))  # a backtick in it cannot close the span
        elif isinstance(p, Output):  # no tag, no link (util/escape.py)
            out.append(md_text(p.text))
        elif isinstance(p, Strong):
            out.append(f"**{p.text}**")
        elif isinstance(p, Link):
            out.append(f"[{p.label}]({p.href})")
        else:
            out.append(p)
    return "".join(out)


def block(b: Block) -> str | None:
    """One block as markdown; None: it has no markdown form (a chart drawn for report.html)."""
    if isinstance(b, Text):
        return inline(b.parts)
    if isinstance(b, Heading):
        return f"### {b.text}"
    if isinstance(b, Bullets):
        return "\n".join(f"- {inline(item)}" for item in b.items)
    if isinstance(b, Table):
        if b.plain:  # a program's text: no markup, nothing that splits the table
            return md_table([md_cell(h) for h in b.headers],
                            [[md_plain(c) for c in row] for row in b.rows])
        if b.text:  # names from a trace or a saved run: no tag, no link, no column added
            return md_table([md_cell(h) for h in b.headers],
                            [[md_cell(c) for c in row] for row in b.rows])
        return md_table(b.headers, b.rows)
    if isinstance(b, Image):
        return f"![{b.alt}]({b.src})"
    if isinstance(b, Data):
        return f"{b.title}:\n\n```json\n{json.dumps(b.value, indent=2, ensure_ascii=False)}\n```"
    if isinstance(b, Chart):
        return None
    if isinstance(b, Pre):  # a fence its content cannot close
        return md_fence(b.text)
    raise TypeError(f"not a report block: {b!r}")


def blocks(bs: Sequence[Block]) -> list[str]:
    """Blocks as markdown, one string each (report.md puts an empty line between them)."""
    return [m for m in (block(b) for b in bs) if m is not None]


def scenario_blocks(sc: ScenarioResult) -> list[str]:
    """A scenario's own sections after its detail table (its kind's ``report``), as markdown."""
    return blocks(KINDS[sc.kind].report(sc))


SUMMARY_HEADERS = ["scenario", "candidate", "baseline median", "candidate median",
                   "speedup [95% CI]", "p (MWU)", "verdict"]


def paired(results: Results) -> bool:
    """Whether the run's verdicts are round-paired (results version 3 and later)."""
    return any(c.paired for sc in results.scenarios if isinstance(sc, TimedResult)
               for c in sc.comparisons)


METRICS_HEADER = "other metrics"


def with_metrics(results: Results) -> bool:
    """Whether a comparison of the run judged metrics besides wall time (results version 6)."""
    return any(c.metrics for sc in results.scenarios if isinstance(sc, TimedResult)
               for c in sc.comparisons)


def summary_headers(results: Results) -> list[str]:
    extra = [METRICS_HEADER] if with_metrics(results) else []
    if paired(results):
        return [*SUMMARY_HEADERS[:5], "p (paired t)", "verdict", *extra]
    return SUMMARY_HEADERS + extra


def summary_rows(results: Results) -> list[list[str]]:
    """One row per candidate and scenario: wall time's figures and verdict, then (results version
    6) every other metric's verdict, compact, in one last column."""
    rows = []
    metrics = with_metrics(results)
    for sc in results.scenarios:
        if not isinstance(sc, TimedResult):
            continue
        cells = {c.label: c for c in sc.cells}
        for comp in sc.comparisons:
            base, cand = cells[comp.baseline], cells[comp.candidate]
            row = [sc.name + (f" {comp.params}" if comp.params else ""), comp.candidate_variant,
                   fmt_time(base.summary.median), fmt_time(cand.summary.median), fmt_ratio(comp),
                   fmt_p(comp.p_value, exact=results.report_format >= 2),
                   fmt_verdict_now(comp, base.samples, cand.samples)]
            if sc.rate:
                row[2] += f" ({sc.rate.count / base.summary.median:,.0f} {sc.rate.unit})"
                row[3] += f" ({sc.rate.count / cand.summary.median:,.0f} {sc.rate.unit})"
            if metrics:
                row.append("; ".join(fmt_metric_verdict(m) for m in (comp.metrics or {}).values())
                           or "-")
            rows.append(row)
    return rows


def summary_table(results: Results, fmt: str = "simple") -> str:
    rows = summary_rows(results)
    if fmt == "github":  # names, parameters and verdicts come from the file: escaped
        rows = [[md_cell(r[0]), md_cell(r[1]), *r[2:6], *map(md_cell, r[6:])] for r in rows]
    return md_table(summary_headers(results), rows, fmt)


def detail_table(sc: TimedResult, fmt: str = "github") -> str:
    rate = sc.rate
    rows = []
    for c in sc.cells:
        s = c.summary
        label = md_cell(c.label) if fmt == "github" else c.label
        row: list[object] = [label, s.n, fmt_time(s.median), fmt_ci(s.median_ci),
                             f"{fmt_time(s.mean)} ± {fmt_time(s.stdev)}", fmt_time(s.min),
                             fmt_time(s.max)]
        if rate:
            ci = s.median_ci
            row.append(f"{rate.count / s.median:,.0f}"
                       + (f" [{rate.count / ci[1]:,.0f}, {rate.count / ci[0]:,.0f}]" if ci else ""))
        if any(x.hangs is not None for x in sc.cells):
            row.append(c.hangs.text if c.hangs is not None else "-")
        rows.append([*row, "noisy" if s.noisy else ""])
    headers = ["cell", "n", "median", "95% CI of median", "mean ± σ", "min", "max"]
    if rate:
        headers.append(f"{rate.unit} [95% CI]")
    if any(x.hangs is not None for x in sc.cells):
        headers.append("hangs")
    return md_table([*headers, ""], rows, fmt)


def statistics_line(results: Results) -> str:
    st = results.settings
    if not paired(results):
        return (f"- statistics: speedup = median(baseline) / median(candidate), 95% bootstrap CI; "
                f"Mann–Whitney U two-sided, alpha {st.alpha}, minimum effect {st.min_effect:.0%}")
    least = min(c.min_rounds or 0 for sc in results.scenarios if isinstance(sc, TimedResult)
                for c in sc.comparisons)
    if any(c.rule5 for sc in results.scenarios if isinstance(sc, TimedResult)
           for c in sc.comparisons):
        methods = {c.method for sc in results.scenarios if isinstance(sc, TimedResult)
                   for c in sc.comparisons}
        skew = bool(methods & set(SKEW_METHODS))
        effect = ("the effect in time is the ratio applied to the baseline's geometric mean "
                  "(candidate − baseline); the standard error allows for noise shared by "
                  "neighbouring rounds" if PAIRED6_METHOD in methods else
                  "the effect in time is the mean per-round difference (candidate − baseline)")
        interval = ("skewness-corrected t interval (the t and Hall's transformation of it must "
                    "both reject; " if skew else "t interval (")
        return (f"- statistics: round-paired (schema 5) — per round, the ratio of the geometric "
                f"means; speedup = their geometric mean, with a {1 - st.alpha:.0%} {interval}"
                f"R−1 degrees of freedom); faster/slower: significant and beyond "
                f"±{st.min_effect:.0%} on the log scale (one-sided test at alpha {st.alpha}); "
                f"equivalent: the {1 - 2 * st.alpha:.0%} interval within ±{st.min_effect:.0%} "
                f"(TOST); otherwise inconclusive, with the change this run could detect; "
                f"{effect}; no verdict with fewer than {least} rounds")
    return (f"- statistics: round-paired — per round, the ratio of the medians; speedup = their "
            f"geometric mean, with a {1 - st.alpha:.0%} t interval on the mean log ratio (R−1 "
            f"degrees of freedom) and a two-sided t test; alpha {st.alpha}, minimum effect "
            f"{st.min_effect:.0%}; no verdict with fewer than {least} rounds")


def stopping_lines(results: Results, name: str) -> list[str]:
    """``--until-ci``: how a scenario's rounds ended (patchbench.analysis.sequential), if it ran
    with it: the looks planned, the level of each, and where it stopped and why."""
    out = []
    for s in results.stopping or []:
        if s.scenario != name:
            continue
        where = f" (condition {s.condition})" if s.condition else ""
        width = s.looks[-1].half_width if s.looks else None
        if s.target is None:  # --budget (results version 6)
            out += [budget_line(s, where), ""]
            continue
        out += [f"Stopping by precision{where}: `--until-ci {s.target * 100:g} --max-rounds "
                f"{s.max_rounds}`, looks planned at rounds "
                f"{', '.join(str(r) for r in s.planned_looks)}, each judged at alpha "
                f"{s.alpha_per_look:.3g} ({s.alpha:g} spent over {len(s.planned_looks)} looks); "
                + sequential.describe(s.stopped_at, s.reason, width, s.target) + ".", ""]
    return out


def budget_line(s: Stopping, where: str = "") -> str:
    """How ``--budget`` ended a scenario: the looks planned from the pace of its configured
    rounds, the level of each, the half-width per gated metric at each look, where it stopped
    and why, and the MDE reached."""
    looks = "; ".join(f"round {look.rounds}: " + ", ".join(
        f"{n} ±{w * 100:.1f} %" if w is not None else f"{n} none"
        for n, w in look.widths.items()) for look in s.looks)
    return (f"Best answer in the time given{where}: `--budget {fmt_duration(s.budget_s or 0)}`"
            f" for the gated metrics {', '.join(s.metrics)}; looks planned at rounds "
            f"{', '.join(str(r) for r in s.planned_looks)}, each judged at alpha "
            f"{s.alpha_per_look:.3g} ({s.alpha:g} spent over {len(s.planned_looks)} looks); CI "
            f"half-width at each look: {looks}; "
            + budget.describe(s.stopped_at, s.reason, s.seconds, s.budget_s, s.mde) + ".")


def stopping_text(results: Results) -> list[str]:
    """Every stopping record of a run as one line each (what ``compare`` prints)."""
    out = []
    for s in results.stopping or []:
        where = f"{s.scenario}" + (f" (condition {s.condition})" if s.condition else "")
        if s.target is None:
            out.append(f"{where}: " + budget.describe(s.stopped_at, s.reason, s.seconds,
                                                      s.budget_s, s.mde))
        else:
            width = s.looks[-1].half_width if s.looks else None
            out.append(f"{where}: " + sequential.describe(s.stopped_at, s.reason, width,
                                                          s.target))
    return out


def runtime_block(results: Results) -> list[str]:
    """The engine, image and registered runtimes a run set up (docker-run), if any."""
    rt = results.runtime
    if rt is None:
        return []
    eng = rt.engine
    out = ["", f"Runtime `{rt.name}`: engine {eng.get('engine', '?')} (API {eng.get('api', '?')}, "
           f"containerd {eng.get('containerd', '?')}"
           + (f", docker CLI {eng['cli']}" if eng.get("cli") else "") + ")"
           + (f"; image `{rt.image.get('id', '')}` ({rt.image.get('ref', '')})" if rt.image else "")
           + ".", ""]
    out += [f"- `{name}` = {r.path} (sha256 `{r.sha256[:12]}`, checked against the manifest)"
            for name, r in rt.registered.items()]
    return out


def aa_md(results: Results) -> str:
    """Which A/A a run did (runs since --aa-layout; "" before, where the line says "A/A run")."""
    if results.aa_build is None:
        return ""
    label, why = fmt_aa(results.aa_build)
    return f" — **A/A run, {label}** ({md_text(why)})"


def render(results: Results, *, gate: Sequence[str] | None = None) -> str:
    """report.md; ``gate``: the gate's reasons, for a run made with --gate (None: no section)."""
    m = results.machine
    new = results.report_format >= 2  # free text escaped; no timing line without timed results
    free = md_text if new else str
    timed = any(isinstance(sc, TimedResult) and sc.comparisons for sc in results.scenarios)
    lines = [
        f"# {results.comparison}: {free(results.description or '')}".rstrip(": "),
        "",
        f"- target: {md_code(results.target)} {free(results.url)} at {md_code(results.ref)} "
        f"({md_code(results.commit)})",
        f"- run: {results.started_at} → {results.finished_at}, seed {results.seed}"
        + (" — **A/A run** (baseline against itself: the noise floor)" if results.aa
           and results.aa_build is None else "") + aa_md(results),
        f"- machine: {m['cpu_model']}, {m['cpu_count']} cores, kernel {m['kernel']}, "
        f"load {', '.join(f'{x:.2f}' for x in m['load_avg'])} at start"
        + (f", {m['virtualization']}" if m.get("virtualization") else ""),
        *([statistics_line(results)] if timed or not new else []),
        "",
        "## Builds",
        "",
    ]
    brows = []
    for name, man in results.builds.items():
        fp = man["fingerprint"]
        arts = ", ".join(f"{k} {v['sha256'][:12]}" for k, v in man["artifacts"].items())
        brows.append([name, man["built_commit"][:12],
                      fmt_series(man["series"], upstream=results.report_format >= 3),
                      (fp.get("version") or fp.get("swift", "")) + (  # docker: the build image
                          f" in {fp['image']['ref']} {fp['image']['id'][:19]}" if "image" in fp
                          else ""), arts])
    lines.append(md_table(["variant", "built commit", "series", "toolchain",
                           "artifacts (sha256)"], brows, numparse=True))
    lines += runtime_block(results)
    if summary_rows(results):
        lines += ["", "## Summary", "", summary_table(results, "github"), ""]
    else:
        lines += [""]
    for sc in results.scenarios:
        lines += [f"## Scenario `{sc.name}` ({sc.kind})", ""]
        if sc.description:
            lines += [free(sc.description), ""]
        lines += [f"Command: {md_code(sc.command)}", ""]
        if isinstance(sc, TimedResult) and sc.cells:
            lines += [f"{sc.runs} runs per cell in {sc.rounds} interleaved rounds, warmup "
                      f"{sc.warmup}.", "", *stopping_lines(results, sc.name), detail_table(sc),
                      ""]
        for extra in scenario_blocks(sc):
            lines += [extra, ""]
    if gate is not None:
        allowed = " (with --gate-allow-inconclusive)" if results.gate_allow_inconclusive else ""
        lines += ["## Gate", ""]
        lines += ([f"**FAILED** ({len(gate)} reason{'s' if len(gate) > 1 else ''}):", "",
                   *(f"- {md_cell(r)}" for r in gate)] if gate else
                  [f"**passed**{allowed}: {gating.passed_text(results)}."])
        lines += [""]
    if results.warnings:
        lines += ["## Warnings", ""] + [f"- {free(w)}" for w in results.warnings] + [""]
    return "\n".join(lines)
