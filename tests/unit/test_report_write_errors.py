"""Writing outside a run folder (a job summary, an export) fails as a report error (exit 18)
naming the path, never as an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchbench.errors import ReportError
from patchbench.runs import summary


def test_an_unwritable_summary_is_a_report_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(ReportError) as info:
        summary.append_text(blocker / "summary.md", "| a | b |\n")
    assert info.value.exit_code == 18
    assert str(blocker / "summary.md") in info.value.message


def test_a_summary_is_appended_never_truncated(tmp_path: Path) -> None:
    path = tmp_path / "job" / "summary.md"
    summary.append_text(path, "first\n")
    summary.append_text(path, "second\n")
    assert path.read_text() == "first\nsecond\n"
