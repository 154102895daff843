"""The docker backend: the build recipe and the toolchain fingerprint run in a container of the
target's build image, so the manifest records the toolchain that really built. The engine is
``DOCKER_HOST``, the system one or patchbench's own (patchbench.docker.engine); the image's ID
goes into the fingerprint, so variants built from different images are refused. The tree and its
git repository, and the caches (Go volumes, ccache, cargo's), are mounted at their host paths,
so git and the cache layout work as on the host; every container is removed on every path.
docs/docker.md."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from patchbench import redact
from patchbench.build.toolchains import go
from patchbench.config import BuildRecipe, GoToolchain, ImageRecipe, RustToolchain, Target, Toolchain
from patchbench.docker import engine as engines
from patchbench.docker import images
from patchbench.errors import (
    BuildError,
    CommandError,
    PatchbenchError,
    RequirementError,
    SourceError,
    ToolchainError,
)
from patchbench.util import cmd, files

CACHE_ROOT = "/pb/cache"
# host values that mean nothing inside the image (paths of this machine)
HOST_ONLY = ("PATH", "HOME", "USER", "TMPDIR", "GOPATH", "GOCACHE", "GOMODCACHE", "SSL_CERT_FILE",
             "SSL_CERT_DIR", "PKG_CONFIG_PATH", "DEVELOPER_DIR", "RUSTUP_HOME")
# directories a build's environment names under builds/ (C: ccache; Rust: crates, target dir)
CACHE_DIRS = ("CCACHE_DIR", "CARGO_HOME", "CARGO_TARGET_DIR")


def container_env(env: Mapping[str, str], path: str = images.PATH_IN_IMAGE) -> dict[str, str]:
    """The build environment as the container sees it: host paths dropped, the caches on their
    volumes, and GOTOOLCHAIN=local (the image's Go is the pin; nothing is downloaded inside);
    ``path``: the image's PATH."""
    out = {k: v for k, v in env.items() if k not in HOST_ONLY}
    out.update({
        "HOME": "/root", "PATH": path, "TMPDIR": "/tmp",
        "GOCACHE": f"{CACHE_ROOT}/go-build", "GOMODCACHE": f"{CACHE_ROOT}/gomod",
        "GOPATH": f"{CACHE_ROOT}/gopath", "GOTOOLCHAIN": "local",
    })
    return out


def git_common_dir(tree: Path) -> Path | None:
    """The repository a worktree's ``.git`` file points to (its common dir), or None."""
    dotgit = tree / ".git"
    if not dotgit.is_file():
        return None
    text = dotgit.read_text().strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = (tree / text.removeprefix("gitdir:").strip()).resolve()
    common = gitdir / "commondir"
    if common.is_file():
        return (gitdir / common.read_text().strip()).resolve()
    return gitdir


def repositories(tree: Path) -> list[Path]:
    """The repositories the worktrees in ``tree`` point to: its own and every submodule's."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        if ".git" in filenames:
            common = git_common_dir(Path(dirpath))
            if common is not None and common not in out:
                out.append(common)
    return out


class DockerBackend:
    """The ``Backend`` (patchbench.build) for ``backend: docker``. ``bind(target, builds)`` comes
    first: it names the builds directory (engine and image state) and the target whose toolchain
    picks the image; ``runner``, ``run_recipe`` and ``describe`` then use that image."""

    name = "docker"

    def __init__(self, state: Path | None = None, *, volume_prefix: str = "patchbench",
                 environ: Mapping[str, str] | None = None, extra_args: Sequence[str] = ()):
        self.state = state  # builds/; set by open() when not given here
        self._state_fixed = state is not None
        self.volume_prefix = volume_prefix
        self.environ = environ
        self.extra_args = tuple(extra_args)
        self._stack: contextlib.ExitStack | None = None
        self._engine: engines.Engine | None = None
        self._images: dict[str, images.Image] = {}
        self._bound: dict[str, images.Image] = {}  # recipe (as JSON) -> its target's image
        self._atexit = False

    # --- lifecycle ---------------------------------------------------------------------------

    def open(self, builds: Path) -> None:
        """Where the engine's and images' state lives (builds/engine, builds/images)."""
        if not self._state_fixed and self._engine is None:
            self.state = builds

    def engine(self) -> engines.Engine:
        if self._engine is None:
            if self.state is None:
                raise BuildError("the docker backend was used before open(builds)")
            stack = contextlib.ExitStack()
            try:
                self._engine = stack.enter_context(
                    engines.engine(self.state / "engine", extra_args=self.extra_args,
                                   environ=self.environ))
            except BaseException:
                stack.close()
                raise
            self._stack = stack
            if not self._atexit:
                atexit.register(self.close)
                self._atexit = True
        return self._engine

    def close(self) -> None:
        """Stop the engine patchbench started (a no-op for an engine it only connected to)."""
        stack, self._stack, self._engine = self._stack, None, None
        self._images.clear()
        self._bound.clear()
        if stack is not None:
            stack.close()

    def __enter__(self) -> DockerBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the image ---------------------------------------------------------------------------

    def image(self, recipe: BuildRecipe, toolchain: Toolchain | None) -> images.Image:
        spec = recipe.image
        if spec is None:
            raise BuildError("the docker backend needs build.image")
        go_version = toolchain.version if isinstance(toolchain, GoToolchain) else None
        rust = ((toolchain.version, toolchain.rustup_toolchain)
                if isinstance(toolchain, RustToolchain) else None)
        key = json.dumps([spec if isinstance(spec, str) else spec.recipe, go_version, rust])
        if key not in self._images:
            eng = self.engine()
            assert self.state is not None
            if isinstance(spec, ImageRecipe):
                kind = images.RECIPES[spec.recipe].toolchain
                if kind == "go" and go_version is None:
                    raise RequirementError(f"image recipe {spec.recipe} needs a Go toolchain")
                if kind == "rust":  # the host's Rust of the pinned release, copied in
                    self._images[key] = images.ensure_recipe(
                        eng, spec.recipe, None, self.state / "images", self.environ, rust=rust)
                else:
                    self._images[key] = images.ensure_recipe(
                        eng, spec.recipe, go_version if kind == "go" else None,
                        self.state / "images", self.environ)
            else:
                self._images[key] = images.ensure_ref(eng, spec)
        return self._images[key]

    def image_for(self, target: Target) -> images.Image:
        """The target's build image; later ``run_recipe`` calls with its recipe use this one."""
        image = self.image(target.build, target.toolchain)
        self._bound[target.build.model_dump_json()] = image
        return image

    # --- running -----------------------------------------------------------------------------

    def volumes(self) -> dict[str, dict[str, str]]:
        return {f"{self.volume_prefix}-gocache": {"bind": f"{CACHE_ROOT}/go-build", "mode": "rw"},
                f"{self.volume_prefix}-gomod": {"bind": f"{CACHE_ROOT}/gomod", "mode": "rw"}}

    def remove_volumes(self) -> None:
        """Drop the Go caches (the next build starts cold)."""
        import docker.errors  # the Docker SDK: only the docker backend needs it

        eng = self.engine()
        for name in self.volumes():
            # a volume never made (no container ran) is not an error: NotFound is suppressed
            # inside, before sdk_errors would turn it into a BuildError
            with engines.sdk_errors(f"remove volume {name}", BuildError), \
                    contextlib.suppress(docker.errors.NotFound):
                eng.client.volumes.get(name).remove(force=True)

    def run(
        self, image: images.Image, argv: Sequence[str], *, env: Mapping[str, str],
        cwd: Path | None = None, timeout: float = 600.0, check: bool = True,
        error: type[PatchbenchError] = CommandError, what: str | None = None,
        log: Path | None = None, mounts: Sequence[Path] = (), network: bool = True,
    ) -> cmd.Result:
        """``argv`` in a fresh container of ``image``; host paths in ``mounts`` (and ``cwd``) are
        mounted at the same path; the host's network, or none (``network`` False). Removed
        afterwards, whatever happens."""
        volumes = self.volumes()
        for path in [*mounts, *([cwd] if cwd is not None else [])]:
            volumes[str(path)] = {"bind": str(path), "mode": "rw"}
        return engines.run_container(
            self.engine().client, image.id, argv, what=what or cmd.quote(argv),
            env=container_env(env, image.path), workdir=str(cwd) if cwd is not None else None,
            volumes=volumes, network="host" if network else "none", timeout=timeout, log=log,
            check=check, error=error,
        )

    def bind(self, target: Target, builds: Path) -> images.Image:
        """Open the backend for ``builds`` and resolve ``target``'s build image (engine started
        or connected on first use)."""
        self.open(builds)
        return self.image_for(target)

    def bound(self, recipe: BuildRecipe) -> images.Image:
        image = self._bound.get(recipe.model_dump_json())
        if image is None:
            raise BuildError("the docker backend was asked about a recipe before bind(target, builds)")
        return image

    def runner(self, recipe: BuildRecipe) -> ContainerRunner:
        """A runner for the toolchain fingerprint, inside the recipe's build image."""
        return ContainerRunner(self, self.bound(recipe))

    def describe(self, recipe: BuildRecipe) -> dict[str, Any]:
        """The manifest's ``built_in``: the image and the engine (the fingerprint holds the rest)."""
        image = self.bound(recipe)
        return {"backend": "docker", "image": image.ref, "image_id": image.id,
                "engine": image.engine}

    def fingerprint_extra(self, target: Target) -> dict[str, Any]:
        """What the fingerprint adds for a docker build: the image, so that baseline and
        candidates built from different image IDs are refused like any other difference."""
        return {"image": self.image_for(target).record()}

    def run_recipe(
        self, tree: Path, recipe: BuildRecipe, env: dict[str, str], log: Path, what: str
    ) -> None:
        image = self.bound(recipe)
        script = " && ".join(shlex.join(argv) for argv in recipe.commands)
        mounts = [tree, *repositories(tree)]
        mounts += [Path(env[k]) for k in CACHE_DIRS if k in env and Path(env[k]).is_dir()]
        env = self.go_modules(image, tree, recipe, env, log, what, mounts)
        self.run(image, ["/bin/sh", "-c", script], env=env, cwd=tree, timeout=recipe.timeout,
                 error=BuildError, what=what, log=log, mounts=mounts, network=recipe.network)

    def go_modules(self, image: images.Image, tree: Path, recipe: BuildRecipe,
                   env: dict[str, str], log: Path, what: str, mounts: Sequence[Path]
                   ) -> dict[str, str]:
        """A Go build without the network (``GOTOOLCHAIN`` is set for Go targets only): the
        modules of the root's go.mod or go.work downloaded first in a container of the same image
        with the network, into the same module cache, and ``GOPROXY=off`` for the build; a
        vendored tree needs nothing fetched."""
        if recipe.network or "GOTOOLCHAIN" not in env:
            return env
        need = go.modules(tree)
        if need == "fetch":
            self.run(image, go.FETCH, env=env, cwd=tree, timeout=recipe.timeout,
                     error=SourceError, what=f"{what}: {go.FETCH_WHAT}", log=log, mounts=mounts,
                     network=True)
        return go.offline(env, need)


class ContainerRunner:
    """patchbench.build.toolchains.Runner inside a build image (one container per command).

    An image ID names its content, so what a query prints there (``go version``, ``go env``, a
    tool's sha256) is the same every time for the same argv and environment: a successful answer
    is kept (redacted) under ``builds/images/queries/`` by (image ID, argv, environment) and not
    asked again, which spares a warm build one container start per fingerprint query."""

    def __init__(self, backend: DockerBackend, image: images.Image):
        self.backend = backend
        self.image = image
        self.where = f"in image {image.ref} ({image.id[:19]})"

    def _cached(self, argv: Sequence[str], env: Mapping[str, str]) -> Path | None:
        if self.backend.state is None:
            return None
        key = hashlib.sha256(json.dumps([self.image.id, list(argv),
                                         sorted(container_env(env).items())]).encode())
        return self.backend.state / "images" / "queries" / f"{key.hexdigest()}.json"

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            what: str | None = None, error: type[PatchbenchError] = ToolchainError,
            ) -> cmd.Result:
        path = self._cached(argv, env)
        if path is not None and path.is_file():
            try:
                data = json.loads(path.read_text())
                return cmd.Result(tuple(argv), 0, str(data["stdout"]), str(data["stderr"]),
                                      0.0)
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a damaged entry: asked again, and rewritten
        res = self.backend.run(self.image, argv, env=env, timeout=timeout, error=error,
                               what=what or f"{shlex.join(argv)} {self.where}")
        if path is not None and res.returncode == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            # no secret is recorded: a credential in the output is kept redacted (the
            # fingerprint and the cache key are taken from redacted values anyway)
            files.write_json_atomic(path, {"image": self.image.id, "argv": list(argv),
                                           "stdout": redact.text(res.stdout),
                                           "stderr": redact.text(res.stderr)})
        return res

    def sha256(self, path: str) -> str:
        res = self.run(["sha256sum", path], env={}, timeout=120,
                       what=f"sha256sum {path} {self.where}")
        return res.stdout.split()[0]

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        res = self.run(["/bin/sh", "-c", f'readlink -f "$(command -v {shlex.quote(tool)})"'],
                       env=env, timeout=60, error=RequirementError,
                       what=f"find {tool} {self.where}")
        path = res.stdout.strip()
        if not path:
            raise RequirementError(f"{tool} is not in the build image {self.image.ref}")
        return path


