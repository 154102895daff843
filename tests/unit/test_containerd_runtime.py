"""containerd as a runtime, on fixtures: the config it renders, shim socket names, mountinfo
parsing, and a daemon's lifecycle and leftover accounting against a fake ``containerd`` and
``ctr`` (shell scripts), a fake cgroup tree, a fake mountinfo and a real process that looks like a
shim. The idmapped-overlay probe's verdicts. No real containerd and no root are needed."""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchbench.errors import BenchmarkError, RequirementError
from patchbench.runtimes import containerd as cd
from patchbench.runtimes.containerd import mountsys
from patchbench.util import cleanup, cmd, procguard

FAKE_CONTAINERD = """#!/bin/sh
# fake containerd: "listens" (creates the socket file) after a moment, exits 0 on SIGTERM
cfg=$2
sock=$(sed -n '/^\\[grpc\\]/,/^\\[/s/^ *address = "\\(.*\\)"/\\1/p' "$cfg")
trap 'rm -f "$sock"; echo stopped; exit 0' TERM
sleep 0.1
: > "$sock"
echo "listening on $sock"
while :; do sleep 0.05; done
"""

FAKE_CTR = """#!/bin/sh
# fake ctr --address SOCK --namespace NS CMD ...: state in files next to the socket
sock=$2; shift 4
st=$(dirname "$sock")/fake
mkdir -p "$st"; touch "$st/containers" "$st/tasks" "$st/snapshots"
drop() { grep -vx "$2" "$st/$1" > "$st/$1.tmp"; mv "$st/$1.tmp" "$st/$1"; }
case "$1" in
  version) [ -e "$sock" ] || { echo "connection refused" >&2; exit 1; }
           printf 'Client:\\n  Version: fake\\n\\nServer:\\n  Version: fake\\n' ;;
  containers) if [ "$2" = ls ]; then cat "$st/containers"; else drop containers "$3"; fi ;;
  tasks) case "$2" in
           ls) echo "TASK PID STATUS"; sed 's/$/ 1 RUNNING/' "$st/tasks" ;;
           delete) drop tasks "$4" ;;
         esac ;;
  snapshots) if [ "$4" = ls ]; then echo "KEY PARENT KIND"; cat "$st/snapshots";
             else grep -v "^$5 " "$st/snapshots" > "$st/s.tmp"; mv "$st/s.tmp" "$st/snapshots"; fi ;;
  *) echo "fake ctr: $*" >&2; exit 2 ;;
esac
"""


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A world-searchable temporary directory instead of pytest's (which sits under a 0700
    directory): the daemon refuses a run directory its containers' mapped root cannot reach."""
    d = Path(tempfile.mkdtemp(prefix="pb-containerd-unit-"))
    d.chmod(0o755)
    if cd.untraversable(d):
        shutil.rmtree(d)
        pytest.skip(f"the temporary directory {d.parent} is not world-searchable")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def fake_bin(tmp_path: Path) -> Path:
    b = tmp_path / "bin"
    b.mkdir()
    for name, text in (("containerd", FAKE_CONTAINERD), ("ctr", FAKE_CTR),
                       ("containerd-shim-runc-v2", "#!/bin/sh\nexit 0\n")):
        (b / name).write_text(text)
        (b / name).chmod(0o755)
    return b


def test_config_renders_valid_toml(tmp_path: Path) -> None:
    paths = cd.DaemonPaths(tmp_path / 'we"ird')
    cfg = tomllib.loads(cd.render_config(paths, paths.socket))
    assert cfg["version"] == 3
    assert cfg["root"] == str(paths.root) and cfg["state"] == str(paths.state)
    assert cfg["temp"] == str(paths.temp)
    assert cfg["grpc"]["address"] == str(paths.socket)
    assert cfg["ttrpc"]["address"] == f"{paths.socket}.ttrpc"
    assert "io.containerd.grpc.v1.cri" in cfg["disabled_plugins"]
    assert "io.containerd.nri.v1.nri" in cfg["disabled_plugins"]
    assert cfg["required_plugins"] == ["io.containerd.snapshotter.v1.overlayfs"]


def test_shim_socket_matches_containerd() -> None:
    # seen on this project's machine: containerd v2.1.4, a detached `ctr run` of c3
    assert cd.shim_socket("/tmp/cdrun2/d/containerd.sock", "pb-test-v", "c3") == Path(
        "/run/containerd/s/d177ea25d61fdcc8c0cfd563c05a9c558c0f7f5ced90c74d736fc0e9ce991664")
    assert cd.shim_socket("/a", "ns", "c3") != cd.shim_socket("/a", "ns", "c3", debug=True)


