"""A matrix validated whole, kept: ``list``'s rows without the validation's cost, and the proof
that lets ``compare`` validate only the comparison it measures.

Validating matrix.yaml whole imports and builds the config model of every scenario kind it names
(pydantic, and with the kinds their measuring code). Every validation of the whole matrix
(``list``, and ``compare``, ``build``: config/kept.py) keeps, in ``builds/matrix-listing.json``,
``list``'s rows and every comparison's series by target with everything the validation read: the
matrix's path and bytes, patchbench's code (the path, size and mtime of every module), pydantic's,
PyYAML's and Python's versions, and the file-system facts ``config.load`` relied on
(util/facts.py). While all of these are unchanged:
- ``list`` prints the kept rows;
- ``compare NAME`` validates the targets and comparison NAME alone (config.load's ``only``),
  importing only the kinds NAME's scenarios name: the rest of the file is what was validated,
  and what the run reads of the other comparisons (their series, when it fetches their target
  or checks a series: config.SeriesUse) comes from the kept file.
Otherwise the matrix is validated whole as always (an error is an error, and nothing is kept)
and kept again. The file is read as untrusted input: a regular file, never through a link,
bounded, of a known shape, and as root owned by root and writable by no one else (the rule
builds/ is held to); anything else is ignored and the matrix is validated whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from patchbench.util import files, ownership
from patchbench.util.facts import code_key, holds
from patchbench.util.names import NAME_RE

CACHE_VERSION = 2  # 2: every comparison's series by target (uses)
MAX_CACHE_BYTES = 1 << 20
MAX_MATRIX_BYTES = MAX_CACHE_BYTES * 4
TARGET_HEADERS = ["target", "url", "ref", "commit", "toolchain", "requires"]
COMPARISON_HEADERS = ["comparison", "target", "candidates", "scenarios", "description"]

Rows = list[list[str]]


def key(matrix: Path, raw: bytes) -> str:
    h = hashlib.sha256()
    h.update(f"patchbench list {CACHE_VERSION}\0{matrix.resolve()}\0".encode())
    h.update(raw)
    code_key(h)
    return h.hexdigest()


def matrix_key(matrix: Path) -> tuple[bytes | None, str]:
    """The matrix's bytes (None: unreadable, a link, too large: then nothing is kept) and key."""
    try:
        raw = files.read_regular(matrix, MAX_MATRIX_BYTES)
        return raw, key(matrix, raw)
    except (OSError, ValueError):
        return None, ""


def _is_rows(value: object, width: int) -> TypeGuard[Rows]:
    return isinstance(value, list) and all(
        isinstance(row, list) and len(row) == width and all(isinstance(x, str) for x in row)
        for row in value)


@dataclass(frozen=True)
class Kept:
    """A kept validation of the whole matrix: ``list``'s rows, and every comparison's series by
    target (``{"target", "baseline", "candidates"}``, what config.SeriesUse holds)."""

    targets: Rows
    comparisons: Rows
    uses: list[dict[str, Any]]


def _is_name(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(NAME_RE, value) is not None


def _is_names(value: object) -> bool:
    return isinstance(value, list) and all(_is_name(x) for x in value)


def _is_use(value: object) -> bool:
    if not isinstance(value, dict) or set(value) != {"target", "baseline", "candidates"}:
        return False
    cands = value["candidates"]
    return (_is_name(value["target"]) and _is_names(value["baseline"])
            and isinstance(cands, dict) and all(_is_name(k) and _is_names(v)
                                                for k, v in cands.items()))


def cached(path: Path, want: str) -> Kept | None:
    """What was kept under ``want`` (the key), if the file is sound and its facts still hold:
    then the matrix of that key is one validated whole."""
    if not want:
        return None
    try:  # as root, one another user could have written is not read either
        data = ownership.read_kept(path, MAX_CACHE_BYTES)
    except (OSError, ValueError):  # missing, a link, too large, not UTF-8 JSON: validate
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or \
            data.get("key") != want or not isinstance(data.get("facts"), list):
        return None
    targets, comparisons, uses = data.get("targets"), data.get("comparisons"), data.get("uses")
    if not _is_rows(targets, len(TARGET_HEADERS)) or \
            not _is_rows(comparisons, len(COMPARISON_HEADERS)) or \
            not isinstance(uses, list) or len(uses) != len(comparisons) or \
            not all(_is_use(u) for u in uses):
        return None
    if not all(holds(f) for f in data["facts"]):
        return None
    return Kept(targets, comparisons, uses)


def rows_of(project: Any) -> tuple[Rows, Rows]:
    """``list``'s two tables of a matrix validated whole (a config.Project: this module sits
    below the config, so that ``list`` with its rows kept imports neither pydantic nor the
    config)."""
    m = project.matrix
    targets = [[n, t.url, t.ref, t.commit[:12], f"{t.toolchain.kind} {t.toolchain.version}",
                ", ".join(t.requires) or "-"] for n, t in m.targets.items()]
    comparisons = [[n, c.target, ", ".join(c.candidates), ", ".join(s.name for s in c.scenarios),
                    " ".join(c.description.split())] for n, c in m.comparisons.items()]
    return targets, comparisons


def keep(path: Path, want: str, project: Any) -> Kept:
    """Keep ``project`` (the matrix of key ``want``, validated whole) and return what was kept;
    a builds/ that cannot be written: validated whole next time."""
    targets, comparisons = rows_of(project)
    kept = Kept(targets, comparisons, [u.kept() for u in project.uses])
    if want:
        with contextlib.suppress(OSError):
            files.write_json_atomic(path, {
                "version": CACHE_VERSION, "key": want, "facts": project.facts,
                "targets": targets, "comparisons": comparisons, "uses": kept.uses})
    return kept
