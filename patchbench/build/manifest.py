"""The build manifest (``manifest.json`` beside every build, and ``manifest-<variant>.json`` in a
run folder), typed: what a build records about its source, patches, toolchain and artifacts."""

from __future__ import annotations

from typing import Any, Required, TypedDict


class ArtifactRecord(TypedDict, total=False):
    """One built file: its path in the build, sha256 and size."""

    path: str
    sha256: Required[str]
    bytes: int


class Manifest(TypedDict, total=False):
    """Every key ``build`` writes; ``Required`` ones every reader relies on."""

    schema_version: int
    target: Required[str]
    url: str
    fetched_from: str
    ref: str
    commit: str
    built_commit: Required[str]
    pinned_commit: str
    toolchain_source: str
    variant: str
    series: Required[list[dict[str, Any]]]
    overlays: list[dict[str, Any]]
    submodules: list[dict[str, Any]]
    fingerprint: Required[dict[str, Any]]
    recipe: dict[str, Any]
    built_in: str
    layout: dict[str, Any]  # a layout-only rebuild (compare --aa-layout): its flags
    cache_key: str
    duration_s: float
    artifacts: Required[dict[str, ArtifactRecord]]
    version_output: str
    log: str
    built_at: str
    cache_check: dict[str, Any]  # a cached build: the re-hash before it was used
