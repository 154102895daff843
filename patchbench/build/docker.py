"""The docker backend: the recipe runs in a container from an image pinned by digest, with the
patched tree mounted at /src. The container has a unique name and is always removed."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any

from patchbench.config import BuildRecipe
from patchbench.errors import BuildError, RequirementError

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


class DockerBackend:
    def __init__(self, client_factory: Any = _client):
        self._client_factory = client_factory

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
