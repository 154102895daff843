"""The CI job summary (runs/document.py writes it) appended to a file: ``--summary FILE``, or
``$GITHUB_STEP_SUMMARY`` when GitHub Actions sets it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from patchbench.results import RunInput
from patchbench.runs import document


def summary_path(explicit: str | os.PathLike[str] | None,
                 env: Mapping[str, str] | None = None) -> Path | None:
    """Where the summary goes: ``--summary FILE``, else ``$GITHUB_STEP_SUMMARY``, else nowhere."""
    if explicit:
        return Path(explicit)
    value = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY", "")
    return Path(value) if value else None


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
    append_text(path, document.job_summary(results, gate_reasons))
