"""``bisect`` and ``history``: which commit of a target changed a scenario's time (or brought
its hangs), and how the scenario moved across several commits. Details: docs/internals.md."""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from patchbench import __version__, results, scenarios, upstream
from patchbench.bisect import judge, levels, render, search
from patchbench.bisect.record import (
    BISECT2_METHOD,
    Bisect,
    CommitRec,
    History,
    MeasurementRec,
    PointRec,
    Spending,
    StepRec,
    step_rule,
)
from patchbench.bisect.session import Measurement, Probe, Session, now
from patchbench.errors import BuildError, ConfigError
from patchbench.measure import hangs
from patchbench.measure.machine import machine_info
from patchbench.runs.store import reserve
from patchbench.scenarios.steps import StepRule
from patchbench.source import history
from patchbench.util.files import write_json_atomic
from patchbench.util.progress import say
from patchbench.util.workspace import Workspace

DEFAULT_BUDGET = 4


def _crec(c: history.Commit) -> CommitRec:
    return CommitRec(sha=c.sha, subject=c.subject, author_date=c.author_date)


def _mrec(s: Session, m: Measurement) -> MeasurementRec:
    return MeasurementRec.model_validate(s.redacted({
        "label": m.label, "commits": m.commits, "factor": m.factor, "seed": m.seed,
        "warnings": m.warnings, "result": m.result.model_dump(mode="json")}))


def _seed(seed: int | None, probe: Probe) -> int:
    return next(s for s in (seed, probe.setup.comp.seed, secrets.randbelow(2**31))
                if s is not None)


def _chain(ws: Workspace, probe: Probe, good: str, bad: str
           ) -> tuple[list[history.Commit], Any]:
    checkout = upstream.fetch(probe.setup.project, ws, probe.setup.target)
    history.fetch_history(checkout, ws.builds)
    g, b = history.resolve(checkout, good), history.resolve(checkout, bad)
    return history.first_parent(checkout, g, b), checkout


def plan_bisect(ws: Workspace, probe: Probe, good: str, bad: str, budget: int, *,
                runs: int | None = None, rounds: int | None = None) -> list[str]:
    """--dry-run: the chain (its history is fetched, nothing is built or measured) and the
    number of steps, builds and runs the bisect expects."""
    comp, target, spec = probe.setup.comp, probe.target, probe.spec
    sc = scenarios.override(probe.scenario, runs, rounds, None)
    chain, _ = _chain(ws, probe, good, bad)
    steps = search.expected_steps(len(chain))
    factors = sum(2 ** k for k in range(budget.bit_length()) if 2 ** k <= budget)
    rule, looks = step_rule(sc.kind), levels.looks(1, budget)
    comparisons = 2 if rule.shows_same else 1
    share = comp.alpha / (steps + 1)
    return [f"# plan for bisect {target} {spec} (dry run: the history is fetched; nothing is "
            "built or measured)",
            f"chain   {len(chain)} commits on the first-parent history from {chain[0].sha[:12]} "
            f"(good) to {chain[-1].sha[:12]} (bad)",
            f"steps   {steps} (ceil(log2({len(chain) - 1}))), more if commits do not build",
            f"builds  {steps + 2} variants (the two ends and one per step; cached ones are "
            "reused)",
            f"runs    ends: 2 x {sc.runs} (up to 2 x {sc.runs * factors} if they do not differ at "
            f"first); each step: 3 x {sc.runs} (its commit and both ends), "
            f"up to 3 x {sc.runs * factors} if undecided (budget {budget}x); at least "
            f"{2 * sc.runs + 3 * sc.runs * steps} runs in all",
            f"levels  alpha {comp.alpha:g}: the ends at {comp.alpha / len(looks):.2g} per look; "
            f"each step {comp.alpha:g} / {steps + 1} ({steps} planned, one share held back), "
            f"each comparison of its looks at {share / len(looks) / comparisons:.2g}"
            + ("" if rule.shows_same else "; the steps start at more runs when the ends' rates "
               "need them for 80 % power (or the bisect stops before the first step, exit 10)"),
            f"report  {ws.reports / ('bisect-' + target)}/<UTC time>/ (report.md, report.html, "
            "bisect.json)"]


