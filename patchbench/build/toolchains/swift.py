"""Swift/Xcode on macOS: the fingerprint comes from ``swift --version`` and
``xcodebuild -version`` (and any extra commands the target names)."""

from __future__ import annotations

import platform
from typing import Any

from patchbench.build.toolchains.runner import Runner
from patchbench.config import SwiftToolchain, Target
from patchbench.errors import RequirementError, ToolchainError


def env(tc: SwiftToolchain) -> dict[str, str]:
    return {}


def describe(tc: SwiftToolchain) -> str:
    return f"swift {tc.version}"


def fingerprint(target: Target, tc: SwiftToolchain, env: dict[str, str], runner: Runner,
                recorded: dict[str, str]) -> dict[str, Any]:
    if runner.where == "host" and platform.system() != "Darwin":
        raise RequirementError(
            f"the Swift toolchain ({tc.version}) builds only on macOS here",
            hint="run this build on a Mac with Apple silicon, macOS 15 or newer, and Xcode",
        )
    swift = runner.run(["swift", "--version"], env=env).stdout.strip()
    xcode = runner.run(["xcodebuild", "-version"], env=env).stdout.strip()
    if tc.version not in swift:
        raise ToolchainError(f"matrix.yaml pins Swift {tc.version}, but swift says {swift!r}")
    extra = {name: runner.run(argv, env=env).stdout.strip() for name, argv in tc.fingerprint.items()}
    return {"kind": "swift", "swift": swift, "xcode": xcode, "extra": extra}
