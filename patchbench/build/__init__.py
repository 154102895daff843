"""Builds: one pinned commit, one patch series per variant, one toolchain, a cache keyed by
(commit, series content, overlay content, toolchain fingerprint, recipe).

A build happens in a temporary directory and is renamed into place, then stamped; an entry without
its stamp is an interrupted build and is removed, never used. Backends (where the recipe runs) are
modules behind the small ``Backend`` protocol, named in ``BACKEND_CLASSES`` and made on first use
(``backend``: a host build does not import the docker backend and its engine and image code); a
backend owns the place the build runs, so the toolchain fingerprint is taken through its ``Runner``.
"""

from __future__ import annotations

import errno
import hashlib
import importlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from patchbench import redact
from patchbench.build import cache_verify, toolchains
from patchbench.build.manifest import Manifest
from patchbench.build.toolchains import LayoutChange, Runner
from patchbench.config import BuildRecipe, NamedTarget, Project, Target
from patchbench.errors import BuildError, ToolchainError
from patchbench.source import cache as source
from patchbench.source import patching
from patchbench.source import submodules as gitmodules
from patchbench.source.patching import Overlay, Series
from patchbench.util import cleanup, cmd, locks, progress, sandbox
from patchbench.util.files import sha256_file, tree_digest, write_json_atomic
from patchbench.util.layout import Layout

if TYPE_CHECKING:
    from patchbench.build.docker import DockerBackend

MANIFEST_SCHEMA = 1
STAMP = "COMPLETE"


class Backend(Protocol):
    name: str

    def runner(self, recipe: BuildRecipe) -> Runner:
        """Runs commands where this backend builds (for the toolchain fingerprint)."""

    def run_recipe(
        self, tree: Path, recipe: BuildRecipe, env: dict[str, str], log: Path, what: str
    ) -> None:
        """Run the recipe's commands in the patched tree; raise BuildError on failure."""

    def describe(self, recipe: BuildRecipe) -> dict[str, Any]:
        """What the manifest records about where the build ran."""


# every backend: its name (a target's build.backend) and its class, as module:class
BACKEND_CLASSES = {
    "host": "patchbench.build.host:HostBackend",
    "docker": "patchbench.build.docker:DockerBackend",
}
BACKENDS: dict[str, Backend] = {}  # the ones made in this process, by name


def backend(name: str) -> Backend:
    """The backend ``name`` (one of BACKEND_CLASSES: the config validated it), made once."""
    made = BACKENDS.get(name)
    if made is None:
        module, _, cls = BACKEND_CLASSES[name].partition(":")
        made = BACKENDS[name] = getattr(importlib.import_module(module), cls)()
    return made


def close_backends() -> None:
    """Stop what the backends made in this process started (patchbench's own dockerd)."""
    for made in list(BACKENDS.values()):
        close = getattr(made, "close", None)
        if close is not None:
            close()


@dataclass(frozen=True)
class Variant:
    """A variant is (commit, series): ``commit`` None is the target's pinned commit; another
    commit of the target (a bisect step, a history point) is built with the target's pinned
    toolchain, and its manifest says so (``toolchain_source``)."""

    name: str  # "baseline" or the candidate's name
    series: tuple[str, ...]
    commit: str | None = None
    # a second build differing in code layout only (compare --aa-layout): its own cache entry
    layout: LayoutChange | None = None


@dataclass
class Built:
    variant: Variant
    path: Path  # the stamped build directory
    manifest: Manifest
    cached: bool

    @property
    def bin(self) -> Path:
        return self.path / "bin"


