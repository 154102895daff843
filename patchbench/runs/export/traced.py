"""The ``syscalls`` export: every traced run of every scenario that has a syscall profile (a
``command`` scenario with ``profile: [syscalls]``, a ``mounts`` scenario under strace), one CSV
row per run and syscall, and each scan's fits, one row per variant (patchbench.scenarios.profile,
scan)."""

from __future__ import annotations

import csv
import io
from typing import Any

from patchbench.errors import ReportError
from patchbench.results import Results, RunInput, as_results
from patchbench.runs.export.exporter import Files
from patchbench.scenarios.profile import Profile
from patchbench.scenarios.scans import ScanResult
from patchbench.util.escape import csv_cell

SYSCALL_COLUMNS = ["scenario", "cell", "variant", "run", "exit_code", "syscall", "calls",
                   "errors", "seconds"]
PHASE_COLUMNS = ["scenario", "cell", "variant", "run", "phase", "seconds"]
FIT_COLUMNS = ["scenario", "scan", "variant", "condition", "rounds", "exponent", "exponent_low",
               "exponent_high", "slope_s", "slope_low", "slope_high", "intercept_s",
               "intercept_low", "intercept_high"]


def _num(x: Any) -> str:
    return "" if x is None else repr(x)


def _end(ci: list[float] | None, i: int) -> str:
    return _num(ci[i] if ci else None)


def has_profile(run: RunInput) -> bool:
    return any(isinstance(getattr(sc, "profile", None), Profile)
               or isinstance(getattr(sc, "scan", None), ScanResult)
               for sc in as_results(run).scenarios)


def to_syscalls(run: RunInput) -> dict[str, str]:
    """``syscalls.csv`` (and ``phases.csv``, ``scans.csv`` when there are any)."""
    rows, phases, fits = io.StringIO(), io.StringIO(), io.StringIO()
    w, p, f = (csv.writer(b, lineterminator="\n") for b in (rows, phases, fits))
    w.writerow(SYSCALL_COLUMNS)
    p.writerow(PHASE_COLUMNS)
    f.writerow(FIT_COLUMNS)
    n_phases = n_fits = 0
    for sc in as_results(run).scenarios:
        prof = getattr(sc, "profile", None)
        if isinstance(prof, Profile):
            for r in prof.runs:
                head = [csv_cell(sc.name), csv_cell(r.cell), csv_cell(r.variant), r.index,
                        "" if r.exit_code is None else r.exit_code]
                for name, calls in sorted(r.calls.items()):
                    w.writerow([*head, csv_cell(name), calls, r.errors.get(name, 0),
                                _num(r.seconds.get(name))])
                for phase, secs in (r.phases or {}).items():
                    p.writerow([*head[:4], csv_cell(phase), repr(secs)])
                    n_phases += 1
        scan = getattr(sc, "scan", None)
        if isinstance(scan, ScanResult):
            for fit in scan.fits:
                f.writerow([csv_cell(sc.name), csv_cell(scan.name), csv_cell(fit.variant),
                            csv_cell(fit.condition), fit.rounds, _num(fit.exponent),
                            _end(fit.exponent_ci, 0), _end(fit.exponent_ci, 1), repr(fit.slope_s),
                            _end(fit.slope_ci, 0), _end(fit.slope_ci, 1), repr(fit.intercept_s),
                            _end(fit.intercept_ci, 0), _end(fit.intercept_ci, 1)])
                n_fits += 1
    out = {"syscalls.csv": rows.getvalue()}
    if n_phases:
        out["phases.csv"] = phases.getvalue()
    if n_fits:
        out["scans.csv"] = fits.getvalue()
    return out


class SyscallsExporter:
    timed = False  # a run with traced runs or scans, timed cells or not

    def files(self, results: Results) -> Files:
        if not has_profile(results):
            raise ReportError(f"{results.run_dir or 'this run'}: no traced runs or scans to "
                              "export (a scenario with profile: [syscalls] or scan: has them)")
        return to_syscalls(results)


EXPORTER = SyscallsExporter()
