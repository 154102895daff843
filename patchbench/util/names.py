"""The one rule for the names matrix.yaml gives (targets, comparisons, series, candidates,
scenarios), without pydantic: what reads a kept file in a command that imports no model uses it
too (util/validated.py)."""

NAME_RE = r"^[a-z0-9][a-z0-9._-]*$"
