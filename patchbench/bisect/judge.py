"""How one commit compares with another in a measurement, and how a bisect step is classified.

The scenario's kind judges its own results (its ``step`` rule, patchbench/scenarios/steps.py):
time by the round-paired verdict ``compare`` uses, or events such as hangs by their counts; this
module asks the registry for the rule (``record.step_rule``) and never names a kind.

A step's commit is *like good* when it does not differ from good and differs from bad, *like
bad* the other way round, else *undecided*.
"""

from __future__ import annotations

from patchbench.bisect.record import step_rule
from patchbench.bisect.search import Class
from patchbench.bisect.session import Measurement
from patchbench.scenarios.steps import Pair, Value

__all__ = ["Pair", "Value", "classify", "pair", "value"]


def value(m: Measurement, sha: str) -> Value:
    return step_rule(m.result.kind).value(m.result, sha[:12])


def pair(m: Measurement, ref: str, sha: str, alpha: float, min_effect: float) -> Pair:
    """Commit ``sha`` against commit ``ref``, both measured (interleaved) in ``m``."""
    return step_rule(m.result.kind).pair(m.result, ref[:12], sha[:12], alpha=alpha,
                                         min_effect=min_effect, seed=m.seed)


def classify(vs_good: Pair, vs_bad: Pair) -> Class:
    if vs_good.differs is False and vs_bad.differs is True:
        return "good"
    if vs_bad.differs is False and vs_good.differs is True:
        return "bad"
    return "undecided"
