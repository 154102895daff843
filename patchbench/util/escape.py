r"""The escapers for text that came from a file (a saved run, a CI artifact's name) or a program,
one per output format: ``md_cell`` and ``md_text`` (no live tag, no split table), ``md_plain``
(no markup at all), ``md_code`` and
``md_fence`` (a program's free text in a span or fence it cannot close), ``csv_cell`` (no
spreadsheet formula: OWASP's leading ``'``) and ``terminal`` (control characters and ANSI escapes
shown as ``\xNN``, so a name never moves the cursor). docs/security.md."""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_NOT_NL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # tab and newline kept
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def md_cell(value: Any) -> str:
    """``value`` as text that is safe in a markdown table cell and in a line of markdown: no
    tag (entities), no ``|`` that adds a column, nothing that makes a link, an image or a link's
    definition (``](``, ``][`` and ``]:`` get a backslash before their second character); the
    rest (a syscall's underscores, an interval's brackets) as it is."""
    return _LINK.sub(r"]\\", _cell(str(value)))


_LINK = re.compile(r"\](?=[(\[:])")


def _cell(text: str) -> str:
    """Control characters as spaces, ``&``, ``<`` and ``>`` as entities, ``|`` escaped."""
    text = _CONTROL.sub(" ", text)
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|"))


_MD_PUNCT = re.compile(r"([\\`*_\[\]()!~#])")


def md_plain(value: Any) -> str:
    """``value``, a program's text (a perf symbol), as a table cell that is no markup at all:
    :func:`md_cell`, with markdown's punctuation backslash-escaped first, so that it never
    becomes a link, an image, emphasis or a code span."""
    return _cell(_MD_PUNCT.sub(r"\\\1", _CONTROL.sub(" ", str(value))))


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def md_text(value: Any) -> str:
    """``value`` as a line of markdown prose: outside code spans ``&``, ``<`` and ``>`` become
    entities (a tag never stays live); inside a code span (shown literally) nothing changes;
    control characters become spaces."""
    text = _CONTROL.sub(" ", str(value))
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_entities(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_entities(text[last:]))
    return "".join(out)


_BACKTICKS = re.compile(r"`+")


def _fence_for(text: str, least: int) -> str:
    return "`" * max(least, max((len(m) for m in _BACKTICKS.findall(text)), default=0) + 1)


def md_code(value: Any) -> str:
    """``value`` as an inline code span its text cannot close: delimited by one backtick more
    than its longest run of them (padded with a space where it starts or ends with one, or with a
    space at both ends, which CommonMark strips); line breaks and other control characters as
    spaces, since a line break in a span could end the paragraph around it. Text without a
    backtick or a control character gives exactly ```text```."""
    text = _CONTROL.sub(" ", str(value))
    fence = _fence_for(text, 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (
        text.startswith(" ") and text.endswith(" ") and text.strip()) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_fence(value: Any, info: str = "text") -> str:
    """``value`` (several lines) as a fenced code block its text cannot close: a fence of at
    least three backticks, longer than any run of backticks in it; control characters other than
    the line break and tab as spaces."""
    text = _CONTROL_NOT_NL.sub(" ", str(value)).rstrip("\n")
    fence = _fence_for(text, 3)
    return f"{fence}{info}\n{text}\n{fence}"


def _entities(text: str) -> str:
    """Prose outside code spans: no tag, nothing that makes a link (as in :func:`md_cell`)."""
    return _LINK.sub(r"]\\", text.replace("&", "&amp;").replace("<", "&lt;")
                     .replace(">", "&gt;"))


def csv_cell(value: Any) -> Any:
    """``value`` for a CSV writer: a string a spreadsheet would evaluate gets a leading ``'``."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    if _NUMBER.match(value):
        return value
    return "'" + value


def terminal(value: Any, *, newlines: bool = True) -> str:
    """``value`` with every control character (ESC too) but the newline shown as ``\\xNN``, and
    a lone surrogate (no character: it cannot be written as UTF-8) as ``\\udNNN``."""
    pattern = _CONTROL_NOT_NL if newlines else _CONTROL
    text = pattern.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_SURROGATE = re.compile("[\ud800-\udfff]")
# what XML 1.0 does not allow anywhere, not even as an entity: the C0 controls but tab, line feed
# and carriage return, lone surrogates, and the noncharacters U+FFFE and U+FFFF
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: Any) -> str:
    """``value`` as text or an attribute value of an XML (SVG) document: ``&``, ``<``, ``>``
    and both quotes as entities, control characters as spaces, and every other character XML
    1.0 does not allow (even as an entity: a lone surrogate, U+FFFE, U+FFFF) as U+FFFD, so that
    a hostile name never breaks or escapes the document."""
    text = _NOT_XML.sub("\ufffd", _CONTROL_NOT_NL.sub(" ", str(value)).replace("\n", " "))
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#x27;"))
