"""The base of every validated model: unknown keys are refused, values are frozen."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from patchbench.util.names import NAME_RE as NAME_RE  # re-exported: the models' rule

Name = Annotated[str, Field(pattern=NAME_RE)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              defer_build=True)
