"""Untrusted saved runs and artifacts (docs/security.md), unescaped output: names and labels from
saved runs and artifacts are escaped in every output format (``patchbench.util.escape``): in
markdown (the job summary, the merged report) a tag never stays live and a ``|`` never splits a
table; in CSV a value never becomes a formula; on the terminal control characters and ANSI escapes
are shown escaped."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from patchbench.runs import document
from patchbench.util.escape import csv_cell, md_cell, terminal
from tests.faults.trust_support import demo, diff, export, merge, save

TAG = '<img src=x onerror="alert(1)">'
PIPE = "a|b|c"


def tables_intact(markdown: str) -> bool:
    """Every row of every github table has as many cells as its header (``\\|`` is no pipe)."""
    tables: list[list[int]] = [[]]
    for line in markdown.splitlines():
        if line.startswith("|"):
            tables[-1].append(len(line.replace("\\|", "").split("|")))
        elif tables[-1]:
            tables.append([])
    return all(len(set(t)) <= 1 for t in tables) and any(tables)


def test_the_escapers() -> None:
    assert md_cell(TAG) == '&lt;img src=x onerror="alert(1)"&gt;'
    assert md_cell(PIPE) == "a\\|b\\|c"
    assert md_cell("two\nlines") == "two lines"
    assert [csv_cell(v) for v in ("=1+1", "+1+1", "-cmd", "@SUM(A1)", "-1.5", "+2e3", "ok", 3)] \
        == ["'=1+1", "'+1+1", "'-cmd", "'@SUM(A1)", "-1.5", "+2e3", "ok", 3]
    assert terminal("a\x1b[31mred\x07\nb\tc") == "a\\x1b[31mred\\x07\nb\tc"
    assert terminal("x\ny", newlines=False) == "x\\x0ay"


def test_merged_markdown_and_job_summary_escape_artifact_labels(tmp_path: Path) -> None:
    art = tmp_path / "art"
    save(art / TAG.replace("/", ""), demo())
    save(art / PIPE, demo())
    out = tmp_path / "out"
    summary_file = tmp_path / "summary.md"
    code, _, err = merge([str(art)], tmp_path / "reports", out=str(out),
                         summary=str(summary_file))
    assert code == 0, err
    for text in ((out / "report.md").read_text(), summary_file.read_text()):
        assert "<img src=x" not in text and "&lt;img src=x" in text
        assert tables_intact(text)
    assert "<img src=x" not in (out / "report.html").read_text()


def test_one_runs_job_summary_escapes_names_and_warnings() -> None:
    data = demo()
    data["machine"]["cpu_model"] = f"{TAG} | x"
    data["warnings"] = [f"{TAG}|y"]
    data["scenarios"][0]["comparisons"][0]["params"] = PIPE
    text = document.job_summary(data, [f"gate {TAG}"])
    assert "<img src=x" not in text
    assert tables_intact(text)


@pytest.mark.parametrize("label", ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)"])
def test_csv_export_never_makes_a_formula(tmp_path: Path, label: str) -> None:
    data = demo()
    for sc in data["scenarios"]:
        sc["cells"][0]["label"] = label
        sc["comparisons"][0]["baseline"] = label
    run = save(tmp_path / "run", data)
    code, _, err = export(run, "csv", tmp_path / "csv", tmp_path / "reports")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO((tmp_path / "csv" / "results.csv").read_text())))
    assert {r[1] for r in rows[1:]} >= {"'" + label}
    assert not [c for r in rows[1:] for c in r if (c and c[0] in "=+@") or
                (c.startswith("-") and not c[1:].replace(".", "").isdigit())]


def test_the_terminal_sees_no_escape_sequence_from_a_file(tmp_path: Path) -> None:
    data = demo()
    for sc in data["scenarios"]:
        for cell in sc["cells"]:
            cell["label"] += "\x1b]0;pwned\x07\x1b[2J"
        for comp in sc["comparisons"]:
            comp["baseline"] += "\x1b]0;pwned\x07\x1b[2J"
            comp["candidate"] += "\x1b]0;pwned\x07\x1b[2J"
    a, b = save(tmp_path / "a", data), save(tmp_path / "b", data)
    code, out, err = diff(a, b, tmp_path / "reports")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;pwned\\x07" in out


def test_an_error_naming_a_value_from_a_file_shows_no_escape_sequence(tmp_path: Path) -> None:
    data = demo()
    data["builds"]["\x1b[2Jevil"] = data["builds"].pop("baseline-again")
    art = tmp_path / "art"
    save(art / "a", data)
    code, _, err = merge([str(art)], tmp_path / "reports")
    assert code == 18
    assert "\x1b" not in err and "\\x1b[2Jevil" in err
