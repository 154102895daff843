"""Stress rounds: is the fast build still correct when instances are killed mid-start?

Each round launches N instances in the background, waits a random delay from the configured range
(seeded, recorded), then applies one action to all of them: a force-delete or stop command per
instance, or SIGTERM / SIGINT sent to each launched process. After the round:

- every launched and kill command must return within the timeout, else it is a hang;
- the listing must show none of the round's instances (else a leftover: cleaned up and counted);
- the listing's latency is kept;
- a fresh instance must still run.

Builds alternate round by round in a seeded order, like every other measurement here.
"""

from __future__ import annotations

import random
import shlex
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchbench import bench, command, stats
from patchbench.bench import Cell
from patchbench.command import Background
from patchbench.errors import BenchmarkError, CommandError

if TYPE_CHECKING:
    from patchbench.build import Built
    from patchbench.pipeline import ScenarioContext

SIGNALS = {"sigterm": signal.SIGTERM, "sigint": signal.SIGINT}


def classify(action: str, code: int | None, labels: dict[int, str] | None = None) -> str:
    """What a launched command's exit says about the action applied to it."""
    if code is None:
        return "hang"
    if labels and code in labels:
        return f"{labels[code]} ({code})"
    if action in SIGNALS:
        signum = int(SIGNALS[action])
        if code == 128 + signum:
            return "forwarded (container exited by the signal)"
        if code == -signum:
            return "lost (the launcher itself died of the signal)"
        if code == 0:
            return "finished normally (signal had no effect)"
        return f"other exit {code}"
    return f"exit {code}"


def run_round(
    ctx: ScenarioContext, b: Built, rnd: int, draw: tuple[str, float], log: Path,
    seen: set[str] | None = None,
) -> dict[str, Any]:
    """One round for one build, with the round's (action, delay), which every build shares.
    ``seen`` holds leftovers already reported (where nothing could clean them up), so that each
    is counted once."""
    sc = ctx.scenario
    cell = Cell(b.variant.name)
    values = {**ctx.values(b, cell), "round": str(rnd)}
    where = f"scenario {sc.name}"

    def argv_for(template: list[str], i: int) -> list[str]:
        return [a.replace("{i}", str(i)) for a in bench.fill_argv(template, values, where)]

    action, delay = draw
    for argv in sc.setup:  # e.g. start this build's own service
        command.run(bench.fill_argv(argv, values, where), timeout=sc.timeout, log=log,
                    error=BenchmarkError, what=f"{where} {b.variant.name}: setup")
    try:
        return _round(ctx, b, rnd, values, where, action, delay, log, seen, argv_for)
    finally:
        for argv in sc.teardown:
            command.run(bench.fill_argv(argv, values, where), timeout=sc.timeout, log=log,
                        check=False, what=f"{where} {b.variant.name}: teardown")


def _round(
    ctx: ScenarioContext, b: Built, rnd: int, values: dict[str, str], where: str, action: str,
    delay: float, log: Path, seen: set[str] | None, argv_for: Callable[[list[str], int], list[str]],
) -> dict[str, Any]:
    sc = ctx.scenario
    procs: list[Background] = []
    kill_errors = 0
    kill_hangs = 0
    try:
        for i in range(sc.instances):
            procs.append(Background(argv_for(sc.launch, i), log=log))
        time.sleep(delay)
        for i, proc in enumerate(procs):
            if action in SIGNALS:
                proc.signal(SIGNALS[action])
                continue
            try:
                kill_cmd = sc.kill[action]  # type: ignore[index]  # signals were handled above
                res = command.run(argv_for(kill_cmd, i), timeout=sc.timeout, check=False,
                                  log=log)
                kill_errors += res.returncode != 0
            except CommandError:
                kill_hangs += 1
        codes = [p.wait(sc.timeout) for p in procs]
    finally:
        for p in procs:
            p.stop()
    t0 = time.monotonic()
    listing_hang = False
    listed: list[str] = []
    try:
        res = command.run(bench.fill_argv(sc.list_cmd, values, where), timeout=sc.timeout,
                          check=False)
        listed = res.stdout.split()
    except CommandError:
        listing_hang = True
    list_latency = time.monotonic() - t0
    prefix = values["id"] + "-"
    if ctx.runtime is not None:
        # the runtime looks deeper than the listing (state, cgroups) and can clean up
        leftovers = ctx.runtime.leftovers(b.variant.name, b.bin)
        if leftovers:
            ctx.runtime.cleanup(b.variant.name, b.bin)
    else:
        leftovers = [f"instance {x}" for x in listed if x.startswith(prefix)]
    if seen is not None:
        leftovers = [x for x in leftovers if x not in seen]
        seen.update(leftovers)
    fresh_ok = False
    try:
        fresh = command.run(argv_for(sc.fresh, sc.instances), timeout=sc.timeout, check=False,
                            log=log)
        fresh_ok = fresh.returncode == 0
    except CommandError:
        pass
    return {
        "round": rnd,
        "variant": b.variant.name,
        "action": action,
        "delay_s": round(delay, 4),
        "exit_codes": codes,
        "outcomes": dict(Counter(classify(action, c, sc.exit_labels) for c in codes)),
        "kill_errors": kill_errors,
        "hangs": sum(c is None for c in codes) + kill_hangs + int(listing_hang),
        "leftovers": leftovers,
        "list_latency_s": list_latency,
        "fresh_ok": fresh_ok,
    }


