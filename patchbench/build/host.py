"""The host backend: the recipe's commands run on this machine, in the patched tree, with the
allowlisted environment, each in namespaces of its own where the machine allows it, so that it
cannot read patchbench's environment nor, unless the recipe asks for it, reach the network
(util/sandbox.py)."""

from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Any

from patchbench.build.toolchains import HostRunner, Runner
from patchbench.config import BuildRecipe
from patchbench.errors import BuildError
from patchbench.util import cmd, sandbox


class HostBackend:
    name = "host"

    def runner(self, recipe: BuildRecipe) -> Runner:
        return HostRunner()

    def describe(self, recipe: BuildRecipe) -> dict[str, Any]:
        return {"backend": "host", "system": platform.system(), "machine": platform.machine()}

    def run_recipe(
        self, tree: Path, recipe: BuildRecipe, env: dict[str, str], log: Path, what: str
    ) -> None:
        deadline = time.monotonic() + recipe.timeout
        for argv in recipe.commands:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BuildError(f"{what}: timed out after {recipe.timeout:g} s", detail=f"(log: {log})")
            cmd.run(sandbox.isolated(argv, network=recipe.network), cwd=tree, env=env,
                        log=log, timeout=remaining, error=BuildError, what=what)
