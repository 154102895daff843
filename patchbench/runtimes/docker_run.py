"""runc measured one level up, through Docker (the ``docker-run`` runtime): ``docker run --runtime
pb-<variant> IMAGE true`` against a dockerd of patchbench's own with every variant's runc
registered. Before anything is measured, the registered runtimes must be exactly those binaries,
each with its manifest's sha256; the image is a busybox made here. The engine, image and runtimes
go into results.json, and teardown lists anything that outlived the engine. docs/docker.md."""

from __future__ import annotations

import contextlib
import os
import platform
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchbench.config import Comparison, Project, Target
from patchbench.docker import engine as engines
from patchbench.docker import images
from patchbench.errors import BenchmarkError, RequirementError
from patchbench.util import cmd
from patchbench.util.files import sha256_file
from patchbench.util.progress import say

if TYPE_CHECKING:
    from patchbench.runtimes import VariantBuild

PREFIX = "pb-"  # registered runtime names: pb-<variant>
STATE_DIRNAME = "docker-run"
RUNC_ARTIFACT = "runc"


def runtime_name(variant: str) -> str:
    return f"{PREFIX}{variant}"


def add_runtime_args(variants: Sequence[VariantBuild]) -> list[str]:
    """dockerd's ``--add-runtime pb-<variant>=<path>`` for every variant (absolute paths)."""
    return [f"--add-runtime={runtime_name(v.name)}={(v.bin_dir / RUNC_ARTIFACT).absolute()}"
            for v in variants]


def check_binaries(variants: Sequence[VariantBuild]) -> dict[str, dict[str, str]]:
    """Each variant's runc against its manifest's sha256; raise BenchmarkError listing every
    mismatch. Returns pb-<variant> -> {variant, path, sha256}."""
    out: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for v in variants:
        path = (v.bin_dir / RUNC_ARTIFACT).absolute()
        want = str(v.artifacts.get(RUNC_ARTIFACT, {}).get("sha256", ""))
        if not path.is_file():
            problems.append(f"{v.name}: {path} does not exist")
            continue
        got = sha256_file(path)
        if not want:
            problems.append(f"{v.name}: the build manifest records no sha256 for {RUNC_ARTIFACT}")
        elif got != want:
            problems.append(f"{v.name}: {path} has sha256 {got[:16]}…, its manifest says "
                            f"{want[:16]}…")
        out[runtime_name(v.name)] = {"variant": v.name, "path": str(path), "sha256": got}
    if problems:
        raise BenchmarkError(
            "the runc binaries to register with dockerd do not match their builds; nothing was "
            "measured", detail="\n".join(problems),
            hint="rebuild (remove the build directory named above) so binary and manifest agree")
    return out


def check_registered(info: dict[str, Any], expected: dict[str, dict[str, str]]) -> None:
    """The engine's ``docker info`` Runtimes must name each pb-<variant> with the expected path."""
    have = info.get("Runtimes") or {}
    problems = []
    for name, rec in expected.items():
        path = (have.get(name) or {}).get("path")
        if path != rec["path"]:
            problems.append(f"{name}: engine has {path or 'nothing'}, expected {rec['path']}")
    if problems:
        raise BenchmarkError("dockerd did not register the variants' runc as asked",
                             detail="\n".join(problems))


