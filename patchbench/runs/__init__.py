"""Saved runs: the store, diff, merge, export and the CI job summary.

Every module here reads results.json, whose scenario entries are read by each kind's registered
result model; importing this package imports the registry (patchbench.scenarios) first."""

from patchbench import scenarios as _registry  # noqa: F401  (registers every kind)
