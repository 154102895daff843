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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from patchbench import results
from patchbench.analysis import gating, paired, sequential, stalls, verdict
from patchbench.analysis import metrics as mx
from patchbench.config.scenarios import ScenarioConfig, TimedConfig
from patchbench.errors import ConfigError
from patchbench.measure import bench
from patchbench.measure.bench import Cell, Samples
from patchbench.results import MAX_SAMPLES
from patchbench.util import progress

if TYPE_CHECKING:
    from patchbench.scenarios.base import ScenarioContext

More = bench.More


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
    sd: float | None = None  # of the per-round log ratios, widened: what the rounds needed use


def _judge(b: Samples, c: Samples, names: Sequence[str], *, alpha: float,
           min_effect: dict[str, float], signs: dict[int, int] | None
           ) -> tuple[dict[str, Seen], stalls.Stalls]:
    """The gated metrics of one comparison at a look, judged as the saved record will be
    (patchbench.analysis.verdict.judge: the gated metrics one family; wall time's bounds for
    the gate of the runs that did not stall), and the comparison's stalls."""
    j = verdict.judge(b, c, alpha=alpha, min_effect=min_effect.get(mx.WALL, 0.0), seed=0,
                      signs=signs, metrics={n: min_effect[n] for n in names if n != mx.WALL},
                      gated=names)
    out = {}
    for n in names:
        rec = j.record if n == mx.WALL else j.metrics.get(n)
        if rec is None:
            out[n] = Seen("inconclusive", None, None)
            continue
        # the gate calls wall time on the runs that did not stall (the verdict keeps them all)
        st = j.stalls if n == mx.WALL and j.stalls.speedup is not None else None
        out[n] = Seen(str(rec["verdict"]), sequential.half_width(rec["ci_low"], rec["ci_high"]),
                      rec["mde"], st.speedup if st else rec.get("speedup"),
                      st.low if st else rec.get("equivalence_low"),
                      st.high if st else rec.get("equivalence_high"),
                      int(rec.get("rounds") or 0), _sd(rec, signs))
    return out, j.stalls


def _sd(rec: dict[str, Any], signs: dict[int, int] | None) -> float | None:
    """The widened sd of a record's per-round log ratios (None with fewer than 2): from the
    rounds themselves, not back from the interval, whose degrees of freedom the widening cuts."""
    ratios = [r for r in rec.get("round_ratios") or [] if r > 0]
    if len(ratios) < 2:
        return None
    d = np.log(np.asarray(ratios, float))
    if float(d.std(ddof=1)) <= 0:
        return None
    return paired.widened(d, list(rec["round_ids"]), signs)[0]


