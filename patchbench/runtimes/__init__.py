"""Runtime targets: what a comparison needs around the measured binaries (an OCI bundle and a
state root for runc, the container service for apple/container). Each runtime is one module behind
the ``Runtime`` protocol, listed in ``get``; a target without one measures plain commands.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from patchbench.config import Comparison, Project, Target
from patchbench.errors import RequirementError


@dataclass(frozen=True)
class VariantBuild:
    """One built variant as a runtime sees it: its name, its bin directory and its manifest's
    artifacts (name -> {"sha256": ..., ...})."""

    name: str
    bin_dir: Path
    artifacts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


class Runtime(Protocol):
    name: str

    def check(self, project: Project, comparison: Comparison, target: Target) -> None:
        """Raise RequirementError, before anything is built, when the machine cannot run it."""

    def prepare(
        self, workdir: Path, project: Project, comparison: Comparison, dry_run: bool,
        bin_dir: Path | None = None, variants: Sequence[VariantBuild] = (),
    ) -> None:
        """Create what the scenarios need (bundle, state root) and clean what a killed earlier
        run left behind; ``bin_dir`` holds the baseline's artifacts, ``variants`` every built
        variant (baseline first)."""

    def placeholders(self, variant: str, bin_dir: Path) -> dict[str, str]:
        """Placeholders for a variant's commands, e.g. {runc}, {root}, {bundle}, {id}."""

    def leftovers(self, variant: str, bin_dir: Path) -> list[str]:
        """What is left behind (containers, state, cgroups); empty when clean."""

    def cleanup(self, variant: str, bin_dir: Path) -> list[str]:
        """Remove every instance this run started; return what had to be removed."""

    def close(self) -> None:
        """After every variant's cleanup: stop what prepare started for the whole run (an
        engine); idempotent. ``leftovers`` afterwards says what outlived it."""

    def record(self) -> dict[str, Any] | None:
        """What results.json records about the runtime (engine, image, registered binaries),
        or None."""


@dataclass
class TornDown:
    """What a run's teardown found: per variant, what had to be removed and what is still left;
    the runtime's record of the run; and the steps that failed (kept as warnings, never raised:
    a failing teardown must not lose the measurement, nor skip the other steps)."""

    removed: dict[str, list[str]] = field(default_factory=dict)
    left: dict[str, list[str]] = field(default_factory=dict)
    record: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)


def tear_down(runtime: Runtime, variants: Sequence[tuple[str, Path]]) -> TornDown:
    """cleanup() per variant, record(), close() (an engine for the whole run stops here), then
    leftovers() per variant; each step runs even when an earlier one failed."""
    out = TornDown()

    def attempt(what: str, step: Any) -> Any:
        try:
            return step()
        except Exception as exc:  # any failure is recorded; the other steps still run
            out.problems.append(f"teardown: {what} failed: {exc}")
            return None

    for name, bin_dir in variants:
        out.removed[name] = attempt(f"cleanup of {name}",
                                    lambda n=name, b=bin_dir: runtime.cleanup(n, b)) or []
    out.record = attempt("the runtime's record", runtime.record)
    attempt("stopping the runtime", runtime.close)
    for name, bin_dir in variants:
        out.left[name] = attempt(f"leftover check of {name}",
                                 lambda n=name, b=bin_dir: runtime.leftovers(n, b)) or []
    return out


def check_requirements(target: Target) -> None:
    """The target's declared requirements (linux, macos, apple-silicon, root, cgroups, tools)."""
    system = platform.system()
    missing: list[str] = []
    hints: list[str] = []
    for req in target.requires:
        if req == "linux" and system != "Linux":
            missing.append("Linux")
        elif req == "macos" and system != "Darwin":
            missing.append("macOS")
            hints.append("run it on a Mac (macOS 15 or newer)")
        elif req == "apple-silicon" and not (system == "Darwin" and platform.machine() == "arm64"):
            missing.append("Apple silicon")
        elif req == "root" and os.geteuid() != 0:
            missing.append("root")
            hints.append("run it as root, e.g. sudo -E invoke compare ...")
        elif req == "cgroups" and not Path("/sys/fs/cgroup").is_dir():
            missing.append("cgroups (/sys/fs/cgroup)")
    from patchbench.util import cmd

    for tool in target.tools:
        try:
            cmd.which(tool)
        except RequirementError as exc:
            missing.append(tool)
            if exc.hint:
                hints.append(exc.hint)
    if missing:
        raise RequirementError(
            "this comparison needs " + ", ".join(missing) + f"; this machine is {system} "
            f"{platform.machine()}" + (" as root" if os.geteuid() == 0 else ""),
            hint="; ".join(dict.fromkeys(hints)) or None,
        )


# The runtimes by the name matrix.yaml gives them (``runtime:``); the modules are imported only
# when a comparison uses one. tests/unit/test_runtimes_registry.py checks that these keys are
# exactly the names the config accepts.
REGISTRY: dict[str, tuple[str, str]] = {
    "runc": ("patchbench.runtimes.runc", "RuncRuntime"),
    "docker-run": ("patchbench.runtimes.docker_run", "DockerRunRuntime"),
    "apple-container": ("patchbench.runtimes.apple_container", "AppleContainerRuntime"),
    "containerd": ("patchbench.runtimes.containerd", "ContainerdRuntime"),
}


def get(name: str | None) -> Runtime | None:
    if name is None:
        return None
    if name not in REGISTRY:
        raise RequirementError(f"unknown runtime {name!r} (known: {', '.join(REGISTRY)})")
    import importlib

    module, cls = REGISTRY[name]
    runtime: Runtime = getattr(importlib.import_module(module), cls)()
    return runtime
