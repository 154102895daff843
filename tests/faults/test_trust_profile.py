"""Untrusted saved runs (docs/security.md), the profile's strings: a syscall name, a failed
sampled run's line and a perf frame come from a trace or from a saved run someone else made. In
report.md every one is text, never markup (no live tag, no link, no pipe that adds a column);
every SVG of report.html is well-formed XML whatever a frame holds (a noncharacter such as
U+FFFE); and a frame holding a lone surrogate (``\\ud800`` in the JSON) never ends ``report`` or
``export`` in an internal error (exit 3)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import xml.dom.minidom
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.faults.test_trust_escape import tables_intact
from tests.support import REPO_ROOT, committed_reports

TAG = "<img src=x onerror=alert(1)>"
LINK = "[x](javascript:alert(1))"
PIPE = "a|b|c"


def stat_run() -> dict[str, Any]:
    """A committed run with a syscall and a CPU profile (the demo plus 1,000 stat calls)."""
    [results] = committed_reports("demo-stat/*/results.json")[-1:]
    data: dict[str, Any] = json.loads(results.read_text())
    return data


def save(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(text)
    return folder


def patchbench(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "patchbench", *map(str, args)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)},
                          cwd=REPO_ROOT)


def hostile_names(data: dict[str, Any]) -> None:
    profile = data["scenarios"][0]["profile"]
    for run in profile["runs"]:
        run["calls"][f"{TAG}{PIPE}"] = 1000
        run["calls"][LINK] = 5
        run["errors"][f"{TAG}x"] = 3
    profile["cpu"]["failed"] = [f"{TAG} {LINK} |c|"]
    for stacks in profile["cpu"]["stacks"].values():
        stacks[f"slowstart;main.main;{TAG}{LINK}{PIPE}"] = 40


def live_markup(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines()
            if "<img" in line or re.search(r"\]\(javascript:", line)]


def test_profile_strings_are_text_in_report_md(tmp_path: Path) -> None:
    data = stat_run()
    hostile_names(data)
    run = save(tmp_path / "run", json.dumps(data))
    res = patchbench("report", run, "--reports", tmp_path / "reports")
    assert res.returncode == 0, res.stderr
    assert "onerror" in res.stdout  # the names are shown ...
    assert live_markup(res.stdout) == []  # ... as text
    assert tables_intact(res.stdout)


def svgs_of(html: str) -> list[str]:
    out = re.findall(r"<svg.*?</svg>", html, re.S)
    out += [base64.b64decode(b).decode("utf-8", "surrogatepass")
            for b in re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", html)]
    return out


FRAMES: dict[str, Callable[[str], str]] = {
    "noncharacter U+FFFE": lambda t: t.replace("main.main;", "main.main;bad\\ufffe\\uffffsym;"),
    "a control character": lambda t: t.replace("main.main;", "main.main;bad\\u0001sym;"),
    "a lone surrogate": lambda t: t.replace("main.main;", "main.main;bad\\ud800sym;"),
    "a lone surrogate in a syscall name": lambda t: t.replace('"futex"', '"fu\\udc00tex"'),
}


@pytest.mark.parametrize("frame", FRAMES.values(), ids=list(FRAMES))
def test_every_svg_is_well_formed_and_no_run_ends_in_exit_3(tmp_path: Path,
                                                             frame: Callable[[str], str]) -> None:
    text = frame(json.dumps(stat_run()))
    assert text != json.dumps(stat_run())
    run = save(tmp_path / "run", text)
    res = patchbench("report", run, "--reports", tmp_path / "reports")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    out = tmp_path / "html"
    res = patchbench("export", run, "--format", "html", "--out", out,
                     "--reports", tmp_path / "reports")
    assert res.returncode == 0, res.stderr
    svgs = svgs_of((out / "report.html").read_text(encoding="utf-8"))
    assert svgs
    for svg in svgs:
        xml.dom.minidom.parseString(svg.encode("utf-8"))  # raises when not well-formed


def test_the_bisect_and_history_chart_is_well_formed_whatever_a_subject_holds() -> None:
    """The bisect and history chart (report/charts.py): a commit's subject read back from a
    saved bisect.json or history.json (a noncharacter, a control character, a tag) keeps it
    well-formed."""
    from patchbench.report import charts

    hostile = f"fix\ufffe\x01 {TAG} \ud800 & more"
    drawn = charts.commit_chart([
        charts.CommitPoint(label=hostile, y=1.0, lo=0.5, hi=1.5, title=hostile),
        charts.CommitPoint(label="abc", y=None, title=hostile)], hostile, hostile)
    assert drawn is not None
    xml.dom.minidom.parseString(drawn)
    svg = drawn.decode("utf-8")
    assert "<img" not in svg
