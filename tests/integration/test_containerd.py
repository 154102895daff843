"""The containerd building blocks on the real machine (root):

- the mount-syscall counter (bpftrace) on a program with known mounts: exact counts, processes
  and threads forked by it and by a root process followed, an unrelated process not counted;
- the idmapped-overlay probe: passes on this filesystem, refuses ramfs (no idmapped mounts);
- opt-in, ``PATCHBENCH_TEST_CONTAINERD_GIT=/path/to/containerd.git``: build the ``containerd``
  target through patchbench (v2.1.4, Go 1.23.11 through the module proxy), start its daemon, import
  L-layer images, run a user-namespaced container that sees every layer's file as uid 0, count its
  mount syscalls (growing by 2 per layer on v2.1.4), and account for leftovers (none); the
  ``layers`` scan on an A/A pair; and one short ``ctrstress`` run (a kill, a delete and a daemon
  restart mid-burst, leftovers counted and removed, a fresh start after each).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from patchbench import build, pipeline
from patchbench.errors import RequirementError
from patchbench.measure import mounttrace, oci_image
from patchbench.runtimes import containerd as cd
from patchbench.runtimes import runc
from patchbench.runtimes.containerd import ContainerdRuntime, mountsys
from patchbench.scenarios import ScenarioContext, ctrstress
from patchbench.scenarios.ctrstress import CtrStressConfig
from patchbench.scenarios.layers import KIND, LayersConfig
from patchbench.util import cmd
from patchbench.util.layout import Layout
from patchbench.util.workspace import Workspace
from tests import support
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
    return [sys.executable, mountsys.__file__, "exercise", str(base),
            "--mounts", str(mounts), "--forks", str(forks), "--threads", str(threads)]


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
    root = cmd.Background(["sh", "-c", f"{wait}; {py} >/dev/null; touch {done}"],
                              env=py_env())
    stranger = cmd.Background(
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


OPTIN = pytest.mark.skipif(
    not (CONTAINERD_GIT and ROOT and shutil.which("bpftrace") and shutil.which("runc")),
    reason="set PATCHBENCH_TEST_CONTAINERD_GIT to a containerd git directory (and run as root "
    "with bpftrace and runc)")


@pytest.fixture(scope="module")
def built_containerd(tmp_path_factory: pytest.TempPathFactory) -> build.Built:
    """The containerd target's baseline, built once through patchbench (Go 1.23.11 is fetched
    through the module proxy, so the Go settings this session started with are restored)."""
    tmp = tmp_path_factory.mktemp("containerd")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in GO_NETWORK_ENV.items():
            if value is None:
                mp.delenv(key, raising=False)
            else:
                mp.setenv(key, value)
        ws = Workspace(root=REPO_ROOT, matrix=REPO_ROOT / "matrix.yaml", builds=tmp / "builds",
                       reports=tmp / "reports", sources={"containerd": CONTAINERD_GIT})
        (built,) = support.build(pipeline.load(ws), ws, "containerd",
                                           [build.Variant("baseline", ())], [])
    return built


def static_busybox() -> Path:
    busybox = Path(shutil.which("busybox") or "/bin/busybox").resolve()
    if not runc.is_static(busybox):
        pytest.skip("needs a static busybox")
    return busybox


@pytest.mark.root
@OPTIN
def test_real_containerd(tmp_path: Path, built_containerd: build.Built) -> None:
    built = built_containerd
    assert built.manifest["fingerprint"]["version"] == "go1.23.11"
    assert "v2.1.4" in built.manifest["version_output"]
    busybox = static_busybox()
    base = Path("/tmp") / f"pb-cd-test-{os.getpid()}"  # short: the socket path must fit
    daemon = cd.ContainerdDaemon(built.bin, base / "d", "pb-test-real",
                                 Path(shutil.which("runc") or "runc"))
    images = {n: oci_image.write_image(tmp_path / f"l{n}.tar", n, busybox) for n in (1, 4)}
    counts = {}
    try:
        daemon.start()
        for img in images.values():
            daemon.import_image(img)
        res = cmd.run(daemon.run_argv(
            images[4], "verify", ["sh", "-c", "stat -c %u /layers/002 /layers/004 /bin/busybox"],
            null_io=False), env=daemon.env(), timeout=120)
        assert res.stdout.split() == ["0", "0", "0"]
        for n, img in images.items():
            counts[n] = daemon.trace_run(img, f"t{n}", base / f"trace{n}")
            assert counts[n].exit_code == 0
        with mounttrace.MountTableSampler(interval=0.01) as sampler:
            burst = [cmd.Background(daemon.run_argv(images[4], f"b{i}"), env=daemon.env())
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


@pytest.mark.root
@OPTIN
def test_layers_kind_on_real_containerd(tmp_path: Path, built_containerd: build.Built) -> None:
    """The scan itself, on v2.1.4 against itself (an A/A pair): daemons per variant under a long
    run path (so the socket goes through the short link), mount counts and their fit, cells,
    verify, per-cell leftover checks, and the runtime's teardown."""
    static_busybox()
    # not under tmp_path: pytest's /tmp/pytest-of-root is 0700, which the containers' mapped
    # root cannot search (the daemon refuses to start there, see test_unsearchable_run_dir)
    top = Path(tempfile.mkdtemp(prefix="pb-layers-test-", dir="/tmp"))
    top.chmod(0o755)
    layout = Layout(top / "builds-for-a-run-directory-long-enough-to-need-the-socket-link",
                    tmp_path / "reports")
    twin = build.Built(build.Variant("baseline-again", ()), built_containerd.path,
                       built_containerd.manifest, True)
    built = [built_containerd, twin]
    rt = ContainerdRuntime()
    rt.check(None, None, None)
    workdir = layout.new_run("mount-mayhem")
    rt.prepare(workdir, None, None, dry_run=False)
    sc = LayersConfig(name="scan", layers=[1, 4], k=[1, 2], runs=2, rounds=1, warmup=0,
                      timeout=60)
    ctx = ScenarioContext(scenario=sc, built=built, runtime=rt, workdir=workdir, seed=3,
                          layout=layout, project_root=REPO_ROOT, alpha=0.05, min_effect=0.02)
    try:
        res, warnings = KIND.run(ctx)
    finally:
        removed = {b.variant.name: rt.cleanup(b.variant.name, b.bin) for b in built}
        shutil.rmtree(top, ignore_errors=True)
    assert str(rt.daemon_for("baseline", built[0].bin).socket).startswith("/run/patchbench/")
    assert [c.label for c in res.cells][:2] == ["baseline L=1 k=1", "baseline L=1 k=2"]
    assert len(res.cells) == 8 and len(res.comparisons) == 4
    assert all(c.samples.exit_codes == [0, 0] for c in res.cells)
    for v in ("baseline", "baseline-again"):
        counts = res.mount_counts[v]
        assert counts["4"]["open_tree"] - counts["1"]["open_tree"] == 6
        assert res.mount_fit[v]["open_tree"] == pytest.approx([2.0, 1.0])
        assert res.verify[v].passed, res.verify[v].output
        assert rt.leftovers(v, built[0].bin) == []
    assert set(res.mounts_left.values()) == {0}
    assert all(t.peak_mounts > 0 for t in res.mount_table.values())
    assert len(set(res.images.values())) == 2
    assert KIND.gate(res) == []
    assert removed == {"baseline": [], "baseline-again": []}
    assert sorted(ctx.extra_files) == ["scan-mounts.svg", "scan-time.svg"]
    assert not [w for w in warnings if "left" in w or "FAILED" in w]


