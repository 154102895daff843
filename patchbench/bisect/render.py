"""The bisect and history reports as blocks: report.md, and report.html with a chart of the value
by commit (report/charts.py), and what the commands print."""

from __future__ import annotations

from functools import partial

from patchbench.bisect.record import Bisect, History, MeasurementRec, step_rule
from patchbench.report import charts
from patchbench.report import html as html_format
from patchbench.report import markdown as md_format
from patchbench.report.blocks import Block, Chart, Section, Table, View, bullets, heading, table, text
from patchbench.report.charts import CommitPoint
from patchbench.scenarios.steps import StepRule, Value

# --- bisect -------------------------------------------------------------------------------------


STEP_HEADERS = ["step", "commit", "subject", "value", "vs good", "vs bad", "classification",
                "runs x"]


def _looks(factors: list[int]) -> str:
    return "/".join(f"{f}x" for f in factors)


def levels_lines(rec: Bisect) -> list[str]:
    """Schema 2: how alpha was spent, and the power of a step's first look when estimated."""
    sp = rec.spending
    if sp is None:
        return []
    out = f"levels: alpha {rec.alpha:g} for the ends, at {sp.ends_level:.2g} per look " \
          f"({_looks(sp.ends_looks)})"
    if sp.step_level is not None:
        each = (f"each of a look's {sp.comparisons} comparisons" if sp.comparisons > 1
                else "a look's comparison")
        out += (f"; then alpha {rec.alpha:g} for the steps: {sp.planned_steps} planned and one "
                f"share held back, looks {_looks(sp.step_looks)}, {each} at "
                f"{sp.step_level:.2g}; a wrong answer has probability at most {rec.alpha:g}")
    return [out] + ([f"power: {sp.power}"] if sp.power else [])


def headline(rec: Bisect) -> list[str]:
    out = [f"bisect {rec.target} with {rec.comparison}:{rec.scenario} ({rec.scenario_kind}): "
           f"good {rec.good.sha[:12]}, bad {rec.bad.sha[:12]}, {rec.chain} commits on the "
           f"first-parent chain (at most {rec.expected_steps} steps without skips)",
           f"ends: bad against good: {rec.ends}", *levels_lines(rec)]
    if rec.outcome == "underpowered":
        out.append(f"refused before the first step: {rec.why}")
    elif rec.outcome == "found" and rec.first_bad is not None:
        c = rec.first_bad
        out.append(f"first bad commit: {c.sha} {c.subject!r} ({c.author_date})")
        if rec.descended:
            out.append("found on the merged branch of " + " -> ".join(
                f"{m.sha[:12]} {m.subject!r}" for m in rec.descended))
        if rec.why:
            out.append(rec.why)
    elif rec.outcome == "no-difference":
        out.append(f"no bisect: {rec.why}")
    else:
        out.append(f"not found: {rec.why}; the first bad commit is one of "
                   + ", ".join(c.sha[:12] for c in rec.range))
    if rec.skipped:
        out.append("skipped (did not build): " + ", ".join(
            f"{c.sha[:12]} ({rec.build_failures.get(c.sha, '')})" for c in rec.skipped))
    out.append(f"builds: {len(rec.builds)} variants ({rec.built_fresh} built now, the rest "
               f"cached), {len(rec.measurements)} measurements")
    return out


def step_table(rec: Bisect) -> Table:
    return table(STEP_HEADERS, [
        [str(s.step), s.commit.sha[:12], s.commit.subject[:60] + (f" ({s.branch})" if s.branch
                                                                   else ""),
         s.value, s.vs_good, s.vs_bad,
         s.classification + (f" ({s.skipped_reason or s.reason})"
                             if s.skipped_reason or s.reason else ""),
         "/".join(str(f) for f in s.factors) or "-"] for s in rec.steps], "steps", numbers=True)


def bisect_points(rec: Bisect) -> tuple[list[CommitPoint], str]:
    """good, every step's commit and bad, in chain order."""
    rule = step_rule(rec.scenario_kind)
    seen: dict[int, CommitPoint] = {}
    for m in rec.measurements:  # the ends from their first measurement
        for sha in m.commits:
            for idx, c, cls in ((0, rec.good, "good"), (rec.chain - 1, rec.bad, "bad")):
                if sha == c.sha and idx not in seen:
                    seen[idx] = _point(rule, m, sha, cls)
    for s in rec.steps:
        if s.measurements:
            seen[s.index] = _point(rule, rec.measurements[s.measurements[-1]], s.commit.sha,
                                   s.classification)
        else:
            seen[s.index] = CommitPoint(s.commit.sha[:12], None, kind="skipped",
                                        title=f"{s.commit.sha[:12]} skipped")
    return [seen[i] for i in sorted(seen)], rule.axis


def _point(rule: StepRule, m: MeasurementRec, sha: str, cls: str) -> CommitPoint:
    name = sha[:12]
    y, lo, hi, short = rule.plot(rule.value(m.result, name))
    return CommitPoint(name, y, lo, hi, cls, f"{name} {cls}: {short}")


