"""Docker builds of the fixture upstream against a real engine patchbench starts (root only):
the fingerprint is taken inside the image and names it, the worktree's git works in the
container, builds with cold Go caches are byte-identical to warm ones and to the host build, and
a Go in the image that differs from the pin is refused, with the engine patchbench started for it
stopped afterwards."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchbench import build
from patchbench.build import Variant
from patchbench.build import docker as docker_backend
from patchbench.docker import engine, images
from patchbench.errors import ToolchainError
from patchbench.util import sandbox
from tests import support
from tests.support import TARGET, Project, assert_nothing_left, matrix_data, write_matrix

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="patchbench starts its own dockerd only as root"),
]

BASE = Variant("baseline", ())
GREET = Variant("greet", ("greet",))
# fails unless the bare repository the worktree's .git names is mounted in the container
GIT_CHECK = ["/bin/sh", "-c", 'test -f "$(sed -n "s/^gitdir: //p" .git)/HEAD"']


@pytest.fixture(scope="module")
def state(docker_state: Path) -> Path:
    return docker_state  # shared with test_docker_engine.py (tests/conftest.py)


def _backend(state: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
             environ: dict[str, str] | None = None) -> docker_backend.DockerBackend:
    be = docker_backend.DockerBackend(state, environ=environ)
    monkeypatch.setitem(build.BACKENDS, "docker", be)
    return be


@pytest.fixture
def backend(state: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
            ) -> Iterator[docker_backend.DockerBackend]:
    """The build's docker backend on a shared engine state (the image is made once); it starts
    patchbench's own engine on each use."""
    be = _backend(state, monkeypatch, request)
    yield be
    be.close()


@pytest.fixture
def held_backend(state: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
                 ) -> Iterator[docker_backend.DockerBackend]:
    """The same, on one engine of patchbench's own held for the whole test and named by
    DOCKER_HOST (as a user's engine is): the builds connect to it instead of starting and
    stopping one each (about 1.3 s a time, four times in the reproducibility test). That the
    engine patchbench starts is stopped after building is checked where it is started
    (test_a_go_in_the_image_other_than_the_pin_is_refused)."""
    with engine.engine(state / "engine", own=True) as eng:
        be = _backend(state, monkeypatch, request, {**os.environ, "DOCKER_HOST": eng.host})
        try:
            yield be
        finally:
            be.close()
    assert engine.leftovers(state / "engine") == ([], [])


def write_docker(project: Project, **kw: Any) -> None:
    data = matrix_data(project.upstream, project.go_version, **kw)
    recipe = data["targets"][TARGET]["build"]
    recipe.update({"backend": "docker", "image": {"recipe": "go-busybox"},
                   "commands": [GIT_CHECK, *recipe["commands"]]})
    write_matrix(project.root, data)


def build_all(project: Project, variants: list[Variant], builds: Path) -> list[build.Built]:
    opts = dataclasses.replace(project.options(), builds=builds)
    return support.build(project.load(), opts, TARGET, variants, [])


def test_docker_build_fingerprints_inside_and_is_reproducible(
    project: Project, held_backend: docker_backend.DockerBackend, tmp_path: Path
) -> None:
    backend = held_backend
    host_base, host_greet = build_all(project, [BASE, GREET], tmp_path / "host")
    write_docker(project)
    base, greet = build_all(project, [BASE, GREET], tmp_path / "docker-1")
    fp = base.manifest["fingerprint"]
    assert fp == greet.manifest["fingerprint"]  # one image, one toolchain
    image = fp["image"]
    assert image["ref"] == "recipe:go-busybox" and image["id"].startswith("sha256:")
    assert image["engine"]["engine"] and image["packages"][0].startswith("BusyBox v")
    assert fp["version"] == f"go{project.go_version}"
    assert fp["env"]["GOTOOLCHAIN"] == "local"
    assert fp["go_sha256"] == host_base.manifest["fingerprint"]["go_sha256"]  # the same Go
    uid, gid = sandbox.build_user()
    assert base.manifest["built_in"] == {"backend": "docker", "image": "recipe:go-busybox",
                                         "image_id": image["id"], "engine": image["engine"],
                                         "uid": uid, "gid": gid, "capabilities": "none",
                                         "no_new_privileges": True, "read_only_root": True,
                                         "network": False}
    assert uid != 0
    assert str(tmp_path) not in repr(fp)
    assert backend._engine is None  # the build let go of the engine (close_backends)
    # again in another builds directory (the session's Go build cache, tests/conftest.py): the
    # same bytes, and the host's
    again = build_all(project, [BASE, GREET], tmp_path / "docker-2")
    for one, two, host in ((base, again[0], host_base), (greet, again[1], host_greet)):
        assert not two.cached
        sha = one.manifest["artifacts"]["hello"]["sha256"]
        assert two.manifest["artifacts"]["hello"]["sha256"] == sha
        assert host.manifest["artifacts"]["hello"]["sha256"] == sha  # and the host build's
    assert_nothing_left(tmp_path / "docker-2", project.cache)


def test_a_go_in_the_image_other_than_the_pin_is_refused(
    project: Project, backend: docker_backend.DockerBackend, state: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    host_go = project.go_version
    real = images.ensure_recipe

    def host_go_image(eng: Any, name: str, version: str, state: Path, environ: Any = None
                      ) -> images.Image:
        return real(eng, name, host_go, state, environ)  # an image whose Go is not the pin

    monkeypatch.setattr(images, "ensure_recipe", host_go_image)
    major, minor, *_ = host_go.split(".")
    project.go_version = f"{major}.{int(minor) - 1}.0"
    write_docker(project)
    with pytest.raises(ToolchainError) as info:
        build_all(project, [BASE], tmp_path / "builds")
    assert info.value.message.startswith(f"matrix.yaml pins Go {project.go_version}, but the go "
                                         "command (in image recipe:go-busybox (sha256:")
    assert f"'go version go{host_go} " in info.value.message
    assert not (tmp_path / "builds" / "artifacts").exists()
    # the engine patchbench started for the build is stopped after it, and left nothing
    assert backend._engine is None
    assert engine.leftovers(state / "engine") == ([], [])
