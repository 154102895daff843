"""Where a command runs: the small interface a build backend gives the toolchain fingerprint, so
the fingerprint is taken where the build runs (the host, or inside the build image)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from patchbench import command
from patchbench.errors import CommandError, PatchbenchError
from patchbench.files import sha256_file


class Runner(Protocol):
    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None = None,
        timeout: float = 600.0, check: bool = True, error: type[PatchbenchError] = CommandError,
        what: str | None = None,
    ) -> command.Result: ...

    def sha256(self, path: str, env: Mapping[str, str]) -> str:
        """sha256 of a file where the commands run."""
        ...

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        """The real path of ``tool`` as found on PATH where the commands run."""
        ...


class HostRunner:
    """Commands on this machine, through patchbench.command."""

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None = None,
        timeout: float = 600.0, check: bool = True, error: type[PatchbenchError] = CommandError,
        what: str | None = None,
    ) -> command.Result:
        return command.run(list(argv), env=env, cwd=cwd, timeout=timeout, check=check, error=error,
                           what=what)

    def sha256(self, path: str, env: Mapping[str, str]) -> str:
        return sha256_file(Path(path))

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        return str(Path(command.which(tool)).resolve())


HOST = HostRunner()
