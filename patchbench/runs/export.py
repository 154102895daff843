"""Exports of a saved run for tools people already use, one function per format (like
hyperfine's ``src/export/``). Each takes the loaded results (``patchbench.results.Results``) and returns
``{relative file name: text}``; :func:`write_export` writes them.

- ``hyperfine``: one hyperfine-format JSON per cell, merged over rounds;
- ``csv``: one row per measured run;
- ``benchstat``: Go's benchmark text format, one file per variant, so that
  ``benchstat baseline.txt CANDIDATE.txt`` compares them;
- ``bmf``: Bencher Metric Format (latency in nanoseconds, the median with its 95% CI);
- ``html``: the self-contained ``report.html`` (for runs saved before it existed).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from patchbench.errors import ReportError
from patchbench.results import Cell, Results, RunInput, TimedResult, as_results
from patchbench.runs import metric_columns
from patchbench.util.escape import csv_cell
from patchbench.util.files import write_text_atomic

Files = dict[str, str]


def _cells(results: Results) -> Iterator[tuple[TimedResult, Cell]]:
    for sc in results.scenarios:
        if isinstance(sc, TimedResult):  # the kinds with cells (the others have no timing)
            for cell in sc.cells:
                yield sc, cell


def _safe(name: str) -> str:
    """A file-name-safe spelling of a scenario or cell label."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", name).strip("_") or "_"