def _worst(values: Sequence[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else max(
        v for v in values if v is not None)


def _pct(value: float | None) -> str:
    return f"±{value * 100:.1f} %" if value is not None else "none"


@dataclass
class _Pair:
    """One comparison of the set at the latest look: each gated metric's answer, and whether the
    comparison is done (every gated metric decided, or called with the gate)."""

    seen: dict[str, Seen]
    done: bool
    needed: int | None = None  # --gate, first look: the rounds an unchanged candidate needs


class Rule:
    """The ``more`` callback (``bench.More``) of one set of rounds of ``cells`` under
    ``budget`` (``pairs``: baseline and candidate cells). It plans the looks at the first one,
    records their level for the set (``ctx.alphas``, by condition: the set's comparisons are
    judged at it), stops measuring a candidate once its comparison is done (the time goes to
    the comparisons still undecided), and appends how the set stopped to ``ctx.stops``. With the
    gate (``budget.gate``) each gated metric is called against its margin: ``budget.margin``
    when the comparison gives one, else the metric's own ``min_effect``."""

    def __init__(self, ctx: ScenarioContext[ScenarioConfig], cells: Sequence[Cell],
                 pairs: Sequence[tuple[Cell, Cell]], budget: sequential.Budget) -> None:
        sc = ctx.scenario
        self.ctx, self.sc, self.cells, self.pairs, self.budget = ctx, sc, cells, pairs, budget
        self.started = time.monotonic()
        self.share = budget.share(self.started)
        self.names = [n for n in budget.metrics
                      if not isinstance(sc, TimedConfig) or n in sc.metric_names] or [mx.WALL]
        self.block = len(bench.williams(len(cells)))
        self.condition = cells[0].param("condition") or ""
        self.plan: list[int] = []
        self.level = budget.alpha
        self.looks: list[results.Look] = []
        self.dropped: dict[str, int] = {}  # candidate label -> the round its comparison was done
        self.cap = budget.max_rounds or gating.CAP_FACTOR * sc.rounds
        if budget.gate and self.cap < sc.rounds:
            raise ConfigError(f"--max-rounds {self.cap}: scenario {sc.name} already runs "
                              f"{sc.rounds} rounds", hint="give a cap of at least its rounds")
        self.fits = MAX_SAMPLES // max(1, sc.runs // sc.rounds)  # the rounds a saved cell holds

    def min_effect(self, name: str) -> float:
        sc = self.sc
        return (sc.metric_min_effect(name, self.ctx.min_effect) if isinstance(sc, TimedConfig)
                else self.ctx.min_effect)

    def margin(self, name: str) -> float | None:
        return self.budget.margin or self.min_effect(name) or None

    def _plan(self, done: int, now: float) -> None:
        """The first look plans the others: up to the cap with the gate, and as far as the time
        allows at this pace. The time's bound allows for the candidates that will be done and
        stop early (the pace of the baseline and one candidate); the time check at each look
        stops the set when the next look would overrun its share."""
        adds = self.budget.gate and any(self.margin(n) is not None for n in self.names)
        top = min(self.cap, self.fits) if adds else done
        if self.share is not None:
            faster = max(1.0, len(self.cells) / 2)
            by_time = sequential.budget_rounds(done, (now - self.started) / faster, self.share,
                                               self.block, self.fits)
            top = min(top, by_time) if self.budget.gate else by_time
        self.plan.extend(sequential.planned_looks(done, max(top, done), self.block))
        self.level = sequential.alpha_per_look(self.budget.alpha, self.plan)
        self.ctx.alphas[self.condition] = self.level

    def _pair(self, b: Cell, c: Cell, samples: dict[Cell, Samples],
              order: list[list[str]], first: bool) -> _Pair:
        sb, sk = samples[b], samples[c]
        if not set(sb.rounds) & set(sk.rounds):
            # every run of one of them hung: more rounds do not decide it (the gate fails it
            # on its hangs), so it holds no set back
            return _Pair({n: Seen("withheld", None, None) for n in self.names}, True)
        signs = paired.neighbour_signs(order, b.label, c.label)
        seen, st = _judge(sb, sk, self.names, alpha=self.level,
                          min_effect={n: self.min_effect(n) for n in self.names}, signs=signs)
        if not self.budget.gate:
            return _Pair(seen, sequential.decided([s.verdict for s in seen.values()]))
        if gating.stalls_more(st, self.level):  # fails on its stalls: decided
            return _Pair(seen, True)
        calls, needed = [], []
        for n, got in seen.items():
            m = self.margin(n)
            if m is None or got.low is None or got.high is None or got.speedup is None:
                calls.append(True)  # nothing to call: more rounds do not change that
                continue
            # the gate's rule, as patchbench.gate calls the saved run (analysis/gating.py)
            call, _ = gating.decide(gating.Gated(
                got.verdict, got.speedup, got.low, got.high, m, self.level, got.rounds,
                None, st if n == mx.WALL else None))
            calls.append(call is not gating.Call.UNDECIDED)
            if first and got.sd is not None:
                needed.append(gating.rounds_needed(got.sd, m, self.level))
        return _Pair(seen, all(calls), max(needed) if needed else None)

    def _say_needed(self, most: int) -> None:
        shown = (f"+{self.budget.margin:.1%}" if self.budget.margin
                 else "each metric's min_effect")
        progress.say(
            f"  {self.sc.name}: gate margin {shown}: at this noise an unchanged candidate "
            f"needs about {most} rounds to pass ({gating.POWER:.0%} power, each look at alpha "
            f"{self.level:.2g}); looks planned at {', '.join(map(str, self.plan))}"
            + ("" if most <= self.plan[-1] else f"; more than the {self.plan[-1]} planned: it "
               f"may stay undecided (give --max-rounds {most} or more)"))

    def __call__(self, samples: dict[Cell, Samples], done: int,
                 order: list[list[str]]) -> bench.Plan:
        now = time.monotonic()
        if not self.plan:
            self._plan(done, now)
        live = [(b, c) for b, c in self.pairs if c.label not in self.dropped]
        got = {c: self._pair(b, c, samples, order, not self.looks) for b, c in live}
        widths = {n: _worst([p.seen[n].width for p in got.values()]) for n in self.names}
        self.looks.append(results.Look(rounds=done, half_width=_worst(list(widths.values())),
                                       widths=widths))
        needed = [p.needed for p in got.values() if p.needed is not None]
        if needed:  # said once, at the first look
            self._say_needed(max(needed))
        later = [r for r in self.plan if r > done]
        over = self.share is not None and bool(later) and (
            now + (later[0] - done) * (now - self.started) / done > self.started + self.share)
        undecided = [c for c, p in got.items() if not p.done]
        reason = ("decided" if not undecided else "budget" if not later else "time" if over
                  else "")
        shown = ", ".join(f"{n} {_pct(w)}" for n, w in widths.items())
        if reason:
            return self._stop(done, now, reason, shown, got)
        for c in got:
            if c not in undecided:
                self.dropped[c.label] = done
        stopped = [c.label for c in got if c not in undecided]
        why = ("not every gated metric called" if self.budget.gate
               else "not every gated metric decided")
        left = ("" if self.share is None else ", " + sequential.fmt_duration(
            max(0.0, self.started + self.share - now)) + " of this scenario's share left")
        by = "--gate" if self.budget.seconds is None else "--budget"
        progress.say(f"  {self.sc.name}: round {done}: CI half-width {shown}; {why}: "
                     f"{later[0] - done} more rounds ({by}{left})"
                     + (f"; decided, no longer measured: {', '.join(stopped)}" if stopped
                        else ""))
        return bench.Plan(later[0] - done, self._going_on())

    def _going_on(self) -> tuple[Cell, ...]:
        """The cells measured from now on: every cell but the candidates whose comparison is
        done, and the baselines left with none of their candidates."""
        live = [(b, c) for b, c in self.pairs if c.label not in self.dropped]
        stop = {c for b, c in self.pairs if c.label in self.dropped}
        stop |= {b for b, _ in self.pairs if all(x != b for x, _ in live)}
        return tuple(c for c in self.cells if c not in stop)

    def _stop(self, done: int, now: float, reason: str, shown: str,
              got: dict[Cell, _Pair]) -> bench.Plan:
        self.budget.sets -= 1
        mde = {n: _worst([p.seen[n].mde for p in got.values()]) for n in self.names}
        self.ctx.stops.append(results.Stopping(
            scenario=self.sc.name, condition=self.condition, target=None,
            max_rounds=self.plan[-1], alpha=self.budget.alpha, alpha_per_look=self.level,
            planned_looks=list(self.plan), looks=list(self.looks), stopped_at=done,
            reason=reason, rule=sequential.GATE_RULE if self.budget.gate
            else sequential.BUDGET_RULE, budget_s=self.budget.seconds, metrics=self.names,
            seconds=now - self.started, mde=mde, margin=self.budget.margin,
            dropped=dict(self.dropped)))
        progress.say(f"  {self.sc.name}: round {done}: CI half-width {shown}; "
                     + describe(done, reason, now - self.started, self.budget.seconds, mde,
                                self.looks[-1].widths, self.dropped))
        return bench.Plan(0)


def rule(ctx: ScenarioContext[ScenarioConfig], cells: Sequence[Cell],
         pairs: Sequence[tuple[Cell, Cell]], budget: sequential.Budget) -> More:
    """The ``more`` callback of one set of rounds of ``cells`` under ``budget``
    (:class:`Rule`)."""
    return Rule(ctx, cells, pairs, budget)


WHY = {"decided": "every gated metric decided", "budget": "the planned looks are spent",
       "time": "the next look would overrun the time"}


def describe(done: int, reason: str, seconds: float | None, budget_s: float | None,
             mde: dict[str, float | None], widths: dict[str, float | None] | None = None,
             dropped: dict[str, int] | None = None) -> str:
    """``stopped at round 14 after 0.7 min of measuring (--budget 5m00s): every gated metric
    decided; CI half-width reached: wall ±2.1 %, cpu ±1.0 %; MDE reached: wall ±2.1 %, cpu ±3.0
    %; decided earlier and no longer measured: fix at round 10``."""
    took = (f" after {seconds / 60:.1f} min of measuring" if seconds is not None else "")
    given = f" (--budget {sequential.fmt_duration(budget_s)})" if budget_s is not None else ""
    reached = ", ".join(f"{n} {_pct(v)}" for n, v in mde.items())
    width = ("; CI half-width reached: " + ", ".join(f"{n} {_pct(v)}" for n, v in widths.items())
             if widths else "")
    early = ("; decided earlier and no longer measured: " + ", ".join(
        f"{label} at round {r}" for label, r in dropped.items()) if dropped else "")
    return (f"stopped at round {done}{took}{given}: {WHY.get(reason, reason)}{width}; MDE "
            f"reached: {reached or 'none'}{early}")


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
