"""What the schedule benchmarks share: the commands they time and one interleaved measurement of
them under a schedule (runs per block, each block's own warm-ups), judged in wall and CPU time.

- runc: runc-signal's ``run`` (``runc run`` of a ``true`` container) for the baseline and its two
  candidates, with the runc runtime's bundle and state roots prepared (needs root);
- demo: ``slowstart -n 50 -boot 2ms`` (50 sandboxes booted one after the other under its lock,
  about 117 ms) against ``-n 51``, one boot more: a planted change of 2 % by the same binary.
"""

from __future__ import annotations

import math
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench import config, pipeline, runtimes, scenarios  # noqa: E402
from patchbench.analysis import metrics as mx  # noqa: E402
from patchbench.analysis import paired, sequential  # noqa: E402
from patchbench.build import Variant  # noqa: E402
from patchbench.config.scenarios import TimedConfig  # noqa: E402
from patchbench.measure import bench  # noqa: E402
from patchbench.measure.bench import Cell, Invocation  # noqa: E402
from patchbench.util.layout import Layout  # noqa: E402
from patchbench.util.workspace import Workspace  # noqa: E402

METRICS = (mx.WALL, "cpu")


@dataclass(frozen=True)
class Schedule:
    """How the runs of a cell are laid out: ``per_block`` timed runs per block (a cell in a
    round), each block after ``block_warmup`` runs of its own (recorded apart, never timed), and
    ``warmup`` unrecorded runs once per cell before its first round."""

    per_block: int
    block_warmup: int
    warmup: int = 5

    @property
    def name(self) -> str:
        return f"{self.per_block}+{self.block_warmup}w"

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """``20:1`` -> blocks of 20 timed runs, each after 1 warm-up run."""
        per, _, warm = text.partition(":")
        return cls(int(per), int(warm or 0))


@dataclass
class Target:
    """The commands of one target: the baseline first, then the candidates."""

    name: str
    commands: dict[str, list[str]]
    teardown: Callable[[], None] = lambda: None

    @property
    def baseline(self) -> str:
        return next(iter(self.commands))


def demo_target(ws: Workspace) -> Target:
    project = pipeline.load(ws)
    (built,) = pipeline.build_variants(project, ws, project.named_target("demo"),
                                       [Variant("baseline", ())], [])
    exe = str(built.bin / "slowstart")
    return Target("demo", {"n50": [exe, "-n", "50", "-boot", "2ms"],
                           "n51": [exe, "-n", "51", "-boot", "2ms"]})


def runc_target(ws: Workspace, work: Path, variants: Sequence[str] = (
        "async-signal-notify", "async-signal-notify-v1")) -> Target:
    """runc-signal's ``run`` for the baseline and ``variants``, with the runtime prepared (and
    torn down by the target's ``teardown``)."""
    project = pipeline.load(ws)
    comp = project.comparison("runc-signal")
    built = pipeline.build_variants(project, ws, project.named_target("runc"), [
        Variant("baseline", ()), *(Variant(v, (v,)) for v in variants)], [])
    runtime = runtimes.get(config.runtime_of(comp, project.target_of(comp).spec))
    assert runtime is not None
    work.mkdir(parents=True, exist_ok=True)
    runtime.prepare(work, project, comp, dry_run=False, bin_dir=built[0].bin, variants=[
        runtimes.VariantBuild(b.variant.name, b.bin, b.manifest["artifacts"]) for b in built])
    sc = next(s for s in comp.scenarios if s.name == "run")
    assert isinstance(sc, TimedConfig)
    ctx: scenarios.ScenarioContext[TimedConfig] = scenarios.ScenarioContext(
        scenario=sc, built=built, runtime=runtime, workdir=work, seed=1,
        layout=Layout(ws.builds, ws.reports), project_root=project.root, alpha=0.05,
        min_effect=0.02)
    commands = {b.variant.name: ctx.expand(Cell(b.variant.name)).command for b in built}

    def teardown() -> None:
        runtimes.tear_down(runtime, [(b.variant.name, b.bin) for b in built])

    return Target("runc", commands, teardown)


def half(lo: float | None, hi: float | None) -> float | None:
    return sequential.half_width(lo, hi)