def test_mounts_under(tmp_path: Path) -> None:
    base = tmp_path / "run dir"
    base.mkdir()
    esc = str(base).replace(" ", "\\040")
    info = tmp_path / "mountinfo"
    info.write_text(
        "1 0 8:1 / / rw - ext4 /dev/vda rw\n"
        f"2 1 0:50 / {esc}/state/ns/c1/rootfs rw - overlay overlay rw,lowerdir=x\n"
        f"3 1 0:51 / {esc}-other/x rw - tmpfs tmpfs rw\n"
        f"4 2 0:52 / {esc}/tmp/ovl-idmapped1/0 rw,idmapped - ext4 /dev/vda rw\n")
    assert cd.mounts_under(base, info) == [base / "tmp/ovl-idmapped1/0",
                                           base / "state/ns/c1/rootfs"]


def test_namespace_and_cgroups(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError):
        cd.ContainerdDaemon(tmp_path, tmp_path, "pb--x", Path("/bin/true"))
    cg = tmp_path / "cg"
    for ctrl in ("memory", "pids"):
        (cg / ctrl / "pb-t-base" / "c1").mkdir(parents=True)
        (cg / ctrl / "pb-t-base-v1").mkdir(parents=True)  # another variant: never matched
    assert cd.namespace_cgroups("pb-t-base", cg) == [cg / "memory/pb-t-base", cg / "pids/pb-t-base"]
    procs = cg / "procs-test"
    (procs / "sub").mkdir(parents=True)
    (procs / "cgroup.procs").write_text("12\n7\n")
    (procs / "sub" / "cgroup.procs").write_text("7\n30\n")
    assert cd.cgroup_pids(procs) == [7, 12, 30]


def test_long_base_uses_a_short_socket(tmp_path: Path) -> None:
    d = cd.ContainerdDaemon(tmp_path, tmp_path / ("x" * 120), "ns", Path("/bin/true"))
    assert len(str(d.socket)) < cd.MAX_SOCKET_PATH
    assert str(d.socket).startswith("/run/patchbench/")
    short = cd.ContainerdDaemon(tmp_path, tmp_path / "d", "ns", Path("/bin/true"))
    assert short.socket == tmp_path / "d" / "containerd.sock"


def test_run_argv(tmp_path: Path) -> None:
    from patchbench.measure.oci_image import OciImage

    img = OciImage(tmp_path / "i.tar", "patchbench.invalid/layers:4", 4, "sha256:m", "sha256:c",
                   (), 0)
    d = cd.ContainerdDaemon(tmp_path / "bin", tmp_path / "d", "pb-x-base", Path("/usr/sbin/runc"))
    argv = d.run_argv(img, "c9")
    assert argv[:5] == [str(tmp_path / "bin/ctr"), "--address", str(d.socket), "--namespace",
                        "pb-x-base"]
    assert argv[-3:] == ["patchbench.invalid/layers:4", "c9", "true"]
    for flag in ("--rm", "--null-io", "--remap-labels", "--uidmap", "--gidmap"):
        assert flag in argv
    assert argv[argv.index("--uidmap") + 1] == "0:100000:65536"
    assert argv[argv.index("--runc-binary") + 1] == "/usr/sbin/runc"
    plain = d.run_argv(img, "c10", ["sleep", "9"], userns=False, null_io=False, detach=True)
    assert "-d" in plain and "--uidmap" not in plain and "--null-io" not in plain
    assert d.container_ids == {"c9", "c10"}


