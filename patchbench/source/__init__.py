"""Upstream sources: the pinned-commit cache, patch series and overlays, series by reference."""
