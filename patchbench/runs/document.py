"""One run's report as blocks: report.md, report.html and what ``compare`` prints. Each scenario's
own part is its kind's; report.markdown and report.html format the blocks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from patchbench.analysis import gating, sequential
from patchbench.analysis import metrics as mx
from patchbench.analysis.sequential import fmt_duration
from patchbench.report import html as html_format
from patchbench.report import markdown as md_format
from patchbench.report.blocks import (
    Block,
    Cell,
    Code,
    Data,
    Escaped,
    Fold,
    Gate,
    Image,
    Inline,
    Output,
    Section,
    Strong,
    Table,
    View,
    bullets,
    escaped,
    heading,
    table,
    text,
)
from patchbench.report.numbers import (
    fmt_aa,
    fmt_ci,
    fmt_metric_verdict,
    fmt_p,
    fmt_ratio,
    fmt_series,
    fmt_time,
    fmt_verdict,
)
from patchbench.results import (
    Results,
    RunInput,
    ScenarioResult,
    Stopping,
    TimedResult,
    as_results,
)
from patchbench.scenarios import KINDS, budget

SUMMARY_HEADERS = ["scenario", "candidate", "baseline median", "candidate median",
                   "speedup [95% CI]", "p (MWU)", "verdict"]
METRICS_HEADER = "other metrics"
GATE_PASSED = "no candidate significantly slower, every check passed."


def markdown(results: Results, *, gate: Sequence[str] | None = None) -> str:
    """report.md; ``gate``: the gate's reasons, for a run made with --gate (None: no section)."""
    return md_format.document(blocks(results, View.REPORT, gate))


def html(results: RunInput, *, gate: Sequence[str] | None = None) -> str:
    """report.html: the whole report of one run as one page (no external resources)."""
    model = as_results(results)
    return html_format.page(_title(model), blocks(model, View.PAGE, gate))


def _title(results: Results) -> str:
    return f"{results.comparison}: {results.description or ''}".rstrip(": ")


def paired(results: Results) -> bool:
    """Whether the run's verdicts are round-paired (results version 3 and later)."""
    return any(c.paired for sc in results.scenarios if isinstance(sc, TimedResult)
               for c in sc.comparisons)


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
                   fmt_verdict(comp)]
            if sc.rate:
                row[2] += f" ({sc.rate.count / base.summary.median:,.0f} {sc.rate.unit})"
                row[3] += f" ({sc.rate.count / cand.summary.median:,.0f} {sc.rate.unit})"
            if metrics:
                row.append("; ".join(fmt_metric_verdict(m) for m in (comp.metrics or {}).values())
                           or "-")
            rows.append(row)
    return rows


def summary_table(results: Results) -> Table:
    """Names, parameters and verdicts come from the file: escaped."""
    headers = summary_headers(results)
    rows = [[Escaped(r[0]), Escaped(r[1]), *r[2:6], *map(Escaped, r[6:])]
            for r in summary_rows(results)]
    return table(headers, rows, "summary",
                 styles=["", "", "num", "num", "num", "num", "verdict", ""])


def detail_table(sc: TimedResult, view: View) -> Table:
    """Each cell's figures (report.md adds the rate, and names the hangs as recorded)."""
    page = view is View.PAGE
    rate = None if page else sc.rate
    hung = any(x.hangs is not None for x in sc.cells)
    rows: list[list[object]] = []
    for c in sc.cells:
        s, h = c.summary, c.hangs
        row: list[object] = [Escaped(c.label), s.n, fmt_time(s.median), fmt_ci(s.median_ci),
                             f"{fmt_time(s.mean)} ± {fmt_time(s.stdev)}", fmt_time(s.min),
                             fmt_time(s.max)]
        if rate:
            ci = s.median_ci
            row.append(f"{rate.count / s.median:,.0f}"
                       + (f" [{rate.count / ci[1]:,.0f}, {rate.count / ci[0]:,.0f}]" if ci else ""))
        if hung:
            row.append("-" if h is None else f"{h.hangs} of {h.runs}" if page else h.text)
        rows.append([*row, "noisy" if s.noisy else ""])
    headers = ["cell", "n", "median", "95% CI of median", "mean ± σ", "min", "max"]
    headers += [f"{rate.unit} [95% CI]"] if rate else []
    headers += ["hangs"] if hung else []
    return table([*headers, ""], rows, "detail", styles=["", *["num"] * 6])


