"""Every path patchbench writes, in one place: the build cache and scratch space under
``builds/`` and the saved runs under ``reports/``."""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path


def locks_dir(builds: Path) -> Path:
    """Where the locks of one builds/ directory live (shared by every process using it)."""
    return builds / "locks"


@dataclass(frozen=True)
class Layout:
    builds: Path
    reports: Path

    @property
    def sources(self) -> Path:
        """Bare repositories of pinned upstream commits, one per target."""
        return self.builds / "sources"

    def source_repo(self, target: str) -> Path:
        return self.sources / f"{target}.git"

    def artifacts(self, target: str) -> Path:
        """Stamped build directories of a target, one per cache key."""
        return self.builds / "artifacts" / target

    @property
    def tmp(self) -> Path:
        """Scratch space: builds in progress, patch-check worktrees."""
        return self.builds / "tmp"

    @property
    def logs(self) -> Path:
        return self.builds / "logs"

    @property
    def locks(self) -> Path:
        return locks_dir(self.builds)

    @property
    def runs(self) -> Path:
        """One working directory per measurement run (raw hyperfine output, bundles, state)."""
        return self.builds / "runs"

    @property
    def toolchain_hashes(self) -> Path:
        """The toolchain binaries' hashes, by path, with the stat they were taken at."""
        return self.builds / "toolchain-hashes.json"

    @property
    def tools(self) -> Path:
        """Helpers patchbench builds for itself (the burst launcher)."""
        return self.builds / "tools"

    def new_run(self, comparison: str) -> Path:
        """A fresh run directory, created exclusively: two runs never share one (it will hold
        the run's complete results)."""
        self.runs.mkdir(parents=True, exist_ok=True)
        while True:
            path = self.runs / (f"{comparison}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-"
                                f"{secrets.token_hex(2)}")
            try:
                path.mkdir()
            except FileExistsError:
                continue
            return path

    def dry_run(self, comparison: str) -> Path:
        return self.runs / f"{comparison}-DRYRUN"

    def comparison_reports(self, comparison: str) -> Path:
        return self.reports / comparison
