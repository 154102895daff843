"""Where a toolchain's fingerprint is taken: the place the build runs. A build backend hands the
toolchain a ``Runner``; the host's runs commands here, a container backend's runs them in the
build image, so a build records the compiler it was really built with."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from patchbench.errors import PatchbenchError, ToolchainError
from patchbench.util import cmd, ownership
from patchbench.util.files import is_sha256, sha256_file, write_json_atomic


class Runner(Protocol):
    where: str  # "host", or the image the build runs in

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            what: str | None = None, error: type[PatchbenchError] = ToolchainError,
            ) -> cmd.Result:
        """Run ``argv`` where the build runs; raise ``error`` on failure."""

    def sha256(self, path: str) -> str:
        """sha256 of a file where the build runs."""

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        """The real path of ``tool`` on the build's PATH (symlinks followed)."""


class HostRunner:
    where = "host"

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            what: str | None = None, error: type[PatchbenchError] = ToolchainError,
            ) -> cmd.Result:
        return cmd.run(list(argv), env=env, timeout=timeout, error=error, what=what)

    def sha256(self, path: str) -> str:
        return sha256_file(Path(path))

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        return str(Path(cmd.which(tool)).resolve())


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class StatCachedRunner:
    """A host runner whose ``sha256`` of a toolchain binary is kept in ``cache`` (a JSON file)
    with the binary's device, inode, size, mtime and ctime, and re-hashed when any of them
    changed (a replaced, rebuilt or touched binary); the commands still run every time. A cache
    that cannot be read is ignored, one that cannot be written is skipped: the hash is then taken
    again next time, never wrong. Only the host's files: a build image's are hashed in it."""

    def __init__(self, runner: Runner, cache: Path) -> None:
        self.runner, self.cache, self.where = runner, cache, runner.where
        self._entries: dict[str, Any] | None = None

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            what: str | None = None, error: type[PatchbenchError] = ToolchainError,
            ) -> cmd.Result:
        return self.runner.run(argv, env=env, timeout=timeout, what=what, error=error)

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        return self.runner.resolve(tool, env)

    def _load(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = {}
            with contextlib.suppress(OSError, ValueError):  # untrusted: no link, bounded
                data = ownership.read_kept(self.cache, 4 << 20)
                if isinstance(data, dict):
                    self._entries = data
        return self._entries

    def sha256(self, path: str) -> str:
        try:
            before = _stat_key(os.stat(path))
        except OSError:
            return self.runner.sha256(path)  # its own error, as without a cache
        entries = self._load()
        hit = entries.get(path)
        if isinstance(hit, dict) and hit.get("stat") == before and is_sha256(hit.get("sha256")):
            return str(hit["sha256"])
        digest = self.runner.sha256(path)
        try:
            after = _stat_key(os.stat(path))
        except OSError:
            return digest
        if after == before:  # not changed while it was read
            entries[path] = {"stat": after, "sha256": digest}
            if self.cache.parent.is_dir():  # never creates builds/ (a dry run makes none)
                with contextlib.suppress(OSError):
                    write_json_atomic(self.cache, entries)
        return digest