@dataclass
class BuildPlan:
    """Everything shared by the variants of one target: checkout, env and fingerprint."""

    project: Project
    target_name: str
    target: Target
    checkout: source.Checkout
    layout: Layout
    overlays: list[Overlay] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    submodules: list[gitmodules.Pinned] = field(default_factory=list)  # gitlinks, fetched

    @classmethod
    def prepare(
        cls,
        project: Project,
        named: NamedTarget,
        checkout: source.Checkout,
        layout: Layout,
        overlays: list[Overlay],
        submodules: list[gitmodules.Pinned] | None = None,
    ) -> BuildPlan:
        target = named.spec
        env = toolchains.build_env(target, checkout.commit_epoch())
        where = backend(target.build.backend)
        docker = cast("DockerBackend", where) if target.build.backend == "docker" else None
        if docker is not None:  # its image, state under builds/
            from patchbench.build.docker import container_env

            image = docker.bind(target, layout.builds)
            env = container_env(env, image.path)  # what the container gets
        runner = where.runner(target.build)
        if isinstance(runner, toolchains.HostRunner):  # hashes of unchanged binaries, kept
            runner = toolchains.StatCachedRunner(runner, layout.toolchain_hashes)
        fp = toolchains.fingerprint(target, env, runner)
        if docker is not None:
            fp.update(docker.fingerprint_extra(target))  # the image ID: same for all variants
        return cls(project, named.name, target, checkout, layout, overlays, env, fp,
                   list(submodules or []))

    def at(self, commit: str) -> BuildPlan:
        """This plan at another commit of the same target (in the same source cache): the
        pinned toolchain (its fingerprint, taken once), the environment of that commit (its
        SOURCE_DATE_EPOCH, recorded in the fingerprint's env). The cache key holds the commit."""
        if commit == self.checkout.commit:
            return self
        checkout = replace(self.checkout, commit=commit, ref=commit)
        epoch = str(checkout.commit_epoch())
        env = {**self.env, "SOURCE_DATE_EPOCH": epoch}
        fp = dict(self.fingerprint)
        if isinstance(fp.get("env"), dict):
            fp["env"] = {**fp["env"], "SOURCE_DATE_EPOCH": epoch}
        return replace(self, checkout=checkout, env=env, fingerprint=fp)

    def key(self, series: list[Series], layout: LayoutChange | None = None) -> str:
        material: dict[str, Any] = {
            "commit": self.checkout.commit,
            "series": [s.digest for s in series],
            "overlays": [o.digest for o in self.overlays],
            "fingerprint": self.fingerprint,
            "recipe": redact.tree(self.target.build.model_dump(mode="json")),  # no credential
            "toolchain": self.target.toolchain.model_dump(mode="json"),
        }
        if self.submodules:  # where each came from (an override) and what was omitted
            material["submodules"] = [p.record() for p in self.submodules]
        if layout is not None:  # a layout build is its own entry (no key changes without one)
            material["layout"] = layout.key()
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.name


def build_variant(plan: BuildPlan, variant: Variant) -> Built:
    if variant.commit is not None:
        plan = plan.at(variant.commit)
    series = [patching.load_series(plan.project.root, name) for name in variant.series]
    key = plan.key(series, variant.layout)
    final = plan.layout.artifacts(plan.target_name) / key[:20]
    with locks.locked(plan.layout.locks, f"build-{key[:20]}"):
        if final.exists():  # every artifact is hashed again before a cached build is used
            verdict = cache_verify.verify_entry(final)
            if verdict.ok and verdict.manifest is not None:
                progress.say(f"{plan.target_name}/{variant.name}: cached ({final}; every artifact "
                             "hashed again)")
                return Built(variant, final, cast(Manifest, {**verdict.manifest,
                                                             "cache_check": verdict.record()}),
                             cached=True)
            if (final / STAMP).is_file():  # a complete entry that changed since: say how
                progress.say(f"warning: the cached build of {plan.target_name}/{variant.name} "
                             f"({final.name}) is {verdict.summary()}; rebuilding it")
            shutil.rmtree(final)  # an interrupted, partial or tampered build is never used
        return _build(plan, variant, series, key, final)


