"""The metrics a timed run records besides wall time, and each one judged by the round-paired rule.

hyperfine 2 gives, for every run, wall-clock time, CPU time (user + system), user and system time,
peak resident memory and, where the kernel exposes a PMU, hardware counters. A scenario's
``metrics`` key chooses which of them are recorded and judged (:data:`DEFAULT`: the five that need
no PMU). Each is judged by :func:`patchbench.analysis.paired.paired_verdict`, the rule wall time is
judged by, with its own min_effect; the effect is in the metric's unit (seconds, bytes, counts).

What is paired differs by metric (:attr:`Metric.round_means`):

- wall time and peak memory are positive for every run: each round gives the log ratio of the two
  blocks' geometric means, as for wall time since results schema 5;
- CPU, user and system time and the counters are judged on **each round's arithmetic mean**,
  d_r = ln mean_b,r - ln mean_c,r. The kernel splits a process's CPU time into user and system by
  the timer ticks it samples (4 ms at HZ=250), so a run shorter than a tick often shows 0.0 system
  (or user) time: a log of a run is then undefined, while the arithmetic mean over a round's runs
  stays an unbiased estimate of the mean CPU time (the ticks sample in proportion to where the time
  went). The estimand is the ratio of mean CPU time per run, which is also what CPU time adds up
  to. A round whose mean is 0 for either variant (every run below the accounting's resolution)
  gives no ratio: the metric is then not judged (inconclusive, with a note saying why) rather than
  judged on the rounds left, which would drop rounds by their outcome; its effect (the mean of the
  per-round differences, with a t interval) is still given.

Nothing here formats a report: the words a report says about the verdicts are
patchbench.report.metric_blocks'."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from patchbench.analysis import paired, stats

Quantity = Literal["time", "memory", "count"]


@dataclass(frozen=True)
class Metric:
    """One metric: patchbench's name, hyperfine 2's, its base unit on disk, how a report names
    it, and how it is judged."""

    name: str
    hyperfine: str
    quantity: Quantity
    label: str
    round_means: bool  # judged on each round's arithmetic mean (a run may be 0)
    counter: bool = False  # a hardware counter: needs a PMU (perf_event_open)

    @property
    def unit(self) -> str:
        """The base unit of the values results.json keeps."""
        return {"time": "s", "memory": "B", "count": "count"}[self.quantity]


WALL = "wall"
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric(WALL, "time_wall_clock", "time", "wall time", round_means=False),
    Metric("cpu", "time_cpu", "time", "CPU time", round_means=True),
    Metric("user", "time_user", "time", "user time", round_means=True),
    Metric("system", "time_system", "time", "system time", round_means=True),
    Metric("peak-rss", "memory_peak_resident", "memory", "peak memory (RSS)", round_means=False),
    Metric("instructions", "instructions", "count", "instructions", round_means=True,
           counter=True),
    Metric("cycles", "cpu_cycles", "count", "CPU cycles", round_means=True, counter=True),
    Metric("cache-references", "cache_references", "count", "cache references",
           round_means=True, counter=True),
    Metric("cache-misses", "cache_misses", "count", "cache misses", round_means=True,
           counter=True),
    Metric("branch-misses", "branch_misses", "count", "branch misses", round_means=True,
           counter=True),
)}
DEFAULT = (WALL, "cpu", "user", "system", "peak-rss")  # what needs no PMU

PER_RUN = ("per run: the log ratio of each round's geometric means (as wall time)")
PER_ROUND = ("per round: the log ratio of each round's arithmetic means (a run may show 0: the "
             "kernel accounts CPU time by ticks)")


def metric(name: str) -> Metric:
    """The metric named ``name`` (a KeyError for an unknown name: config validates names)."""
    return METRICS[name]


def ordered(names: Sequence[str]) -> list[str]:
    """``names`` without repeats, in the registry's order (wall first)."""
    return [n for n in METRICS if n in set(names)]


def round_means(values: Sequence[float], rounds: Sequence[int]) -> dict[int, float]:
    """Each round's arithmetic mean of ``values`` (one per run, with its round)."""
    sums: dict[int, list[float]] = {}
    for v, r in zip(values, rounds, strict=True):
        sums.setdefault(int(r), []).append(float(v))
    return {r: math.fsum(vs) / len(vs) for r, vs in sums.items()}


