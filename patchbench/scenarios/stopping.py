"""``--until-ci`` and ``--budget`` for one set of interleaved rounds: the ``more`` callback of
``bench.measure`` that adds rounds until the answer is precise or decided."""

from __future__ import annotations

from collections.abc import Sequence

from patchbench import results
from patchbench.analysis import paired, sequential
from patchbench.config.scenarios import ScenarioConfig
from patchbench.errors import ConfigError
from patchbench.measure import bench
from patchbench.measure.bench import Cell, Samples
from patchbench.scenarios import budget
from patchbench.scenarios.base import ScenarioContext
from patchbench.util import progress


def precision_rule(ctx: ScenarioContext[ScenarioConfig], cells: Sequence[Cell], seed: int
                   ) -> bench.More | None:
    """``--until-ci`` (patchbench.analysis.sequential) or ``--budget`` (scenarios/budget.py) for
    one set of interleaved rounds of ``cells``: the ``more`` callback of ``bench.measure``, or
    None without either option or without a candidate to compare. It plans the looks, sets
    ``ctx.alpha`` to the level of each look (the comparisons are judged at it), and appends how
    it stopped to ``ctx.stops``. Each look judges with the signs of the order the rounds ran in
    (given to ``more``), as the saved verdict does."""
    until = ctx.until
    base = ctx.built[0].variant.name
    pairs = [(Cell(base, c.params), c) for c in cells if c.variant != base]
    pairs = [(b, c) for b, c in pairs if b in cells]
    if until is None or not pairs:
        return None
    if isinstance(until, sequential.Budget):  # --budget: scenarios/budget.py
        return budget.rule(ctx, cells, pairs, until)
    sc = ctx.scenario
    if until.max_rounds < sc.rounds:
        raise ConfigError(f"--max-rounds {until.max_rounds}: scenario {sc.name} already runs "
                          f"{sc.rounds} rounds", hint="give a budget of at least its rounds")
    looks = sequential.planned_looks(sc.rounds, until.max_rounds, len(bench.williams(len(cells))))
    level = sequential.alpha_per_look(until.alpha, looks)
    ctx.alpha = level
    seen: list[results.Look] = []
    condition = cells[0].param("condition") or ""

    def more(samples: dict[Cell, Samples], done: int, order: list[list[str]]) -> bench.Plan:
        widths: list[float | None] = []
        for b, c in pairs:
            sb, sk = samples[b], samples[c]
            if not set(sb.rounds) & set(sk.rounds):
                widths.append(None)
                continue
            v = paired.paired_verdict(sb.times, sb.rounds, sk.times, sk.rounds, alpha=level,
                                      min_effect=ctx.min_effect,
                                      signs=paired.neighbour_signs(order, b.label, c.label))
            widths.append(sequential.half_width(v.ci_low, v.ci_high))
        worst = None if any(w is None for w in widths) else max(w for w in widths if w is not None)
        seen.append(results.Look(rounds=done, half_width=worst))
        d = sequential.decide(looks, done, widths, until.target)
        shown = f"{worst * 100:.1f} %" if worst is not None else "none"
        if d.add:
            progress.say(f"  {sc.name}: round {done}: CI half-width {shown} > "
                         f"{until.target * 100:.3g} %: {d.add} more rounds (--until-ci)")
            return bench.Plan(d.add)
        ctx.stops.append(results.Stopping(
            scenario=sc.name, condition=condition, target=until.target,
            max_rounds=until.max_rounds, alpha=until.alpha, alpha_per_look=level,
            planned_looks=looks, looks=list(seen), stopped_at=done, reason=d.reason,
            rule=sequential.RULE))
        progress.say(f"  {sc.name}: " + sequential.describe(done, d.reason, worst, until.target))
        return bench.Plan(0)

    return more
