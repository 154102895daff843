"""The A/B gate (``invoke compare NAME --gate``): what makes a run fail CI.

"Significantly slower" is judged for every kind at once, with Holm-adjusted p-values over every
comparison of the run (a burst scan makes one per k), so more comparisons do not mean more false
alarms. Each kind adds its own rule (a failed verify check; hangs, leftovers or failed fresh runs
of a candidate in stress rounds) through its ``gate``. A verdict withheld for too few rounds
never fails the gate; the report says it was withheld."""

from __future__ import annotations

from patchbench import scenarios
from patchbench.analysis import stats
from patchbench.results import Results, Verdict
from patchbench.util import procguard


def failures(results: Results) -> list[str]:
    out = []
    # a withheld verdict (too few rounds) never fails the gate and is not one of Holm's tests
    # every kind with timed comparisons has `comparisons`; the gate names no kind
    timed: list[tuple[str, Verdict]] = [
        (sc.name, c) for sc in results.scenarios for c in getattr(sc, "comparisons", [])]
    comps = [(name, c) for name, c in timed if c.verdict != "withheld"]
    adjusted = stats.holm([c.p_value if c.p_value is not None else 1.0 for _, c in comps])
    for (name, c), p_adj in zip(comps, adjusted, strict=True):
        if c.verdict == "slower" and p_adj < c.alpha:
            out.append(f"{name} {c.candidate}: slower ({c.speedup:.2f}×, "
                       f"Holm-adjusted p {p_adj:.2g})")
    for scenario in results.scenarios:
        out += scenarios.get(scenario.kind).gate(scenario)
    out += [w for w in results.warnings if w.startswith(procguard.ESCAPED + ":")]
    return out
