"""Where a toolchain's fingerprint is taken: the place the build runs. A build backend hands the
toolchain a ``Runner``; the host's runs commands here, a container backend's runs them in the
build image, so a build records the compiler it was really built with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from patchbench.errors import PatchbenchError, ToolchainError
from patchbench.util import command
from patchbench.util.files import sha256_file


class Runner(Protocol):
    where: str  # "host", or the image the build runs in

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            what: str | None = None, error: type[PatchbenchError] = ToolchainError,
            ) -> command.Result:
        """Run ``argv`` where the build runs; raise ``error`` on failure."""

    def sha256(self, path: str) -> str:
        """sha256 of a file where the build runs."""

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        """The real path of ``tool`` on the build's PATH (symlinks followed)."""


class HostRunner:
    where = "host"

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            what: str | None = None, error: type[PatchbenchError] = ToolchainError,
            ) -> command.Result:
        return command.run(list(argv), env=env, timeout=timeout, error=error, what=what)

    def sha256(self, path: str) -> str:
        return sha256_file(Path(path))

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        return str(Path(command.which(tool)).resolve())
