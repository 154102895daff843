"""Saved runs: the store, diff, merge, export and the CI job summary."""
