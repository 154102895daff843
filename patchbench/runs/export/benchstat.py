"""``benchstat``: Go's benchmark text format, one file per variant, so that
``benchstat baseline.txt CANDIDATE.txt`` compares them; a cell's parameters are sub-benchmarks,
every other metric a value/unit pair of its own on each line."""

from __future__ import annotations

import re
from typing import Any

from patchbench.errors import ReportError
from patchbench.results import Results
from patchbench.runs.export import exporter
from patchbench.runs.export.exporter import Files, safe_name, timed_cells


def benchstat_name(scenario: str, params: dict[str, Any], procs: int) -> str:
    """``BenchmarkStart8/k=8-2``: Go's naming (CamelCase base name, ``/key=value`` per
    parameter, ``-GOMAXPROCS``), so that benchstat parses the parameters as sub-benchmarks."""
    base = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", scenario))
    subs = "".join(f"/{safe_name(str(k))}={safe_name(str(v))}" for k, v in params.items())
    return f"Benchmark{base or 'Scenario'}{subs}-{procs}"


def goarch(machine: str) -> str:
    return {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386"}.get(
        machine, machine)


class BenchstatExporter:
    timed = True

    def files(self, results: Results) -> Files:
        machine = results.machine  # free-form (patchbench.measure.machine), as the run recorded it
        procs = int(machine.get("cpu_count") or 1)
        header = [
            f"goos: {str(machine.get('system', 'unknown')).lower()}",
            f"goarch: {goarch(str(machine.get('machine', 'unknown')))}",
            f"pkg: patchbench/{results.comparison}",
            f"cpu: {machine.get('cpu_model', 'unknown')}",
        ]
        per_variant: dict[str, list[str]] = {}
        names: dict[str, str] = {}
        for sc, cell in timed_cells(results):
            name = benchstat_name(sc.name, cell.params, procs)
            owner = f"{sc.name} {cell.params}"
            if names.setdefault(f"{cell.variant}|{name}", owner) != owner:
                raise ReportError(f"two scenarios map to the same Go benchmark name {name}",
                                  hint="rename one of them in matrix.yaml")
            lines = per_variant.setdefault(cell.variant, [])
            lines += [f"{name} \t       1\t{t * 1e9:.0f} ns/op" + exporter.benchstat_pairs(cell, i)
                      for i, t in enumerate(cell.samples.times)]
        return {f"benchstat/{safe_name(v)}.txt": "\n".join([*header, *lines]) + "\n"
                for v, lines in per_variant.items()}


EXPORTER = BenchstatExporter()
