"""The host backend: the recipe's commands run on this machine, in the patched tree, with the
allowlisted environment, each in the build sandbox (util/sandbox.py, build/sandboxing.py): as the
build's user, seeing the system's folders, its toolchain, its worktree (read-write), its git
repositories and dependency caches (read-only) and its compile caches, and the network only when
the recipe asks for it."""

from __future__ import annotations

import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from patchbench.build import sandboxing
from patchbench.build.toolchains import Runner, SandboxRunner
from patchbench.config import BuildRecipe
from patchbench.errors import BuildError
from patchbench.util import sandbox
from patchbench.util.sandbox import Bind


class HostBackend:
    name = "host"

    def runner(self, recipe: BuildRecipe) -> Runner:
        return SandboxRunner()

    def describe(self, recipe: BuildRecipe) -> dict[str, Any]:
        return {"backend": "host", "system": platform.system(), "machine": platform.machine(),
                **sandbox.describe(recipe.network)}

    def run_recipe(
        self, tree: Path, recipe: BuildRecipe, env: dict[str, str], log: Path, what: str,
        caches: Sequence[Bind] = (),
    ) -> None:
        deadline = time.monotonic() + recipe.timeout
        binds = [*sandboxing.source_binds(tree), *sandboxing.cache_binds(env, compile_caches=caches)]
        for argv in recipe.commands:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BuildError(f"{what}: timed out after {recipe.timeout:g} s", detail=f"(log: {log})")
            sandboxing.run(argv, env=env, cwd=tree, binds=binds, network=recipe.network, log=log,
                           timeout=remaining, error=BuildError, what=what)
