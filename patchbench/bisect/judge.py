"""How one commit compares with another in a measurement, and how a bisect step is classified.

- Time (a ``command`` scenario): the round-paired verdict of patchbench.analysis (the one
  ``compare`` uses): "faster" or "slower" differ, "no significant difference" is the same,
  "withheld" (too few rounds) is undecided.
- Hangs (a ``soak`` scenario): the hang counts, summed over the conditions, by Fisher's exact
  test (two-sided): p < alpha differs, else the same.

A step's commit is *like good* when it does not differ from good and differs from bad, *like
bad* the other way round, else *undecided*.
"""

from __future__ import annotations

from dataclasses import dataclass

from patchbench.analysis import verdict
from patchbench.bisect.search import Class
from patchbench.bisect.session import Measurement
from patchbench.measure import hangs
from patchbench.scenarios.command import CommandResult
from patchbench.scenarios.soak import SoakResult


@dataclass(frozen=True)
class Pair:
    """``other`` against the measurement's base (its first commit)."""

    differs: bool | None  # None: no verdict (withheld)
    text: str  # "1.041x slower [1.031, 1.052], p 0.0003" / "hangs 0 of 200 vs 12 of 200, p 0.0002"


@dataclass(frozen=True)
class Value:
    """What one commit measured: its median (s) with the CI, or its hangs of its runs."""

    median: float | None = None
    ci: tuple[float, float] | None = None
    hangs: int | None = None
    runs: int | None = None

    def text(self) -> str:
        if self.hangs is not None:
            return f"hangs {self.hangs} of {self.runs}"
        if self.median is None:
            return "no timing"
        ci = f" [{self.ci[0] * 1e3:.2f}, {self.ci[1] * 1e3:.2f}]" if self.ci else ""
        return f"{self.median * 1e3:.2f} ms{ci}"


def value(m: Measurement, sha: str) -> Value:
    name = sha[:12]
    res = m.result
    if isinstance(res, SoakResult):
        pv = [c.per_variant[name] for c in res.conditions]
        return Value(hangs=sum(v.hangs for v in pv), runs=sum(v.runs for v in pv))
    cells = [c for c in res.cells if c.variant == name]
    if not cells or not cells[0].summary.n:
        return Value()
    s = cells[0].summary
    ci = (s.median_ci[0], s.median_ci[1]) if s.median_ci else None
    return Value(median=s.median, ci=ci)


def pair(m: Measurement, ref: str, sha: str, alpha: float, min_effect: float) -> Pair:
    """Commit ``sha`` against commit ``ref``, both measured (interleaved) in ``m``."""
    res = m.result
    if isinstance(res, SoakResult):
        r, o = value(m, ref), value(m, sha)
        assert r.hangs is not None and r.runs and o.hangs is not None and o.runs
        cmp = hangs.compare_hangs(hangs.HangCount(ref[:12], r.hangs, r.runs),
                                  hangs.HangCount(sha[:12], o.hangs, o.runs))
        return Pair(cmp.p_value < alpha, f"hangs {o.hangs} of {o.runs} vs {r.hangs} of "
                    f"{r.runs}, Fisher p {cmp.p_value:.2g}")
    return _timed(res, ref[:12], sha[:12], alpha, min_effect, m.seed)


def _timed(res: CommandResult, ref: str, name: str, alpha: float, min_effect: float,
           seed: int) -> Pair:
    """The round-paired verdict of ``name``'s cells against ``ref``'s with the same other
    parameters (one pair per condition): differs if any pair does, withheld if any is."""
    texts, differs = [], False
    for rc in (c for c in res.cells if c.variant == ref):
        oc = next((c for c in res.cells if c.variant == name and c.params == rc.params), None)
        if oc is None or not set(rc.samples.rounds) & set(oc.samples.rounds):
            return Pair(None, "withheld: no round has finished runs of both")
        rec = verdict.record(rc.samples.times, rc.samples.rounds, oc.samples.times,
                             oc.samples.rounds, alpha=alpha, min_effect=min_effect, seed=seed)
        if rec["verdict"] == "withheld":
            return Pair(None, f"withheld: {rec['note']}")
        differs = differs or rec["verdict"] in ("faster", "slower")
        # speedup = median(ref) / median(name): the commit's time relative to ref's is 1/speedup
        lo, hi = rec["ci_low"], rec["ci_high"]
        ci = f" [{1.0 / hi:.3f}, {1.0 / lo:.3f}]" if lo and hi else ""
        cond = dict(rc.params).get("condition")
        texts.append((f"{cond}: " if cond else "") + f"{1.0 / rec['speedup']:.3f}x{ci}, "
                     f"p {rec['p_value']:.2g} ({rec['verdict']})")
    if not texts:
        return Pair(None, f"withheld: {ref} was not measured")
    return Pair(differs, "; ".join(texts))


def classify(vs_good: Pair, vs_bad: Pair) -> Class:
    if vs_good.differs is False and vs_bad.differs is True:
        return "good"
    if vs_bad.differs is False and vs_good.differs is True:
        return "bad"
    return "undecided"