def bisect(ws: Workspace, probe: Probe, good: str, bad: str, *, seed: int | None = None,
           budget: int = DEFAULT_BUDGET, runs: int | None = None,
           rounds: int | None = None) -> tuple[Bisect, Path]:
    """Run the bisect; return its record and the report folder it was saved in."""
    target = probe.target
    s = Session.open(ws, probe, _seed(seed, probe), runs=runs, rounds=rounds)
    started = now()
    g, b = s.commit(good), s.commit(bad)
    chain = history.first_parent(s.checkout, g.sha, b.sha)
    sc = s.scenario
    rec = Bisect(tool=f"patchbench {__version__}", target=target, comparison=s.setup.name,
                 scenario=sc.name, scenario_kind=sc.kind, alpha=s.comp.alpha,
                 min_effect=s.comp.min_effect, budget=budget, seed=s.seed, started_at=started,
                 good=_crec(g), bad=_crec(b), chain=len(chain),
                 expected_steps=search.expected_steps(len(chain)), outcome="range",
                 machine=machine_info(), method=BISECT2_METHOD)
    say(f"bisect {target}: {len(chain)} commits from {g.sha[:12]} to {b.sha[:12]}, at most "
        f"{rec.expected_steps} steps without skips")
    for role, c in (("good", g), ("bad", b)):
        if s.build_at(c.sha) is None:
            raise BuildError(f"bisect: the {role} end {c.sha[:12]} does not build: "
                             f"{s.failed[c.sha]}")
    pair, ends = _ends(s, rec, g.sha, b.sha, budget)
    shares = levels.StepShares(rec.alpha)
    share = shares.plan(rec.expected_steps)
    differ = pair.differs is True and pair.shift in ("more", "less")
    assert rec.spending is not None
    if differ:
        rec.spending.direction = "more" if pair.shift == "more" else "less"
        rec.spending.planned_steps = rec.expected_steps
    if not differ:
        rec.outcome = "no-difference"
        shown = "are the same within min_effect" if pair.shift == "same" else "do not differ"
        rec.why = f"the ends {shown} ({pair.text}): there is no change to look for between them"
        say(f"bisect: {rec.why}")
    elif (first := _first_look(rec, step_rule(sc.kind), ends, g.sha, b.sha, sc.runs, budget,
                               share)) is None:
        rec.outcome = "underpowered"
        say(f"bisect: {rec.why}")
    else:
        _steps(s, rec, chain, first, budget, shares, share)
    rec.builds = {sha: s.redacted(bl.manifest) for sha, bl in s.builds.items()}
    rec.built_fresh = s.built_fresh
    rec.build_failures = dict(s.redacted(s.failed))
    rec.measurements = [_mrec(s, m) for m in s.measurements]
    rec.finished_at = now()
    folder = _save(s, ws, f"bisect-{target}", "bisect.json", rec.model_dump(mode="json"),
                   render.markdown(rec), render.html(rec))
    return rec, folder


def _ends(s: Session, rec: Bisect, good: str, bad: str, budget: int
          ) -> tuple[judge.Pair, Measurement]:
    """The ends against each other, measured again with more runs and rounds while unclear:
    the answer and its last measurement (``rec.spending`` says the ends' looks)."""
    ends_looks = levels.looks(1, budget)
    rec.spending = spent = Spending(ends_looks=ends_looks,
                                    ends_level=levels.per_comparison(rec.alpha, ends_looks, 1))
    made: list[Measurement] = []

    def look_at_ends(factor: int) -> judge.Pair:  # measured again, as a step is, while unclear
        if made:
            say(f"ends: no difference yet; measuring again with {factor}x the runs and rounds")
        made.append(s.measure("ends", [good, bad], factor))
        return judge.pair(made[-1], good, bad, spent.ends_level, rec.min_effect)

    pair, factor = judge.ends(look_at_ends, ends_looks)
    rec.ends = pair.text + (f" (at {factor}x the runs and rounds)" if factor > 1 else "")
    return pair, made[-1]


