"""git through the one command wrapper, with a configuration patchbench controls: no hooks from
any repository, no inherited GIT_* variables, no user or system configuration or attributes, no
replace refs, no commit-graph, no fsmonitor, only the transports safeargs allows, and a fixed
identity for commits patchbench makes. A repository's own config is still read by git, so the
source cache refuses one holding any key patchbench did not write (source/integrity.py)."""

from __future__ import annotations

import os
from pathlib import Path

from patchbench.errors import PatchbenchError, SourceError
from patchbench.util import cmd, safeargs

SNAPSHOT_DATE = "2026-01-01T00:00:00+00:00"
IDENTITY = {
    "GIT_AUTHOR_NAME": "patchbench",
    "GIT_AUTHOR_EMAIL": "patchbench@localhost",
    "GIT_COMMITTER_NAME": "patchbench",
    "GIT_COMMITTER_EMAIL": "patchbench@localhost",
}
GIT_CONFIG = [
    "-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false",
    # a repository's own fsmonitor command, and a commit-graph that could name another tree for
    # a commit than its (hashed) object does, are never used; attributes come from the tree only
    "-c", "core.fsmonitor=false", "-c", "core.commitGraph=false",
    "-c", f"core.attributesFile={os.devnull}",
    *safeargs.GIT_TRANSPORTS,
]


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    # no user config either (autocrlf, signing, hooks): the same input gives the same commit
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_ATTR_NOSYSTEM"] = "1"
    env["GIT_NO_REPLACE_OBJECTS"] = "1"  # refs/replace/ never swaps an object (as --no-replace-objects)
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
) -> cmd.Result:
    """git through the one command wrapper, configured as this module says."""
    return cmd.run(
        ["git", *GIT_CONFIG, *args], cwd=cwd, timeout=timeout, env=git_env(env), check=check,
        what=what, error=error, input=input,
    )
