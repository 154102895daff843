"""The walk over commits: which commits a track run measures, and each one measured, round by
round, interleaved with the pinned reference build, so that every point is a paired ratio.

- ``--range FIRST..LAST``: the first-parent commits from FIRST to LAST (every Nth with
  ``--every``, both ends always).
- Otherwise the branch's new commits: the first-parent commits from the newest one already
  tracked (measured, or found not to build) up to the branch's head (every Nth), or only the
  head on a track's first run.

A commit is built (cached by commit: patchbench.bisect.session) only when a scenario still
lacks its point; a commit that does not build is recorded and not tried again. Each point is
written with its values in one transaction right after it is measured, so an interrupted run
loses at most the measurement in progress, and the next run measures only what is missing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from patchbench import scenarios
from patchbench.analysis import metrics
from patchbench.bisect.record import step_rule
from patchbench.bisect.session import Measurement, Session
from patchbench.config.scenarios import ScenarioConfig
from patchbench.errors import BuildError, ConfigError, RunsFailed
from patchbench.results import Cell, TimedResult
from patchbench.scenarios.steps import ByCount
from patchbench.source import history
from patchbench.track.database import Store, Track, Value
from patchbench.util.git import run_git
from patchbench.util.progress import say

HANGS = "hangs"  # the metric name of counted hangs


def depth(s: Session, sha: str) -> int:
    """The number of commits on ``sha``'s first-parent chain (its position along a branch)."""
    out = run_git(["rev-list", "--first-parent", "--count", sha, "--"], cwd=s.checkout.repo)
    return int(out.stdout.strip())


def _every(commits: list[history.Commit], every: int) -> list[history.Commit]:
    return history.every(commits, every) if commits else []


def parse_range(range_: str) -> tuple[str, str]:
    """``--range FIRST..LAST`` as its two commit-ishes, checked before anything is fetched."""
    first, sep, last = range_.partition("..")
    if not sep or not first or not last:
        raise ConfigError(f"--range {range_}: give it as FIRST..LAST (two refs)")
    for ref in (first, last):
        history.check_commitish(ref, "--range")
    return first, last


def commits_to_track(s: Session, store: Store, track: Track, *, range_: str | None,
                     every: int) -> list[history.Commit]:
    """The commits this run is about: a range, or the branch's new commits."""
    if range_:
        first, last = parse_range(range_)
        a, b = history.resolve(s.checkout, first), history.resolve(s.checkout, last)
        return history.first_parent(s.checkout, a, b, every=every)
    head = history.resolve(s.checkout, track.branch)
    known = store.commits(track)
    # tracked: a commit with a point, or one that does not build (a commit is recorded before it
    # is measured: a run stopped during its measurement leaves it without one)
    tracked = {sha for _, sha in store.measured(track)} | set(store.build_failures(track))
    chain_shas = set(run_git(["rev-list", "--first-parent", head, "--"],
                             cwd=s.checkout.repo).stdout.split()) if tracked else set()
    on_branch = [c for c in known.values() if c.sha in chain_shas and c.sha in tracked]
    if not on_branch:
        say(f"track {track.name}: first run on {track.branch}: its head {head[:12]}")
        return [s.commit(head)]
    newest = max(on_branch, key=lambda c: c.depth)
    # from the newest tracked commit itself: a scenario it lacks is measured (walk skips the
    # points it has)
    chain = history.first_parent(s.checkout, newest.sha, head)
    say(f"track {track.name}: {len(chain) - 1} new commit(s) on {track.branch} since "
        f"{newest.short}")
    return _every(chain, every)


def series_key(cell: Cell) -> str:
    """A cell's series: its parameters (a condition), "" for none."""
    return ",".join(f"{k}={v}" for k, v in sorted(cell.params.items()))


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _inv(x: float | None) -> float | None:
    return 1.0 / x if x is not None and math.isfinite(x) and x > 0 else None


def values_of(m: Measurement, ref: str, sha: str, *, alpha: float,
              min_effect: float) -> list[Value]:
    """What the measurement ``m`` (the reference and the commit, interleaved) says of the commit
    against the reference: per series (cell parameters) and metric, the ratio commit /
    reference with its round-paired CI, p and verdict, and hangs as counts."""
    res, r12, c12 = m.result, ref[:12], sha[:12]
    rule = step_rule(res.kind)
    if isinstance(rule, ByCount):
        (rh, rr), (ch, cr) = rule.counts(res, r12), rule.counts(res, c12)
        pair = rule.pair(res, r12, c12, alpha=alpha, min_effect=min_effect, seed=m.seed)
        verdict = (f"{rule.measures} {pair.shift}" if pair.shift else "inconclusive")
        return [Value(series="", metric=HANGS, verdict=verdict, unit="count", hangs=ch, runs=cr,
                      ref_hangs=rh, ref_runs=rr)]
    assert isinstance(res, TimedResult)
    out: list[Value] = []
    for rc in (c for c in res.cells if c.variant == r12):
        oc = next((c for c in res.cells if c.variant == c12 and c.params == rc.params), None)
        v = next((v for v in res.comparisons
                  if v.baseline == rc.label and oc is not None and v.candidate == oc.label), None)
        if oc is None or v is None:
            continue
        key = series_key(rc)
        out.append(Value(series=key, metric=metrics.WALL, verdict=v.verdict, unit="s",
                         ratio=_inv(v.speedup), ci_low=_inv(v.ci_high), ci_high=_inv(v.ci_low),
                         p_value=_finite(v.p_value), value=_finite(oc.summary.median),
                         ref_value=_finite(rc.summary.median)))
        for name, mv in (v.metrics or {}).items():
            if name == metrics.WALL:
                continue
            out.append(Value(series=key, metric=name, verdict=mv.verdict, unit=mv.unit,
                             ratio=_inv(mv.speedup), ci_low=_inv(mv.ci_high),
                             ci_high=_inv(mv.ci_low), p_value=_finite(mv.p_value),
                             value=_finite(mv.candidate), ref_value=_finite(mv.baseline)))
        if rc.hangs is not None and oc.hangs is not None:
            out.append(Value(series=key, metric=HANGS, verdict="counted", unit="count",
                             hangs=oc.hangs.hangs, runs=oc.hangs.runs, ref_hangs=rc.hangs.hangs,
                             ref_runs=rc.hangs.runs))
    return out


