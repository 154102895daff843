"""git through the one command wrapper: no hooks from any repository, no inherited GIT_*
variables, no user or system configuration, a fixed identity for commits patchbench makes."""

from __future__ import annotations

import os
from pathlib import Path

from patchbench.errors import PatchbenchError, SourceError
from patchbench.util import command

SNAPSHOT_DATE = "2026-01-01T00:00:00+00:00"
IDENTITY = {
    "GIT_AUTHOR_NAME": "patchbench",
    "GIT_AUTHOR_EMAIL": "patchbench@localhost",
    "GIT_COMMITTER_NAME": "patchbench",
    "GIT_COMMITTER_EMAIL": "patchbench@localhost",
}
GIT_CONFIG = ["-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false"]


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    # no user config either (autocrlf, signing, hooks): the same input gives the same commit
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    if extra:
        env.update(extra)
    return env


def run_git(
    args: list[str],
    *,
    cwd: Path | None = None,
    timeout: float = 600.0,
    env: dict[str, str] | None = None,
    check: bool = True,
    error: type[PatchbenchError] = SourceError,
    what: str | None = None,
    input: str | None = None,
) -> command.Result:
    """git through the one command wrapper: no hooks, no inherited GIT_* variables."""
    return command.run(
        ["git", *GIT_CONFIG, *args], cwd=cwd, timeout=timeout, env=git_env(env), check=check,
        what=what, error=error, input=input,
    )
