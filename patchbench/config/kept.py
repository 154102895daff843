"""The matrix loaded with its last whole validation kept (util/validated.py): what
``pipeline.load`` hands every command.

``load(matrix, store)`` validates the whole matrix and keeps it in ``store`` (when ``keep``:
a builds/ that exists, no series about to be made). ``load(matrix, store, only=NAME)`` validates
the targets and comparison NAME alone when ``store`` holds a whole validation of these bytes
with this code whose facts still hold; every other comparison's series by target
(``Project.uses``, what fetching a target and checking a series read) then come from ``store``,
and NAME's own, as just validated, must be what ``store`` says of it, or none of ``store`` is
believed and the matrix is validated whole."""

from __future__ import annotations

from pathlib import Path

from patchbench import config
from patchbench.config import Project, SeriesUse
from patchbench.util import validated


def load(matrix: Path, store: Path, *, pending_series: frozenset[str] = frozenset(),
         only: str | None = None, keep: bool = True) -> Project:
    raw, want = validated.matrix_key(matrix)
    kept = None if pending_series else validated.cached(store, want)
    uses = _uses(kept, only)
    project = config.load(matrix, pending_series=pending_series, raw=raw,
                          only=None if uses is None else only)
    if uses is not None and only in project.matrix.comparisons:
        if uses.get(only) == SeriesUse.of(project.comparison(only)):
            project.uses = list(uses.values())  # the others' series, as found when validated
        else:  # a kept file that disagrees with what it claims was validated: believe none of it
            kept, project = None, config.load(matrix, raw=raw)
    if kept is None and keep and not pending_series:
        validated.keep(store, want, project)
    return project


def _uses(kept: validated.Kept | None, only: str | None) -> dict[str, SeriesUse] | None:
    """Every comparison's series by target, by name, from a kept whole validation (None: none
    kept, or no ``only``: the matrix is then validated whole)."""
    if kept is None or only is None:
        return None
    return {row[0]: SeriesUse.from_kept(u)
            for row, u in zip(kept.comparisons, kept.uses, strict=True)}
