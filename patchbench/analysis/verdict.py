"""One baseline/candidate comparison as results.json records it, judged by the round-paired rule
(:func:`patchbench.analysis.paired.paired_verdict`): :func:`judge` is the one entry point of the
live rule (wall time, the stalls counted for the gate, every other metric, the metrics'
family), and the warnings a record raises (a withheld or inconclusive verdict, drift between
blocks, stalls).

The record keeps the field names of schema 3 at the top (speedup, ci_low, ci_high, p_value,
verdict, alpha, min_effect, rounds, min_rounds, round_ids, round_ratios, wilcoxon_p, drift, note,
method) and adds schema 5's (p_slower, p_faster, p_equivalent, equivalence_low/high, mde,
effect_s with its interval, resolution_s) and version 8's ``stalls``. The pooled Mann-Whitney p
and bootstrap CI stay, under ``pooled``, as descriptive figures only, labelled as assuming
independent runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from patchbench.analysis import metrics as mx
from patchbench.analysis import paired, stalls, stats

POOLED_ASSUMES = "independent runs (descriptive only: runs of one round are consecutive)"


def record(
    base_times: Sequence[float], base_rounds: Sequence[int], cand_times: Sequence[float],
    cand_rounds: Sequence[int], *, alpha: float, min_effect: float, seed: int,
    min_rounds: int = stats.MIN_ROUNDS, signs: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """The comparison record: the paired verdict at the top, the pooled figures under ``pooled``;
    ``signs``: how neighbouring rounds share noise (``paired.neighbour_signs``)."""
    judged = paired.paired_verdict(base_times, base_rounds, cand_times, cand_rounds, alpha=alpha,
                                   min_effect=min_effect, min_rounds=min_rounds, signs=signs,
                                   seed=seed)
    pooled = stats.compare(base_times, cand_times, alpha=alpha, min_effect=min_effect, seed=seed)
    return {**judged.as_dict(), "pooled": {**pooled.as_dict(), "assumes": POOLED_ASSUMES}}


class Runs(Protocol):
    """A variant's timed runs: wall times, their rounds, every other metric (one value per
    run, aligned with ``times``)."""

    @property
    def times(self) -> Sequence[float]: ...

    @property
    def rounds(self) -> Sequence[int]: ...

    @property
    def metrics(self) -> Mapping[str, Sequence[float]]: ...


@dataclass(frozen=True)
class Judged:
    """A comparison judged by the live rule: the wall-time record (:func:`record`, with
    ``stalls``), every other metric's record (:func:`patchbench.analysis.metrics.judge`), and
    the stalls (with the ratio of the runs that did not stall, for the gate)."""

    record: dict[str, Any]
    metrics: dict[str, dict[str, Any]]
    stalls: stalls.Stalls


def judge(base: Runs, cand: Runs, *, alpha: float, min_effect: float, seed: int,
          min_rounds: int = stats.MIN_ROUNDS, signs: Mapping[int, int] | None = None,
          metrics: Mapping[str, float] | None = None, gated: Sequence[str] = (mx.WALL,)
          ) -> Judged:
    """The live rule for one comparison (rounds of both variants needed: a ValueError
    without): wall time judged on every run (:func:`record`), the runs that stalled counted
    (:mod:`stalls`; with any, the runs that did not judged alike for the gate), each metric of
    ``metrics`` (name -> its min_effect) judged alike, and the calls made one family
    (:func:`patchbench.analysis.metrics.family`: the ``gated`` metrics first)."""
    rec = record(base.times, base.rounds, cand.times, cand.rounds, alpha=alpha,
                 min_effect=min_effect, seed=seed, min_rounds=min_rounds, signs=signs)
    st, kb, kc = stalls.count(base.times, cand.times)
    br, cr = stalls.pick(base.rounds, kb), stalls.pick(cand.rounds, kc)
    if st.any and set(br) & set(cr):
        clean = paired.paired_verdict(stalls.pick(base.times, kb), br,
                                      stalls.pick(cand.times, kc), cr, alpha=alpha,
                                      min_effect=min_effect, min_rounds=min_rounds, signs=signs,
                                      seed=seed)
        st = dataclasses.replace(st, speedup=clean.speedup, low=clean.equivalence_low,
                                 high=clean.equivalence_high)
    rec["stalls"] = st.as_dict() if st.any else None
    out: dict[str, dict[str, Any]] = {}
    for name, effect in (metrics or {}).items():
        if name == mx.WALL or name not in base.metrics or name not in cand.metrics:
            continue
        out[name] = mx.judge(name, base.metrics[name], base.rounds, cand.metrics[name],
                             cand.rounds, alpha=alpha, min_effect=effect, min_rounds=min_rounds)
    mx.family({mx.WALL: rec, **out}, gated)
    return Judged(rec, out, st)


def detectable_text(mde: float | None) -> str:
    """"this run could detect changes of ±X % or more" (empty without an estimate of noise)."""
    if mde is None:
        return ""
    return f"this run could detect changes of ±{mde:.1%} or more ({paired.POWER:.0%} power)"


def notes(name: str, rec: Mapping[str, Any]) -> list[str]:
    """Warnings for the printed report and report.md: a withheld verdict, an inconclusive one
    (schema 5: with what this run could detect), a note on zero spread, and drift."""
    out = []
    if rec["verdict"] == "withheld":
        out.append(f"{name}: {rec['note']}; the estimate is {rec['speedup']:.3f}× "
                   f"(run more rounds: --rounds {rec['min_rounds']} or more)")
    elif rec["verdict"] == paired.Verdict.INCONCLUSIVE and "not called" in rec.get("note", ""):
        out.append(f"{name}: {rec['note']}")
    elif rec["verdict"] == paired.Verdict.INCONCLUSIVE:
        can = detectable_text(rec.get("mde"))
        out.append(f"{name}: inconclusive: neither a change beyond ±{rec['min_effect']:.0%} nor "
                   f"equivalence within it is shown" + (f"; {can}" if can else "")
                   + (f"; {rec['note']}" if rec.get("note") else ""))
    elif rec.get("note"):
        out.append(f"{name}: {rec['note']}")
    drift = rec.get("drift")
    if drift and drift["flagged"]:
        out.append(f"{name}: drift: {drift['meaning']}")
    st = rec.get("stalls")
    if st:
        out.append(f"{name}: {stalls.Stalls(**st).text()}")
    also = rec.get("also")
    if also and also["disagree"]:
        out.append(f"{name}: the answers disagree: {also['disagree']}")
    return out
