"""``compare --budget DURATION`` for one set of interleaved rounds: the ``more`` callback of
``bench.measure`` that adds rounds until every gated metric of every comparison of the set is
decided (faster, slower or equivalent) or its share of the time is spent
(patchbench.analysis.sequential: ``Budget``, ``budget_rounds``; docs/statistics.md).

The configured rounds always run. At their end the pace so far (seconds per round, warmups
included) and the set's share of the time left plan the looks (the configured rounds, then about
1.5x more each, up to what the share allows), and alpha is spent equally over them: every look
is judged at alpha / looks, the level the saved comparisons record. At each look the progress
line shows the current CI half-width per gated metric; the set stops at the first look where
every gated metric is decided, at the last planned look, or earlier when the next look would
overrun the share at the pace seen."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from patchbench import results
from patchbench.analysis import metrics as mx
from patchbench.analysis import paired, sequential
from patchbench.config.scenarios import ScenarioConfig, TimedConfig
from patchbench.measure import bench
from patchbench.measure.bench import Cell, Samples
from patchbench.util import progress

if TYPE_CHECKING:
    from patchbench.scenarios.base import ScenarioContext

More = Callable[[dict[Cell, Samples], int], int]


def _judge(name: str, b: Samples, c: Samples, *, alpha: float, min_effect: float
           ) -> tuple[str, float | None, float | None]:
    """One metric of one comparison at a look: (verdict, CI half-width, MDE)."""
    if name == mx.WALL:
        v = paired.paired_verdict(b.times, b.rounds, c.times, c.rounds, alpha=alpha,
                                  min_effect=min_effect)
        return str(v.verdict), sequential.half_width(v.ci_low, v.ci_high), v.mde
    if name not in b.metrics or name not in c.metrics:
        return "inconclusive", None, None
    j = mx.judge(name, b.metrics[name], b.rounds, c.metrics[name], c.rounds, alpha=alpha,
                 min_effect=min_effect)
    return str(j["verdict"]), sequential.half_width(j["ci_low"], j["ci_high"]), j["mde"]


def _worst(values: Sequence[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else max(
        v for v in values if v is not None)


def _pct(value: float | None) -> str:
    return f"±{value * 100:.1f} %" if value is not None else "none"


def rule(ctx: ScenarioContext[ScenarioConfig], cells: Sequence[Cell],
         pairs: Sequence[tuple[Cell, Cell]], budget: sequential.Budget) -> More:
    """The ``more`` callback of one set of rounds of ``cells`` (``pairs``: baseline and
    candidate cells) under ``budget``; it sets ``ctx.alpha`` to the level of its looks (the
    lowest of its sets': the comparisons are judged at it) and appends how it stopped to
    ``ctx.stops``."""
    sc = ctx.scenario
    started = time.monotonic()
    share = budget.share(started)
    names = [n for n in budget.metrics
             if not isinstance(sc, TimedConfig) or n in sc.metric_names] or [mx.WALL]
    block = len(bench.williams(len(cells)))
    condition = cells[0].param("condition") or ""
    plan: list[int] = []
    level = [budget.alpha]
    seen: list[results.Look] = []

    def min_effect(name: str) -> float:
        return (sc.metric_min_effect(name, ctx.min_effect) if isinstance(sc, TimedConfig)
                else ctx.min_effect)

    def more(samples: dict[Cell, Samples], done: int) -> int:
        now = time.monotonic()
        if not plan:  # the first look: the pace of the configured rounds plans the others
            top = sequential.budget_rounds(done, now - started, share, block)
            plan.extend(sequential.planned_looks(done, top, block))
            level[0] = sequential.alpha_per_look(budget.alpha, plan)
            ctx.alpha = min(ctx.alpha, level[0])
        verdicts: list[str] = []
        widths: dict[str, list[float | None]] = {n: [] for n in names}
        mdes: dict[str, list[float | None]] = {n: [] for n in names}
        for b, c in pairs:
            sb, sk = samples[b], samples[c]
            for n in names:
                if not set(sb.rounds) & set(sk.rounds):
                    verdicts.append("withheld")
                    widths[n].append(None)
                    mdes[n].append(None)
                    continue
                v, w, m = _judge(n, sb, sk, alpha=level[0], min_effect=min_effect(n))
                verdicts.append(v)
                widths[n].append(w)
                mdes[n].append(m)
        worst = {n: _worst(widths[n]) for n in names}
        seen.append(results.Look(rounds=done, half_width=_worst(list(worst.values())),
                                 widths=worst))
        shown = ", ".join(f"{n} {_pct(w)}" for n, w in worst.items())
        later = [r for r in plan if r > done]
        pace = (now - started) / done
        reason = ("decided" if sequential.decided(verdicts) else "budget" if not later
                  else "time" if now + (later[0] - done) * pace > started + share else "")
        if not reason:
            left = sequential.fmt_duration(max(0.0, started + share - now))
            progress.say(f"  {sc.name}: round {done}: CI half-width {shown}; not every gated "
                         f"metric decided: {later[0] - done} more rounds (--budget, {left} of "
                         "this scenario's share left)")
            return later[0] - done
        budget.sets -= 1
        mde = {n: _worst(mdes[n]) for n in names}
        ctx.stops.append(results.Stopping(
            scenario=sc.name, condition=condition, target=None, max_rounds=plan[-1],
            alpha=budget.alpha, alpha_per_look=level[0], planned_looks=list(plan),
            looks=list(seen), stopped_at=done, reason=reason, rule=sequential.BUDGET_RULE,
            budget_s=budget.seconds, metrics=names, seconds=now - started, mde=mde))
        progress.say(f"  {sc.name}: round {done}: CI half-width {shown}; "
                     + describe(done, reason, now - started, budget.seconds, mde))
        return 0

    return more


WHY = {"decided": "every gated metric decided", "budget": "the planned looks are spent",
       "time": "the next look would overrun the time"}


def describe(done: int, reason: str, seconds: float | None, budget_s: float | None,
             mde: dict[str, float | None]) -> str:
    """``stopped at round 14 after 41s (--budget 5m00s): every gated metric decided; MDE reached:
    wall ±2.1 %, cpu ±3.0 %``."""
    took = f" after {sequential.fmt_duration(seconds)}" if seconds is not None else ""
    given = f" (--budget {sequential.fmt_duration(budget_s)})" if budget_s is not None else ""
    reached = ", ".join(f"{n} {_pct(v)}" for n, v in mde.items())
    return (f"stopped at round {done}{took}{given}: {WHY.get(reason, reason)}; MDE reached: "
            f"{reached or 'none'}")


def start(seconds: float, alpha: float, gated: Sequence[str],
          chosen: Sequence[ScenarioConfig]) -> sequential.Budget:
    """The budget of a comparison's measurement, shared by its sets of interleaved rounds (each
    timed scenario, per condition); its clock starts with the first of them."""
    sets = sum(len(sc.conditions) for sc in chosen if isinstance(sc, TimedConfig))
    return sequential.Budget(seconds=seconds, alpha=alpha, metrics=tuple(gated),
                             sets=max(1, sets))
