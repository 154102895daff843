"""Reports: results.json (versioned, raw samples, hyperfine's own JSON, machine, build manifests),
report.md, and the printed table. A run folder is assembled aside and renamed into place."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from tabulate import tabulate

from patchbench.errors import ReportError
from patchbench.files import write_json_atomic, write_text_atomic

RESULTS_SCHEMA = 1
# Every change of the results.json format gets a line here and a new version.
SCHEMA_HISTORY = {
    1: "first version: per scenario, cells with raw samples (times, exit codes, rounds, "
    "hyperfine JSON) and baseline/candidate comparisons",
}


def fmt_time(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_ratio(c: dict[str, Any]) -> str:
    text = f"{c['speedup']:.2f}×"
    if c.get("ci_low") is not None:
        text += f" [{c['ci_low']:.2f}, {c['ci_high']:.2f}]"
    return text


def fmt_p(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def summary_rows(results: dict[str, Any]) -> list[list[str]]:
    rows = []
    for sc in results["scenarios"]:
        cells = {c["label"]: c for c in sc["cells"]}
        for comp in sc.get("comparisons", []):
            base, cand = cells[comp["baseline"]], cells[comp["candidate"]]
            row = [
                sc["name"] + (f" {comp['params']}" if comp.get("params") else ""),
                comp["candidate_variant"],
                fmt_time(base["summary"]["median"]),
                fmt_time(cand["summary"]["median"]),
                fmt_ratio(comp),
                fmt_p(comp["p_value"]),
                comp["verdict"],
            ]
            if sc.get("rate"):
                rate = sc["rate"]
                row[2] += f" ({rate['count'] / base['summary']['median']:,.0f} {rate['unit']})"
                row[3] += f" ({rate['count'] / cand['summary']['median']:,.0f} {rate['unit']})"
            rows.append(row)
    return rows


SUMMARY_HEADERS = ["scenario", "candidate", "baseline median", "candidate median",
                   "speedup [95% CI]", "p (MWU)", "verdict"]


def summary_table(results: dict[str, Any], fmt: str = "simple") -> str:
    return tabulate(summary_rows(results), headers=SUMMARY_HEADERS, tablefmt=fmt,
                    disable_numparse=True)


def fmt_ci(ci: list[float] | None) -> str:
    return f"[{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else "-"


def detail_table(sc: dict[str, Any], fmt: str = "github") -> str:
    rate = sc.get("rate")
    rows = []
    for c in sc["cells"]:
        s = c["summary"]
        row = [
            c["label"], s["n"], fmt_time(s["median"]), fmt_ci(s.get("median_ci")),
            f"{fmt_time(s['mean'])} ± {fmt_time(s['stdev'])}", fmt_time(s["min"]),
            fmt_time(s["max"]),
        ]
        if rate:
            ci = s.get("median_ci")
            row.append(f"{rate['count'] / s['median']:,.0f}"
                       + (f" [{rate['count'] / ci[1]:,.0f}, {rate['count'] / ci[0]:,.0f}]"
                          if ci else ""))
        rows.append([*row, "noisy" if s.get("noisy") else ""])
    headers = ["cell", "n", "median", "95% CI of median", "mean ± σ", "min", "max"]
    if rate:
        headers.append(f"{rate['unit']} [95% CI]")
    return tabulate(rows, headers=[*headers, ""], tablefmt=fmt, disable_numparse=True)


def render_markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"# {results['comparison']}: {results.get('description') or ''}".rstrip(": "),
        "",
        f"- target: `{results['target']}` {results['url']} at `{results['ref']}` "
        f"(`{results['commit']}`)",
        f"- run: {results['started_at']} → {results['finished_at']}, seed {results['seed']}"
        + (" — **A/A run** (baseline against itself: the noise floor)" if results["aa"] else ""),
        f"- machine: {m['cpu_model']}, {m['cpu_count']} cores, kernel {m['kernel']}, "
        f"load {', '.join(f'{x:.2f}' for x in m['load_avg'])} at start"
        + (f", {m['virtualization']}" if m.get("virtualization") else ""),
        f"- statistics: speedup = median(baseline) / median(candidate), 95% bootstrap CI; "
        f"Mann–Whitney U two-sided, alpha {results['settings']['alpha']}, minimum effect "
        f"{results['settings']['min_effect']:.0%}",
        "",
        "## Builds",
        "",
    ]
    brows = []
    for name, man in results["builds"].items():
        fp = man["fingerprint"]
        arts = ", ".join(f"{k} {v['sha256'][:12]}" for k, v in man["artifacts"].items())
        brows.append([name, man["built_commit"][:12],
                      ", ".join(s["name"] for s in man["series"]) or "(none)",
                      fp.get("version") or fp.get("swift", ""), arts])
    lines.append(tabulate(brows, headers=["variant", "built commit", "series", "toolchain",
                                           "artifacts (sha256)"], tablefmt="github"))
    lines += ["", "## Summary", "", summary_table(results, "github"), ""]
    for sc in results["scenarios"]:
        lines += [f"## Scenario `{sc['name']}` ({sc['kind']})", ""]
        if sc.get("description"):
            lines += [sc["description"], ""]
        lines += [f"Command: `{sc['command']}`", ""]
        if sc["cells"]:
            lines += [f"{sc['runs']} runs per cell in {sc['rounds']} interleaved rounds, warmup "
                      f"{sc['warmup']}.", "", detail_table(sc), ""]
        for extra in sc.get("markdown", []):
            lines += [extra, ""]
    if results.get("warnings"):
        lines += ["## Warnings", ""] + [f"- {w}" for w in results["warnings"]] + [""]
    return "\n".join(lines)


def save_run(reports: Path, comparison: str, results: dict[str, Any],
             extra_files: dict[str, Path]) -> Path:
    """Write reports/<comparison>/<UTC time>/ atomically: assembled aside, then renamed."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    parent = reports / comparison
    parent.mkdir(parents=True, exist_ok=True)
    final = parent / stamp
    n = 1
    while final.exists():
        n += 1
        final = parent / f"{stamp}-{n}"
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes 0700; reports are meant to be shared
    try:
        results["run_dir"] = f"{comparison}/{final.name}"
        write_json_atomic(tmp / "results.json", results)
        write_text_atomic(tmp / "report.md", render_markdown(results))
        from patchbench.report_html import render_html  # matplotlib: imported only here

        write_text_atomic(tmp / "report.html", render_html(results))
        write_json_atomic(tmp / "machine.json", results["machine"])
        for variant, man in results["builds"].items():
            write_json_atomic(tmp / f"manifest-{variant}.json", man)
        for name, path in extra_files.items():
            shutil.copy2(path, tmp / name)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def load_run(path: Path) -> dict[str, Any]:
    target = path / "results.json" if path.is_dir() else path
    try:
        data: dict[str, Any] = json.loads(target.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"cannot read {target}: {exc}") from None
    if data.get("schema_version") != RESULTS_SCHEMA:
        raise ReportError(
            f"{target}: results schema {data.get('schema_version')!r} is not {RESULTS_SCHEMA}"
        )
    return data


def latest_run(reports: Path, comparison: str | None) -> Path:
    dirs = [p.parent for p in reports.glob(("*" if comparison is None else comparison)
                                              + "/*/results.json")]
    if not dirs:
        raise ReportError(f"no saved runs under {reports}" +
                          (f"/{comparison}" if comparison else ""))
    return max(dirs, key=lambda p: p.name)
