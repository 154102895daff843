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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchbench import results
from patchbench.analysis import gating, paired, sequential
from patchbench.analysis import metrics as mx
from patchbench.config.scenarios import ScenarioConfig, TimedConfig
from patchbench.errors import ConfigError
from patchbench.measure import bench
from patchbench.measure.bench import Cell, Samples
from patchbench.results import MAX_SAMPLES
from patchbench.util import progress

if TYPE_CHECKING:
    from patchbench.scenarios.base import ScenarioContext

More = Callable[[dict[Cell, Samples], int], int]


@dataclass(frozen=True)
class Seen:
    """One metric of one comparison at a look."""

    verdict: str
    width: float | None  # the CI half-width
    mde: float | None
    speedup: float | None = None
    low: float | None = None  # the 1 - 2 alpha interval's ends: one-sided bounds at alpha
    high: float | None = None
    rounds: int = 0


def _judge(name: str, b: Samples, c: Samples, *, alpha: float, min_effect: float,
           signs: dict[int, int] | None) -> Seen:
    """One metric of one comparison at a look."""
    if name == mx.WALL:
        v = paired.paired_verdict(b.times, b.rounds, c.times, c.rounds, alpha=alpha,
                                  min_effect=min_effect, signs=signs)
        return Seen(str(v.verdict), sequential.half_width(v.ci_low, v.ci_high), v.mde,
                    v.speedup, v.equivalence_low, v.equivalence_high, v.rounds)
    if name not in b.metrics or name not in c.metrics:
        return Seen("inconclusive", None, None)
    j = mx.judge(name, b.metrics[name], b.rounds, c.metrics[name], c.rounds, alpha=alpha,
                 min_effect=min_effect)
    return Seen(str(j["verdict"]), sequential.half_width(j["ci_low"], j["ci_high"]), j["mde"],
                j.get("speedup"), j.get("equivalence_low"), j.get("equivalence_high"),
                int(j.get("rounds") or 0))


