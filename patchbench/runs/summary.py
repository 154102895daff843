"""The CI job summary: the summary table and the gate's reasons as markdown, appended to a file
(``--summary FILE``, or ``$GITHUB_STEP_SUMMARY`` when GitHub Actions sets it)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tabulate import tabulate

from patchbench.util.escape import md_cell

Results = dict[str, Any]


def summary_path(explicit: str | os.PathLike[str] | None,
                 env: Mapping[str, str] | None = None) -> Path | None:
    """Where the summary goes: ``--summary FILE``, else ``$GITHUB_STEP_SUMMARY``, else nowhere."""
    if explicit:
        return Path(explicit)
    value = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY", "")
    return Path(value) if value else None


def gate_markdown(reasons: Sequence[str]) -> str:
    if not reasons:
        return "**Gate: passed** — no candidate significantly slower, every check passed."
    return "**Gate: FAILED**\n\n" + "\n".join(f"- {md_cell(r)}" for r in reasons)


def stress_rows(results: Results) -> list[list[str]]:
    rows = []
    for sc in results["scenarios"]:
        for build, pb in (sc.get("per_build") or {} if sc.get("kind") == "stress" else {}).items():
            rows.append([md_cell(sc["name"]), md_cell(build), str(pb["hangs"]), str(pb["leftovers"]),
                         str(pb["fresh_failures"]), str(pb["kill_errors"])])
    return rows


def summary_markdown(results: Results, gate_reasons: Sequence[str]) -> str:
    """One run's summary for a CI job page."""
    from patchbench.report.html import as_model
    from patchbench.report.markdown import summary_table

    m = results["machine"]
    lines = [
        f"### patchbench `{md_cell(results['comparison'])}`"
        + (f" — `{md_cell(results['run_dir'])}`" if results.get("run_dir") else ""),
        "",
        f"{md_cell(m.get('cpu_model'))}, {md_cell(m.get('cpu_count'))} cores, kernel "
        f"{md_cell(m.get('kernel'))}; seed {results['seed']}"
        + (" — **A/A run**" if results.get("aa") else ""),
        "",
    ]
    if any(sc.get("comparisons") for sc in results["scenarios"]):
        lines += [summary_table(as_model(results), "github"), ""]
    stress = stress_rows(results)
    if stress:
        lines += [tabulate(stress, headers=["stress", "build", "hangs", "leftovers",
                                            "fresh run failed", "kill errors"],
                           tablefmt="github", disable_numparse=True), ""]
    lines += [gate_markdown(gate_reasons), ""]
    if results.get("warnings"):
        lines += [f"<details><summary>{len(results['warnings'])} warnings</summary>", ""]
        lines += [f"- {md_cell(w)}" for w in results["warnings"]] + ["", "</details>", ""]
    return "\n".join(lines) + "\n"


def append_text(path: Path, text: str) -> None:
    """Append (never truncate: a job summary collects every step's part); never through a link,
    nor into a file or folder another user owns in a world-writable folder."""
    import errno

    from patchbench.errors import ReportError
    from patchbench.util.ownership import check_output

    check_output(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        why = ("it is a symbolic link" if exc.errno == errno.ELOOP else
               "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc))
        raise ReportError(f"cannot append the summary to {path}: {why}",
                          hint="the run itself is saved; check --summary or "
                          "$GITHUB_STEP_SUMMARY") from None


def append_summary(results: Results, gate_reasons: Sequence[str], path: Path) -> None:
    """Append one run's summary table and gate reasons, as markdown, to ``path``."""
    append_text(path, summary_markdown(results, gate_reasons))
