"""``list``: the targets and comparisons of a matrix, validated whole, without the validation's
cost when nothing it read has changed.

Validating matrix.yaml builds the config model of every scenario kind it names (pydantic, and with
the kinds their measuring code: about 0.25 s). ``list`` prints only names and a few fields, so it
keeps what it printed in ``builds/matrix-listing.json`` with everything the validation read: the
matrix's path and bytes, patchbench's code (the path, size and mtime of every module), pydantic's
and Python's versions, and the file-system facts ``config.load`` relied on (util/facts.py). When
all of these are unchanged the rows are printed from there; otherwise the matrix is validated as
always (an error is an error, and nothing is kept) and the rows are kept again. The file is read
as untrusted input: a regular file, never through a link, bounded, of a known shape, and as root
owned by root and writable by no one else (the rule builds/ is held to); anything else is
ignored and the matrix is validated.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import TypeGuard

from patchbench.util import files, ownership
from patchbench.util.facts import code_key, holds
from patchbench.util.workspace import Workspace

CACHE_VERSION = 1
MAX_CACHE_BYTES = 1 << 20
TARGET_HEADERS = ["target", "url", "ref", "commit", "toolchain", "requires"]
COMPARISON_HEADERS = ["comparison", "target", "candidates", "scenarios", "description"]

Rows = list[list[str]]


def key(matrix: Path, raw: bytes) -> str:
    h = hashlib.sha256()
    h.update(f"patchbench list {CACHE_VERSION}\0{matrix.resolve()}\0".encode())
    h.update(raw)
    code_key(h)
    return h.hexdigest()


def _is_rows(value: object, width: int) -> TypeGuard[Rows]:
    return isinstance(value, list) and all(
        isinstance(row, list) and len(row) == width and all(isinstance(x, str) for x in row)
        for row in value)


def _trusted(path: Path) -> bool:
    """As root: the kept file and its folder are owned by root (or $SUDO_UID) and writable by no
    one else (util/ownership.py, the rule builds/ is held to)."""
    trust = ownership.Trust.from_environment()
    return all(ownership.problem(p, os.lstat(p), trust) is None for p in (path.parent, path))


def cached(path: Path, want: str) -> tuple[Rows, Rows] | None:
    """The rows kept under ``want`` (the key), if the file is sound and its facts still hold."""
    try:
        if os.geteuid() == 0 and not _trusted(path):
            return None  # another user could have written it: validate
        data = json.loads(files.read_regular(path, MAX_CACHE_BYTES).decode("utf-8"))
    except (OSError, ValueError):  # missing, a link, too large, not UTF-8 JSON: validate
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or \
            data.get("key") != want or not isinstance(data.get("facts"), list):
        return None
    targets, comparisons = data.get("targets"), data.get("comparisons")
    if not _is_rows(targets, len(TARGET_HEADERS)) or \
            not _is_rows(comparisons, len(COMPARISON_HEADERS)):
        return None
    if not all(holds(f) for f in data["facts"]):
        return None
    return targets, comparisons


def rows(ws: Workspace) -> tuple[Rows, Rows]:
    """The rows of the two tables: kept ones, or from the matrix validated whole."""
    try:
        raw = files.read_regular(ws.matrix, MAX_CACHE_BYTES * 4)
        want = key(ws.matrix, raw)
    except (OSError, ValueError):
        raw, want = None, ""
    store = ws.layout.listing_cache
    found = cached(store, want) if raw is not None else None
    if found is not None:
        return found
    from patchbench import config, scenarios  # noqa: F401  (a matrix is read with the kinds)

    project = config.load(ws.matrix, raw=raw)
    m = project.matrix
    targets = [[n, t.url, t.ref, t.commit[:12], f"{t.toolchain.kind} {t.toolchain.version}",
                ", ".join(t.requires) or "-"] for n, t in m.targets.items()]
    comparisons = [[n, c.target, ", ".join(c.candidates), ", ".join(s.name for s in c.scenarios),
                    " ".join(c.description.split())] for n, c in m.comparisons.items()]
    if raw is not None:
        # the bytes validated, kept; a builds/ that cannot be written: validated next time
        with contextlib.suppress(OSError):
            files.write_json_atomic(store, {
                "version": CACHE_VERSION, "key": want, "facts": project.facts,
                "targets": targets, "comparisons": comparisons})
    return targets, comparisons