def _steps(s: Session, rec: Bisect, chain: list[history.Commit], first: int, budget: int,
           shares: levels.StepShares, share: float) -> None:
    """The bisect between the ends that differ: each step's commit against both ends, looked at
    again while undecided, then the merged branch of the first bad commit, if any."""
    spent, rule, g, b = rec.spending, step_rule(rec.scenario_kind), rec.good.sha, rec.bad.sha
    assert spent is not None and spent.direction is not None
    direction: judge.Direction = spent.direction
    spent.step_looks = step_looks = levels.looks(first, budget)
    spent.comparisons = comparisons = 2 if rule.shows_same else 1
    spent.step_level = levels.per_comparison(share, step_looks, comparisons)

    def probe_commit(c: history.Commit, i: int, branch: str | None = None) -> search.Class:
        step = len(rec.steps) + 1
        if s.build_at(c.sha) is None:
            rec.steps.append(StepRec(step=step, index=i, commit=_crec(c), branch=branch,
                                     classification="skipped", value="-",
                                     skipped_reason="does not build"))
            return "skipped"
        level = levels.per_comparison(shares.take(), step_looks, comparisons)
        used: list[int] = []

        def look(factor: int) -> tuple[judge.Pair, judge.Pair]:
            if used:
                say(f"step {step} ({c.sha[:12]}): undecided; measuring again with "
                    f"{factor}x the runs and rounds")
            m = s.measure(f"step {step} ({c.sha[:12]})", [c.sha, g, b], factor)
            used.append(len(s.measurements) - 1)
            return (judge.pair(m, g, c.sha, level, rec.min_effect),
                    judge.pair(m, b, c.sha, level, rec.min_effect))

        j = judge.step(look, step_looks, direction, rule.ways)
        rec.steps.append(StepRec(step=step, index=i, commit=_crec(c), branch=branch,
                                 classification=j.cls,
                                 value=judge.value(s.measurements[used[-1]], c.sha).text,
                                 vs_good=j.vs_good.text, vs_bad=j.vs_bad.text,
                                 factors=j.factors, measurements=used, level=level,
                                 reason=j.why))
        say(f"step {step}: {c.sha[:12]} {c.subject!r}: like {j.cls} ({j.why})"
            if j.cls != "undecided" else f"step {step}: {c.sha[:12]} undecided after "
            f"{j.factors[-1]}x ({j.why})")
        return j.cls

    out = search.search(len(chain), lambda i: probe_commit(chain[i], i))
    if out.found:
        rec.outcome = "found"
        rec.first_bad = _crec(chain[out.hi])
        _descend(s, rec, probe_commit, shares)
    else:
        rec.why = out.why
        rec.range = [_crec(c) for c in chain[out.lo + 1:out.hi + 1]]
    rec.skipped = [_crec(chain[i]) for i in out.skipped()]


def _first_look(rec: Bisect, rule: StepRule, ends: Measurement, good: str, bad: str, runs: int,
                budget: int, share: float) -> int | None:
    """The multiplier of a step's first look: 1, or for a rule that estimates power (counts),
    the smallest at which a step tells the ends apart with levels.POWER, from their rates as
    measured; None (the reason in ``rec.why``) when even the budget does not."""
    assert rec.spending is not None
    comparisons = 2 if rule.shows_same else 1
    first, power = levels.first_look(lambda n, level: judge.power(ends, good, bad, n, level),
                                     runs, budget, share, comparisons)
    if power is None:  # the rule does not estimate it (time): re-measurement is the remedy
        return first
    g, b = judge.value(ends, good), judge.value(ends, bad)
    if first is not None:
        rec.spending.power = (f"a step's first look ({runs * first} runs of each commit) tells "
                              f"{b.text} from {g.text} with power {power:.0%}")
        if first > 1:
            say(f"bisect: {rec.spending.power}: the steps start at {first}x the runs")
        return first
    level = levels.per_comparison(share, [budget], comparisons)
    low, high = sorted((v.hangs or 0) / (v.runs or 1) for v in (g, b))
    need = hangs.runs_for_power(low, high, level, levels.POWER)
    rec.spending.power = f"power {power:.0%} at the budget ({runs * budget} runs of each commit)"
    rec.why = (f"a step needs {f'about {need}' if need else 'more than 10^8'} runs of each "
               f"commit to tell {b.text} from {g.text} with {levels.POWER:.0%} power "
               f"(one-sided, at {level:.2g}), the budget allows {runs * budget} ({runs} runs x "
               f"budget {budget})")
    return None