def test_lifecycle_and_leftovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = fake_bin(tmp_path)
    base = tmp_path / "d"
    cg = tmp_path / "cg"
    ns = "pb-t-base"
    (cg / "memory" / ns / "c1").mkdir(parents=True)
    sockets = tmp_path / "s"
    sockets.mkdir()
    monkeypatch.setattr(cd, "SHIM_SOCKET_DIR", sockets)
    info = tmp_path / "mountinfo"
    d = cd.ContainerdDaemon(bin_dir, base, ns, Path("/bin/true"), cgroup_base=cg, mountinfo=info)
    assert d.pid is None
    d.start()
    try:
        assert d.pid is not None and d.socket.exists()
        assert "listening" in d.paths.log.read_text()
        assert tomllib.loads(d.paths.config.read_text())["root"] == str(base / "root")
        for p in (d.paths.root, d.paths.state, d.paths.temp, d.paths.tmp):
            assert p.is_dir()
        fake = base / "fake"
        (fake / "containers").write_text("c1\nc2\n")
        (fake / "tasks").write_text("c1\n")
        (fake / "snapshots").write_text("c1 sha256:x Active\nsha256:x  Committed\n")
        assert d.state_leftovers() == ["container c1", "container c2", "task c1",
                                       "active snapshot c1"]
        assert sorted(d.cleanup_state()) == ["active snapshot c1", "container c1",
                                             "container c2", "task c1"]
        assert d.state_leftovers() == []
    finally:
        code = d.stop()
    assert code == 0 and "stopped" in d.paths.log.read_text()
    assert d.stop() is None  # stopping twice is harmless
    with pytest.raises(BenchmarkError):
        d.ctr("version")

    # what the "stopped daemon" left: a mount, a shim socket, a shim, a container cgroup
    (d.paths.state / cd.TASK_DIR / ns / "c1").mkdir(parents=True)
    sock = cd.shim_socket(d.socket, ns, "c1")
    sock.write_text("")
    info.write_text(f"1 0 8:1 / / rw - ext4 /dev/vda rw\n"
                    f"9 1 0:50 / {d.paths.state}/{cd.TASK_DIR}/{ns}/c1/rootfs rw - overlay o rw\n")
    # a process that looks like a shim (python: it never forks, so exactly one matches)
    shim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "-address",
                             str(d.socket)])
    deadline = time.monotonic() + 10  # right after exec, /proc/PID/cmdline can still be empty
    while not Path(f"/proc/{shim.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)
    unmounted: list[Path] = []
    monkeypatch.setattr(mountsys, "umount2", lambda p, flags=0: unmounted.append(Path(p)))
    try:
        left = d.host_leftovers()
        assert not left.empty()
        assert left.counts() == {"mounts": 1, "shims": 1, "shim_sockets": 1, "cgroups": 1,
                                 "processes": 0, "namespace_cgroups": 1}
        assert left.shims == [shim.pid]
        found, problems = d.cleanup_host()
        assert problems == [] and found.counts() == left.counts()
        assert shim.wait(timeout=10) == -signal.SIGKILL
    finally:
        if shim.poll() is None:
            shim.kill()
            shim.wait()
    assert unmounted == [d.paths.state / cd.TASK_DIR / ns / "c1" / "rootfs"]
    assert not sock.exists() and not (cg / "memory" / ns).exists()
    info.write_text("1 0 8:1 / / rw - ext4 /dev/vda rw\n")
    assert d.host_leftovers().empty()


def test_daemon_that_dies_or_never_answers(tmp_path: Path) -> None:
    bin_dir = fake_bin(tmp_path)
    (bin_dir / "containerd").write_text("#!/bin/sh\necho 'bad config' >&2\nexit 3\n")
    d = cd.ContainerdDaemon(bin_dir, tmp_path / "d", "ns", Path("/bin/true"))
    with pytest.raises(BenchmarkError, match="exited with code 3") as err:
        d.start()
    assert "bad config" in (err.value.detail or "")
    (bin_dir / "containerd").write_text("#!/bin/sh\nexec sleep 60\n")
    slow = cd.ContainerdDaemon(bin_dir, tmp_path / "e", "ns", Path("/bin/true"), start_timeout=0.25)
    with pytest.raises(BenchmarkError, match="did not answer"):
        slow.start()
    assert slow.pid is None


def probe_result(monkeypatch: pytest.MonkeyPatch, code: int, stdout: str) -> list[Any]:
    calls: list[Any] = []

    def fake_run(argv: Any, **kw: Any) -> cmd.Result:
        calls.append(argv)
        return cmd.Result(tuple(argv), code, stdout, "", 0.1)

    monkeypatch.setattr(cmd, "run", fake_run)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    return calls


def test_probe_verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = probe_result(monkeypatch, 0, '{"ok": true, "reason": "works"}\n')
    assert cd.probe_idmapped_overlay(tmp_path)["ok"] is True
    assert calls[0][1:3] == [str(Path(mountsys.__file__).resolve()), "probe-idmap"]
    probe_result(monkeypatch, 1, '{"ok": false, "reason": "mount_setattr: Invalid argument"}\n')
    with pytest.raises(RequirementError, match="mount_setattr: Invalid argument") as err:
        cd.probe_idmapped_overlay(tmp_path)
    assert err.value.exit_code == 16
    probe_result(monkeypatch, 1, "Traceback ...\n")
    with pytest.raises(RequirementError, match="gave no result"):
        cd.probe_idmapped_overlay(tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(RequirementError, match="need root"):
        cd.probe_idmapped_overlay(tmp_path)


def test_clean_stale_after_a_killed_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = fake_bin(tmp_path)
    cg = tmp_path / "cg"
    (cg / "pids" / "pb-old-base" / "c7").mkdir(parents=True)
    monkeypatch.setattr(cd, "SHIM_SOCKET_DIR", tmp_path / "s")
    info = tmp_path / "mountinfo"
    info.write_text("1 0 8:1 / / rw - ext4 /dev/vda rw\n")
    old = cd.ContainerdDaemon(bin_dir, tmp_path / "old", "pb-old-base", Path("/bin/true"),
                              cgroup_base=cg, mountinfo=info)
    old.start()  # and then "patchbench is killed": nobody stops it
    assert json_of(old.paths.record)["namespace"] == "pb-old-base"
    pid = old.pid
    assert pid is not None and cd.daemon_pids(old.paths.config) == [pid]
    (tmp_path / "no-record").mkdir()
    # its owner (this process) is alive: a live run's daemon is never touched
    assert cd.clean_stale([old.paths.base], cgroup_base=cg, mountinfo=info) == []
    assert cd.daemon_pids(old.paths.config) == [pid]
    rec = json_of(old.paths.record)
    assert rec["owner"] == cleanup.owner_tag()
    rec["owner"] = "p999999999s1"  # now its owner is dead
    old.paths.record.write_text(json.dumps(rec))
    removed = cd.clean_stale([old.paths.base, tmp_path / "no-record"], cgroup_base=cg,
                             mountinfo=info)
    assert removed[0] == f"containerd pid {pid}"
    assert f"cgroup {cg / 'pids/pb-old-base/c7'} (old)" in removed
    assert old._daemon is not None and old._daemon.wait(10) == -signal.SIGKILL
    old._daemon.stop()
    assert cd.daemon_pids(old.paths.config) == []
    assert not (cg / "pids" / "pb-old-base").exists()


def json_of(path: Path) -> Any:
    import json

    return json.loads(path.read_text())


def test_unsearchable_run_dir(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    (closed / "run").mkdir(parents=True)
    closed.chmod(0o700)
    assert cd.untraversable(closed / "run" / "d" / "state") == [closed]
    assert cd.untraversable(tmp_path / "open" / "x") == []
    d = cd.ContainerdDaemon(fake_bin(tmp_path), closed / "run" / "d", "ns", Path("/bin/true"))
    with pytest.raises(RequirementError, match="cannot reach their rootfs") as err:
        d.start()
    assert f"{closed} (mode 700)" in err.value.message
    assert d.pid is None


def test_daemon_leaves_the_run_escape_guard(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's escape guard kills whatever outlives a command; the daemon does on purpose, so it
    moves back to patchbench's own cgroup (here: a fake v1 freezer hierarchy)."""
    (tmp_path / "cg" / "freezer").mkdir(parents=True)
    (tmp_path / "cg" / "freezer" / "cgroup.procs").write_text("")
    guard = procguard.ProcGuard("run", root=tmp_path / "cg").__enter__()
    assert guard.kind == "v1-freezer" and guard.available and guard.path is not None
    (guard.path / "cgroup.procs").write_text("")  # a real cgroup has it; children "join" it
    proc_cgroup = tmp_path / "self-cgroup"
    proc_cgroup.write_text("6:freezer:/outer\n0::/\n")
    assert procguard.own_cgroup("v1-freezer", tmp_path / "cg" / "freezer", proc_cgroup) == \
        tmp_path / "cg" / "freezer" / "outer"
    assert procguard.own_cgroup("v2", tmp_path / "cg", proc_cgroup) == tmp_path / "cg"
    assert procguard.exempt(4242) is False  # not guarding
    monkeypatch.setattr(procguard, "_ACTIVE", guard)
    d = cd.ContainerdDaemon(fake_bin(tmp_path), tmp_path / "d", "ns", Path("/bin/true"))
    d.start()
    try:
        own = procguard.own_cgroup("v1-freezer", tmp_path / "cg" / "freezer")
        assert (own / "cgroup.procs").read_text() == f"{d.pid}\n"
    finally:
        d.stop()
