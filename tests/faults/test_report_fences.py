"""A program's free text in report.md and the job summary sits in a code span or a fence that
the text cannot close: a ``verify`` output holding backticks, a tag and a fake heading shows as
text, and report.html escapes it. Checked with a CommonMark parser (markdown-it-py)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from patchbench.runs import document
from patchbench.runs.store import load_run
from patchbench.util.escape import md_code, md_fence
from tests.faults.trust_support import demo, save

HOSTILE = ("ok` <img src=x onerror=alert(1)> `x\n\n# Gate passed\n```\n</pre><script>alert(2)"
           "</script>\n````")
ONE_LINE = "ok` <img src=x onerror=alert(1)> ``` # Gate passed"

MD = MarkdownIt("commonmark")


def with_verify(tmp_path: Path, outputs: dict[str, str]) -> Path:
    data = demo()
    sc = data["scenarios"][0]
    sc["verify"] = {v: {"command": "check", "exit_code": 0, "passed": True, "output": out}
                    for v, out in outputs.items()}
    data["report_format"] = 2
    return save(tmp_path / "run", data)


def live_html(markdown_text: str) -> str:
    """What a CommonMark renderer makes of it, with every code span and block removed: only
    what would be live markup or prose."""
    tokens = MD.parse(markdown_text)
    out = []
    for t in tokens:
        if t.type in ("fence", "code_block"):
            continue
        if t.type == "inline" and t.children:
            out += [c.content for c in t.children if c.type in ("text", "html_inline")]
        elif t.type in ("html_block", "heading_open"):
            out.append(f"{t.type}:{t.content}{t.tag}")
    return "\n".join(out)


def test_a_verify_output_cannot_close_its_fence(tmp_path: Path) -> None:
    run = load_run(with_verify(tmp_path, {"baseline": HOSTILE, "per-sandbox-lock": ONE_LINE}))
    text = document.markdown(run)
    live = live_html(text)
    assert "<img" not in live and "<script" not in live
    assert "Gate passed" not in live  # never a heading, never prose
    tokens = MD.parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert not [h for h in headings if "Gate" in h]
    code = [t.content for t in MD.parse(text) if t.type == "fence"]
    assert any("# Gate passed" in c and "<img" in c for c in code)  # shown, as text
    page = document.html(run)
    assert "<img src=x" not in page and "<script>alert(2)" not in page


def test_the_job_summary_keeps_names_in_spans(tmp_path: Path) -> None:
    data = demo()
    data["run_dir"] = "x` <img src=x onerror=alert(1)> `y"
    text = document.job_summary(data, None)
    assert "<img" not in live_html(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("`a <>#\n\t-*_|!["), max_size=40))
def test_a_code_span_holds_any_text(value: str) -> None:
    tokens = MD.parseInline(f"x {md_code(value)} y")[0].children or []
    spans = [t for t in tokens if t.type == "code_inline"]
    assert len(spans) == 1 or not value.strip(" \n\t")
    assert not [t for t in tokens if t.type == "html_inline"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("`~a <>#\n\t-*_|![ "), max_size=60))
def test_a_fence_holds_any_text(value: str) -> None:
    tokens = MD.parse(f"before\n\n{md_fence(value)}\n\n# after\n")
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1
    assert fences[0].content == value.rstrip("\n") + "\n"
    assert [t.content for t in tokens if t.type == "inline"] == ["before", "after"]