class DockerRunRuntime:
    name = "docker-run"

    def __init__(self, state: Path | None = None):
        self.state_fixed = state
        self.state: Path | None = state
        self.token = secrets.token_hex(3)
        self.workdir: Path | None = None
        self.variants: list[VariantBuild] = []
        self.registered: dict[str, dict[str, str]] = {}
        self.image: images.Image | None = None
        self.engine: engines.Engine | None = None
        self._stack: contextlib.ExitStack | None = None
        self.closed = False
        self.dry_image = "<busybox image ID>"  # --dry-run: the ID the image will have

    # --- checks and setup ----------------------------------------------------------------

    def check(self, project: Project, comparison: Comparison, target: Target) -> None:
        problems, hints = [], []
        if platform.system() != "Linux":
            problems.append("Linux")
        if os.geteuid() != 0:
            problems.append("root (patchbench starts its own dockerd)")
            hints.append("run as root: sudo -E invoke compare ...")
        for tool, hint in (("dockerd", engines.INSTALL_HINT), ("docker", engines.INSTALL_HINT),
                           ("busybox", "apt-get install -y busybox-static")):
            if shutil.which(tool) is None:
                problems.append(tool)
                hints.append(hint)
        if problems:
            raise RequirementError("docker-run comparisons need " + ", ".join(problems),
                                   hint="; ".join(dict.fromkeys(hints)) or None)

    def _state_for(self, workdir: Path) -> Path:
        # <builds>/runs/<run> -> <builds>/docker-run: one engine state for every run, so an
        # engine a killed run left is found and removed by the next one
        return self.state_fixed or workdir.parent.parent / STATE_DIRNAME

    def prepare(
        self, workdir: Path, project: Project, comparison: Comparison, dry_run: bool,
        bin_dir: Path | None = None, variants: Sequence[VariantBuild] = (),
    ) -> None:
        self.workdir = workdir
        self.state = self._state_for(workdir)
        self.variants = list(variants)
        if dry_run:
            with contextlib.suppress(RequirementError, OSError):  # no busybox: shown as such
                self.dry_image = images.busybox_image_id(Path(tempfile.gettempdir()))
            return
        if not self.variants:
            raise BenchmarkError("docker-run needs the built variants to register with dockerd")
        self.registered = check_binaries(self.variants)
        say("registering with patchbench's own dockerd: " + ", ".join(
            f"{n} (sha256 {r['sha256'][:12]})" for n, r in self.registered.items()))
        stack = contextlib.ExitStack()
        try:
            self.engine = stack.enter_context(engines.own_dockerd(
                self.state, extra_args=add_runtime_args(self.variants)))
            with engines.sdk_errors("ask the Docker engine for its runtimes", BenchmarkError):
                info = self.engine.client.info()
            check_registered(info, self.registered)
            self.registered = check_binaries(self.variants)  # unchanged while the engine started
            self.image = images.ensure_busybox(self.engine, self.state / "images")
            say(f"image {self.image.id[:19]} (busybox), engine {self.engine.version.get('engine')}")
        except BaseException:
            stack.close()
            self.engine = None
            raise
        self._stack = stack

    # --- placeholders ----------------------------------------------------------------------

    def placeholders(self, variant: str, bin_dir: Path) -> dict[str, str]:
        state = self.state or Path("<builds>") / STATE_DIRNAME
        return {
            "docker": shutil.which("docker") or "docker",
            "host": self.engine.host if self.engine else engines.own_host(state),
            "image": self.image.id if self.image else self.dry_image,
            "runtime": runtime_name(variant),
            "id": f"pb-{self.token}-{variant}",
        }

    # --- teardown --------------------------------------------------------------------------

    def _containers(self, variant: str | None) -> list[Any]:
        """Containers of this engine (all are patchbench's), of one variant's runtime or all."""
        if self.engine is None:
            return []
        with engines.sdk_errors("list the engine's containers", BenchmarkError):
            found = self.engine.client.containers.list(all=True)
        if variant is None:
            return list(found)
        want = runtime_name(variant)
        return [c for c in found if (c.attrs.get("HostConfig") or {}).get("Runtime") == want]

    def cleanup(self, variant: str, bin_dir: Path) -> list[str]:
        removed = []
        for c in self._containers(variant):
            with contextlib.suppress(Exception):
                c.remove(force=True)
            removed.append(f"container {c.name} ({runtime_name(variant)})")
        return removed

    def close(self) -> None:
        """Remove any container left, stop the engine (own_dockerd also kills shims and
        unmounts what it left), idempotently."""
        stack, self._stack = self._stack, None
        if stack is None:
            return
        try:
            for c in self._containers(None):
                with contextlib.suppress(Exception):
                    c.remove(force=True)
        finally:
            self.engine = None
            stack.close()
            self.closed = True

    def leftovers(self, variant: str, bin_dir: Path) -> list[str]:
        """While the engine runs: the variant's containers. After ``close``: every process
        (dockerd, containerd, shim, runc) and mount of the engine that outlived it."""
        if self.engine is not None:
            return [f"container {c.name}" for c in self._containers(variant)]
        if not self.closed or self.state is None:
            return []
        procs, mounts = engines.leftovers(self.state)
        return [f"process {pid}: {_cmdline(pid)}" for pid in procs] + [f"mount {m}" for m in mounts]

    # --- what results.json and --dry-run show ------------------------------------------------

    def record(self) -> dict[str, Any] | None:
        if self.engine is None and self.image is None:
            return None
        cli = cmd.run([shutil.which("docker") or "docker", "--version"], check=False,
                          timeout=30).stdout.strip()
        return {
            "name": self.name,
            "engine": {**(self.image.engine if self.image else {}), "cli": cli},
            "image": {"ref": self.image.ref, "id": self.image.id,
                      "packages": ", ".join(self.image.packages)} if self.image else {},
            "registered": self.registered,
        }

    def plan_notes(self) -> list[str]:
        state = self.state or Path("<builds>") / STATE_DIRNAME
        argv = engines.dockerd_argv(shutil.which("dockerd") or "dockerd", state,
                                    add_runtime_args(self.variants))
        lines = [
            "check: sha256 of every variant's bin/runc equals its build manifest's (else refuse)",
            f"engine: {cmd.quote(argv)}",
            "check: `docker info` lists every pb-<variant> with that path; sha256 checked again",
            "image: one-layer busybox (the host's static busybox, fixed dates) written as a "
            f"`docker save` archive and loaded (`docker load`) under {state / 'images'}; "
            "its image ID is recorded",
        ]
        lines += [f"runtime {runtime_name(v.name)} = {(v.bin_dir / RUNC_ARTIFACT).absolute()}"
                  for v in self.variants]
        lines += [
            "after: `docker rm -f` of any container left, SIGTERM dockerd (then its process "
            "group), kill stale shims, unmount what it left; check no process or mount remains",
        ]
        return lines


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "(gone)"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200]
