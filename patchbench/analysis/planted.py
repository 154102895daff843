"""A planted effect: does a comparison find a delay we put there ourselves? The series
``demo-plus-5ms`` adds a known start-up delay to the demo, whose ``-delay-only`` flag times just
that delay: the true effect. The comparison is right when it says "slower" and its CI reaches the
band of speedups the delay implies, the delay give or take ``MODEL_TOLERANCE``: a delay moves the
sandboxes' timers against the scheduler's ticks, so a run grows by a little more or less than
the sleep (5.07 and 5.25 ms for a measured 5.16 ms), more than a precise CI is wide."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from patchbench.analysis import stats
from patchbench.errors import CommandError
from patchbench.util import cmd

DELAY_FLAG = "-delay-only"
MODEL_TOLERANCE = 0.05  # fraction of the delay the run-time growth may differ from it by


def measure_delay(binary: Path, *, runs: int = 30, timeout: float = 10.0) -> list[float]:
    """Seconds the planted delay took in each of ``runs`` calls of ``binary -delay-only``."""
    out = []
    for _ in range(runs):
        res = cmd.run([binary, DELAY_FLAG], timeout=timeout, what="the planted delay")
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


class Judged(Protocol):
    """What the check reads of a comparison: paired.PairedVerdict and results.Verdict."""

    @property
    def speedup(self) -> float: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def verdict(self) -> str: ...


@dataclass(frozen=True)
class PlantedCheck:
    delay: float  # median of the directly measured delays (seconds)
    expected_speedup: float
    band: tuple[float, float]  # expected speedups for delay*(1+-MODEL_TOLERANCE): low, high
    speedup: float
    ci_low: float | None
    ci_high: float | None
    verdict: str
    covered: bool  # the CI reaches the band of expected speedups
    right_sign: bool  # the verdict is "slower"

    @property
    def ok(self) -> bool:
        return self.covered and self.right_sign

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def check(paired: Judged, baseline_medians: Sequence[float],
          delays: Sequence[float], *, tolerance: float = MODEL_TOLERANCE) -> PlantedCheck:
    """Judge a comparison of the planted series against the delay measured directly: the CI
    must overlap the speedups of delays within ``tolerance`` (a fraction) of the median one."""
    if not delays:
        raise ValueError("no measured delays")
    if not 0 <= tolerance < 1:
        raise ValueError("tolerance must be a fraction in [0, 1)")
    delay = stats.median(delays)
    want = expected_speedup(baseline_medians, delay)
    band = (expected_speedup(baseline_medians, delay * (1 + tolerance)),
            expected_speedup(baseline_medians, delay * (1 - tolerance)))
    covered = (paired.ci_low is not None and paired.ci_high is not None
               and paired.ci_low <= band[1] and band[0] <= paired.ci_high)
    return PlantedCheck(
        delay=delay, expected_speedup=want, band=band, speedup=paired.speedup,
        ci_low=paired.ci_low,
        ci_high=paired.ci_high, verdict=paired.verdict, covered=covered,
        right_sign=paired.verdict == "slower",
    )
