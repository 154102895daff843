"""The two formatters of report blocks: markdown writes text as it is, HTML escapes every value;
a chart is drawn only by the HTML formatter, and one with nothing to draw is left out."""

from __future__ import annotations

import pytest

from patchbench.report import html, markdown
from patchbench.report.blocks import (
    Bullets,
    Chart,
    Code,
    Data,
    Heading,
    Image,
    Link,
    Strong,
    Table,
    bullets,
    table,
    text,
)


def never_drawn() -> bytes | None:
    raise AssertionError("report.md draws no chart")


def test_markdown() -> None:
    assert markdown.block(text("a ", Code("x"), " ", Strong("b"), " ", Link("f.json", "f.json"))
                          ) == "a `x` **b** [f.json](f.json)"
    assert markdown.block(bullets([["one"], [Code("two"), ": 2"]])) == "- one\n- `two`: 2"
    assert markdown.block(table(["a", "b"], [[1, "x"]])) == "| a   | b   |\n|-----|-----|\n| 1   | x   |"
    assert markdown.block(Image("c.png", "chart")) == "![chart](c.png)"
    assert markdown.block(Heading("h")) == "### h"
    assert markdown.blocks([text("t"), Chart("c", never_drawn, "caption")]) == ["t"]
    assert markdown.block(Data("d", {"k": 1})) == 'd:\n\n```json\n{\n  "k": 1\n}\n```'


def test_html_escapes_every_value() -> None:
    assert html.block(text("<b>", Code("&"), Link("x<y", 'a"b'))) == (
        '<p>&lt;b&gt;<code>&amp;</code><a href="a&quot;b">x&lt;y</a></p>')
    assert html.block(Table(("h<",), (("<td>",),), "stress")) == (
        '<table class="stress"><thead><tr><th>h&lt;</th></tr></thead><tbody><tr>'
        "<td>&lt;td&gt;</td></tr></tbody></table>")
    assert html.block(Bullets(((Strong("v"), ": ok"),), "verify")) == (
        '<ul class="verify"><li><b>v</b>: ok</li></ul>')
    assert html.block(Bullets((("x",),))) == "<ul><li>x</li></ul>"
    assert html.block(Chart("c", lambda: None, "nothing")) == ""
    figure = html.block(Chart("c", lambda: b"PNG", "a <caption>"))
    assert 'data-chart="c"' in figure and "a &lt;caption&gt;" in figure


def test_not_a_block() -> None:
    with pytest.raises(TypeError):
        markdown.block("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        html.block("text")  # type: ignore[arg-type]
