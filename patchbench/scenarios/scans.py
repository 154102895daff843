"""Scans (the ``command`` kind's ``scan:``): one placeholder taken over a list or range of values,
every value a cell parameter measured interleaved with the others (like a burst's k), a verdict per
value per candidate, and per variant how the time grows with the value
(patchbench.analysis.scaling: a power-law exponent and a line, fitted per round, with t
intervals over the rounds), with one chart per scan."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator

from patchbench.analysis import scaling
from patchbench.measure.bench import Cell
from patchbench.report import charts
from patchbench.report.blocks import Block, Chart, Code, Image, table, text
from patchbench.report.numbers import fmt_time
from patchbench.results import Cell as CellResult
from patchbench.results import Record
from patchbench.util.models import StrictModel

# placeholders a scan may not take: every kind's own, and the cell parameters of the others
RESERVED = ("bin", "work", "variant", "project", "id", "i", "round", "k", "L", "condition",
            "runc", "runtime", "root", "bundle", "bundle_sleep", "bundle_trap", "host", "image",
            "docker", "container", "ctr", "address", "namespace", "block", "rep")
MAX_VALUES = 64


class ScanConfig(StrictModel):
    """A placeholder scanned over values: each value is its own set of cells, measured
    interleaved with the others."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$", description=(
        "The placeholder's name (`{NAME}` in the command, the bundle's settings and `prepare`/"
        "`cleanup`); not one patchbench fills itself."))
    values: list[Annotated[int, Field(ge=0)]] | None = Field(default=None, description=(
        "The values, whole numbers of 0 or more (or give `range`)."))
    range: list[Annotated[int, Field(ge=0)]] | None = Field(
        default=None, min_length=3, max_length=3, description=(
            "`[first, last, step]`: first, first + step, ... up to last (hyperfine's "
            "`--parameter-scan`), instead of `values`."))

    @model_validator(mode="after")
    def _values(self) -> ScanConfig:
        if self.name in RESERVED:
            raise ValueError(f"{{{self.name}}} is a placeholder patchbench fills itself; "
                             "name the scan otherwise")
        if (self.values is None) == (self.range is None):
            raise ValueError("give either 'values' or 'range' ([first, last, step])")
        if self.range is not None:
            first, last, step = self.range
            if step < 1 or last < first:
                raise ValueError("'range' is [first, last, step] with last >= first, step >= 1")
            if (last - first) // step + 1 > MAX_VALUES:
                raise ValueError(f"a scan takes at most {MAX_VALUES} values")
        vals = self.scanned
        if len(vals) < 2 or len(set(vals)) != len(vals) or len(vals) > MAX_VALUES:
            raise ValueError(f"a scan needs 2 to {MAX_VALUES} distinct values")
        return self

    @property
    def scanned(self) -> list[int]:
        if self.range is not None:
            first, last, step = self.range
            return list(range(first, last + 1, step))
        return list(self.values or [])

    def cells(self, variants: Sequence[str]) -> list[Cell]:
        return [Cell(v, ((self.name, str(x)),)) for v in variants for x in self.scanned]


class ScanFit(Record):
    """One variant's growth with the scanned value (under one condition): fitted in each round
    alone, the means and 95% t intervals over the rounds. ``exponent``: the slope of
    log(time) against log(value) over the values above 0; ``slope_s``/``intercept_s``: the
    least-squares line of the time (seconds per run) against the value."""

    variant: str
    condition: str = ""
    rounds: int
    exponent: float | None
    exponent_ci: list[float] | None
    slope_s: float
    slope_ci: list[float] | None
    intercept_s: float
    intercept_ci: list[float] | None


class ScanResult(Record):
    """A scan: its placeholder, its values and each variant's fit; the chart report.md links."""

    name: str
    values: list[int]
    metric: str = "seconds per run: each round's geometric mean at each value"
    fits: list[ScanFit]
    chart: str | None = None


def _ci(e: scaling.Estimate | None) -> list[float] | None:
    return None if e is None or e.low is None or e.high is None else [e.low, e.high]


def fits(name: str, cells: Sequence[CellResult]) -> list[ScanFit]:
    """Each variant's (and condition's) fit from its cells' raw samples: per round, the
    geometric mean of the finished runs at each value."""
    groups: dict[tuple[str, str], dict[int, dict[float, list[float]]]] = {}
    for c in cells:
        if name not in c.params:
            continue
        x = float(c.params[name])
        key = (c.variant, c.params.get("condition", ""))
        per = groups.setdefault(key, {})
        for t, r in zip(c.samples.times, c.samples.rounds, strict=False):
            if t > 0:
                per.setdefault(r, {}).setdefault(x, []).append(t)
    out = []
    for (variant, cond), rounds in groups.items():
        points = {r: {x: scaling.geometric_mean(ts) for x, ts in per.items()}
                  for r, per in sorted(rounds.items())}
        f = scaling.by_rounds(points)
        if f is None:
            continue
        out.append(ScanFit(variant=variant, condition=cond, rounds=f.slope.rounds,
                           exponent=f.exponent.value if f.exponent else None,
                           exponent_ci=_ci(f.exponent), slope_s=f.slope.value,
                           slope_ci=_ci(f.slope), intercept_s=f.intercept.value,
                           intercept_ci=_ci(f.intercept)))
    return out


