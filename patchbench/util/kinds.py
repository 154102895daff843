"""The scenario kinds' loader, as the layers below the kinds see it.

A scenario kind is a module of patchbench.scenarios, imported only when something needs it: a
matrix whose scenarios name it, a results file holding it, the registry iterated whole. The
config (a matrix's scenarios) and the results (a results file's entries) sit below the kinds
and cannot import them, so patchbench.scenarios installs its loader here when it is imported,
with the kinds' order, and they ask for the kinds they are about to read. With no loader
installed (patchbench.scenarios never imported), nothing is loaded and reading a matrix or
results stays the bug it always was (exit 3)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

# the kinds' names, in their order (docs/matrix.md, the "unknown scenario kind" messages)
ORDER: dict[str, int] = {}
_LOADER: list[Callable[[frozenset[str] | None], None]] = []


def install(loader: Callable[[frozenset[str] | None], None], order: Iterable[str]) -> None:
    """``loader(names)`` registers the kinds ``names`` (None: every kind)."""
    ORDER.clear()
    ORDER.update({name: n for n, name in enumerate(order)})
    _LOADER[:] = [loader]


def ensure(names: Iterable[str] | None) -> None:
    """Have the kinds ``names`` registered (None: every kind; the loader loads every kind for
    a name it does not know, so that the message refusing it lists them all)."""
    if _LOADER:
        _LOADER[0](None if names is None else frozenset(names))


def ranked(models: dict[str, Any]) -> dict[str, Any]:
    """``models`` (kind name -> anything) in the kinds' order, any other kind (a test's own)
    after them in the order it came."""
    later = len(ORDER)
    return dict(sorted(models.items(), key=lambda kv: ORDER.get(kv[0], later)))


def used_in(scenarios: Any, default: str) -> set[str]:
    """The kinds a list of raw scenario mappings names (``default`` for one that names none);
    anything that is not such a list names none (validation refuses it later)."""
    if not isinstance(scenarios, list):
        return set()
    return {str(s.get("kind", default)) if isinstance(s, dict) else default for s in scenarios}
