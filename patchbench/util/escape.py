r"""The escapers for text that came from a file (a saved run, a CI artifact's name), one per output
format, used where such a value enters the output: ``md_cell`` and ``md_text`` (no live tag, no
split table), ``csv_cell`` (no spreadsheet formula: OWASP's leading ``'``) and ``terminal``
(control characters and ANSI escapes shown as ``\xNN``, so a name never moves the cursor).
docs/security.md."""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_NOT_NL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # tab and newline kept
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def md_cell(value: Any) -> str:
    """``value`` as text that is safe in a markdown table cell and in a line of markdown."""
    text = _CONTROL.sub(" ", str(value))
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|"))


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


def _entities(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def csv_cell(value: Any) -> Any:
    """``value`` for a CSV writer: a string a spreadsheet would evaluate gets a leading ``'``."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    if _NUMBER.match(value):
        return value
    return "'" + value


def terminal(value: Any, *, newlines: bool = True) -> str:
    """``value`` with every control character (ESC too) but the newline shown as ``\\xNN``."""
    pattern = _CONTROL_NOT_NL if newlines else _CONTROL
    return pattern.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def xml_text(value: Any) -> str:
    """``value`` as text or an attribute value of an XML (SVG) document: ``&``, ``<``, ``>``
    and both quotes as entities, and the control characters XML 1.0 does not allow (even as
    entities) as spaces, so that a hostile name never breaks or escapes the document."""
    text = _CONTROL_NOT_NL.sub(" ", str(value)).replace("\n", " ")
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#x27;"))