def _est(value: float | None, ci: list[float] | None, rounds: int) -> scaling.Estimate | None:
    if value is None:
        return None
    return scaling.Estimate(value, ci[0] if ci else None, ci[1] if ci else None, rounds)


def fmt_exponent(f: ScanFit) -> str:
    if f.exponent is None:
        return "-"
    ci = f" [{f.exponent_ci[0]:.2f}, {f.exponent_ci[1]:.2f}]" if f.exponent_ci else ""
    return f"{f.exponent:.2f}{ci}"


def _fmt_s(v: float, ci: list[float] | None) -> str:
    return fmt_time(v) + (f" [{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else "")


def differ_lines(scan: ScanResult, baseline: str) -> list[str]:
    """Per candidate (and condition): "baseline grows as n^0.97, candidate as n^0.02: the
    exponents differ" when their intervals separate, else that they do not differ."""
    by = {(f.variant, f.condition): f for f in scan.fits}
    out = []
    for f in scan.fits:
        if f.variant == baseline or (baseline, f.condition) not in by:
            continue
        b = by[(baseline, f.condition)]
        if b.exponent is None or f.exponent is None:
            continue
        where = f" ({f.condition})" if f.condition else ""
        grows = (f"{baseline} grows as {scan.name}^{b.exponent:.2f}, {f.variant} as "
                 f"{scan.name}^{f.exponent:.2f}{where}")
        if scaling.separate(_est(b.exponent, b.exponent_ci, b.rounds),
                            _est(f.exponent, f.exponent_ci, f.rounds)):
            out.append(f"{grows}: the exponents differ (their 95% intervals do not overlap).")
        else:
            out.append(f"{grows}: the exponents do not differ beyond their 95% intervals.")
    return out


def blocks(scan: ScanResult | None, baseline: str) -> list[Block]:
    """report.md: the fits per variant, whether the exponents differ, the chart's link."""
    if scan is None:
        return []
    rows = [[f.variant + (f" ({f.condition})" if f.condition else ""), fmt_exponent(f),
             _fmt_s(f.slope_s, f.slope_ci), _fmt_s(f.intercept_s, f.intercept_ci), str(f.rounds)]
            for f in scan.fits]
    out: list[Block] = [
        text("Scan of ", Code(f"{{{scan.name}}}"),
             f" over {', '.join(map(str, scan.values))}: how the time "
             "grows with it, fitted in each round alone (a round measures every value, "
             "interleaved) from each round's geometric mean at each value; the means over the "
             "rounds with 95% t intervals. The exponent is the slope of log(time) against "
             f"log({scan.name}) over the values above 0 (1: linear, 0: flat; a large constant "
             "part pulls it towards 0); the line is the time against the value."),
        table(["variant", "exponent [95% CI]", f"slope per unit of {scan.name} [95% CI]",
               "intercept [95% CI]", "rounds"], rows, "scan"),
    ]
    out += [text(line) for line in differ_lines(scan, baseline)]
    if scan.chart:
        out.append(Image(scan.chart, f"time against {scan.name}"))
    return out


def points(name: str, cells: Sequence[CellResult], condition: str = ""
           ) -> dict[str, list[tuple[float, float, float, float]]]:
    """variant -> (value, median, CI low, CI high) of its cells (of one condition)."""
    out: dict[str, list[tuple[float, float, float, float]]] = {}
    for c in cells:
        if name not in c.params or c.params.get("condition", "") != condition:
            continue
        s = c.summary
        lo, hi = (s.median_ci if s.median_ci else [s.median, s.median])
        out.setdefault(c.variant, []).append((float(c.params[name]), s.median, lo, hi))
    return out


def chart(scan: ScanResult, scenario: str, cells: Sequence[CellResult]) -> bytes | None:
    conds = sorted({c.params.get("condition", "") for c in cells})
    return charts.scan_chart(scenario, scan.name, points(scan.name, cells, conds[0]))


def write_chart(path: Path, scan: ScanResult, scenario: str, cells: Sequence[CellResult]
                ) -> bool:
    svg = chart(scan, scenario, cells)
    if svg is None:
        return False
    path.write_bytes(svg)
    return True


def page(scan: ScanResult | None, scenario: str, cells: Sequence[CellResult], baseline: str
         ) -> list[Block]:
    """report.html: the fits and the chart drawn from the cells."""
    if scan is None:
        return []
    return [*[b for b in blocks(scan, baseline) if not isinstance(b, Image)],
            Chart("scan", partial(chart, scan, scenario, list(cells)),
                  f"Median time per run against {scan.name}, one line per variant; the band is "
                  "each cell's 95% bootstrap CI of the median.")]