def trackable(comp_scenarios: Sequence[ScenarioConfig], only: Sequence[str]
              ) -> list[ScenarioConfig]:
    """The comparison's scenarios a track measures: those whose kind a bisect step can judge
    (time or hangs), or the ones named by ``--scenario``."""
    names = {sc.name for sc in comp_scenarios}
    unknown = sorted(set(only) - names)
    if unknown:
        raise ConfigError(f"--scenario {', '.join(unknown)}: no such scenario",
                          hint="its scenarios: " + ", ".join(sorted(names)))
    chosen = [sc for sc in comp_scenarios if not only or sc.name in only]
    out = []
    for sc in chosen:
        if scenarios.KINDS[sc.kind].step is None:
            say(f"track: scenario {sc.name} ({sc.kind}) is left out: its kind has no step rule "
                "(only kinds judged by time or by hangs are tracked)")
            continue
        out.append(sc)
    if not out:
        raise ConfigError("track: none of the comparison's scenarios can be tracked",
                          hint="a command scenario (time) or a soak scenario (hangs)")
    return out


def for_scenario(s: Session, sc: ScenarioConfig) -> Session:
    """The session measuring ``sc``, sharing ``s``'s builds, failures and measurements."""
    return replace(s, scenario=sc)


@dataclass
class Walked:
    """What a walk did."""

    measured: list[tuple[str, str]] = field(default_factory=list)  # (scenario, sha)
    skipped: int = 0  # points already in the database
    failed: dict[str, str] = field(default_factory=dict)  # sha -> why: no build, failing runs


def walk(s: Session, store: Store, track: Track, run_id: int, commits: list[history.Commit],
         chosen: Sequence[ScenarioConfig]) -> Walked:
    """Measure every commit of ``commits`` that lacks a point, scenario by scenario, each
    interleaved with the reference build; write each point as it is measured."""
    out = Walked()
    ref = track.reference
    done = store.measured(track)
    failed = store.build_failures(track)
    asked = [(c, sc) for c in commits if c.sha != ref for sc in chosen]
    todo = [(c, sc) for c, sc in asked if (sc.name, c.sha) not in done]
    out.skipped = len(asked) - len(todo)  # (the reference is not measured against itself)
    if not todo:
        say(f"track {track.name}: every commit asked for is measured already")
        return out
    if s.build_at(ref) is None:
        raise BuildError(f"track {track.name}: the reference {ref[:12]} does not build: "
                         f"{s.failed.get(ref, '')}")
    for n, (c, sc) in enumerate(todo, 1):
        if c.sha in failed:
            out.failed[c.sha] = failed[c.sha]
            continue
        store.add_commit(track, c.sha, c.subject, c.author_date, depth(s, c.sha))
        if s.build_at(c.sha) is None:
            reason = str(s.redacted(s.failed.get(c.sha, "does not build")))
            store.add_build_failure(track, c.sha, reason)
            failed[c.sha] = out.failed[c.sha] = reason
            continue
        ss = for_scenario(s, sc)
        try:
            m = ss.measure(f"[{n}/{len(todo)}] {sc.name} at {c.short}", [ref, c.sha])
        except RunsFailed as exc:
            # a commit whose runs fail (an upstream bug, as asv records a failing benchmark):
            # recorded, said, skipped from now on; the reference failing stops the track
            if exc.variant != c.sha[:12]:
                raise
            reason = str(s.redacted(f"its runs failed ({sc.name}): {exc}"))
            say(f"track: {sc.name} at {c.short}: {reason}; recorded, and the track goes on")
            store.add_build_failure(track, c.sha, reason)
            failed[c.sha] = out.failed[c.sha] = reason
            continue
        vals = values_of(m, ref, c.sha, alpha=s.comp.alpha, min_effect=s.comp.min_effect)
        result: dict[str, Any] = s.redacted(m.result.model_dump(mode="json"))
        point = store.add_point(track, run_id, scenario=sc.name, sha=c.sha, kind=sc.kind,
                                factor=m.factor, seed=m.seed, result=result,
                                warnings=m.warnings, values=vals)
        if point is None:
            say(f"track: {sc.name} at {c.short} was measured by another run meanwhile; kept "
                "that one")
            continue
        out.measured.append((sc.name, c.sha))
        shown = next((v for v in vals if v.metric in (metrics.WALL, HANGS)), None)
        if shown is not None:
            say(f"track: {sc.name} at {c.short}: " + (
                f"{shown.ratio:.3f}x the reference ({shown.verdict})" if shown.ratio is not None
                else f"hangs {shown.hangs} of {shown.runs} (reference {shown.ref_hangs} of "
                     f"{shown.ref_runs})"))
    return out
