"""Each candidate change confirmed by an interleaved A/B of the commits either side of it, then
bisected to its commit, with the machinery ``bisect`` uses:

- **The A/B**: the last commit before the change and the first after it, built (cached) and
  measured interleaved (patchbench.bisect.session), at the planned looks of a bisect's ends (1x,
  then twice the runs and rounds, up to ``budget``), alpha spent over them
  (patchbench.bisect.levels). Time metrics are judged by the round-paired rule (wall time as a
  bisect step judges it, the other metrics as ``compare`` does), hangs by Fisher's exact test.
  A candidate is **confirmed** when the A/B shows a difference in the direction the series
  showed; else it is **not confirmed** (a false alarm of the series, or a change too small for
  the A/B's runs).
- **The bisect**: a confirmed change between two commits that are not neighbours on the
  first-parent chain (``--every N``), or whose later commit is a merge, is bisected between
  them by ``bisect`` itself (its report folder is named in changes.json). A bisect judges a
  scenario by its kind's step rule (time, or hangs): a change seen in another metric alone
  (CPU time, memory) is named as the range between the two commits.

Several metrics of one scenario that change at the same place share one A/B and one bisect."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchbench.analysis import metrics, verdict
from patchbench.bisect import levels
from patchbench.bisect import run as bisect_run
from patchbench.bisect.record import MeasurementRec, step_rule
from patchbench.bisect.session import Measurement, Session, scenario_of
from patchbench.config import Project
from patchbench.measure import hangs as hang_stats
from patchbench.results import Cell, TimedResult
from patchbench.scenarios.steps import ByCount, ByTime, Pair, Way, judged_pair
from patchbench.source import history
from patchbench.track.database import CommitRow
from patchbench.track.detect import ChangePoint
from patchbench.track.walk import HANGS, series_key
from patchbench.util.files import write_json_atomic
from patchbench.util.progress import say
from patchbench.util.workspace import Workspace


@dataclass(frozen=True)
class Candidate:
    """A change point of one series, between two measured commits."""

    scenario: str
    series: str
    metric: str
    before: CommitRow
    after: CommitRow
    cp: ChangePoint

    @property
    def direction(self) -> str:
        return "regression" if self.cp.up else "improvement"


@dataclass(frozen=True)
class Judged:
    """A candidate's A/B: the pair (after against before), its figures, the look it was
    decided at, and whether it confirms the candidate."""

    pair: Pair
    figures: dict[str, Any]
    factor: int
    confirmed: bool


def _cells(res: TimedResult, variant: str, series: str) -> Cell | None:
    return next((c for c in res.cells if c.variant == variant and series_key(c) == series), None)


def ab_pair(m: Measurement, before: str, after: str, series: str, metric: str, *, level: float,
            min_effect: float) -> tuple[Pair, dict[str, Any]]:
    """``after`` against ``before`` in the A/B measurement ``m``, for one series and metric,
    judged at ``level``: the pair and its figures (ratio after / before with its CI and p, or
    the two hang counts)."""
    res, b12, a12 = m.result, before[:12], after[:12]
    rule = step_rule(res.kind)
    if isinstance(rule, ByCount):
        pair = rule.pair(res, b12, a12, alpha=level, min_effect=min_effect, seed=m.seed)
        (bh, br), (ah, ar) = rule.counts(res, b12), rule.counts(res, a12)
        return pair, {"hangs": ah, "runs": ar, "before_hangs": bh, "before_runs": br}
    assert isinstance(res, TimedResult)
    bc, ac = _cells(res, b12, series), _cells(res, a12, series)
    if bc is None or ac is None:
        return Pair(None, "withheld: the series was not measured"), {}
    if metric == HANGS:
        if bc.hangs is None or ac.hangs is None:
            return Pair(None, "withheld: no deadline, no hang counts"), {}
        cmp = hang_stats.compare_hangs(
            hang_stats.HangCount(b12, bc.hangs.hangs, bc.hangs.runs),
            hang_stats.HangCount(a12, ac.hangs.hangs, ac.hangs.runs))
        way: Way | None = ("more" if cmp.p_more < level else "less" if cmp.p_less < level
                           else None)
        pair = Pair(cmp.p_value < level, f"hangs {ac.hangs.hangs} of {ac.hangs.runs} vs "
                    f"{bc.hangs.hangs} of {bc.hangs.runs}, Fisher p {cmp.p_value:.2g}", way, way,
                    None)
        return pair, {"hangs": ac.hangs.hangs, "runs": ac.hangs.runs,
                      "before_hangs": bc.hangs.hangs, "before_runs": bc.hangs.runs,
                      "p": cmp.p_value}
    if metric == metrics.WALL and isinstance(rule, ByTime):  # as a bisect step judges time
        rec = verdict.record(bc.samples.times, bc.samples.rounds, ac.samples.times,
                             ac.samples.rounds, alpha=level, min_effect=min_effect, seed=m.seed)
    else:
        base, cand = bc.samples.metrics.get(metric), ac.samples.metrics.get(metric)
        if not base or not cand:
            return Pair(None, f"withheld: {metric} was not measured"), {}
        try:
            rec = metrics.judge(metric, base, bc.samples.rounds, cand, ac.samples.rounds,
                                alpha=level, min_effect=min_effect)
        except ValueError as exc:
            return Pair(None, f"withheld: {exc}"), {}
    pair = judged_pair([(None, rec)])

    def inv(x: Any) -> float | None:
        return 1.0 / float(x) if isinstance(x, (int, float)) and x and x > 0 else None

    return pair, {"ratio": inv(rec["speedup"]), "ci": [inv(rec["ci_high"]), inv(rec["ci_low"])],
                  "p": rec["p_value"], "verdict": rec["verdict"], "level": level}


def ab(s: Session, cands: Sequence[Candidate], budget: int
       ) -> tuple[dict[tuple[str, str], Judged], list[Measurement]]:
    """One A/B of the commits either side of ``cands`` (one scenario, one place), at a bisect's
    ends' looks until every candidate's metric is decided: the judgement per (series, metric)
    and the measurements made."""
    before, after = cands[0].before.sha, cands[0].after.sha
    looks = levels.looks(1, budget)
    level = levels.per_comparison(s.comp.alpha, looks, 1)
    made: list[Measurement] = []
    out: dict[tuple[str, str], Judged] = {}
    pending = list(cands)
    for factor in looks:
        if made:
            say(f"confirm: undecided; measuring again with {factor}x the runs and rounds")
        m = s.measure(f"confirm {before[:12]}..{after[:12]}", [before, after], factor)
        made.append(m)
        still = []
        for c in pending:
            pair, figures = ab_pair(m, before, after, c.series, c.metric, level=level,
                                    min_effect=s.comp.min_effect)
            want = "more" if c.cp.up else "less"
            decided = pair.differs is True or pair.shift == "same"
            out[(c.series, c.metric)] = Judged(pair, figures, factor,
                                               pair.differs is True and pair.shift == want)
            if not decided:
                still.append(c)
        pending = still
        if not pending:
            break
    return out, made


def bisectable(scenario_kind: str, metric: str) -> bool:
    """Whether ``bisect`` judges this metric of this kind (its step rule's)."""
    rule = step_rule(scenario_kind)
    return (metric == metrics.WALL and isinstance(rule, ByTime)) or (
        metric == HANGS and isinstance(rule, ByCount))


def needs_bisect(s: Session, before: str, after: str) -> bool:
    """Whether commits lie between ``before`` and ``after`` on the first-parent chain, or
    ``after`` is a merge (the change may be on the branch it merged)."""
    parents = history.parents(s.checkout, after)
    return not (len(parents) == 1 and parents[0] == before)


def bisect(project: Project, ws: Workspace, s: Session, c: Candidate, *, seed: int,
           budget: int, runs: int | None, rounds: int | None) -> dict[str, Any]:
    """``bisect`` between the candidate's commits: its outcome, first bad commit and report
    folder (relative to the reports folder)."""
    spec = f"{s.setup.name}:{c.scenario}"
    say(f"bisect {c.before.short}..{c.after.short} with {spec}")
    rec, folder = bisect_run.bisect(ws, scenario_of(project, spec), c.before.sha, c.after.sha,
                                    seed=seed, budget=budget, runs=runs, rounds=rounds)
    want = "more" if c.cp.up else "less"
    direction = rec.spending.direction if rec.spending is not None else None
    out: dict[str, Any] = {"outcome": rec.outcome, "report": str(folder.relative_to(ws.reports)),
                           "ends": rec.ends, "why": rec.why}
    if rec.outcome == "found" and rec.first_bad is not None:
        if direction not in (None, want):
            out["outcome"] = "other-direction"
            out["why"] = (f"the bisect's ends differ the other way ({rec.ends}); the commit it "
                          f"names ({rec.first_bad.sha[:12]}) is not this change's")
        else:
            out["first_bad"] = rec.first_bad.sha
            out["first_bad_subject"] = rec.first_bad.subject
    elif rec.range:
        out["range"] = [x.sha for x in rec.range]
    return out


def save_ab(s: Session, folder: Path, c: Candidate, made: Sequence[Measurement]) -> str:
    """The A/B's measurements whole (as bisect.json keeps them), under ``confirm/`` of the
    track's folder; its name relative to that folder."""
    name = f"confirm/{c.scenario}-{c.before.short}-{c.after.short}.json"
    recs = [MeasurementRec.model_validate(s.redacted({
        "label": m.label, "commits": m.commits, "factor": m.factor, "seed": m.seed,
        "warnings": m.warnings, "result": m.result.model_dump(mode="json")})).model_dump(
            mode="json") for m in made]
    write_json_atomic(folder / name, {"kind": "track-ab", "scenario": c.scenario,
                                      "before": c.before.sha, "after": c.after.sha,
                                      "measurements": recs})
    return name
