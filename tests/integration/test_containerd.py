"""The containerd building blocks on the real machine (root):

- the mount-syscall counter (bpftrace) on a program with known mounts: exact counts, processes
  and threads forked by it and by a root process followed, an unrelated process not counted;
- the idmapped-overlay probe: passes on this filesystem, refuses ramfs (no idmapped mounts);
- opt-in, ``PATCHBENCH_TEST_CONTAINERD_GIT=/path/to/containerd.git``: build the ``containerd``
  target through patchbench (v2.1.4, Go 1.23.11 through the module proxy), start its daemon, import
  L-layer images, run a user-namespaced container that sees every layer's file as uid 0, count its
  mount syscalls (growing by 2 per layer on v2.1.4), and account for leftovers (none).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from patchbench import build, command, mountsys, mounttrace, oci_image, pipeline
from patchbench.errors import RequirementError
from patchbench.runtimes import containerd as cd
from patchbench.runtimes import runc
from patchbench.workspace import Workspace
from tests.support import REPO_ROOT

pytestmark = pytest.mark.integration

CONTAINERD_GIT = os.environ.get("PATCHBENCH_TEST_CONTAINERD_GIT", "")  # read before conftest drops it
GO_NETWORK_ENV = {k: os.environ.get(k) for k in ("GOPROXY", "GOTOOLCHAIN", "GOFLAGS", "GOENV")}
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root")
needs_bpftrace = pytest.mark.skipif(shutil.which("bpftrace") is None, reason="needs bpftrace")


def py_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO_ROOT)}


def exercise(base: Path, mounts: int, forks: int = 0, threads: int = 0) -> list[str]:
    return [sys.executable, "-m", "patchbench.mountsys", "exercise", str(base), "--mounts",
            str(mounts), "--forks", str(forks), "--threads", str(threads)]


@needs_root
@needs_bpftrace
def test_counts_a_program_with_known_mounts(tmp_path: Path) -> None:
    counts = mounttrace.trace(exercise(tmp_path / "ex", 3, forks=2, threads=2), tmp_path / "t",
                              env=py_env())
    assert counts.exit_code == 0
    per = 3 * (1 + 2 + 2)
    assert counts.by_syscall() == {"open_tree": per, "mount_setattr": per, "move_mount": per,
                                   "mount": per + 1, "umount2": 2 * per + 1}
    assert set(counts.errors) == {"umount2"} and counts.error_total() == 1
    assert (tmp_path / "t" / "command.log").read_text().strip().startswith("{")


@needs_root
@needs_bpftrace
def test_follows_roots_and_ignores_strangers(tmp_path: Path) -> None:
    go, done = tmp_path / "go", tmp_path / "done"
    py = " ".join(exercise(tmp_path / "root-ex", 2, forks=1))
    wait = f"while [ ! -e {go} ]; do sleep 0.02; done"
    root = command.Background(["sh", "-c", f"{wait}; {py} >/dev/null; touch {done}"],
                              env=py_env())
    stranger = command.Background(
        ["sh", "-c", f"{wait}; " + " ".join(exercise(tmp_path / "other", 7)) + " >/dev/null"],
        env=py_env())
    try:
        counts = mounttrace.trace(
            ["sh", "-c", f"touch {go}; while [ ! -e {done} ]; do sleep 0.02; done"],
            tmp_path / "t", roots=[root.proc.pid], env=py_env(), timeout=120)
        assert stranger.wait(60) == 0
    finally:
        root.stop()
        stranger.stop()
    per = 2 * (1 + 1)  # the root's program: 2 rounds in itself and in one forked child
    assert counts.by_syscall() == {"open_tree": per, "mount_setattr": per, "move_mount": per,
                                   "mount": per + 1, "umount2": 2 * per + 1}


@needs_root
def test_probe_passes_here(tmp_path: Path) -> None:
    record = cd.probe_idmapped_overlay(tmp_path / "probe")
    assert record["ok"] is True
    assert record["overlay_uids"] == {"lower1": 100000, "lower2": 100000}
    assert not list((tmp_path / "probe").iterdir())  # it cleans up after itself


@needs_root
def test_probe_refuses_ramfs(tmp_path: Path) -> None:
    target = tmp_path / "ramfs"
    target.mkdir()
    mountsys.mount("ramfs", target, "ramfs", 0)
    try:
        with pytest.raises(RequirementError, match="mount_setattr") as err:
            cd.probe_idmapped_overlay(target)
        assert err.value.exit_code == 16
    finally:
        mountsys.umount2(target, mountsys.MNT_DETACH)


@pytest.fixture
def online_go(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GO_NETWORK_ENV.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)


@pytest.mark.root
@needs_root
@needs_bpftrace
@pytest.mark.skipif(not CONTAINERD_GIT,
                    reason="set PATCHBENCH_TEST_CONTAINERD_GIT to a containerd git directory")
@pytest.mark.skipif(shutil.which("runc") is None, reason="needs runc on PATH")
def test_real_containerd(tmp_path: Path, online_go: None) -> None:
    ws = Workspace(root=REPO_ROOT, matrix=REPO_ROOT / "matrix.yaml", builds=tmp_path / "builds",
                   reports=tmp_path / "reports", sources={"containerd": CONTAINERD_GIT})
    (built,) = pipeline.build_variants(pipeline.load(ws), ws, "containerd",
                                       [build.Variant("baseline", ())], [])
    assert built.manifest["fingerprint"]["version"] == "go1.23.11"
    assert "v2.1.4" in built.manifest["version_output"]
    busybox = Path(shutil.which("busybox") or "/bin/busybox").resolve()
    if not runc.is_static(busybox):
        pytest.skip("needs a static busybox")
    base = Path("/tmp") / f"pb-cd-test-{os.getpid()}"  # short: the socket path must fit
    daemon = cd.ContainerdDaemon(built.bin, base / "d", "pb-test-real",
                                 Path(shutil.which("runc") or "runc"))
    images = {n: oci_image.write_image(tmp_path / f"l{n}.tar", n, busybox) for n in (1, 4)}
    counts = {}
    try:
        daemon.start()
        for img in images.values():
            daemon.import_image(img)
        res = command.run(daemon.run_argv(
            images[4], "verify", ["sh", "-c", "stat -c %u /layers/002 /layers/004 /bin/busybox"],
            null_io=False), env=daemon.env(), timeout=120)
        assert res.stdout.split() == ["0", "0", "0"]
        for n, img in images.items():
            counts[n] = daemon.trace_run(img, f"t{n}", base / f"trace{n}")
            assert counts[n].exit_code == 0
        with mounttrace.MountTableSampler(interval=0.01) as sampler:
            burst = [command.Background(daemon.run_argv(images[4], f"b{i}"), env=daemon.env())
                     for i in range(4)]
            assert [b.wait(120) for b in burst] == [0] * 4
        # while they ran, their rootfs (and v2.1.4's per-layer idmapped) mounts were in the table
        assert sampler.peak().mounts > sampler.samples[0].mounts
        assert daemon.state_leftovers() == []
    finally:
        daemon.stop()
        found, problems = daemon.cleanup_host()
        shutil.rmtree(base, ignore_errors=True)
    assert found.empty() and problems == []
    # v2.1.4: one idmapped bind mount per layer in the shim and in ctr (plus ctr's one for the
    # whole rootfs), so 3 more layers make 6 more of each of open_tree/mount_setattr/move_mount
    for syscall in ("open_tree", "mount_setattr", "move_mount"):
        assert counts[4].by_syscall()[syscall] - counts[1].by_syscall()[syscall] == 6