def _build(plan: BuildPlan, variant: Variant, series: list[Series], key: str, final: Path) -> Built:
    tmp_root = plan.layout.tmp
    tmp_root.mkdir(parents=True, exist_ok=True)
    logs = plan.layout.logs
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{plan.target_name}-{variant.name}-{key[:12]}.log"
    log.write_text("")
    label = f"{plan.target_name}/{variant.name}"
    progress.say(f"building {label} at {plan.checkout.commit[:12]} (log: {log})")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"{key[:12]}-{cleanup.owner_tag()}-",
                                     dir=tmp_root) as tmp_s:
        tmp = Path(tmp_s)
        tree = tmp / "src"
        out = tmp / "out"
        source.add_worktree(plan.checkout, tree, plan.layout.builds)
        added: list[gitmodules.Pinned] = []
        try:
            epoch = plan.checkout.commit_epoch()
            patching.apply_series(tree, series, epoch)
            patching.apply_overlays(tree, plan.overlays, epoch)
            if plan.submodules:
                gitmodules.check_unchanged(tree, plan.submodules, plan.target_name)
                added = gitmodules.add_worktrees(plan.submodules, tree, plan.layout.builds)
            head = source.run_git(["rev-parse", "HEAD"], cwd=tree).stdout.strip()
            fp = dict(plan.fingerprint)
            hashes = toolchains.source_hashes(tree)
            if hashes:
                fp["sources"] = hashes
            where = backend(plan.target.build.backend)
            with progress.BuildTicker(label, log):  # elapsed time and the log's last line
                env, tree_fp = plan.env, plan.fingerprint
                if variant.layout is not None:  # its flags; a cargo target dir of its own
                    env = variant.layout.apply(env)
                    tree_fp = {**tree_fp, "layout": variant.layout.key()}
                env = toolchains.tree_env(plan.target, env, tree, plan.layout.builds, tree_fp)
                with toolchains.shared_cache(plan.target, env, tree, plan.layout.builds):
                    where.run_recipe(tree, plan.target.build, env, log, f"build {label}")
            (out / "bin").mkdir(parents=True)
            artifacts: dict[str, dict[str, Any]] = {}
            for rel in plan.target.build.artifacts:
                src = tree / rel
                is_dir = rel.endswith("/")
                if not (src.is_dir() if is_dir else src.is_file()):
                    raise BuildError(
                        f"build {label}: the recipe did not produce {rel}",
                        detail=f"(full log: {log})",
                    )
                dest = out / "bin" / Path(rel).name
                try:
                    if is_dir:  # a whole directory (an install root), hashed file by file
                        shutil.copytree(src, dest, symlinks=True)
                        digest, size = tree_digest(dest)
                    else:
                        shutil.copy2(src, dest)
                        digest, size = sha256_file(dest), dest.stat().st_size
                except OSError as exc:  # shutil.Error too
                    raise _write_error(label, f"copy {rel} to {dest}", exc) from None
                artifacts[Path(rel).name] = {"path": rel, "sha256": digest, "bytes": size}
            version_output = None
            if plan.target.build.version:
                argv = plan.target.build.version
                # the built program is upstream code: run as the recipe's commands are
                res = cmd.run(sandbox.isolated([str(out / "bin" / argv[0]), *argv[1:]],
                                                   network=plan.target.build.network),
                                  env=env, timeout=60, error=BuildError,
                                  what=f"{label}: {' '.join(argv)}")
                version_output = res.stdout.strip()
                if "dirty" in version_output:
                    raise BuildError(f"{label}: the built version says it is dirty: "
                                     f"{version_output.splitlines()[0]!r}")
        finally:
            gitmodules.remove_worktrees(added, tree, plan.layout.builds)
            source.remove_worktree(plan.checkout, tree, plan.layout.builds)
        record: dict[str, Any] = {
            "schema_version": MANIFEST_SCHEMA,
            "target": plan.target_name,
            "url": plan.target.url,
            "fetched_from": "--source override" if plan.checkout.overridden else "url",
            "ref": plan.checkout.ref,
            "commit": plan.checkout.commit,
            "built_commit": head,
            "pinned_commit": plan.target.commit,
            # the toolchain of a build at another commit than the pinned one is still the
            # target's (matrix.yaml), never one the commit asks for
            "toolchain_source": "pinned (matrix.yaml)",
            "variant": variant.name,
            "series": [
                {"name": s.name, "digest": s.digest,
                 "patches": [{"file": p.path.name, "sha256": p.sha256, **(
                     {"origin": p.upstream.origin, "hash": p.upstream.hash} if p.upstream else
                     {"origin": p.origin} if p.origin else {}
                 )} for p in s.patches]}
                for s in series
            ],
            "overlays": [{"name": o.name, "sha256": o.digest, "files": list(o.files)}
                         for o in plan.overlays],
            **({"submodules": [p.record() for p in plan.submodules]} if plan.submodules else {}),
            "fingerprint": fp,
            "recipe": {
                "backend": plan.target.build.backend,
                "commands": plan.target.build.commands,
                "env": plan.target.build.env,
            },
            "built_in": backend(plan.target.build.backend).describe(plan.target.build),
            **({"layout": variant.layout.record()} if variant.layout is not None else {}),
            "cache_key": key,
            "duration_s": round(time.monotonic() - started, 3),
            "artifacts": artifacts,
            "version_output": version_output,
            "log": _rel(log, plan.project.root),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        manifest = cast(Manifest, redact.tree(record))  # no credential is recorded
        try:
            write_json_atomic(out / "manifest.json", manifest)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(out, final)
        except OSError as exc:
            raise _write_error(label, f"write the build into {final}", exc) from None
    try:
        (final / STAMP).write_text(key + "\n")  # written last: the build is complete
    except OSError as exc:
        shutil.rmtree(final, ignore_errors=True)  # never stamped: never used
        raise _write_error(label, f"stamp {final}", exc) from None
    progress.say(f"built {label} in {manifest['duration_s']:.1f} s")
    return Built(variant, final, manifest, cached=False)


def _write_error(label: str, what: str, exc: BaseException) -> BuildError:
    """A failed write while a build is saved (exit 14): the path, and whether the disk is full.
    Nothing half-written is kept: the temporary folder goes, the build is never stamped."""
    # shutil.Error (copytree) carries the failures of its files as text
    full = getattr(exc, "errno", None) == errno.ENOSPC or "No space left" in str(exc)
    why = "the disk is full" if full else (getattr(exc, "strerror", None) or f"{exc!s:.200}")
    return BuildError(f"build {label}: cannot {what}: {why}",
                      hint="free space on that disk, then build again" if full else None)


# what a build at another commit records differently with the same toolchain
PER_COMMIT_KEYS = ("env.SOURCE_DATE_EPOCH",)


def check_same_toolchain(builds: list[Built]) -> None:
    """Refuse a comparison whose builds used different toolchains, naming the keys that differ.
    Builds at different commits differ in the commit's SOURCE_DATE_EPOCH, which is not the
    toolchain's."""
    first = builds[0]
    for other in builds[1:]:
        diff = toolchains.differing_keys(
            first.manifest["fingerprint"], other.manifest["fingerprint"]
        )
        if first.manifest.get("commit") != other.manifest.get("commit"):
            diff = [k for k in diff if k not in PER_COMMIT_KEYS]
        if diff:
            raise ToolchainError(
                f"{first.variant.name} and {other.variant.name} were built with different "
                f"toolchains; differing keys: {', '.join(diff)}",
                hint="rebuild both with the toolchain pinned in matrix.yaml",
            )


def identical_artifacts(a: Built, b: Built) -> list[str]:
    return [
        name
        for name, info in a.manifest["artifacts"].items()
        if (other := b.manifest["artifacts"].get(name)) is not None
        and other["sha256"] == info["sha256"]
    ]
