"""The "did you mean" of every error that names an unknown word: a key of matrix.yaml, a target,
a comparison, a series, a command, an option or one of its choices. One rule for all of them:
the closest of the known words by ``difflib``, if one is close enough."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable


def suggest(word: object, choices: Iterable[object], *, show: Callable[[str], str] = repr) -> str:
    """`` (did you mean X?)`` with X the choice closest to ``word`` (difflib's ratio at least 0.6),
    shown by ``show`` (quoted by default; ``str`` for what is typed as is, such as ``--runs``);
    empty when none is close."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {show(close[0])}?)" if close else ""