def _stdev(xs: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def hyperfine_cell(sc: TimedResult, cell: Cell) -> dict[str, Any]:
    """One cell as a hyperfine ``--export-json`` document, every round merged."""
    times = cell.samples.times
    if not times:
        raise ReportError(f"{sc.name} {cell.label}: no samples to export")
    # the command line as the scenario has it (placeholders such as {runc} unfilled: they name
    # this machine's paths); the variant and the cell's parameters are hyperfine "parameters"
    entry: dict[str, Any] = {
        "command": sc.command or f"{sc.name} {cell.label}",
        "mean": sum(times) / len(times),
        "stddev": _stdev(times),
        "median": _median(times),
        "user": metric_columns.cpu_mean(cell.samples, "user"),
        "system": metric_columns.cpu_mean(cell.samples, "system"),
        "min": min(times),
        "max": max(times),
        "times": times,
        "exit_codes": cell.samples.exit_codes,
    }
    entry["parameters"] = {"variant": cell.variant, **cell.params}
    return {"results": [entry]}


def to_hyperfine(run: RunInput) -> Files:
    return {f"hyperfine/{_safe(sc.name)}--{_safe(cell.label)}.json":
            json.dumps(hyperfine_cell(sc, cell), indent=2) + "\n"
            for sc, cell in _cells(as_results(run))}


CSV_COLUMNS = ["scenario", "cell", "variant", "params", "round", "run", "time_s", "exit_code"]


def to_csv(run: RunInput) -> Files:
    """One row per run; a run that recorded other metrics than wall time gets a column each."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    results = as_results(run)
    extra = metric_columns.run_metrics(results)
    w.writerow(CSV_COLUMNS + metric_columns.csv_headers(extra))
    for sc, cell in _cells(results):
        s = cell.samples
        params = ";".join(f"{k}={v}" for k, v in sorted(cell.params.items()))
        rounds: list[int | None] = [*s.rounds] or [None] * len(s.times)
        for i, (t, code, r) in enumerate(zip(s.times, s.exit_codes, rounds, strict=True)):
            w.writerow([csv_cell(sc.name), csv_cell(cell.label), csv_cell(cell.variant),
                        csv_cell(params), "" if r is None else r, i + 1, repr(float(t)), code,
                        *metric_columns.csv_values(cell, extra, i)])
    return {"results.csv": buf.getvalue()}


def benchstat_name(scenario: str, params: dict[str, Any], procs: int) -> str:
    """``BenchmarkStart8/k=8-2``: Go's naming (CamelCase base name, ``/key=value`` per
    parameter, ``-GOMAXPROCS``), so that benchstat parses the parameters as sub-benchmarks."""
    base = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", scenario))
    subs = "".join(f"/{_safe(str(k))}={_safe(str(v))}" for k, v in params.items())
    return f"Benchmark{base or 'Scenario'}{subs}-{procs}"


def to_benchstat(run: RunInput) -> Files:
    results = as_results(run)
    machine = results.machine  # free-form (patchbench.measure.machine), as the run recorded it
    procs = int(machine.get("cpu_count") or 1)
    header = [
        f"goos: {str(machine.get('system', 'unknown')).lower()}",
        f"goarch: {_goarch(str(machine.get('machine', 'unknown')))}",
        f"pkg: patchbench/{results.comparison}",
        f"cpu: {machine.get('cpu_model', 'unknown')}",
    ]
    per_variant: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for sc, cell in _cells(results):
        name = benchstat_name(sc.name, cell.params, procs)
        owner = f"{sc.name} {cell.params}"
        if names.setdefault(f"{cell.variant}|{name}", owner) != owner:
            raise ReportError(f"two scenarios map to the same Go benchmark name {name}",
                              hint="rename one of them in matrix.yaml")
        lines = per_variant.setdefault(cell.variant, [])
        lines += [f"{name} \t       1\t{t * 1e9:.0f} ns/op" + metric_columns.benchstat_pairs(cell, i)
                  for i, t in enumerate(cell.samples.times)]
    return {f"benchstat/{_safe(v)}.txt": "\n".join([*header, *lines]) + "\n"
            for v, lines in per_variant.items()}


def _goarch(machine: str) -> str:
    return {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386"}.get(
        machine, machine)


def to_bmf(run: RunInput) -> Files:
    """Bencher Metric Format: ``{benchmark: {"latency": {value, lower_value, upper_value}}}``,
    in nanoseconds; the value is the median, the bounds its 95% bootstrap CI (min and max when
    there were too few runs for a CI); every other metric recorded is a measure of its own
    (``cpu-time`` in nanoseconds, ``peak-rss`` in bytes, ...: runs/metric_columns.py)."""
    out: dict[str, Any] = {}
    results = as_results(run)
    for sc, cell in _cells(results):
        s = cell.summary
        ci = s.median_ci or [s.min, s.max]
        params = "".join(f"/{k}={v}" for k, v in cell.params.items())
        out[f"{sc.name}{params}/{cell.variant}"] = {
            # whole picoseconds at most: 48728657.00000001 ns is float noise, not a digit
            "latency": {"value": round(s.median * 1e9, 3),
                        "lower_value": round(ci[0] * 1e9, 3),
                        "upper_value": round(ci[1] * 1e9, 3)},
            **metric_columns.bmf_measures(cell, results.seed),
        }
    return {"bmf.json": json.dumps(out, indent=2) + "\n"}


def to_html(run: RunInput) -> Files:
    from patchbench import gate
    from patchbench.report.html import render_html

    results = as_results(run)
    return {"report.html": render_html(results, gate=gate.failures(results))}


FORMATS: dict[str, Callable[[RunInput], Files]] = {
    "hyperfine": to_hyperfine,
    "csv": to_csv,
    "benchstat": to_benchstat,
    "bmf": to_bmf,
    "html": to_html,
}


def export(run: RunInput, fmt: str) -> Files:
    try:
        fn = FORMATS[fmt]
    except KeyError:
        raise ReportError(f"unknown export format {fmt!r}",
                          hint=f"one of: {', '.join(FORMATS)}") from None
    results = as_results(run)
    if fmt != "html" and not any(True for _ in _cells(results)):
        raise ReportError(f"{results.run_dir or 'this run'}: no measured cells to export "
                          "(a stress-only run has no timing samples)")
    return fn(results)


def write_export(results: RunInput, fmt: str, out_dir: Path) -> list[Path]:
    """Write the export's files under ``out_dir``; return their paths."""
    written = []
    for rel, text in export(results, fmt).items():
        path = out_dir / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, text)
        except OSError as exc:
            raise ReportError(f"cannot write the export {path}: {exc.strerror or exc}") from None
        written.append(path)
    return written