def plan_lines(target: Target, builds: Path, environ: Mapping[str, str] | None = None) -> list[str]:
    """What a docker build will do, for --dry-run (nothing is contacted or started)."""
    env = os.environ if environ is None else environ
    state = builds / "engine"
    if env.get("DOCKER_HOST"):
        eng = f"engine  DOCKER_HOST={env['DOCKER_HOST']} (must answer)"
    else:
        run = engines.run_dir_for(state)
        eng = (f"engine  unix://{engines.SYSTEM_SOCKET} if it answers, else patchbench's own: dockerd "
               f"--data-root {state / 'data'} --exec-root {run / 'x'} --host unix://{run}/docker.sock "
               "--iptables=false --bridge=none (stopped after the builds)")
    spec = target.build.image
    tc = target.toolchain
    if isinstance(spec, ImageRecipe):
        recipe = images.RECIPES[spec.recipe]
        if recipe.toolchain == "go":
            go = images.toolchain_module(tc.version) if isinstance(tc, GoToolchain) else "-"
            layer = (f"Go from {go} (module cache, else go mod download, else with GOPROXY=off "
                     "the host's GOROOT of that version)")
        elif recipe.toolchain == "rust":
            layer = (f"the host's Rust sysroot of rustc {tc.version} copied to "
                     f"{images.RUST_IN_IMAGE}")
        else:
            layer = "Debian's compiler"
        img = (f"image   recipe {spec.recipe}: {recipe.description}; {layer}; docker load, "
               "identified by ID")
        ref = "IMAGE"
    else:
        img = f"image   {spec} (used when present, pulled only when absent)"
        ref = str(spec)
    vols = " ".join(f"-v {k}:{v['bind']}" for k, v in DockerBackend().volumes().items())
    script = " && ".join(shlex.join(argv) for argv in target.build.commands)
    return [
        eng,
        img,
        f"  fingerprint in the image: docker run --rm {ref} " + (
            "go version; go env -json; sha256sum of go, compile, link"
            + ("; cc, ld, ldd --version" if tc.cgo else "") if isinstance(tc, GoToolchain) else
            "rustc -vV; cargo -V; sha256sum of rustc, cargo, cc" if isinstance(tc, RustToolchain)
            else "cc -dumpfullversion; sha256sum of cc, cc1, collect2, as, ld; pkg-config "
            "--modversion of the linked libraries"),
        f"  build: docker run --rm --network {'host' if target.build.network else 'none'} "
        f"-v TREE:TREE -v SOURCE_REPO:SOURCE_REPO {vols} "
        f"-w TREE {ref} /bin/sh -c {shlex.quote(script)}",
    ]