def measure(target: Target, schedule: Schedule, runs: int, seed: int, work: Path
            ) -> dict[str, Any]:
    """``runs`` timed runs per cell of ``target`` under ``schedule``, interleaved, each candidate
    judged against the baseline in wall and CPU time (alpha 0.05, min_effect 2 %). Returns the
    seconds it took, what each cell ran and each candidate's ratios, CI half-widths and per-round
    log ratios (for pooling repeats)."""
    invs = {v: Invocation(command=argv, metrics=METRICS) for v, argv in target.commands.items()}
    cells = [Cell(v) for v in target.commands]
    rounds = max(1, runs // schedule.per_block)
    began = time.monotonic()
    samples, order = bench.measure(
        f"{target.name}-{schedule.name}", cells, lambda c: invs[c.variant],
        runs=rounds * schedule.per_block, rounds=rounds, warmup=schedule.warmup, timeout=60,
        seed=seed, workdir=work, block_warmup=schedule.block_warmup)
    seconds = time.monotonic() - began
    shutil.rmtree(work, ignore_errors=True)
    base = samples[cells[0]]
    out: dict[str, Any] = {"seconds": seconds, "rounds": rounds, "candidates": {}}
    for cell in cells[1:]:
        s = samples[cell]
        signs = paired.neighbour_signs(order, cells[0].label, cell.label)
        wall = paired.paired_verdict(base.times, base.rounds, s.times, s.rounds, alpha=0.05,
                                     min_effect=0.02, signs=signs)
        cpu = mx.judge("cpu", base.metrics["cpu"], base.rounds, s.metrics["cpu"], s.rounds,
                       alpha=0.05, min_effect=0.02)
        first = {"base": _first_run_cost(base), "cand": _first_run_cost(s),
                 "profile_base": position_profile(base), "profile_cand": position_profile(s)}
        out["candidates"][cell.label] = {
            "wall": wall.speedup, "wall_half": half(wall.ci_low, wall.ci_high),
            "wall_verdict": str(wall.verdict), "wall_logs": [math.log(x)
                                                             for x in wall.round_ratios],
            "cpu": cpu["speedup"], "cpu_half": half(cpu["ci_low"], cpu["ci_high"]),
            "cpu_verdict": cpu["verdict"],
            "cpu_logs": [math.log(x) for x in cpu["round_ratios"]], "first_run": first}
    return out


def _first_run_cost(s: bench.Samples) -> float | None:
    """How much more CPU time a block's first warm-up run took than the block's timed runs
    (median over blocks, a fraction); None without warm-ups."""
    warm = s.warmup_metrics.get("cpu") or []
    if not warm:
        return None
    firsts: dict[int, float] = {}
    for r, v in zip(s.warmup_rounds, warm, strict=True):
        firsts.setdefault(r, v)
    timed: dict[int, list[float]] = {}
    for r, v in zip(s.rounds, s.metrics.get("cpu") or [], strict=True):
        timed.setdefault(r, []).append(v)
    ratios = sorted(firsts[r] / (sum(timed[r]) / len(timed[r])) - 1 for r in firsts
                    if r in timed and sum(timed[r]) > 0)
    return ratios[len(ratios) // 2] if ratios else None


def position_profile(s: bench.Samples, positions: int = 4, settled: int = 5
                     ) -> list[float] | None:
    """How much more CPU time the k-th run of a block takes (k = 1 .. ``positions``, the block's
    warm-ups counted first) than the block's runs from the ``settled``-th on (their median), as a
    fraction, the median over blocks; None when blocks are too short to tell."""
    warm = s.warmup_metrics.get("cpu") or []
    runs: dict[int, list[float]] = {}
    for r, v in zip(s.warmup_rounds, warm, strict=True):
        runs.setdefault(r, []).append(v)
    for r, v in zip(s.rounds, s.metrics.get("cpu") or [], strict=True):
        runs.setdefault(r, []).append(v)
    per: list[list[float]] = [[] for _ in range(positions)]
    for block in runs.values():
        if len(block) < settled + 2:
            continue
        rest = sorted(block[settled - 1:])
        mid = rest[len(rest) // 2]
        if mid <= 0:
            continue
        for k in range(positions):
            per[k].append(block[k] / mid - 1)
    if not per[0]:
        return None
    return [sorted(p)[len(p) // 2] for p in per]
