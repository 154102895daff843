"""The base of every validated model: unknown keys are refused, values are frozen."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

# the one rule for the names matrix.yaml gives (targets, comparisons, series, candidates,
# scenarios)
NAME_RE = r"^[a-z0-9][a-z0-9._-]*$"
Name = Annotated[str, Field(pattern=NAME_RE)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              defer_build=True)


# A field's empty default, made by these rather than by the builtins list and dict: pydantic
# inspects every default factory's signature when it builds a model, and a builtin's signature
# is parsed from its text by the tokenizer (about 19 ms per comparison, 13 of them compiling the
# tokenizer's pattern; issue 21). tests/unit/test_models_cost.py keeps builtins out.
def new_list() -> list[Any]:
    """A new empty list (a field's default)."""
    return []


def new_dict() -> dict[Any, Any]:
    """A new empty dict (a field's default)."""
    return {}
