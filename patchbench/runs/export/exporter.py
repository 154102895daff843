"""What every export format shares: the ``Exporter`` interface (hyperfine's ``Exporter`` trait),
the files an export writes, the cells of a run that have timing samples, and every metric besides
wall time in each format's unit (a run before results version 6 has none, and exports as it did)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any, Protocol

from patchbench.analysis import metrics as mx
from patchbench.analysis import stats
from patchbench.results import Cell, Results, Samples, TimedResult

Files = dict[str, str]  # a file's name, relative to the export folder -> its text


class Exporter(Protocol):
    """One export format, registered by name in ``patchbench.runs.export.FORMATS``."""

    # it exports timed cells: a run without any (a stress-only run) is refused before it is asked
    timed: bool

    def files(self, results: Results) -> Files:
        """The files this format writes for ``results``."""


def timed_cells(results: Results) -> Iterator[tuple[TimedResult, Cell]]:
    """Every cell with timing samples, with its scenario, in the run's order."""
    for sc in results.scenarios:
        if isinstance(sc, TimedResult):  # the kinds with cells (the others have no timing)
            for cell in sc.cells:
                yield sc, cell


def safe_name(name: str) -> str:
    """A file-name-safe spelling of a scenario or cell label."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", name).strip("_") or "_"


# benchstat's units (Go's benchmark format): ``ns/op`` is the wall time; benchstat shows a unit
# ending in ``ns/op`` in seconds and one ending in ``-B`` in binary bytes
BENCHSTAT_UNITS = {
    "cpu": "cpu-ns/op", "user": "user-ns/op", "system": "sys-ns/op", "peak-rss": "peak-RSS-B",
    "instructions": "instructions/op", "cycles": "cycles/op",
    "cache-references": "cache-references/op", "cache-misses": "cache-misses/op",
    "branch-misses": "branch-misses/op",
}
# Bencher Metric Format measures (slugs): times in nanoseconds as ``latency`` is
BMF_MEASURES = {
    "cpu": "cpu-time", "user": "user-time", "system": "system-time", "peak-rss": "peak-rss",
    "instructions": "instructions", "cycles": "cycles", "cache-references": "cache-references",
    "cache-misses": "cache-misses", "branch-misses": "branch-misses",
}
CSV_UNITS = {"time": "s", "memory": "bytes", "count": "count"}


def _scale(name: str) -> float:
    """Base unit to the unit of benchstat and Bencher: seconds to nanoseconds."""
    return 1e9 if mx.metric(name).quantity == "time" else 1.0


def recorded(cell: Cell) -> list[str]:
    """The metrics other than wall time a cell holds for every timed run, in the registry's order
    (an unknown name, from a newer patchbench, is left out)."""
    s = cell.samples
    return [n for n in mx.METRICS if n != mx.WALL and len(s.metrics.get(n, [])) == len(s.times)]


def run_metrics(results: Results) -> list[str]:
    """Every metric other than wall time that some cell of the run holds."""
    seen = {n for sc in results.scenarios if isinstance(sc, TimedResult)
            for c in sc.cells for n in recorded(c)}
    return [n for n in mx.METRICS if n in seen]


def csv_headers(names: list[str]) -> list[str]:
    """``cpu_s``, ``peak_rss_bytes``, ...: one column per metric, in its unit."""
    return [f"{n.replace('-', '_')}_{CSV_UNITS[mx.metric(n).quantity]}" for n in names]


def csv_values(cell: Cell, names: list[str], i: int) -> list[str]:
    """Run ``i``'s value of every metric of ``names`` (empty where the cell has none)."""
    have = recorded(cell)
    return [repr(float(cell.samples.metrics[n][i])) if n in have else "" for n in names]


def benchstat_pairs(cell: Cell, i: int) -> str:
    """The value/unit pairs run ``i`` adds to its benchstat line (``\\t3800000 cpu-ns/op``...)."""
    return "".join(f"\t{cell.samples.metrics[n][i] * _scale(n):.0f} {BENCHSTAT_UNITS[n]}"
                   for n in recorded(cell))


def bmf_measures(cell: Cell, seed: int) -> dict[str, Any]:
    """Bencher measures of every metric of a cell besides ``latency``: the median with its 95%
    bootstrap CI as bounds (the minimum and maximum with too few runs for one)."""
    out: dict[str, Any] = {}
    for n in recorded(cell):
        values = cell.samples.metrics[n]
        med = stats.summarize(values).median
        ci = stats.median_ci(values, seed=seed) or (min(values), max(values))
        k = _scale(n)
        out[BMF_MEASURES[n]] = {"value": round(med * k, 3), "lower_value": round(ci[0] * k, 3),
                                "upper_value": round(ci[1] * k, 3)}
    return out


def cpu_mean(samples: Samples, key: str) -> float | None:
    """Mean user or system time over every run: the per-run values when recorded, else
    hyperfine's per-round means (1.x's ``user``/``system``) weighted by the runs of each round."""
    values = samples.metrics.get(key) or []
    if values:
        return math.fsum(values) / len(values)
    # hyperfine's own JSON of each round (kept as hyperfine wrote it), read by its own keys
    rounds = [h for h in samples.hyperfine if h.get(key) is not None]
    n = sum(len(h["times"]) for h in rounds)
    if not n:
        return None
    return float(sum(h[key] * len(h["times"]) for h in rounds) / n)