def _descend(s: Session, rec: Bisect,
             probe: Callable[[history.Commit, int, str | None], search.Class],
             shares: levels.StepShares) -> None:
    """When the first bad commit is a merge, the change may have come with the branch it merged:
    its tip (the merge's second parent) is measured; like bad, that branch is bisected from the
    merge base (like the merge's first parent: good) to its tip, and again while the answer is a
    merge. Like good: the merge commit itself brought the change (a conflict resolution, or two
    branches that are only slow together), and it stays the answer. The tip and the branch's
    steps are planned from the alpha the steps have left (``shares``)."""
    while rec.first_bad is not None:
        merge = rec.first_bad
        side = history.merged_branch(s.checkout, merge.sha)
        if side is None:
            return
        shares.plan(1 + search.expected_steps(len(side)))
        where = f"merged by {merge.sha[:12]}"
        say(f"bisect: {merge.sha[:12]} is a merge; measuring the tip of the branch it merged")
        tip = probe(side[-1], len(side) - 1, where)
        if tip != "bad":
            rec.why = (f"the first bad commit is the merge {merge.sha[:12]}; the branch it merged "
                       f"is like {tip} at its tip, so the merge itself brought the change"
                       if tip == "good" else f"the first bad commit is the merge "
                       f"{merge.sha[:12]}; its merged branch's tip is {tip}, so the search did "
                       "not go into that branch")
            return
        rec.descended = [*(rec.descended or []), merge]
        def on_branch(i: int, side: list[history.Commit] = side, where: str = where
                      ) -> search.Class:
            return probe(side[i], i, where)

        out = search.search(len(side), on_branch)
        if not out.found:
            rec.outcome, rec.first_bad = "range", None
            rec.why = f"in the branch {where}: {out.why}"
            rec.range = [_crec(c) for c in side[out.lo + 1:out.hi + 1]]
            return
        rec.first_bad = _crec(side[out.hi])


