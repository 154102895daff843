"""A planted effect: does a comparison find a delay we put there ourselves?

The series ``demo-plus-5ms`` adds a known start-up delay (5 ms) to the demo, and its build has a
flag, ``-delay-only``, that runs only that delay and prints how long it took as JSON. The delay
measured that way is the true effect. A candidate that adds ``delay`` to every run of a baseline
whose runs take ``m`` shows the speedup m / (m + delay) (below 1: slower), so the comparison is
right when its verdict is "slower" and its CI covers that speedup."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from patchbench import command
from patchbench.errors import CommandError
from patchbench.stats import PairedComparison

DELAY_FLAG = "-delay-only"


def measure_delay(binary: Path, *, runs: int = 30, timeout: float = 10.0) -> list[float]:
    """Seconds the planted delay took in each of ``runs`` calls of ``binary -delay-only``."""
    out = []
    for _ in range(runs):
        res = command.run([binary, DELAY_FLAG], timeout=timeout, what="the planted delay")
        try:
            value = float(json.loads(res.stdout)["delay_seconds"])
        except (ValueError, KeyError, TypeError) as e:
            raise CommandError(f"{binary} {DELAY_FLAG} printed no delay_seconds: "
                               f"{res.stdout.strip()[:200]!r}") from e
        out.append(value)
    return out


def expected_speedup(baseline_medians: Sequence[float], delay: float) -> float:
    """The speedup a candidate that adds ``delay`` seconds to every run shows against a baseline
    with these per-round medians: m / (m + delay), m their geometric mean (the paired estimate
    averages log ratios, so a geometric mean is its reference)."""
    if not baseline_medians or min(baseline_medians) <= 0:
        raise ValueError("baseline medians must be positive and at least one")
    m = math.exp(statistics.fmean(math.log(x) for x in baseline_medians))
    return m / (m + delay)


@dataclass(frozen=True)
class PlantedCheck:
    delay: float  # median of the directly measured delays (seconds)
    expected_speedup: float
    speedup: float
    ci_low: float | None
    ci_high: float | None
    verdict: str
    covered: bool  # the CI contains the expected speedup
    right_sign: bool  # the verdict is "slower"

    @property
    def ok(self) -> bool:
        return self.covered and self.right_sign

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def check(paired: PairedComparison, baseline_medians: Sequence[float],
          delays: Sequence[float]) -> PlantedCheck:
    """Judge a comparison of the planted series against the delay measured directly."""
    if not delays:
        raise ValueError("no measured delays")
    delay = statistics.median(delays)
    want = expected_speedup(baseline_medians, delay)
    covered = (paired.ci_low is not None and paired.ci_high is not None
               and paired.ci_low <= want <= paired.ci_high)
    return PlantedCheck(
        delay=delay, expected_speedup=want, speedup=paired.speedup, ci_low=paired.ci_low,
        ci_high=paired.ci_high, verdict=paired.verdict, covered=covered,
        right_sign=paired.verdict == "slower",
    )
