"""Against a real Docker engine that patchbench starts itself (root only): its lifecycle, the
go-busybox image, SDK errors from the engine, and containers removed after a timeout or Ctrl-C.

The image's Go is the host's GOROOT when its version is the pin (so these tests need no network),
else a module cache holding golang.org/toolchain@v0.0.1-go<pin>.linux-<arch>."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbench.docker import engine, images
from patchbench.errors import BuildError, RequirementError

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="patchbench starts its own dockerd only as root"),
]


@pytest.fixture(scope="module")
def state(docker_state: Path) -> Path:
    return docker_state  # shared with test_docker_build.py (tests/conftest.py)


@pytest.fixture(scope="module")
def eng(state: Path) -> Iterator[engine.Engine]:
    with engine.engine(state / "engine", own=True) as e:
        yield e
    assert engine.leftovers(state / "engine") == ([], [])


@pytest.fixture(scope="module")
def image(eng: engine.Engine, state: Path, go_version: str) -> images.Image:
    return images.ensure_recipe(eng, "go-busybox", go_version, state / "images")


def _ours(eng: engine.Engine) -> list[str]:
    found = eng.client.containers.list(all=True, filters={"label": "org.patchbench.run"})
    return [c.name for c in found]


def test_own_engine_starts_takes_extra_args_and_leaves_nothing(tmp_path: Path) -> None:
    state = tmp_path / "engine"
    runc = shutil.which("runc") or "/usr/sbin/runc"
    with engine.engine(state, extra_args=["--add-runtime", f"pb-test={runc}"]) as e:
        assert e.own and e.client.ping()
        assert e.version["engine"] and e.version["api"]
        assert "pb-test" in e.client.info()["Runtimes"]
        assert e.host == f"unix://{engine.run_dir_for(state)}/docker.sock"
        pids, _ = engine.leftovers(state)
        assert pids  # dockerd and its containerd
    assert engine.leftovers(state) == ([], [])
    assert not engine.run_dir_for(state).exists()
    assert (state / "data").is_dir()  # images and volumes are kept for the next run


def test_docker_host_is_respected(eng: engine.Engine, tmp_path: Path) -> None:
    with engine.engine(tmp_path / "unused", environ={"DOCKER_HOST": eng.host}) as other:
        assert not other.own and other.host == eng.host
    assert not (tmp_path / "unused").exists()  # nothing started


def test_go_busybox_image_is_deterministic_and_holds_the_pinned_go(
    eng: engine.Engine, image: images.Image, state: Path, go_version: str
) -> None:
    assert image.ref == "recipe:go-busybox" and image.id.startswith("sha256:")
    assert image.packages and image.packages[0].startswith("BusyBox v")
    assert image.go["version"] == f"go{go_version}"
    assert image.go["origin"] in ("module cache", "host GOROOT")
    assert image.engine == eng.version
    res = engine.run_container(eng.client, image.id, ["go", "version"], what="go version")
    assert res.stdout.startswith(f"go version go{go_version} ")
    # no record in another state directory: the layers are made again and give the same ID
    again = images.ensure_recipe(eng, "go-busybox", go_version, state / "images-again")
    assert again.id == image.id
    # the record is used when the engine holds the image
    assert images.ensure_recipe(eng, "go-busybox", go_version, state / "images").id == image.id


def test_engine_errors_are_classified(eng: engine.Engine, image: images.Image) -> None:
    with pytest.raises(RequirementError) as info:
        engine.run_container(eng.client, "sha256:" + "0" * 64, ["true"], what="absent image")
    assert info.value.exit_code == 16 and "not present" in info.value.message
    with pytest.raises(BuildError) as err:
        engine.run_container(eng.client, image.id, ["/no/such/program"], what="bad program")
    assert err.value.message.startswith("bad program: the Docker engine refused (HTTP ")
    with pytest.raises(BuildError, match=r"exited with code 3 in the container"):
        engine.run_container(eng.client, image.id, ["sh", "-c", "exit 3"], what="exit 3")
    assert _ours(eng) == []


def test_a_timed_out_container_is_killed_and_removed(eng: engine.Engine, image: images.Image) -> None:
    with pytest.raises(BuildError, match=r"timed out after 1 s"):
        engine.run_container(eng.client, image.id, ["sleep", "60"], what="sleep", timeout=1)
    assert _ours(eng) == []


def test_ctrl_c_removes_the_container(eng: engine.Engine, image: images.Image) -> None:
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            engine.run_container(eng.client, image.id, ["sleep", "60"], what="sleep", timeout=60)
    finally:
        timer.cancel()
    assert _ours(eng) == []


def test_an_engine_left_by_a_killed_run_is_cleaned_up(tmp_path: Path) -> None:
    import subprocess
    import sys

    state = tmp_path / "engine"
    code = ("import sys, time\nfrom pathlib import Path\nfrom patchbench.docker import engine\n"
            f"with engine.engine(Path({str(state)!r}), own=True):\n"
            "    print('up', flush=True)\n    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    finally:
        proc.kill()  # SIGKILL: no cleanup runs; dockerd and containerd stay behind
        proc.wait()
    pids, _ = engine.leftovers(state)
    assert pids
    with engine.engine(state, own=True) as e:  # takes over: kills the orphans, starts afresh
        assert e.client.ping()
    assert engine.leftovers(state) == ([], [])