def bisect_blocks(rec: Bisect, view: View) -> list[Block]:
    title = f"bisect: {rec.target}, {rec.comparison}:{rec.scenario}"
    steps: Block = (step_table(rec) if rec.steps else text(
        "No steps: " + ("the ends do not differ." if rec.outcome == "no-difference"
                        else "the runs cannot tell the ends apart." if rec.outcome == "underpowered"
                        else "nothing lies between the ends.")))
    head: list[Block] = [heading(title, level=1), bullets([[line] for line in headline(rec)],
                                                          "meta" if view is View.PAGE else "")]
    if view is View.PAGE:
        points, y_label = bisect_points(rec)
        return [*head, Chart("commits", partial(
            charts.commit_chart, points, y_label, f"{rec.comparison}:{rec.scenario} along "
            f"{rec.good.sha[:8]}..{rec.bad.sha[:8]}"), "The value at each commit along the chain "
            "(good, the steps, bad) with its interval."),
            Section((heading("Steps", level=2), steps))]
    out = [*head, heading("Steps", level=2), steps, text(
        "Each step measured its commit interleaved with both ends; `vs good` and `vs bad` are the "
        "commit against each end (time: its time relative to the end's, the round-paired CI and "
        "verdict; hangs: its hangs against the end's, Fisher's exact p). `runs x` are the "
        "multipliers of the scenario's runs and rounds tried.")]
    if rec.spending is not None:
        out.append(text(
            "A step is like good only when shown the same as good or different from bad the way "
            "good differs from it, like bad the other way round, and not both (the evidence is in "
            "brackets); an inconclusive comparison shows nothing. Each comparison is judged at the "
            "level in `levels` above (docs/bisect.md)."))
    return [*out, text("The chart (value by commit along the chain) is in report.html.")]


# --- history ------------------------------------------------------------------------------------


POINT_HEADERS = ["#", "commit", "subject", "author date", "value", "vs first"]


def point_table(rec: History) -> Table:
    return table(POINT_HEADERS, [
        [str(i), p.commit.sha[:12], p.commit.subject[:60], p.commit.author_date[:10],
         p.value if not p.skipped_reason else f"skipped ({p.skipped_reason})", p.vs_first]
        for i, p in enumerate(rec.points)], "commits", numbers=True)


def history_points(rec: History) -> tuple[list[CommitPoint], str]:
    rule = step_rule(rec.scenario_kind)
    out = []
    for i, p in enumerate(rec.points):
        value = Value(p.value, p.median, (p.ci[0], p.ci[1]) if p.ci else None, p.hangs, p.runs)
        y, lo, hi, _ = rule.plot(value)
        # releases labelled by their tag
        out.append(CommitPoint(p.tag or p.commit.sha[:12], y, lo, hi,
                               "differs" if p.differs else "" if i else "first", p.value))
    return out, rule.axis


def history_headline(rec: History) -> list[str]:
    first = rec.points[0].commit
    differ = [p.commit.sha[:12] for p in rec.points[1:] if p.differs]
    return [f"history of {rec.target} with {rec.comparison}:{rec.scenario} "
            f"({rec.scenario_kind}): {len(rec.points)} commits measured interleaved, each "
            f"against the first ({first.sha[:12]})",
            "differ from the first: " + (", ".join(differ) or "none")]


def history_blocks(rec: History, view: View) -> list[Block]:
    head: list[Block] = [heading(f"history: {rec.target}, {rec.comparison}:{rec.scenario}",
                                 level=1),
                         bullets([[line] for line in history_headline(rec)],
                                 "meta" if view is View.PAGE else "")]
    if view is View.PAGE:
        points, y_label = history_points(rec)
        return [*head, Chart("commits", partial(
            charts.commit_chart, points, y_label,
            f"{rec.comparison}:{rec.scenario} by commit (CI bars)"),
            "The value at each commit, each against the first, with its interval."),
            Section((heading("Commits", level=2), point_table(rec)))]
    return [*head, point_table(rec), text(
        "`vs first`: the commit against the first, round-paired (time: its time relative to the "
        "first's with the CI and verdict; hangs: Fisher's exact p). The timeline chart is in "
        "report.html.")]


# --- either ------------------------------------------------------------------------------------


def _blocks(rec: Bisect | History, view: View) -> list[Block]:
    return bisect_blocks(rec, view) if isinstance(rec, Bisect) else history_blocks(rec, view)


def markdown(rec: Bisect | History) -> str:
    """report.md of a bisect or a history."""
    return md_format.document(_blocks(rec, View.REPORT))


def html(rec: Bisect | History) -> str:
    """report.html of a bisect or a history."""
    return html_format.page(f"{rec.kind}: {rec.target}, {rec.comparison}:{rec.scenario}",
                            _blocks(rec, View.PAGE))


def printed(rec: Bisect | History) -> str:
    """What ``bisect`` and ``history`` print: the headline and the table."""
    if isinstance(rec, Bisect):
        lines, t = headline(rec), step_table(rec) if rec.steps else None
    else:
        lines, t = history_headline(rec), point_table(rec)
    return "\n".join([*lines, *(["", md_format.table(t, "simple")] if t else [])])