def history_run(ws: Workspace, probe: Probe, refs: list[str], *,
                range_: str | None = None, every: int = 1, seed: int | None = None,
                runs: int | None = None, rounds: int | None = None,
                tags: str | None = None, budget: int = DEFAULT_BUDGET) -> tuple[History, Path]:
    """Measure ``refs`` (or every ``every``th commit of ``range_`` A..B, first-parent, or the
    tags matching ``tags``, oldest version first) of ``target`` interleaved in one measurement,
    each against the first; the points it leaves undecided again, with the first, at 2x (and
    4x, up to ``budget``) the runs and rounds."""
    target = probe.target
    if sum(map(bool, (refs, range_, tags))) != 1:
        raise ConfigError("history: give one of REF..., --range A..B or --tags PATTERN",
                          hint="history demo v1.0.0 v1.1.0 --scenario ... or --range A..B or "
                          "--tags 'v1.*'")
    s = Session.open(ws, probe, _seed(seed, probe), runs=runs, rounds=rounds)
    started = now()
    if range_:
        a, sep, b_ = range_.partition("..")
        if not sep or not a or not b_:
            raise ConfigError(f"--range {range_}: give it as A..B (two refs)")
        commits = history.first_parent(s.checkout, history.resolve(s.checkout, a),
                                       history.resolve(s.checkout, b_), every=every,
                                       most=results.MAX_CELLS)  # before a commit is described
    else:
        if tags:
            refs = history.tags(s.checkout, tags)
            if not refs:
                raise ConfigError(f"history --tags {tags!r}: no tag of {target} matches")
            say(f"history {target}: tags {', '.join(refs)}")
        commits = [s.commit(r) for r in refs]
    if len({c.sha for c in commits}) != len(commits):
        raise ConfigError("history: the same commit is named twice")
    if len(commits) < 2:
        raise ConfigError("history: give at least two commits")
    points: list[PointRec] = []
    ok = [c for c in commits if s.build_at(c.sha) is not None]
    if not ok or ok[0] != commits[0]:
        raise BuildError(f"history: the first commit {commits[0].sha[:12]} does not build: "
                         f"{s.failed.get(commits[0].sha, '')}")
    say(f"history {target}: {len(ok)} commits measured interleaved")
    m = s.measure("history", [c.sha for c in ok])
    first = ok[0].sha
    by, measurements = _second_looks(s, m, first, [c.sha for c in ok[1:]], budget)
    for c in commits:
        if c.sha in s.failed:
            points.append(PointRec(commit=_crec(c), value="-", skipped_reason="does not build"))
            continue
        mc = by.get(c.sha, m)
        v = judge.value(mc, c.sha)
        p = (judge.pair(mc, first, c.sha, s.comp.alpha, s.comp.min_effect)
             if c.sha != first else None)
        again = f" (at {mc.factor}x the runs and rounds)" if mc.factor > 1 else ""
        points.append(PointRec(commit=_crec(c), tag=history.tag_of(s.checkout, c.sha),
                               value=v.text, median=v.median,
                               ci=list(v.ci) if v.ci else None, hangs=v.hangs, runs=v.runs,
                               vs_first=p.text + again if p else "(the reference)",
                               differs=p.differs if p else None))
    rec = History(tool=f"patchbench {__version__}", target=target, comparison=s.setup.name,
                  scenario=s.scenario.name, scenario_kind=s.scenario.kind, alpha=s.comp.alpha,
                  min_effect=s.comp.min_effect, seed=s.seed, started_at=started,
                  points=points, machine=machine_info(),
                  builds={sha: s.redacted(bl.manifest) for sha, bl in s.builds.items()},
                  measurements=[_mrec(s, x) for x in measurements])
    rec.finished_at = now()
    folder = _save(s, ws, f"history-{target}", "history.json", rec.model_dump(mode="json"),
                   render.markdown(rec), render.html(rec))
    return rec, folder


def _second_looks(s: Session, m: Measurement, first: str, others: list[str], budget: int
                  ) -> tuple[dict[str, Measurement], list[Measurement]]:
    """The points ``m`` leaves undecided against ``first``, measured again with the first at
    twice the runs and rounds while any stays undecided, up to ``budget`` times (a bisect step's
    second look): the measurement that judged each point, and every measurement made."""
    by: dict[str, Measurement] = {}
    made, factor = [m], 1
    undecided = [sha for sha in others
                 if judge.pair(m, first, sha, s.comp.alpha, s.comp.min_effect).differs is None]
    while undecided and factor * 2 <= budget:
        factor *= 2
        say(f"history: {len(undecided)} undecided against the first; measuring "
            f"{'it' if len(undecided) == 1 else 'them'} again with {factor}x the runs and rounds")
        again = s.measure(f"history, again at {factor}x", [first, *undecided], factor)
        made.append(again)
        by.update(dict.fromkeys(undecided, again))
        undecided = [sha for sha in undecided if judge.pair(
            again, first, sha, s.comp.alpha, s.comp.min_effect).differs is None]
    return by, made


def _save(s: Session, ws: Workspace, group: str, name: str, data: dict[str, Any], md: str,
          page: str) -> Path:
    """A new report folder under reports/GROUP/<UTC time>/ with the results file, report.md,
    report.html and the hang evidence."""
    parent = ws.reports / group
    parent.mkdir(parents=True, exist_ok=True)
    folder = reserve(parent, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    for fname, src in s.extra_files.items():
        if src.is_file():
            shutil.copy2(src, folder / fname)
    write_json_atomic(folder / name, data)
    (folder / "report.md").write_text(md)
    (folder / "report.html").write_text(page)
    say(f"saved {folder} ({name}, report.md, report.html)")
    return folder