def run(ctx: ScenarioContext, extra_files: dict[str, Path]) -> dict[str, Any]:
    from patchbench.pipeline import scenario_header

    sc = ctx.scenario
    rng = random.Random(ctx.seed)
    order = bench.schedule([Cell(b.variant.name) for b in ctx.built], sc.rounds, ctx.seed)
    log = ctx.workdir / f"{sc.name}.stress.log"
    rounds: list[dict[str, Any]] = []
    seen: dict[str, set[str]] = {b.variant.name: set() for b in ctx.built}
    for r, cells in enumerate(order, 1):
        # one action and one delay per round, the same for every build, so that their counts
        # compare like with like
        draw = (rng.choice(sc.actions), rng.uniform(*sc.delay))
        for cell in cells:
            b = next(x for x in ctx.built if x.variant.name == cell.variant)
            res = run_round(ctx, b, r, draw, log, seen[b.variant.name])
            rounds.append(res)
            print(f"patchbench:   {cell.variant:<24} round {r}: {res['action']:<7} after "
                  f"{res['delay_s']:.2f} s: {res['outcomes']} leftovers {len(res['leftovers'])}"
                  f" hangs {res['hangs']} fresh {'ok' if res['fresh_ok'] else 'FAILED'}",
                  flush=True)
    per_build = {}
    for b in ctx.built:
        mine = [x for x in rounds if x["variant"] == b.variant.name]
        outcomes: Counter[str] = Counter()
        for x in mine:
            outcomes.update(x["outcomes"])
        lat = [x["list_latency_s"] for x in mine]
        per_build[b.variant.name] = {
            "rounds": len(mine),
            "instances_killed": len(mine) * sc.instances,
            "kill_errors": sum(x["kill_errors"] for x in mine),
            "hangs": sum(x["hangs"] for x in mine),
            "leftovers": sum(len(x["leftovers"]) for x in mine),
            "fresh_failures": sum(not x["fresh_ok"] for x in mine),
            "list_latency_median_s": stats.summarize(lat).median,
            "list_latency_max_s": max(lat),
            "outcomes": dict(outcomes),
        }
    out = scenario_header(sc)
    out["command"] = shlex.join(sc.launch)
    out["order"] = [[c.label for c in cells] for cells in order]
    out["cells"] = []
    out["comparisons"] = []
    out["rounds_detail"] = rounds
    out["per_build"] = per_build
    out["instances"] = sc.instances
    out["delay"] = list(sc.delay)
    out["actions"] = sc.actions
    out["markdown"] = [stress_table(per_build)]
    out["warnings"] = [
        f"{sc.name} {v}: {pb['leftovers']} leftovers, {pb['hangs']} hangs, "
        f"{pb['fresh_failures']} failed fresh runs"
        for v, pb in per_build.items()
        if pb["leftovers"] or pb["hangs"] or pb["fresh_failures"]
    ]
    return out


def stress_table(per_build: dict[str, dict[str, Any]]) -> str:
    from tabulate import tabulate

    from patchbench.report import fmt_time

    rows = []
    for v, pb in per_build.items():
        rows.append([
            v, pb["rounds"], pb["instances_killed"], pb["kill_errors"], pb["hangs"],
            pb["leftovers"], pb["fresh_failures"],
            f"{fmt_time(pb['list_latency_median_s'])} / {fmt_time(pb['list_latency_max_s'])}",
            "; ".join(f"{k}: {n}" for k, n in sorted(pb["outcomes"].items())),
        ])
    return tabulate(rows, headers=["build", "rounds", "instances", "kill errors", "hangs",
                                   "leftovers", "fresh run failed", "list latency median / max",
                                   "launched command outcomes"],
                    tablefmt="github", disable_numparse=True)
