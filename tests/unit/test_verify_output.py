"""A failed ``verify`` check shows the last lines of its output, stdout then stderr, whole, in the
console, report.md and report.html: its last line (a traceback's, the one that says what failed)
is never cut, and nothing in the output can close the block it is shown in."""

from __future__ import annotations

from patchbench.report import html, markdown
from patchbench.report import kind_blocks as views
from patchbench.report.blocks import Pre
from patchbench.results import Check
from patchbench.scenarios import base

TRACEBACK = "\n".join(["Traceback (most recent call last):",
                       *(f'  File "x.py", line {i}, in f{i}' for i in range(80)),
                       "ValueError: the last line that matters"])


def test_the_tail_keeps_the_last_line_and_stderr_after_stdout() -> None:
    out = base.output_tail("checking 32 sandboxes\n", TRACEBACK + "\n")
    assert out.endswith("ValueError: the last line that matters")
    assert out.startswith("…\n")  # cut at the start, and said so
    assert len(out.splitlines()) == base.VERIFY_LINES + 1
    assert base.output_tail("ok\n", "") == "ok"
    assert base.output_tail("", "") == ""
    long_line = "x" * 10_000
    assert base.output_tail(long_line, "") == "…" + long_line[-base.VERIFY_CHARS:]


def test_a_failed_check_is_shown_whole_in_a_fence_its_output_cannot_close() -> None:
    short = "\n".join(TRACEBACK.splitlines()[-3:])
    output = base.output_tail("a ``` fence and a `tick`\n## a fake heading", short)
    checks = {"baseline": Check(command="v", exit_code=0, passed=True, output="ok: 32"),
              "fix": Check(command="v", exit_code=1, passed=False, output=output)}
    md = "\n\n".join(markdown.blocks(views.verify_blocks(checks)))
    assert "- baseline: passed — `ok: 32`" in md and "- fix: FAILED (exit 1)" in md
    fence = "````text\n"
    assert fence + output + "\n````" in md
    page = html.blocks(views.verify_page(checks))
    assert "ValueError: the last line that matters</pre>" in page
    assert "<pre>" in page and "## a fake heading" in page and "<h2" not in page


def test_a_fence_is_longer_than_any_run_of_backticks_inside() -> None:
    assert markdown.block(Pre("plain")) == "```text\nplain\n```"
    assert markdown.block(Pre("a `````` b")) == "```````text\na `````` b\n```````"
    assert html.block(Pre("<img onerror=x>")) == "<pre>&lt;img onerror=x&gt;</pre>"
