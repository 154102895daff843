"""apple/container as a runtime target (Swift, macOS 15+ on Apple silicon).

On any other machine, everything that can run here does (fetch, patch check, the plan), and the
build or measurement stops with one clear message: it needs macOS on Apple silicon.
"""

from __future__ import annotations

import platform
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchbench.config import Comparison, Project, Target
from patchbench.errors import RequirementError
from patchbench.util import cmd

IMAGE = "docker.io/library/alpine:3.20"

if TYPE_CHECKING:
    from patchbench.runtimes import VariantBuild


def on_apple_silicon() -> bool:
    return platform.system() == "Darwin" and platform.machine() == "arm64"


class AppleContainerRuntime:
    name = "apple-container"

    def __init__(self) -> None:
        self.token = secrets.token_hex(3)
        self.workdir: Path | None = None

    def check(self, project: Project, comparison: Comparison, target: Target) -> None:
        if not on_apple_silicon():
            raise RequirementError(
                f"apple/container needs macOS 15 or newer on Apple silicon; this machine is "
                f"{platform.system()} {platform.machine()}",
                hint="the fetch and the patch check ran; run `invoke compare per-vm-lock` on a Mac "
                "(see README: apple/container on a Mac)",
            )

    def prepare(
        self, workdir: Path, project: Project, comparison: Comparison, dry_run: bool,
        bin_dir: Path | None = None, variants: Sequence[VariantBuild] = (),
    ) -> None:
        self.workdir = workdir

    def placeholders(self, variant: str, bin_dir: Path) -> dict[str, str]:
        # the build's install root is kept whole (bin/ and libexec/ with the plugins), so that
        # each variant's `container` finds its own apiserver and plugins
        return {
            "container": str(bin_dir / "bin" / "container"),
            "image": IMAGE,
            "id": f"pb-{self.token}-{variant}",
        }

    def _listed(self, variant: str, bin_dir: Path) -> list[str]:
        if not on_apple_silicon():
            return []  # nothing can have been started here
        res = cmd.run([bin_dir / "bin" / "container", "list", "--all", "--quiet"], timeout=60,
                          check=False)
        prefix = f"pb-{self.token}-{variant}-"
        return [x for x in res.stdout.split() if x.startswith(prefix)]

    def leftovers(self, variant: str, bin_dir: Path) -> list[str]:
        return [f"container {c}" for c in self._listed(variant, bin_dir)]

    def cleanup(self, variant: str, bin_dir: Path) -> list[str]:
        removed = []
        for cid in self._listed(variant, bin_dir):
            cmd.run([bin_dir / "bin" / "container", "delete", "--force", cid], timeout=120,
                        check=False)
            removed.append(f"container {cid}")
        return removed

    def close(self) -> None:
        """The container service is the user's: nothing to stop."""

    def record(self) -> dict[str, Any] | None:
        return None

    def plan_notes(self) -> list[str]:
        return [
            "needs macOS 15+ on Apple silicon with Xcode 26; both builds use one Swift toolchain "
            "(fingerprint: swift --version, xcodebuild -version)",
            "each build is kept as a whole install root (bin/, libexec/ with the plugins); the "
            "scenarios' setup starts that build's own service (`container system start`) around "
            "its runs and the teardown stops it, since only one can run at a time",
            f"pull the image once before measuring: container image pull {IMAGE}",
        ]