def statistics_line(results: Results) -> str:
    st = results.settings
    if not paired(results):
        return (f"statistics: speedup = median(baseline) / median(candidate), 95% bootstrap CI; "
                f"Mann–Whitney U two-sided, alpha {st.alpha}, minimum effect {st.min_effect:.0%}")
    comps = [c for sc in results.scenarios if isinstance(sc, TimedResult) for c in sc.comparisons]
    least = min(c.min_rounds or 0 for c in comps)
    return (f"statistics: round-paired — per round, the ratio of the geometric means; speedup = "
            f"their geometric mean, with a {1 - st.alpha:.0%} skewness-corrected t interval (the "
            "t and Hall's transformation of it must both reject), its standard error widened for "
            "noise shared by neighbouring rounds and its degrees of freedom cut to match; "
            f"faster/slower: significant and beyond ±{st.min_effect:.0%} on the log scale "
            f"(one-sided test at alpha {st.alpha}); equivalent: the {1 - 2 * st.alpha:.0%} "
            f"interval within ±{st.min_effect:.0%} (TOST); otherwise inconclusive, with the "
            "change this run could detect; the effect in time is the change of the geometric-mean "
            "time (the ratio applied to the baseline's geometric mean, candidate − baseline), not "
            "of the mean time; the other metrics are called only when the gated ones changed "
            f"(Holm among them: {mx.FAMILY_SHORT}); no verdict with fewer than {least} rounds")


def _widths(s: Stopping) -> dict[str, float | None] | None:
    return s.looks[-1].widths if s.looks else None


def stopping_lines(results: Results, name: str) -> list[str]:
    """``--until-ci`` and ``--budget``: how a scenario's rounds ended (if it ran with either):
    the looks planned, the level of each, and where it stopped and why."""
    out = []
    for s in results.stopping or []:
        if s.scenario != name:
            continue
        where = f" (condition {s.condition})" if s.condition else ""
        if s.target is None:  # --budget (results version 6)
            out.append(budget_line(s, where))
            continue
        width = s.looks[-1].half_width if s.looks else None
        out.append(f"Stopping by precision{where}: `--until-ci {s.target * 100:g} --max-rounds "
                   f"{s.max_rounds}`, looks planned at rounds "
                   f"{', '.join(str(r) for r in s.planned_looks)}, each judged at alpha "
                   f"{s.alpha_per_look:.3g} ({s.alpha:g} spent over {len(s.planned_looks)} looks); "
                   + sequential.describe(s.stopped_at, s.reason, width, s.target) + ".")
    return out


def budget_line(s: Stopping, where: str = "") -> str:
    """How ``--budget`` ended a scenario: the looks planned from the pace of its configured
    rounds, the level of each, the half-width per gated metric at each look, where it stopped
    and why, and the MDE reached."""
    looks = "; ".join(f"round {look.rounds}: " + ", ".join(
        f"{n} ±{w * 100:.1f} %" if w is not None else f"{n} none"
        for n, w in look.widths.items()) for look in s.looks)
    head = (f"Best answer in the time given{where}: `--budget {fmt_duration(s.budget_s)}`"
            if s.budget_s is not None else f"The gate's looks{where}: `--gate`")
    return (f"{head} for the gated metrics {', '.join(s.metrics)}; looks planned at rounds "
            f"{', '.join(str(r) for r in s.planned_looks)}, each judged at alpha "
            f"{s.alpha_per_look:.3g} ({s.alpha:g} spent over {len(s.planned_looks)} looks); CI "
            f"half-width at each look: {looks}; "
            + budget.describe(s.stopped_at, s.reason, s.seconds, s.budget_s, s.mde, _widths(s),
                              s.dropped) + ".")


def stopping_text(results: Results) -> list[str]:
    """Every stopping record of a run as one line each (what ``compare`` prints)."""
    out = []
    for s in results.stopping or []:
        where = f"{s.scenario}" + (f" (condition {s.condition})" if s.condition else "")
        if s.target is None:
            said = budget.describe(s.stopped_at, s.reason, s.seconds, s.budget_s, s.mde,
                                   _widths(s), s.dropped)
        else:
            width = s.looks[-1].half_width if s.looks else None
            said = sequential.describe(s.stopped_at, s.reason, width, s.target)
        out.append(f"{where}: {said}")
    return out


def runtime_blocks(results: Results) -> list[Block]:
    """The engine, image and registered runtimes a run set up (docker-run), if any."""
    rt = results.runtime
    if rt is None:
        return []
    eng = rt.engine
    image: list[Inline] = (["; image ", Code(rt.image.get("id", "")),
                            f" ({rt.image.get('ref', '')})"] if rt.image else [])
    return [text("Runtime ", Code(rt.name), f": engine {eng.get('engine', '?')} (API "
                 f"{eng.get('api', '?')}, containerd {eng.get('containerd', '?')}"
                 + (f", docker CLI {eng['cli']}" if eng.get("cli") else "") + ")", *image, "."),
            bullets([[Code(name), f" = {r.path} (sha256 ", Code(r.sha256[:12]),
                      ", checked against the manifest)"] for name, r in rt.registered.items()])]


