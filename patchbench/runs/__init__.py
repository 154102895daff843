"""Saved runs: the store, diff, merge, export and the CI job summary.

Every module here reads results.json, whose scenario entries are read by each kind's registered
result model; importing this package imports the registry (patchbench.scenarios) first, whose loader
imports the kinds a file holds as it is read."""

from patchbench import scenarios as _registry  # noqa: F401  (installs the kinds' loader)