@pytest.mark.root
@OPTIN
def test_ctrstress_kind_on_real_containerd(tmp_path: Path, built_containerd: build.Built) -> None:
    """Three rounds on v2.1.4 against itself: one kill, one delete, one daemon restart, each
    applied to both variants; containers run ``sleep 2`` so that none finishes before a chased
    kill or delete reaches it (each is hit, or refused where its start failed anyway); after
    every round a fresh container starts, and nothing is left at teardown."""
    static_busybox()
    top = Path(tempfile.mkdtemp(prefix="pb-ctrstress-test-", dir="/tmp"))
    top.chmod(0o755)
    layout = Layout(top / "builds", tmp_path / "reports")
    twin = build.Built(build.Variant("baseline-again", ()), built_containerd.path,
                       built_containerd.manifest, True)
    built = [built_containerd, twin]
    rt = ContainerdRuntime()
    rt.check(None, None, None)
    workdir = layout.new_run("mount-mayhem-stress")
    rt.prepare(workdir, None, None, dry_run=False)
    sc = CtrStressConfig(name="kill-restart", layers=[4], k=2,
                                   actions=["kill", "delete", "restart"], args=["sleep", "2"],
                                   delay=(0.5, 1.0), runs=3, rounds=3, warmup=0, timeout=60)
    ctx = ScenarioContext(scenario=sc, built=built, runtime=rt, workdir=workdir, seed=11,
                          layout=layout, project_root=REPO_ROOT, alpha=0.05, min_effect=0.02)
    try:
        res, _ = ctrstress.KIND.run(ctx)
        pids = {b.variant.name: rt.daemon_for(b.variant.name, b.bin).pid for b in built}
    finally:
        removed = {b.variant.name: rt.cleanup(b.variant.name, b.bin) for b in built}
        shutil.rmtree(top, ignore_errors=True)
    assert len(res.rounds_detail) == 6 and all(p is not None for p in pids.values())
    assert sorted(r.action for r in res.rounds_detail) == ["delete"] * 2 + ["kill"] * 2 + [
        "restart"] * 2
    for n in (1, 2, 3):
        pair = [r for r in res.rounds_detail if r.round == n]
        assert {r.variant for r in pair} == {"baseline", "baseline-again"}
        assert len({(r.action, r.delay_s, r.layers) for r in pair}) == 1
    for r in res.rounds_detail:
        assert r.fresh_ok, r.fresh_output
        assert r.hangs == 0 and r.left.errors == []
        if r.action == "restart":
            assert r.restart_s is not None and r.action_outcomes == {"restart": 1}
        else:  # chased: no container can finish sleep 2 before the action reaches it
            assert set(r.action_outcomes) <= {"hit", "refused"}, r
            assert sum(r.action_outcomes.values()) == 2, r
            assert all(code not in (0, None) for code in r.exit_codes), r.exit_codes
    for v, pv in res.per_variant.items():
        assert pv.rounds == 3 and pv.actions == {"kill": 1, "delete": 1, "restart": 1}
        assert pv.fresh_failures == 0
        assert rt.leftovers(v, built[0].bin) == []
    assert removed == {"baseline": [], "baseline-again": []}