def machine_summary(m: dict[str, Any]) -> str:
    return (f"{m.get('cpu_model')}, {m.get('cpu_count')} cores, kernel {m.get('kernel')}, "
            f"load {', '.join(f'{x:.2f}' for x in m.get('load_avg', []))} at start"
            + (f", {m['virtualization']}" if m.get("virtualization") else ""))


def header(results: Results, view: View) -> list[Block]:
    """The title and what was run, where and how it was judged."""
    page = view is View.PAGE
    new = results.report_format >= 2  # free text escaped; no timing line without timed results

    def free(s: str) -> Inline:
        return Output(s) if new or page else s

    desc = results.description or ""
    title: list[Inline] = ([_title(results)] if page else
                           [results.comparison, *([": ", free(desc.rstrip(": "))]
                                                  if desc.rstrip(": ") else [])])
    aa: list[Inline] = []
    if results.aa and results.aa_build is None:
        aa = [" — ", Strong("A/A run"), " (baseline against itself: the noise floor)"]
    elif results.aa_build is not None:
        label, why = fmt_aa(results.aa_build)
        aa = [" — ", Strong(f"A/A run, {label}"), " (", Output(why), ")"]
    timed = any(isinstance(sc, TimedResult) and sc.comparisons for sc in results.scenarios)
    colon = "" if page else ":"
    meta: list[list[Inline]] = [
        [f"target{colon} ", Code(results.target), " ", free(results.url), " at ",
         Code(results.ref), " (", Code(results.commit), ")"],
        [f"run{colon} {results.started_at} → {results.finished_at}, seed "
         f"{results.seed}", *aa],
        [f"machine: {machine_summary(results.machine)}"]]
    meta += [[statistics_line(results)]] if timed or not new else []
    return [heading(*title, level=1), bullets(meta, "meta" if page else "")]


def builds_table(results: Results, view: View) -> Table:
    rows = []
    for name, man in results.builds.items():  # the manifests as the run recorded them
        fp = man["fingerprint"]
        image = (f" in {fp['image']['ref']} {fp['image']['id'][:19]}"
                 if "image" in fp and view is not View.PAGE else "")  # docker: the build image
        rows.append([name, man["built_commit"][:12],
                     fmt_series(man["series"], upstream=results.report_format >= 3),
                     (fp.get("version") or fp.get("swift", "")) + image,
                     ", ".join(f"{k} {v['sha256'][:12]}" for k, v in man["artifacts"].items())])
    return table(["variant", "built commit", "series", "toolchain", "artifacts (sha256)"], rows,
                 "builds", numbers=view is not View.PAGE)


def scenario_section(sc: ScenarioResult, view: View, *, new: bool = True,
                     stopping: Sequence[str] = ()) -> Section:
    """One scenario: its command, its cells' detail table (a timed kind), then its kind's part.
    ``new``: report format 2 or later (free text escaped); ``stopping``: how its rounds ended."""
    page = view is View.PAGE
    out: list[Block] = [heading("Scenario ", Code(sc.name), f" ({sc.kind})", level=2,
                                id=f"scenario-{sc.name}" if page else "")]
    if sc.description:
        out.append(text(Output(sc.description) if page or new else sc.description))
    out.append(text("Command: ", Code(sc.command)))
    if isinstance(sc, TimedResult) and sc.cells:
        out.append(text(f"{sc.runs} runs per cell in {sc.rounds} interleaved rounds, warmup "
                        f"{sc.warmup}."))
        out += [] if page else [text(line) for line in stopping]
        out.append(detail_table(sc, view))
    out += KINDS[sc.kind].blocks(sc, view)
    return Section(tuple(out))


def gate_blocks(results: Results, gate: Sequence[str]) -> list[Block]:
    """report.md's section on the gate."""
    if gate:
        return [heading("Gate", level=2),
                text(Strong("FAILED"), f" ({len(gate)} reason{'s' if len(gate) > 1 else ''}):"),
                bullets([[Escaped(r)] for r in gate])]
    allowed = " (with --gate-allow-inconclusive)" if results.gate_allow_inconclusive else ""
    return [heading("Gate", level=2),
            text(Strong("passed"), f"{allowed}: {gating.passed_text(results)}.")]


def gate_box(gate: Sequence[str]) -> Gate:
    """The gate's answer in one box (report.html, the job summary)."""
    if gate:
        return Gate(False, "Gate: FAILED", reasons=tuple(gate))
    return Gate(True, "Gate: passed", GATE_PASSED)