def judge(name: str, base: Sequence[float], base_rounds: Sequence[int], cand: Sequence[float],
          cand_rounds: Sequence[int], *, alpha: float, min_effect: float,
          min_rounds: int = stats.MIN_ROUNDS) -> dict[str, Any]:
    """Metric ``name`` of a candidate against the baseline (one value per run, with its round),
    as results.json's ``MetricVerdict`` holds it: the round-paired verdict of
    :func:`patchbench.analysis.paired.paired_verdict`, the effect in the metric's base unit
    (candidate minus baseline), and each side's mean per run. A ValueError when no round has runs
    of both. Metrics are judged without the order's signs (each boundary taken as the worst
    case), at a look as in the saved verdict; at the metric's own level: the family
    (:func:`family`) then withdraws the calls it cannot make."""
    m = METRICS[name]
    head = {"metric": name, "unit": m.unit, "baseline": _mean(base), "candidate": _mean(cand),
            "estimand": PER_ROUND if m.round_means else PER_RUN}
    if not m.round_means:
        v = paired.paired_verdict(base, base_rounds, cand, cand_rounds, alpha=alpha,
                                  min_effect=min_effect, min_rounds=min_rounds,
                                  unit=m.unit)
        return {**head, **_fields(v)}
    bm, cm = round_means(base, base_rounds), round_means(cand, cand_rounds)
    common = sorted(set(bm) & set(cm))
    if not common:
        raise ValueError("no round has runs of both variants")
    zero = [r for r in common if not (bm[r] > 0 and cm[r] > 0)]
    if zero:
        return {**head, **_unjudged(m, bm, cm, common, zero, alpha=alpha, min_effect=min_effect,
                                    min_rounds=min_rounds)}
    v = paired.paired_verdict([bm[r] for r in common], common, [cm[r] for r in common], common,
                              alpha=alpha, min_effect=min_effect, min_rounds=min_rounds,
                              unit=m.unit)
    return {**head, **_fields(v)}


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _fields(v: paired.PairedVerdict) -> dict[str, Any]:
    """The fields of a PairedVerdict that a metric's record keeps (the effect renamed: it is in
    the metric's unit, not always seconds)."""
    return {
        "speedup": v.speedup, "ci_low": v.ci_low, "ci_high": v.ci_high, "p_value": v.p_value,
        "verdict": str(v.verdict), "alpha": v.alpha, "min_effect": v.min_effect,
        "p_slower": v.p_slower, "p_faster": v.p_faster, "p_equivalent": v.p_equivalent,
        "equivalence_low": v.equivalence_low, "equivalence_high": v.equivalence_high,
        "mde": v.mde, "effect": v.effect_s, "effect_ci_low": v.effect_ci_low_s,
        "effect_ci_high": v.effect_ci_high_s, "resolution": v.resolution_s, "rounds": v.rounds,
        "min_rounds": v.min_rounds, "round_ids": list(v.round_ids),
        "round_ratios": list(v.round_ratios), "note": v.note, "method": v.method,
    }


def _unjudged(m: Metric, bm: Mapping[int, float], cm: Mapping[int, float], common: list[int],
              zero: list[int], *, alpha: float, min_effect: float, min_rounds: int
              ) -> dict[str, Any]:
    """A metric with a round whose mean is 0 for a variant: no log ratio, so no verdict beyond
    inconclusive (withheld below ``min_rounds``); the effect (mean of the per-round differences)
    with its t interval, and the ratio of the overall means where both are positive."""
    e = [cm[r] - bm[r] for r in common]
    n = len(e)
    effect = math.fsum(e) / n
    lo = hi = None
    if n >= 2:
        sd = math.sqrt(math.fsum((x - effect) ** 2 for x in e) / (n - 1))
        if sd > 0:
            q = stats.t_ppf(1 - alpha / 2, n - 1) * sd / math.sqrt(n)
            lo, hi = effect - q, effect + q
    b, c = math.fsum(bm[r] for r in common) / n, math.fsum(cm[r] for r in common) / n
    note = (f"{m.label} was 0 in every run of a round ({len(zero)} of {n} rounds): below the "
            "resolution of the kernel's accounting, so there is no ratio to judge")
    verdict = paired.Verdict.INCONCLUSIVE
    if n < min_rounds:
        verdict = paired.Verdict.WITHHELD
        note += f"; and {n} rounds, at least {min_rounds} needed for a round-paired verdict"
    return {
        "speedup": b / c if b > 0 and c > 0 else math.nan, "ci_low": None, "ci_high": None,
        "p_value": None, "verdict": str(verdict), "alpha": alpha, "min_effect": min_effect,
        "p_slower": None, "p_faster": None, "p_equivalent": None, "equivalence_low": None,
        "equivalence_high": None, "mde": None, "effect": effect, "effect_ci_low": lo,
        "effect_ci_high": hi, "resolution": None, "rounds": n, "min_rounds": min_rounds,
        "round_ids": list(common), "round_ratios": [], "note": note, "method": paired.METHOD,
    }


CHANGED = (paired.Verdict.FASTER, paired.Verdict.SLOWER)
FAMILY = ("the gated metrics called at alpha (Holm among them when more than one); the other "
          "metrics called faster or slower only when every gated metric changed, Holm among "
          "them at alpha: at most alpha that a comparison calls any metric faster or slower "
          "that did not change beyond its min_effect")


