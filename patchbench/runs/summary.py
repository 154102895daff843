"""The CI job summary: the summary table and the gate's reasons as markdown, appended to a file
(``--summary FILE``, or ``$GITHUB_STEP_SUMMARY`` when GitHub Actions sets it)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from patchbench.report.blocks import (
    Block,
    Cell,
    Code,
    Escaped,
    Fold,
    Inline,
    Strong,
    Table,
    View,
    bullets,
    escaped,
    heading,
    text,
)
from patchbench.report.markdown import document as document_md
from patchbench.report.numbers import fmt_aa
from patchbench.results import Results, RunInput, TimedResult, as_results
from patchbench.runs import document
from patchbench.scenarios import KINDS


def summary_path(explicit: str | os.PathLike[str] | None,
                 env: Mapping[str, str] | None = None) -> Path | None:
    """Where the summary goes: ``--summary FILE``, else ``$GITHUB_STEP_SUMMARY``, else nowhere."""
    if explicit:
        return Path(explicit)
    value = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY", "")
    return Path(value) if value else None


def kind_tables(results: Results) -> list[Table]:
    """The kinds' own tables of a job summary (their blocks for View.SUMMARY): the rows of every
    scenario whose table has the same headers are one table, in the order they first appear.
    Names and builds come from the file: every cell is escaped."""
    rows: dict[tuple[Cell, ...], list[tuple[Cell, ...]]] = {}
    for sc in results.scenarios:
        for t in KINDS[sc.kind].blocks(sc, View.SUMMARY):
            if isinstance(t, Table) and t.rows:
                rows.setdefault(t.headers, []).extend(tuple(escaped(row)) for row in t.rows)
    return [Table(headers, tuple(r)) for headers, r in rows.items()]


def blocks(results: Results, gate_reasons: Sequence[str] | None) -> list[Block]:
    """One run's summary for a CI job page; ``gate_reasons`` None: made without --gate, so no
    gate line."""
    m = results.machine  # free-form (patchbench.measure.machine), as the run recorded it
    title: list[Inline] = ["patchbench ", Code(results.comparison)]
    title += [" — ", Code(results.run_dir)] if results.run_dir else []
    aa: list[Inline] = [" — ", Strong("A/A run")] if results.aa else []
    aa += [f" ({fmt_aa(results.aa_build)[0]})"] if results.aa_build is not None else []
    out: list[Block] = [heading(*title), text(
        Escaped(str(m.get("cpu_model"))), ", ", Escaped(str(m.get("cpu_count"))), " cores, kernel ",
        Escaped(str(m.get("kernel"))), f"; seed {results.seed}", *aa)]
    if any(isinstance(sc, TimedResult) and sc.comparisons for sc in results.scenarios):
        out.append(document.summary_table(results))
    out += kind_tables(results)
    out += [document.gate_box(gate_reasons)] if gate_reasons is not None else []
    if results.warnings:
        out.append(Fold(f"{len(results.warnings)} warnings",
                        (bullets([[Escaped(w)] for w in results.warnings]),)))
    return out


def summary_markdown(run: RunInput, gate_reasons: Sequence[str] | None) -> str:
    """One run's summary for a CI job page, as markdown (an empty line after it)."""
    return document_md(blocks(as_results(run), gate_reasons), "\n\n")


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


def append_summary(results: RunInput, gate_reasons: Sequence[str] | None, path: Path) -> None:
    """Append one run's summary table and gate reasons, as markdown, to ``path``."""
    append_text(path, summary_markdown(results, gate_reasons))