def blocks(results: Results, view: View, gate: Sequence[str] | None = None) -> list[Block]:
    """The whole report of one run (``view``: report.md or report.html)."""
    page = view is View.PAGE
    out = header(results, view)
    if page and gate is not None:
        out.append(gate_box(gate))
    summary: list[Block] = [heading("Summary", level=2, id="summary" if page else ""),
                            summary_table(results)]
    builds: list[Block] = [heading("Builds", level=2, id="builds" if page else ""),
                           builds_table(results, view)]
    if not page:
        out += builds + runtime_blocks(results)
    out += [Section(tuple(summary))] if summary_rows(results) else []
    out += [scenario_section(sc, view, new=results.report_format >= 2,
                             stopping=stopping_lines(results, sc.name))
            for sc in results.scenarios]
    if gate is not None and not page:
        out += gate_blocks(results, gate)
    if results.warnings:
        new = results.report_format >= 2
        out.append(Section((heading("Warnings", level=2, id="warnings" if page else ""),
                            bullets([[Output(w) if new or page else w] for w in results.warnings],
                                    "warnings" if page else ""))))
    if page:
        out += [Section((*builds, *(Data(f"manifest of {n}", m) for n, m in results.builds.items()))),
                Section((heading("Machine", level=2, id="machine"),
                         Data("machine.json", results.machine))),
                Data("settings, seed and round order", {
                    "settings": results.settings.model_dump(mode="json", exclude_none=True),
                    "seed": results.seed, "order": {sc.name: sc.order for sc in results.scenarios}})]
    return out


def kind_tables(results: Results) -> list[Table]:
    """The kinds' own tables of a job summary (their blocks for View.SUMMARY): the rows of every
    scenario whose table has the same headers are one table, in the order they first appear.
    Names and builds come from the file: every cell is escaped."""
    rows: dict[tuple[Cell, ...], list[tuple[Cell, ...]]] = {}
    for sc in results.scenarios:
        for t in KINDS[sc.kind].blocks(sc, View.SUMMARY):
            if isinstance(t, Table) and t.rows:
                rows.setdefault(t.headers, []).extend(tuple(escaped(row)) for row in t.rows)
    return [Table(headers, tuple(r)) for headers, r in rows.items()]


def summary_blocks(results: Results, gate_reasons: Sequence[str] | None) -> list[Block]:
    """One run's summary for a CI job page; ``gate_reasons`` None: made without --gate, so no
    gate line."""
    m = results.machine  # free-form (patchbench.measure.machine), as the run recorded it
    title: list[Inline] = ["patchbench ", Code(results.comparison)]
    title += [" — ", Code(results.run_dir)] if results.run_dir else []
    aa: list[Inline] = [" — ", Strong("A/A run")] if results.aa else []
    aa += [f" ({fmt_aa(results.aa_build)[0]})"] if results.aa_build is not None else []
    out: list[Block] = [heading(*title), text(
        Escaped(str(m.get("cpu_model"))), ", ", Escaped(str(m.get("cpu_count"))), " cores, kernel ",
        Escaped(str(m.get("kernel"))), f"; seed {results.seed}", *aa)]
    if any(isinstance(sc, TimedResult) and sc.comparisons for sc in results.scenarios):
        out.append(summary_table(results))
    out += kind_tables(results)
    out += [gate_box(gate_reasons)] if gate_reasons is not None else []
    if results.warnings:
        out.append(Fold(f"{len(results.warnings)} warnings",
                        (bullets([[Escaped(w)] for w in results.warnings]),)))
    return out


def job_summary(run: RunInput, gate_reasons: Sequence[str] | None) -> str:
    """One run's summary for a CI job page, as markdown (an empty line after it)."""
    return md_format.document(summary_blocks(as_results(run), gate_reasons), "\n\n")


def summary_text(results: Results, fmt: str = "simple") -> str:
    """The summary table as text: a terminal's (``fmt`` "github": report.md's)."""
    if fmt == "github":
        return md_format.table(summary_table(results))
    return md_format.md_table(summary_headers(results), summary_rows(results), fmt)


def printed(results: Results) -> str:
    """What ``compare`` prints after a run: the summary table, how each scenario's rounds ended,
    each kind's own part (without chart files) and the warnings."""
    out = []
    if results.aa_build is not None:  # which A/A, and how its two builds differ
        label, why = fmt_aa(results.aa_build)
        out.append(f"A/A run, {label}: {why}\n")
    if summary_rows(results):
        out.append(summary_text(results))
    out += stopping_text(results)
    for sc in results.scenarios:
        shown = md_format.blocks([b for b in KINDS[sc.kind].blocks(sc, View.BRIEF)
                                  if not isinstance(b, Image)])
        if shown:
            out.append(f"\n{sc.name}:\n" + "\n\n".join(shown))
    out += [f"warning: {w}" for w in results.warnings]
    return "\n".join(out)

