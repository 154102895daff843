"""``track`` behind the command line: run it, print what it found and where the dashboard is,
and exit 4 when this run confirmed a regression (the outputs are written first)."""

from __future__ import annotations

from collections.abc import Sequence

from patchbench.cli.commands import load_project
from patchbench.util.workspace import Workspace


def do_track(ws: Workspace, name: str, *, range_: str | None, every: int, db: str | None,
             branch: str | None, only: Sequence[str], runs: int | None, rounds: int | None,
             seed: int | None, budget: int) -> int:
    project = load_project(ws)
    from patchbench.track import outputs, tracking

    out = tracking.track(project, ws, name, range_=range_, every=every, db=db, branch=branch,
                         only=only, runs=runs, rounds=rounds, seed=seed, budget=budget)
    w = out.walked
    print(f"\ntrack {name}: {len(w.measured)} point(s) measured now, {w.skipped} already in the "
          "database" + (f", {len(w.failed)} commit(s) failing: they do not build or their "
                       "runs fail" if w.failed else ""))
    for c in out.new:
        state = ("confirmed: " + outputs.culprit_text(c) if c.status == "confirmed"
                 else "not confirmed")
        print(f"  {outputs.where(c)} {outputs.label(c.metric)} {c.direction} between "
              f"{c.before_sha[:12]} and {c.after_sha[:12]}: {state} (A/B {outputs.ab_text(c)})")
    confirmed = [c for c in out.changes if c.status == "confirmed"]
    print(f"changes confirmed in all: {len(confirmed)}; dashboard: {out.folder / 'index.html'}")
    if out.regressions:
        print("regression confirmed by this run: "
              + ", ".join(dict.fromkeys(outputs.culprit_text(c) for c in out.regressions)))
        return tracking.REGRESSION_EXIT_CODE
    return 0
