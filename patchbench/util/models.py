"""The base of every validated model: unknown keys are refused, values are frozen."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# the one rule for the names matrix.yaml gives (targets, comparisons, series, candidates,
# scenarios). A name becomes a folder, a file name and part of others (a build folder, a
# container id), so its length is bounded here, where it is validated, not by the file system's
# ENAMETOOLONG half-way through a build.
NAME_MAX = 64  # characters
NAME_RE = rf"^[a-z0-9][a-z0-9._-]{{0,{NAME_MAX - 1}}}$"
NAME_RULE = (f"lower case letters, digits, '.', '_', '-', starting with a letter or digit, at "
             f"most {NAME_MAX} characters")
Name = Annotated[str, Field(pattern=NAME_RE)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

