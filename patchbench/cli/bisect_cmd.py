"""``bisect`` and ``history`` behind the command line: run, print the headline and the table, and
turn an inconclusive or underpowered bisect into its exit code (after its report is saved)."""

from __future__ import annotations

from patchbench.cli.commands import load_project
from patchbench.errors import BisectInconclusive, ConfigError
from patchbench.util.workspace import Workspace


def do_bisect(ws: Workspace, target: str | None, good: str, bad: str, spec: str, *,
              seed: int | None, budget: int, dry_run: bool, runs: int | None = None,
              rounds: int | None = None) -> int:
    """``target``: None, or the target the comparison of ``spec`` must measure."""
    from patchbench.bisect import render, run, session

    probe = session.scenario_of(load_project(ws), spec)
    session.check_target(probe, target)
    if dry_run:
        print("\n".join(run.plan_bisect(ws, probe, good, bad, budget, runs=runs,
                                         rounds=rounds)))
        return 0
    rec, folder = run.bisect(ws, probe, good, bad, seed=seed, budget=budget, runs=runs,
                             rounds=rounds)
    print()
    print(render.printed(rec))
    print(f"\nreport: {folder}")
    if rec.outcome == "underpowered":
        raise ConfigError(f"bisect {probe.target}: {rec.why}",
                          hint=f"raise --runs or --budget; the report: {folder}")
    if rec.outcome != "found":
        what = ("the ends do not differ" if rec.outcome == "no-difference"
                else "the answer is a range: " + ", ".join(c.sha[:12] for c in rec.range))
        raise BisectInconclusive(f"bisect {probe.target}: {what}", hint=f"the report: {folder}")
    return 0


def do_history(ws: Workspace, target: str, refs: list[str], spec: str, *, range_: str | None,
               every: int, seed: int | None, runs: int | None = None,
               rounds: int | None = None, tags: str | None = None, budget: int = 4) -> int:
    from patchbench.bisect import render, run, session

    probe = session.scenario_of(load_project(ws), spec)
    session.check_target(probe, target)
    rec, folder = run.history_run(ws, probe, refs, range_=range_, every=every, seed=seed,
                                  runs=runs, rounds=rounds, tags=tags, budget=budget)
    print()
    print(render.printed(rec))
    print(f"\nreport: {folder}")
    return 0