FAMILY_SHORT = "at most alpha that any metric is called faster or slower when none changed"


def claim_p(rec: Mapping[str, Any]) -> float:
    """The p of a record's faster or slower call: the larger of the two-sided test's and the
    one-sided test's beyond the margin (both must reject); 1 for any other verdict."""
    side = {"slower": rec.get("p_slower"), "faster": rec.get("p_faster")}.get(rec["verdict"])
    p = rec.get("p_value")
    if side is None or p is None:
        return 1.0
    return max(float(p), float(side))


def family(records: Mapping[str, dict[str, Any]], gated: Sequence[str]) -> list[str]:
    """The calls of one comparison's metrics (``records``: name -> record, each judged at its
    own alpha; changed in place) made a family whose chance of any false "faster" or "slower" is
    at most alpha (:data:`FAMILY`; a serial gatekeeping procedure, a closed test): the gated
    metrics (those of ``gated`` present; every metric when none is) keep their calls, Holm among
    them when more than one; the others keep a faster or slower call only when every gated
    metric is called faster or slower and the call survives Holm among the others. A call that
    does not is inconclusive, with a note saying why; its estimate and interval stay.
    "Equivalent" answers are each at alpha and stay. Returns the names whose call was
    withdrawn."""
    first = [n for n in gated if n in records] or list(records)
    rest = [n for n in records if n not in first]
    out = _holm(records, first, "gated metrics")
    if all(records[n]["verdict"] in CHANGED for n in first):
        out += _holm(records, rest, "the other metrics")
        return out
    for n in rest:
        rec = records[n]
        if rec["verdict"] in CHANGED:
            _withdraw(rec, f"not called {rec['verdict']}: the other metrics are called only "
                           f"when every gated metric ({', '.join(first)}) changed (one "
                           "family-wise error rate)")
            out.append(n)
    return out


def _holm(records: Mapping[str, dict[str, Any]], names: Sequence[str], what: str) -> list[str]:
    if len(names) < 2:
        return []
    adjusted = stats.holm([claim_p(records[n]) for n in names])
    out = []
    for n, p_adj in zip(names, adjusted, strict=True):
        rec = records[n]
        if rec["verdict"] in CHANGED and not p_adj < rec["alpha"]:
            _withdraw(rec, f"not called {rec['verdict']} after Holm across the {len(names)} "
                           f"{what} (adjusted p {p_adj:.2g})")
            out.append(n)
    return out


def _withdraw(rec: dict[str, Any], why: str) -> None:
    rec["verdict"] = str(paired.Verdict.INCONCLUSIVE)
    rec["note"] = f"{rec['note']}; {why}" if rec.get("note") else why


DECIDED = (paired.Verdict.FASTER, paired.Verdict.SLOWER, paired.Verdict.EQUIVALENT)


def decided(verdict: str) -> bool:
    """Whether a verdict is an answer (faster, slower, equivalent), not inconclusive or withheld."""
    return verdict in DECIDED


def rest(wall_base: Sequence[float], base: Sequence[float], base_rounds: Sequence[int],
         wall_cand: Sequence[float], cand: Sequence[float], cand_rounds: Sequence[int], *,
         alpha: float) -> tuple[float, float | None, float | None] | None:
    """How much of the change of wall time a time metric (CPU time) does not account for, per
    run: the mean over rounds of (gm_c,r - gm_b,r) - (mean_c,r - mean_b,r) (wall time by
    geometric means, as its effect; the metric by arithmetic means, as its own), with its
    (1 - ``alpha``) t interval; None without two rounds of both. Its sign is the wall change's
    when the metric moved less than wall time (the rest is waiting, or work overlapped), the
    opposite when it moved more (part of it ran in parallel)."""
    def per_round(times: Sequence[float], values: Sequence[float], rounds: Sequence[int]
                  ) -> dict[int, float]:
        logs: dict[int, list[float]] = {}
        for t, r in zip(times, rounds, strict=True):
            logs.setdefault(int(r), []).append(math.log(t))
        means = round_means(values, rounds)
        return {r: math.exp(math.fsum(v) / len(v)) - means[r] for r, v in logs.items()}

    b = per_round(wall_base, base, base_rounds)
    c = per_round(wall_cand, cand, cand_rounds)
    x = [c[r] - b[r] for r in sorted(set(b) & set(c))]
    n = len(x)
    if n < 2:
        return None
    mean = math.fsum(x) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in x) / (n - 1))
    if sd == 0:
        return mean, None, None
    q = stats.t_ppf(1 - alpha / 2, n - 1) * sd / math.sqrt(n)
    return mean, mean - q, mean + q
