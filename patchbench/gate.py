"""The A/B gate (``invoke compare NAME --gate``): what makes a run fail CI. "Slower" is judged over
every comparison of the run at once, Holm-adjusted, so more comparisons do not mean more false
alarms; by the rule of schema 5 the gate fails closed (a withheld or inconclusive verdict fails
it unless allowed). Each kind adds its own rule through its ``gate`` (a failed verify check,
hangs, leftovers). Older records keep their rule. docs/statistics.md ("The gate")."""

from __future__ import annotations

from patchbench import scenarios
from patchbench.analysis import stats
from patchbench.results import Results, TimedResult, Verdict
from patchbench.util import procguard

ALLOW_HINT = "--gate-allow-inconclusive lets it pass"


def _timed(results: Results) -> list[tuple[str, Verdict]]:
    # every kind with timed comparisons is a TimedResult; the gate names no kind
    return [(sc.name, c) for sc in results.scenarios if isinstance(sc, TimedResult)
            for c in sc.comparisons]


def _undecided(results: Results) -> list[tuple[str, Verdict, str]]:
    """Schema-5 comparisons that neither pass nor fail on their own: (scenario, record, why)."""
    comps = [(n, c) for n, c in _timed(results) if c.rule5]
    tested = [(n, c) for n, c in comps if c.verdict != "withheld"]
    adjusted = dict(zip((id(c) for _, c in tested), stats.holm(
        [c.p_slower if c.p_slower is not None else 1.0 for _, c in tested]), strict=True))
    out = []
    for name, c in comps:
        if c.verdict == "withheld":
            out.append((name, c, f"verdict withheld ({c.rounds} rounds, at least "
                                 f"{c.min_rounds} needed)"))
        elif c.verdict == "inconclusive":
            can = f", could detect ±{c.mde:.1%}" if c.mde is not None else ""
            out.append((name, c, f"inconclusive ({c.speedup:.2f}×{can})"))
        elif c.verdict == "slower" and adjusted[id(c)] >= c.alpha:
            out.append((name, c, f"slower ({c.speedup:.2f}×) but not after Holm (adjusted "
                                 f"one-sided p {adjusted[id(c)]:.2g})"))
    return out


def _slower5(results: Results) -> list[str]:
    comps = [(n, c) for n, c in _timed(results) if c.rule5 and c.verdict != "withheld"]
    adjusted = stats.holm([c.p_slower if c.p_slower is not None else 1.0 for _, c in comps])
    out = []
    for (name, c), p_adj in zip(comps, adjusted, strict=True):
        if c.verdict == "slower" and p_adj < c.alpha:
            ms = f", {c.effect_s * 1e3:+.3g} ms" if c.effect_s is not None else ""
            out.append(f"{name} {c.candidate}: slower ({c.speedup:.2f}×{ms}, Holm-adjusted "
                       f"one-sided p {p_adj:.2g})")
    return out


def _slower_old(results: Results) -> list[str]:
    # a withheld verdict (too few rounds) never fails the gate and is not one of Holm's tests
    comps = [(n, c) for n, c in _timed(results) if not c.rule5 and c.verdict != "withheld"]
    adjusted = stats.holm([c.p_value if c.p_value is not None else 1.0 for _, c in comps])
    return [f"{name} {c.candidate}: slower ({c.speedup:.2f}×, Holm-adjusted p {p_adj:.2g})"
            for (name, c), p_adj in zip(comps, adjusted, strict=True)
            if c.verdict == "slower" and p_adj < c.alpha]


def let_through(results: Results) -> list[str]:
    """What ``allow_inconclusive`` lets pass (to say so in the output)."""
    return [f"{name} {c.candidate}: {why}" for name, c, why in _undecided(results)]


def failures(results: Results, *, allow_inconclusive: bool = False) -> list[str]:
    out = _slower_old(results) + _slower5(results)
    if not allow_inconclusive:
        out += [f"{name} {c.candidate}: {why}: the gate fails closed ({ALLOW_HINT})"
                for name, c, why in _undecided(results)]
    for scenario in results.scenarios:
        out += scenarios.get(scenario.kind).gate(scenario)
    out += [w for w in results.warnings if w.startswith(procguard.ESCAPED + ":")]
    return out
