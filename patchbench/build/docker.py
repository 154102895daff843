"""The docker backend: the recipe runs in a container from an image pinned by digest, with the
patched tree mounted at /src. The container has a unique name and is always removed."""

from __future__ import annotations

import contextlib
import shlex
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from patchbench import command
from patchbench.config import BuildRecipe
from patchbench.errors import BuildError, PatchbenchError, RequirementError, ToolchainError

CONTAINER_SRC = "/src"


def _client() -> Any:
    try:
        import docker
    except ImportError:  # pragma: no cover - docker is a declared dependency
        raise RequirementError("the docker backend needs the 'docker' Python package") from None
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        raise RequirementError(
            f"the docker backend needs a running Docker engine ({exc.__class__.__name__})",
            hint="start dockerd, or set build.backend: host in matrix.yaml",
        ) from None
    return client


class DockerRunner:
    """Runs each fingerprint command in a fresh container of the build image."""

    def __init__(self, client_factory: Any, image: str):
        self._client_factory = client_factory
        self.image = image
        self.where = f"image {image}"

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            what: str | None = None, error: type[PatchbenchError] = ToolchainError,
            ) -> command.Result:
        client = self._client_factory()
        inner = {k: v for k, v in env.items() if k not in ("PATH", "HOME", "TMPDIR")}
        try:
            out = client.containers.run(self.image, list(argv), environment=inner, remove=True,
                                        stdout=True, stderr=True, network_mode="host")
        except Exception as exc:
            raise error(f"{what or shlex.join(argv)} in {self.where}: {exc}") from None
        text = out.decode(errors="replace") if isinstance(out, bytes) else str(out)
        return command.Result(tuple(argv), 0, text, "", 0.0)

    def sha256(self, path: str) -> str:
        out = self.run(["sha256sum", path], env={}).stdout
        return out.split()[0]

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        return self.run(["sh", "-c", 'readlink -f "$(command -v "$0")"', tool], env=env
                        ).stdout.strip()


class DockerBackend:
    name = "docker"

    def __init__(self, client_factory: Any = _client):
        self._client_factory = client_factory

    def runner(self, recipe: BuildRecipe) -> DockerRunner:
        return DockerRunner(self._client_factory, recipe.image or "")

    def describe(self, recipe: BuildRecipe) -> dict[str, Any]:
        return {"backend": "docker", "image": recipe.image}

    def run_recipe(
        self, tree: Path, recipe: BuildRecipe, env: dict[str, str], log: Path, what: str
    ) -> None:
        client = self._client_factory()
        container_env = {k: v for k, v in env.items() if k not in ("PATH", "HOME", "TMPDIR")}
        script = " && ".join(" ".join(_sh_quote(a) for a in argv) for argv in recipe.commands)
        name = f"patchbench-{uuid.uuid4().hex[:12]}"
        container = client.containers.run(
            recipe.image,
            ["/bin/sh", "-c", script],
            name=name,
            detach=True,
            working_dir=CONTAINER_SRC,
            environment=container_env,
            volumes={str(tree): {"bind": CONTAINER_SRC, "mode": "rw"}},
            network_mode="host",
        )
        try:
            try:
                status = container.wait(timeout=recipe.timeout)
            except Exception as exc:
                raise BuildError(f"{what}: timed out or lost the container ({exc})") from None
            output = container.logs().decode(errors="replace")
            with open(log, "a") as f:
                f.write(f"+ docker run {recipe.image} sh -c {script!r}\n{output}")
            code = int(status.get("StatusCode", 1))
            if code != 0:
                tail = "\n".join(output.rstrip().splitlines()[-25:])
                raise BuildError(f"{what}: exited with code {code}", detail=f"{tail}\n(full log: {log})")
        finally:
            with contextlib.suppress(Exception):  # best effort; the name is unique
                container.remove(force=True)


def _sh_quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