def _worst(values: Sequence[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else max(
        v for v in values if v is not None)


def _pct(value: float | None) -> str:
    return f"±{value * 100:.1f} %" if value is not None else "none"


def rule(ctx: ScenarioContext[ScenarioConfig], cells: Sequence[Cell],
         pairs: Sequence[tuple[Cell, Cell]], budget: sequential.Budget, seed: int) -> More:
    """The ``more`` callback of one set of rounds of ``cells`` (``pairs``: baseline and
    candidate cells) under ``budget``; it records the level of its looks for its set
    (``ctx.alphas``, by condition: the set's comparisons are judged at it) and appends how it
    stopped to ``ctx.stops``. With the gate (``budget.gate``) each gated metric is called against
    its margin: ``budget.margin`` when the comparison gives one, else the metric's own
    ``min_effect``."""
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

    def margin(name: str) -> float | None:
        return budget.margin or min_effect(name) or None

    cap = budget.max_rounds or gating.CAP_FACTOR * sc.rounds
    if budget.gate and cap < sc.rounds:
        raise ConfigError(f"--max-rounds {cap}: scenario {sc.name} already runs {sc.rounds} "
                          "rounds", hint="give a cap of at least its rounds")
    fits = MAX_SAMPLES // max(1, sc.runs // sc.rounds)  # the rounds a saved cell may hold

    def more(samples: dict[Cell, Samples], done: int) -> int:
        now = time.monotonic()
        if not plan:  # the first look plans the others: the cap, and the time at this pace
            # the gate adds rounds only for a metric with a margin to call it against (without
            # one, min_effect 0, it is judged by the rule of schema 5: one look, at alpha)
            adds = budget.gate and any(margin(n) is not None for n in names)
            top = min(cap, fits) if adds else done
            if share is not None:
                by_time = sequential.budget_rounds(done, now - started, share, block, fits)
                top = min(top, by_time) if budget.gate else by_time
            plan.extend(sequential.planned_looks(done, max(top, done), block))
            level[0] = sequential.alpha_per_look(budget.alpha, plan)
            ctx.alphas[condition] = level[0]
        calls: list[bool] = []  # --gate: whether each gated metric is called (pass or fail)
        verdicts: list[str] = []
        widths: dict[str, list[float | None]] = {n: [] for n in names}
        mdes: dict[str, list[float | None]] = {n: [] for n in names}
        needed: list[int] = []
        # the order the rounds ran in (bench.schedule of the same seed), for the signs of the
        # noise neighbouring rounds share: each look judges as the saved verdict will
        order = [[x.label for x in row] for row in bench.schedule(list(cells), done, seed)]
        for b, c in pairs:
            sb, sk = samples[b], samples[c]
            signs = paired.neighbour_signs(order, b.label, c.label)
            for n in names:
                if not set(sb.rounds) & set(sk.rounds):
                    # every run of one of them hung: more rounds do not decide it (the gate
                    # fails it on its hangs), so it holds no set back
                    verdicts.append("withheld")
                    calls.append(True)
                    widths[n].append(None)
                    mdes[n].append(None)
                    continue
                got = _judge(n, sb, sk, alpha=level[0], min_effect=min_effect(n), signs=signs)
                verdicts.append(got.verdict)
                widths[n].append(got.width)
                mdes[n].append(got.mde)
                m = margin(n)
                if budget.gate and (m is None or got.low is None or got.high is None
                                    or got.speedup is None):
                    # no margin, or no interval to call (a round whose mean is 0, values all
                    # alike): more rounds do not change that, so it holds no set back
                    calls.append(True)
                elif budget.gate and m is not None:
                    call = gating.call(got.speedup or float("nan"), got.low, got.high, m)
                    calls.append(call.call is not gating.Call.UNDECIDED)
                    sd = (gating.sd_per_round(got.low, got.high, got.rounds, level[0])
                          if got.low and got.high else None)
                    if len(seen) == 0 and sd is not None:
                        needed.append(gating.rounds_needed(sd, m, level[0]))
        worst = {n: _worst(widths[n]) for n in names}
        seen.append(results.Look(rounds=done, half_width=_worst(list(worst.values())),
                                 widths=worst))
        shown = ", ".join(f"{n} {_pct(w)}" for n, w in worst.items())
        if needed:  # said once, at the first look
            most = max(needed)
            shown_margin = (f"+{budget.margin:.1%}" if budget.margin
                            else "each metric's min_effect")
            progress.say(
                f"  {sc.name}: gate margin {shown_margin}: at this noise an unchanged "
                f"candidate needs about {most} rounds to pass ({gating.POWER:.0%} power, each "
                f"look at alpha {level[0]:.2g}); looks planned at "
                f"{', '.join(map(str, plan))}" + ("" if most <= plan[-1] else
                f"; more than the {plan[-1]} planned: it may stay undecided (give "
                f"--max-rounds {most} or more)"))
        later = [r for r in plan if r > done]
        pace = (now - started) / done
        is_decided = (all(calls) and bool(calls) if budget.gate
                      else sequential.decided(verdicts))
        over = share is not None and bool(later) and (
            now + (later[0] - done) * pace > started + share)
        reason = ("decided" if is_decided else "budget" if not later else "time" if over
                  else "")
        if not reason:
            why = ("not every gated metric called" if budget.gate
                   else "not every gated metric decided")
            left = ("" if share is None else
                    f", {sequential.fmt_duration(max(0.0, started + share - now))} of this "
                    "scenario's share left")
            by = "--gate" if budget.seconds is None else "--budget"
            progress.say(f"  {sc.name}: round {done}: CI half-width {shown}; {why}: "
                         f"{later[0] - done} more rounds ({by}{left})")
            return later[0] - done
        budget.sets -= 1
        mde = {n: _worst(mdes[n]) for n in names}
        ctx.stops.append(results.Stopping(
            scenario=sc.name, condition=condition, target=None, max_rounds=plan[-1],
            alpha=budget.alpha, alpha_per_look=level[0], planned_looks=list(plan),
            looks=list(seen), stopped_at=done, reason=reason,
            rule=sequential.GATE_RULE if budget.gate else sequential.BUDGET_RULE,
            budget_s=budget.seconds, metrics=names, seconds=now - started, mde=mde,
            margin=budget.margin))
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


def start(seconds: float | None, alpha: float, gated: Sequence[str],
          chosen: Sequence[ScenarioConfig], *, gate: bool = False, margin: float | None = None,
          max_rounds: int | None = None) -> sequential.Budget:
    """The budget of a comparison's measurement, shared by its sets of interleaved rounds (each
    timed scenario, per condition); its clock starts with the first of them. ``gate``: the sets
    stop when the gate calls every gated metric (against ``margin``, else each metric's
    min_effect), within ``max_rounds`` (default: gating.CAP_FACTOR times a scenario's rounds) and
    the time, if any."""
    sets = sum(len(sc.conditions) for sc in chosen if isinstance(sc, TimedConfig))
    return sequential.Budget(seconds=seconds, alpha=alpha, metrics=tuple(gated),
                             sets=max(1, sets), gate=gate, margin=margin,
                             max_rounds=max_rounds)
