"""Docker builds of the C and Rust fixtures (test_c_submodules.py, test_rust_toolchain.py) against
a real engine patchbench starts (root only, mmdebstrap and Debian's archive for the images):

- C in ``debian-c``: the fingerprint (gcc, cc1, collect2, as, ld, pkg-config) is taken inside and
  names the image; the submodules' headers reach the build (their repositories are mounted);
  ccache's directory under builds/ is used from the container; two builds in different builds
  directories give the same sha256;
- Rust in ``debian-rust``: the image holds the host's rustc (the same sha256 as the host's
  fingerprint), the build is offline from the crates fetched on the host, a candidate built warm
  from the shared target directory gives the bytes it gives cold in another builds directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from patchbench import build
from patchbench.build import docker as docker_backend
from tests.integration import test_c_submodules as cfx
from tests.integration import test_rust_toolchain as rfx
from tests.integration.test_c_submodules import fixture  # noqa: F401 - a fixture
from tests.integration.test_rust_toolchain import cargo_path  # noqa: F401 - a fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,  # two images by mmdebstrap: minutes; .ci/run runs it after the suite
    pytest.mark.skipif(os.geteuid() != 0, reason="patchbench starts its own dockerd only as root"),
    pytest.mark.skipif(shutil.which("mmdebstrap") is None, reason="the images need mmdebstrap"),
]


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("docker-c-rust-state")


@pytest.fixture
def backend(state: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
            ) -> Iterator[docker_backend.DockerBackend]:
    be = docker_backend.DockerBackend(state)
    monkeypatch.setitem(build.BACKENDS, "docker", be)
    yield be
    be.close()


def in_docker(matrix: Path, recipe: str) -> None:
    data: dict[str, Any] = yaml.safe_load(matrix.read_text())
    for t in data["targets"].values():
        t["build"].update({"backend": "docker", "image": {"recipe": recipe}})
    matrix.write_text(yaml.safe_dump(data, sort_keys=False))


def test_c_builds_in_debian_c_inside_and_reproducibly(
        fixture: dict[str, Any], backend: docker_backend.DockerBackend) -> None:  # noqa: F811
    matrix = cfx._project(fixture, ccache=True)
    host = cfx._build(matrix, fixture["root"] / "host")
    in_docker(matrix, "debian-c")
    a = cfx._build(matrix, fixture["root"] / "builds-a")
    b = cfx._build(matrix, fixture["root"] / "b" / "another-builds-dir")
    assert not a.cached and not b.cached
    out = subprocess.run([str(a.bin / "hello")], capture_output=True, text=True, check=True)
    assert out.stdout == "hello world (main.c)\n"  # the submodules' headers; __FILE__ mapped
    sha = a.manifest["artifacts"]["hello"]["sha256"]
    assert b.manifest["artifacts"]["hello"]["sha256"] == sha
    fp = a.manifest["fingerprint"]
    assert build.toolchains.differing_keys(fp, b.manifest["fingerprint"]) == []
    image = fp["image"]
    assert image["ref"] == "recipe:debian-c" and image["id"].startswith("sha256:")
    assert any(p.startswith("libyajl-dev=") for p in image["packages"])
    assert fp["kind"] == "c" and fp["cc"]["version"] == cfx._cc_version()
    assert fp["programs"]["cc1"]["path"].startswith("/usr/lib/gcc/")
    assert fp["ccache"].startswith("ccache version")
    assert a.manifest["built_in"]["image_id"] == image["id"]
    assert str(fixture["root"]) not in repr(fp)
    # ccache ran in the container, in builds-a's cache of this fingerprint
    (cache,) = (fixture["root"] / "builds-a" / "ccache").iterdir()
    assert any(cache.rglob("*.result")) or any(cache.rglob("*R"))
    # the host's build, for the record (equal when the image's gcc and binutils are the host's)
    print("C host sha256", host.manifest["artifacts"]["hello"]["sha256"], "docker", sha)


def test_rust_builds_in_debian_rust_with_the_hosts_rustc(
        tmp_path: Path, cargo_path: None,  # noqa: F811
        backend: docker_backend.DockerBackend) -> None:
    matrix, _ = rfx._project(tmp_path)
    (host,) = rfx._build(matrix, tmp_path / "host", rfx.BASE)
    in_docker(matrix, "debian-rust")
    a_base, a_louder = rfx._build(matrix, tmp_path / "builds-a", rfx.BASE, rfx.LOUDER)
    (b_louder,) = rfx._build(matrix, tmp_path / "elsewhere" / "builds-b", rfx.LOUDER)
    sha = {b.variant.name: b.manifest["artifacts"]["hello"]["sha256"] for b in (a_base, a_louder)}
    assert sha["baseline"] != sha["louder"]
    assert b_louder.manifest["artifacts"]["hello"]["sha256"] == sha["louder"]  # warm == cold
    out = subprocess.run([str(a_base.bin / "hello")], capture_output=True, text=True, check=True)
    assert out.stdout == "hi from src/main.rs\n"
    fp, hfp = a_base.manifest["fingerprint"], host.manifest["fingerprint"]
    assert build.toolchains.differing_keys(fp, b_louder.manifest["fingerprint"]) == []
    image = fp["image"]
    assert image["ref"] == "recipe:debian-rust" and image["id"].startswith("sha256:")
    assert image["rust"]["release"] == rfx._release() and image["rust"]["path"] == "/usr/local/rust"
    assert fp["version"] == hfp["version"] == f"rustc {rfx._release()}"
    assert fp["rustc"]["sha256"] == hfp["rustc"]["sha256"]  # the host's rustc, copied in
    assert fp["cargo"]["sha256"] == hfp["cargo"]["sha256"]
    assert fp["env"]["CARGO_NET_OFFLINE"] == "true"
    assert str(tmp_path) not in repr(fp)
    print("Rust host sha256", host.manifest["artifacts"]["hello"]["sha256"], "docker",
          sha["baseline"])
