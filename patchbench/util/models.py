"""The base of every validated model: unknown keys are refused, values are frozen."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# the one rule for the names matrix.yaml gives (targets, comparisons, series, candidates,
# scenarios)
NAME_RE = r"^[a-z0-9][a-z0-9._-]*$"
Name = Annotated[str, Field(pattern=NAME_RE)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

