"""``track NAME``: measure the comparison's scenarios at the new commits of its target's branch
(or at the commits of ``--range``), each interleaved with the pinned reference build; store every
point; find the change points of every series; confirm each new candidate by an A/B and bisect
it; write changes.json, summary.md and index.html (docs/track.md).

The reference is the target's pinned commit (matrix.yaml's ``commit``) when the track is made,
and stays the track's reference in the database: every point of a series is against the same
build, so the series can be compared along it. A run holds the track (one run at a time); it
is recorded as ``running`` and then ``finished``, ``interrupted`` (Ctrl-C, SIGTERM) or
``failed``; a run killed outright is marked interrupted by the next one."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchbench import __version__, redact, scenarios
from patchbench.bisect.session import Session, scenario_of
from patchbench.config import Project
from patchbench.config.scenarios import ScenarioConfig
from patchbench.errors import ConfigError, RunsFailed
from patchbench.source import history
from patchbench.track import confirm, detect, outputs, walk
from patchbench.track.database import ChangeRow, SeriesPoint, Store, Track, now, open_store
from patchbench.util import safeargs
from patchbench.util.git import run_git
from patchbench.util.progress import say
from patchbench.util.workspace import Workspace

DEFAULT_BUDGET = 4  # the A/B's and the bisect's largest multiplier of the runs and rounds
REGRESSION_EXIT_CODE = 4  # a regression was confirmed by this run (as a failed gate)


def default_db(ws: Workspace) -> Path:
    return ws.reports / "track" / "track.db"


def folder_of(ws: Workspace, name: str) -> Path:
    return ws.reports / "track" / name


@dataclass
class Outcome:
    track: Track
    folder: Path
    walked: walk.Walked
    new: list[ChangeRow] = field(default_factory=list)  # candidates this run judged
    changes: list[ChangeRow] = field(default_factory=list)  # every one recorded

    @property
    def regressions(self) -> list[ChangeRow]:
        """Regressions this run confirmed."""
        return [c for c in self.new if c.status == "confirmed" and c.direction == "regression"]


def _branch(s: Session, given: str | None, ref: str) -> str:
    """--branch, else the target's ref when it is a branch of the source, else main or
    master."""
    def is_branch(name: str) -> bool:
        return run_git(["rev-parse", "--verify", "--quiet", "--end-of-options",
                        f"{history.HISTORY_PREFIX}heads/{name}"], cwd=s.checkout.repo,
                       check=False).returncode == 0

    if given is not None:
        try:
            safeargs.check_ref(given, "--branch")
        except safeargs.UnsafeValue as exc:
            raise ConfigError(str(exc)) from None
        if not is_branch(given):
            raise ConfigError(f"--branch {given}: no such branch in the source of "
                              f"{s.setup.target.name} ({s.checkout.url})")
        return given
    for name in (ref, "main", "master"):
        if is_branch(name):
            return name
    raise ConfigError(f"track: the target's ref {ref!r} is not a branch and the source has "
                      "neither main nor master", hint="name the branch to follow: --branch NAME")


def _database_shown(store: Store, ws: Workspace) -> str:
    path = store.sqlite_path
    if path is not None:
        try:
            return f"sqlite: <reports>/{path.resolve().relative_to(ws.reports.resolve())}"
        except ValueError:
            return f"sqlite: {path.name}"
    return store.shown


def track(project: Project, ws: Workspace, name: str, *, range_: str | None = None,
          every: int = 1, db: str | None = None, branch: str | None = None,
          only: Sequence[str] = (), runs: int | None = None, rounds: int | None = None,
          seed: int | None = None, budget: int = DEFAULT_BUDGET) -> Outcome:
    comp = project.comparison(name)
    if range_:
        walk.parse_range(range_)  # a malformed range stops before the database and the fetch
    chosen = [scenarios.override(sc, runs, rounds, None)
              for sc in walk.trackable(comp.scenarios, only)]
    target = project.target_of(comp)
    seed = next(x for x in (seed, comp.seed, secrets.randbelow(2**31)) if x is not None)
    store = open_store(db, default_db(ws))
    try:
        with store.run_lock(name):
            say(f"track {name}: database {store.shown}")
            s = Session.open(ws, scenario_of(project, f"{name}:{chosen[0].name}"), seed, runs=runs,
                             rounds=rounds)
            tr = store.track(name, target=comp.target,
                             url=redact.without_credentials(target.spec.url),
                             branch=_branch(s, branch, target.spec.ref),
                             reference=target.spec.commit)
            if tr.reference != target.spec.commit:
                say(f"track {name}: its reference stays {tr.reference[:12]} (pinned when the "
                    f"track was made); the target now pins {target.spec.commit[:12]}")
            run_id = store.start_run(tr, seed, f"patchbench {__version__}")
            status = "failed"
            out = Outcome(tr, folder_of(ws, name), walk.Walked())
            try:
                commits = walk.commits_to_track(s, store, tr, range_=range_, every=every)
                out.walked = walk.walk(s, store, tr, run_id, commits, chosen)
                out.new = find_and_confirm(project, ws, s, store, tr, run_id, chosen,
                                           folder=out.folder, seed=seed, budget=budget,
                                           runs=runs, rounds=rounds)
                status = "finished"
            except KeyboardInterrupt:
                status = "interrupted"
                raise
            finally:
                store.finish_run(run_id, status)
            out.changes = store.changes(tr)
            new_ids = frozenset(c.id for c in out.changes if c.run_id == run_id and c.id)
            outputs.write(out.folder, outputs.Dashboard(
                tr, name, _database_shown(store, ws), store.series(tr), out.changes,
                store.commits(tr), now(), new_ids, store.build_failures(tr)))
            say(f"track {name}: wrote {out.folder} (changes.json, summary.md, index.html)")
            return out
    finally:
        store.close()


def candidates(points: Sequence[SeriesPoint], min_effect: float) -> list[confirm.Candidate]:
    """The change points of every series (scenario, cell parameters, metric)."""
    groups: dict[tuple[str, str, str], list[SeriesPoint]] = {}
    for p in points:
        groups.setdefault((p.scenario, p.value.series, p.value.metric), []).append(p)
    out = []
    for (scenario, series, metric), pts in groups.items():
        if metric == walk.HANGS:
            pts = [p for p in pts if p.value.hangs is not None and p.value.runs]
            cps = detect.count_changes([p.value.hangs or 0 for p in pts],
                                       [p.value.runs or 0 for p in pts])
        else:
            pts = [p for p in pts if p.value.ratio is not None and p.value.ratio > 0]
            cps = detect.ratio_changes([p.value.ratio or 1.0 for p in pts],
                                       min_magnitude=min_effect)
        for cp in cps:
            out.append(confirm.Candidate(scenario, series, metric, pts[cp.index - 1].commit,
                                         pts[cp.index].commit, cp))
    return out


def find_and_confirm(project: Project, ws: Workspace, s: Session, store: Store, tr: Track,
                     run_id: int, chosen: Sequence[ScenarioConfig], *, folder: Path, seed: int,
                     budget: int, runs: int | None, rounds: int | None) -> list[ChangeRow]:
    """Candidates not judged before: each place confirmed by one A/B, then bisected."""
    by_name = {sc.name: sc for sc in chosen}
    known = {c.key for c in store.changes(tr)}
    found = [c for c in candidates(store.series(tr), s.comp.min_effect)
             if c.scenario in by_name
             and (c.scenario, c.series, c.metric, c.before.sha, c.after.sha) not in known]
    places: dict[tuple[str, str, str], list[confirm.Candidate]] = {}
    for c in found:
        places.setdefault((c.scenario, c.before.sha, c.after.sha), []).append(c)
    if places:
        say(f"track {tr.name}: {len(found)} new candidate change(s) at {len(places)} place(s)")
    out: list[ChangeRow] = []
    for k, ((scenario, before, after), cands) in enumerate(places.items()):
        ss = walk.for_scenario(s, by_name[scenario])
        if ss.build_at(before) is None or ss.build_at(after) is None:
            continue  # measured before, so built before: only a damaged cache gets here
        say(f"confirm: {scenario} between {before[:12]} and {after[:12]} ("
            + ", ".join(f"{outputs.label(c.metric)} {c.direction}" for c in cands) + ")")
        try:
            judged, made = confirm.ab(ss, cands, budget)
        except RunsFailed as exc:  # both were measured in the walk: a flake; judged next run
            say(str(s.redacted(f"confirm: {scenario} between {before[:12]} and {after[:12]}: "
                               f"runs failed ({exc}); not judged now, the next run tries "
                               "again")))
            continue
        ab_file = confirm.save_ab(ss, folder, cands[0], made)
        shown = [c for c in cands if judged[(c.series, c.metric)].confirmed]
        bis: dict[str, object] = {}
        culprit: str | None = None
        if shown:
            if not confirm.needs_bisect(s, before, after):
                culprit = after
                bis = {"outcome": "not needed",
                       "why": "the two commits are neighbours on the first-parent chain"}
            elif any(confirm.bisectable(by_name[scenario].kind, c.metric) for c in shown):
                try:
                    bis = confirm.bisect(project, ws, ss, shown[0], seed=seed + 7919 * (k + 1),
                                         budget=budget, runs=runs, rounds=rounds)
                except RunsFailed as exc:  # the change stands, its commit is not named
                    bis = {"outcome": "failed",
                           "why": str(s.redacted(f"runs of {exc.variant} failed: {exc}"))}
                first_bad = bis.get("first_bad")
                culprit = first_bad if isinstance(first_bad, str) else None
            else:
                bis = {"outcome": "not bisected", "range": [before, after],
                       "why": "a bisect judges this scenario by its kind's rule (time or hangs); "
                              "the change was confirmed in another metric only"}
        for c in cands:
            j = judged[(c.series, c.metric)]
            subject = (s.commit(culprit).subject if culprit and j.confirmed else None)
            row = ChangeRow(
                scenario=c.scenario, series=c.series, metric=c.metric, before_sha=before,
                after_sha=after, direction=c.direction, detect_p=c.cp.p_value,
                magnitude=c.cp.magnitude if c.cp.magnitude != float("inf") else 1e300,
                status="confirmed" if j.confirmed else "not-confirmed", found_at=now(),
                run_id=run_id,
                ab={**j.figures, "text": j.pair.text, "factor": j.factor, "file": ab_file},
                culprit=culprit if j.confirmed else None, culprit_subject=subject,
                bisect=bis if j.confirmed else {},
                why="" if j.confirmed else f"the A/B did not show it ({j.pair.text})")
            if store.add_change(tr, row):
                out.append(row)
            say(f"{c.scenario}{f' [{c.series}]' if c.series else ''} "
                f"{outputs.label(c.metric)} {c.direction} between "
                f"{before[:12]} and {after[:12]}: "
                + (f"confirmed ({j.pair.text}); culprit {culprit[:12] if culprit else 'not named'}"
                   if j.confirmed else f"not confirmed ({j.pair.text})"))
    return out
