"""containerd as a runtime target: one daemon per variant, with everything of it (root, state,
sockets, temporary directories, a namespace named after the run) under the run's directory, so
that what a variant leaves behind is its own and can be counted. ``ContainerdDaemon`` starts and
stops a variant's daemon and counts its leftovers (containers, tasks, snapshots while it runs;
mounts, shims, shim sockets and cgroups after it stopped); ``cleanup_host`` removes them and says
what it did. ``probe_idmapped_overlay`` checks, before anything is built, that idmapped mounts
work on overlayfs here. docs/runtimes.md."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import signal
import string
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbench.errors import BenchmarkError, RequirementError
from patchbench.measure import mounttrace
from patchbench.measure.mounttrace import MountCounts
from patchbench.measure.oci_image import OciImage
from patchbench.runtimes.containerd import mountsys
from patchbench.util import cleanup, cmd, procguard
from patchbench.util.files import sha256_file, write_json_atomic

CONFIG_TEMPLATE = Path(__file__).resolve().with_name("config.toml")
SHIM_SOCKET_DIR = Path("/run/containerd/s")  # containerd's fixed defaults.DefaultStateDir + "/s"
CGROUP_ROOT = Path("/sys/fs/cgroup")
TASK_DIR = "io.containerd.runtime.v2.task"
SNAPSHOTTER = "overlayfs"
USERNS_MAP = "0:100000:65536"
MAX_SOCKET_PATH = 100  # sun_path is 108 bytes; containerd appends ".ttrpc"
NAMESPACE_RE = re.compile(r"^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$")  # containerd's identifiers


@dataclass(frozen=True)
class DaemonPaths:
    base: Path

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def temp(self) -> Path:
        return self.base / "temp"

    @property
    def tmp(self) -> Path:
        """TMPDIR of the daemon, its shims and ctr: where temporary and idmapped mounts go."""
        return self.base / "tmp"

    @property
    def config(self) -> Path:
        return self.base / "config.toml"

    @property
    def log(self) -> Path:
        return self.base / "containerd.log"

    @property
    def socket(self) -> Path:
        return self.base / "containerd.sock"

    @property
    def record(self) -> Path:
        return self.base / "daemon.json"


def untraversable(path: Path) -> list[Path]:
    """Ancestors of ``path`` that a user-namespaced container's mapped root (an unprivileged host
    uid) cannot search: runc, inside the user namespace, must reach the rootfs under the state
    directory. Empty when every existing ancestor is world-searchable (o+x)."""
    out = []
    for p in [path, *path.parents]:
        try:
            mode = p.stat().st_mode
        except OSError:
            continue
        if not mode & 0o001:
            out.append(p)
    return sorted(out)


def _toml_str(value: str | Path) -> str:
    return json.dumps(str(value))  # a TOML basic string for any path


def render_config(paths: DaemonPaths, socket: Path) -> str:
    tpl = string.Template(CONFIG_TEMPLATE.read_text())
    return tpl.substitute(
        root=_toml_str(paths.root), state=_toml_str(paths.state), temp=_toml_str(paths.temp),
        socket=_toml_str(socket), ttrpc_socket=_toml_str(f"{socket}.ttrpc"),
    )


def shim_socket(address: Path | str, namespace: str, container_id: str, debug: bool = False) -> Path:
    """Where containerd's shim for ``container_id`` listens (pkg/shim SocketAddress)."""
    path = os.path.join(str(address), namespace, container_id)
    if debug:
        path = os.path.join(path, "debug")
    return SHIM_SOCKET_DIR / hashlib.sha256(path.encode()).hexdigest()


def _unescape(field_: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_)


def mounts_under(prefix: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> list[Path]:
    """Mount points at or below ``prefix``, in the order to unmount them (last mounted first)."""
    pre = str(prefix.resolve()) if prefix.exists() else str(prefix)
    found: list[Path] = []
    for line in mountinfo.read_text().splitlines():
        parts = line.split(" ")
        if len(parts) < 5:
            continue
        point = _unescape(parts[4])
        if point == pre or point.startswith(pre.rstrip("/") + "/"):
            found.append(Path(point))
    return list(reversed(found))


def unmount(points: Iterable[Path]) -> tuple[int, list[str]]:
    """Detach each mount point; return how many were unmounted and the failures."""
    done, failed = 0, []
    for p in points:
        try:
            mountsys.umount2(p, mountsys.MNT_DETACH)
            done += 1
        except OSError as exc:
            failed.append(f"{p}: {exc.strerror}")
    return done, failed


def shim_pids(address: Path, proc: Path = Path("/proc")) -> list[int]:
    """Processes whose command line carries ``-address <address>`` (the shims of one daemon)."""
    want = str(address)
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args]
        for i, w in enumerate(words[:-1]):
            if w in ("-address", "--address") and words[i + 1] == want:
                out.append(int(entry.name))
                break
    return sorted(out)


def namespace_cgroups(namespace: str, base: Path = CGROUP_ROOT) -> list[Path]:
    """The namespace's cgroup directories: ``<base>/<ns>`` (v2) or ``<base>/<ctrl>/<ns>`` (v1)."""
    found = []
    for cand in [base / namespace, *(d / namespace for d in sorted(base.glob("*")) if d.is_dir())]:
        if cand.is_dir():
            found.append(cand)
    return found


def cgroup_pids(path: Path) -> list[int]:
    """The processes in a cgroup directory and below it."""
    pids: set[int] = set()
    for procs in [path / "cgroup.procs", *path.rglob("*/cgroup.procs")]:
        with contextlib.suppress(OSError):
            pids.update(int(x) for x in procs.read_text().split())
    return sorted(pids)


def _rmdir_tree(path: Path) -> bool:
    for child in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            child.rmdir()
    try:
        path.rmdir()
    except OSError:
        return False
    return True


@dataclass
class HostLeftovers:
    """What a stopped daemon left on the host (outside its own files)."""

    mounts: list[str] = field(default_factory=list)
    shims: list[int] = field(default_factory=list)
    shim_sockets: list[str] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)  # a container's cgroup (<ns>/<id>)
    processes: list[int] = field(default_factory=list)  # still running in those cgroups
    # the namespace's parent cgroups runc creates and never removes (empty; expected, removed
    # by cleanup_host, not counted as leftovers)
    namespace_cgroups: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.mounts or self.shims or self.shim_sockets or self.cgroups
                    or self.processes)

    def summary(self) -> list[str]:
        return ([f"mount {m}" for m in self.mounts] + [f"shim pid {p}" for p in self.shims]
                + [f"shim socket {s}" for s in self.shim_sockets]
                + [f"cgroup {c}" for c in self.cgroups]
                + [f"container process {p}" for p in self.processes])

    def counts(self) -> dict[str, int]:
        return {"mounts": len(self.mounts), "shims": len(self.shims),
                "shim_sockets": len(self.shim_sockets), "cgroups": len(self.cgroups),
                "processes": len(self.processes),
                "namespace_cgroups": len(self.namespace_cgroups)}


class ContainerdDaemon:
    """One variant's containerd, from start to leftover accounting."""

    snapshotter = SNAPSHOTTER

    def __init__(
        self,
        bin_dir: Path,
        base: Path,
        namespace: str,
        runc: Path,
        *,
        cgroup_base: Path = CGROUP_ROOT,
        start_timeout: float = 30.0,
        proc: Path = Path("/proc"),
        mountinfo: Path = Path("/proc/self/mountinfo"),
    ):
        if not NAMESPACE_RE.match(namespace) or len(namespace) > 76:
            raise BenchmarkError(f"{namespace!r} is not a valid containerd namespace")
        self.bin_dir = bin_dir
        self.paths = DaemonPaths(base)
        self.namespace = namespace
        self.runc = runc
        self.cgroup_base = cgroup_base
        self.start_timeout = start_timeout
        self.proc = proc
        self.mountinfo = mountinfo
        self._daemon: cmd.Background | None = None
        self.container_ids: set[str] = set()  # every id a caller ran, for the shim sockets

    # -- paths and commands -------------------------------------------------------------------
    @property
    def socket(self) -> Path:
        """The gRPC socket; a short link to ``base`` stands in when the path would not fit."""
        sock = self.paths.socket
        if len(str(sock)) + len(".ttrpc") <= MAX_SOCKET_PATH:
            return sock
        digest = hashlib.sha256(str(self.paths.base).encode()).hexdigest()[:12]
        return Path("/run/patchbench") / f"cd-{digest}" / "containerd.sock"

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items()
                if k in ("HOME", "LANG", "LC_ALL", "TZ", "GOMAXPROCS", "GOTRACEBACK")}
        path = [str(self.bin_dir), str(self.runc.parent), "/usr/local/sbin", "/usr/local/bin",
                "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        return {**keep, "PATH": ":".join(dict.fromkeys(path)), "TMPDIR": str(self.paths.tmp)}

    def ctr_argv(self, *args: str) -> list[str]:
        return [str(self.bin_dir / "ctr"), "--address", str(self.socket), "--namespace",
                self.namespace, *args]

    def ctr(self, *args: str, timeout: float = 60.0, check: bool = True) -> cmd.Result:
        return cmd.run(self.ctr_argv(*args), env=self.env(), timeout=timeout, check=check,
                           error=BenchmarkError, what=f"ctr {' '.join(args[:2])}")

    def run_argv(self, image: OciImage | str, container_id: str, args: Sequence[str] = ("true",), *,
                 userns: bool = True, null_io: bool = True, detach: bool = False) -> list[str]:
        """``ctr run`` of ``image`` (``--rm``, or ``-d``) with the user-namespace mapping and the
        remapped snapshot."""
        self.container_ids.add(container_id)
        opts = ["run", "-d" if detach else "--rm", "--snapshotter", SNAPSHOTTER, "--runc-binary",
                str(self.runc)]
        if null_io:
            opts.append("--null-io")
        if userns:
            opts += ["--uidmap", USERNS_MAP, "--gidmap", USERNS_MAP, "--remap-labels"]
        name = image if isinstance(image, str) else image.name
        return self.ctr_argv(*opts, name, container_id, *args)

    def trace_run(self, image: OciImage, container_id: str, workdir: Path,
                  timeout: float = 300.0) -> MountCounts:
        """The mount syscalls of one user-namespaced ``ctr run --rm`` of ``image``: of ``ctr``,
        of this daemon and of everything either forks (the shim, runc)."""
        if self.pid is None:
            raise BenchmarkError("trace_run needs the daemon running")
        return mounttrace.trace(self.run_argv(image, container_id), workdir, roots=[self.pid],
                                env=self.env(), timeout=timeout)

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._daemon.proc.pid if self._daemon is not None else None

    def start(self) -> None:
        p = self.paths
        for d in (p.root, p.state, p.temp, p.tmp):
            d.mkdir(parents=True, exist_ok=True)
        closed = untraversable(p.state)
        if closed:
            raise RequirementError(
                f"user-namespaced containers cannot reach their rootfs under {p.state}: "
                + ", ".join(f"{c} (mode {c.stat().st_mode & 0o777:o})" for c in closed)
                + " cannot be searched by other users",
                hint="put builds/ where every directory above it is world-searchable "
                "(chmod o+x), e.g. --builds /var/tmp/patchbench-builds")
        sock = self.socket
        if sock != p.socket:
            sock.parent.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                sock.parent.unlink()
            sock.parent.symlink_to(p.base)
        p.config.write_text(render_config(p, sock))
        self._daemon = cmd.Background(
            [self.bin_dir / "containerd", "--config", p.config], env=self.env(), log=p.log)
        # a daemon outlives every command on purpose: out of the run's escape guard (its shims
        # follow it); what it leaves is this module's to count (host_leftovers)
        procguard.exempt(self._daemon.proc.pid)
        # what a later run needs to clean up after this one if it is killed (clean_stale)
        write_json_atomic(p.record, {"namespace": self.namespace, "socket": str(sock),
                                     "bin_dir": str(self.bin_dir), "runc": str(self.runc),
                                     "pid": self._daemon.proc.pid,
                                     "owner": cleanup.owner_tag()})
        deadline = time.monotonic() + self.start_timeout
        while True:
            code = self._daemon.wait(0.1)
            if code is not None:
                self._daemon = None
                raise BenchmarkError(f"containerd exited with code {code} while starting",
                                     detail=cmd.tail(p.log.read_text(errors="replace")))
            res = cmd.run(self.ctr_argv("version"), env=self.env(), timeout=10, check=False)
            if res.returncode == 0 and "Server:" in res.stdout:
                return
            if time.monotonic() > deadline:
                self.stop()
                raise BenchmarkError(
                    f"containerd did not answer within {self.start_timeout:g} s",
                    detail=cmd.tail(p.log.read_text(errors="replace")))
            time.sleep(0.1)

    def stop(self, grace: float = 15.0) -> int | None:
        """SIGTERM, wait ``grace`` seconds, then kill its process group; return its exit code."""
        if self._daemon is None:
            return None
        daemon, self._daemon = self._daemon, None
        daemon.signal(signal.SIGTERM)
        code = daemon.wait(grace)
        daemon.stop()
        if self.socket != self.paths.socket:
            with contextlib.suppress(OSError):
                self.socket.parent.unlink()
        return code if code is not None else daemon.proc.returncode

    def __enter__(self) -> ContainerdDaemon:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def leftover_mounts(self) -> list[Path]:
        """Mounts of this daemon's directory (its run) still in the mount table."""
        return mounts_under(self.paths.base, self.mountinfo)

    def shims(self) -> list[int]:
        """The shims running with this daemon's address."""
        return shim_pids(self.socket, self.proc)

    def unmount_leftovers(self) -> tuple[int, list[str]]:
        """Detach every mount of the run; return how many, and the failures."""
        return unmount(self.leftover_mounts())

    # -- what it left ----------------------------------------------------------------------------
    def images(self) -> dict[str, str]:
        """name -> digest of the namespace's images."""
        out = {}
        for line in self.ctr("images", "ls").stdout.splitlines()[1:]:
            cols = line.split()
            if len(cols) >= 3:
                out[cols[0]] = cols[2]
        return out

    def import_image(self, image: OciImage, timeout: float = 600.0) -> None:
        """``ctr images import`` (unpacked for overlayfs); checks the digest it reports."""
        self.ctr("images", "import", "--snapshotter", SNAPSHOTTER, str(image.path),
                 timeout=timeout)
        got = self.images().get(image.name)
        if got != image.manifest_digest:
            raise BenchmarkError(f"imported {image.name} has digest {got}, expected "
                                 f"{image.manifest_digest}")

    def state_leftovers(self) -> list[str]:
        """Containers, tasks and active snapshots of the namespace (the daemon must be up)."""
        out = [f"container {c}" for c in self.ctr("containers", "ls", "-q").stdout.split()]
        out += [f"task {line.split()[0]}" for line in
                self.ctr("tasks", "ls").stdout.splitlines()[1:] if line.strip()]
        for line in self.ctr("snapshots", "--snapshotter", SNAPSHOTTER, "ls").stdout.splitlines()[1:]:
            cols = line.split()
            if len(cols) >= 3 and cols[-1] == "Active":
                out.append(f"active snapshot {cols[0]}")
        return out

    def cleanup_state(self) -> list[str]:
        """Kill and delete every task and container of the namespace, remove active snapshots."""
        removed = []
        for line in self.ctr("tasks", "ls").stdout.splitlines()[1:]:
            if line.strip():
                tid = line.split()[0]
                self.ctr("tasks", "kill", "-s", "KILL", tid, check=False)
                self.ctr("tasks", "delete", "-f", tid, check=False, timeout=60)
                removed.append(f"task {tid}")
        for cid in self.ctr("containers", "ls", "-q").stdout.split():
            self.ctr("containers", "delete", cid, check=False, timeout=60)
            removed.append(f"container {cid}")
        for line in self.ctr("snapshots", "--snapshotter", SNAPSHOTTER, "ls").stdout.splitlines()[1:]:
            cols = line.split()
            if len(cols) >= 3 and cols[-1] == "Active":
                self.ctr("snapshots", "--snapshotter", SNAPSHOTTER, "rm", cols[0], check=False)
                removed.append(f"active snapshot {cols[0]}")
        return removed

    def known_container_ids(self) -> set[str]:
        ids = set(self.container_ids)
        task_ns = self.paths.state / TASK_DIR / self.namespace
        if task_ns.is_dir():
            ids.update(d.name for d in task_ns.iterdir() if d.is_dir())
        return ids

    def host_leftovers(self) -> HostLeftovers:
        sockets = []
        for cid in sorted(self.known_container_ids()):
            for debug in (False, True):
                s = shim_socket(self.socket, self.namespace, cid, debug)
                if s.exists():
                    sockets.append(str(s))
        parents = namespace_cgroups(self.namespace, self.cgroup_base)
        groups = [c for p in parents for c in sorted(p.iterdir()) if c.is_dir()]
        return HostLeftovers(
            mounts=[str(m) for m in mounts_under(self.paths.base, self.mountinfo)],
            shims=shim_pids(self.socket, self.proc),
            shim_sockets=sockets,
            cgroups=[str(c) for c in groups],
            processes=sorted({pid for c in groups for pid in cgroup_pids(c)}),
            namespace_cgroups=[str(p) for p in parents],
        )

    def cleanup_host(self) -> tuple[HostLeftovers, list[str]]:
        """Count what is left, then remove it; returns (what was found, what could not go)."""
        found = self.host_leftovers()
        problems: list[str] = []
        for pid in [*found.shims, *found.processes]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        groups = [Path(c) for c in found.cgroups]
        while any(cgroup_pids(c) for c in groups) and time.monotonic() < deadline:
            time.sleep(0.05)
        _, failed = unmount(Path(m) for m in found.mounts)
        problems += failed
        for s in found.shim_sockets:
            with contextlib.suppress(FileNotFoundError):
                Path(s).unlink()
        for c in [*found.cgroups, *found.namespace_cgroups]:
            if not _rmdir_tree(Path(c)):
                problems.append(f"cgroup {c} could not be removed")
        return found, problems


def daemon_pids(config: Path, proc: Path = Path("/proc")) -> list[int]:
    """Running containerd processes started with ``--config <config>``."""
    want = str(config)
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = [w.decode(errors="replace")
                     for w in (entry / "cmdline").read_bytes().split(b"\0")]
        except OSError:
            continue
        # the binary, or a script run through its interpreter (argv: sh, .../containerd, ...)
        named = any(Path(w).name == "containerd" for w in words[:2])
        if named and "--config" in words[:-1] and words[words.index("--config") + 1] == want:
            out.append(int(entry.name))
    return sorted(out)


def clean_stale(
    bases: Iterable[Path], *, cgroup_base: Path = CGROUP_ROOT, proc: Path = Path("/proc"),
    mountinfo: Path = Path("/proc/self/mountinfo"),
) -> list[str]:
    """What killed earlier runs left: for each daemon directory in ``bases`` whose ``daemon.json``
    names an owner (``patchbench.util.cleanup`` tag) that no longer runs, kill its daemon if it still
    runs, then remove its shims, container processes, mounts, shim sockets and cgroups."""
    removed: list[str] = []
    for base in bases:
        paths = DaemonPaths(base)
        try:
            rec = json.loads(paths.record.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        owner = rec.get("owner")
        if not isinstance(owner, str) or cleanup.alive(owner):
            continue  # a live run's daemon, or one we cannot attribute: never touched
        for pid in daemon_pids(paths.config, proc):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            removed.append(f"containerd pid {pid}")
        d = ContainerdDaemon(Path(rec["bin_dir"]), base, rec["namespace"], Path(rec["runc"]),
                             cgroup_base=cgroup_base, proc=proc, mountinfo=mountinfo)
        found, _ = d.cleanup_host()
        removed += [f"{item} ({base.name})" for item in found.summary()]
        if d.socket != paths.socket:
            with contextlib.suppress(OSError):
                d.socket.parent.unlink()
    return removed


def runc_record(runc: Path) -> dict[str, str]:
    """The one runc every variant uses, for the manifest: its path, sha256 and version."""
    res = cmd.run([runc, "--version"], timeout=30, error=RequirementError,
                      what="runc --version")
    return {"path": str(runc), "sha256": sha256_file(runc.resolve()),
            "version": res.stdout.strip()}


def probe_idmapped_overlay(directory: Path, timeout: float = 60.0) -> dict[str, object]:
    """RequirementError (exit 16) with the reason unless idmapped mounts work as overlayfs lower
    directories on ``directory``'s filesystem; returns the probe's record when they do."""
    if platform.system() != "Linux":
        raise RequirementError(f"idmapped overlayfs mounts need Linux, this is {platform.system()}")
    if os.geteuid() != 0:
        raise RequirementError("idmapped overlayfs mounts need root",
                               hint="run it as root, e.g. sudo -E invoke compare ...")
    directory.mkdir(parents=True, exist_ok=True)
    # mountsys.py needs only the standard library: run as a script, not with -m (which would
    # import this package first and warn that it found mountsys already imported)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    res = cmd.run([sys.executable, str(Path(mountsys.__file__).resolve()), "probe-idmap",
                       str(directory)],
                      env=env, timeout=timeout, check=False)
    try:
        record: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise RequirementError(
            "the idmapped-overlay probe gave no result",
            detail=cmd.tail(res.stdout + res.stderr)) from None
    if res.returncode != 0 or not record.get("ok"):
        raise RequirementError(
            f"idmapped mounts on overlayfs lower directories do not work here "
            f"(kernel {platform.release()}, {directory}): {record.get('reason')}",
            hint="containerd's user-namespace snapshots need Linux >= 5.19 with idmapped mounts "
            "on the snapshot filesystem (ext4, xfs, btrfs, tmpfs >= 6.3) and overlayfs")
    return record


def _namespace(token: str, variant: str) -> str:
    return "pb-" + token + "-" + re.sub(r"[^A-Za-z0-9]+", "-", variant).strip("-")


class ContainerdRuntime:
    """The ``containerd`` runtime: one daemon per variant, started on first use by the scenario
    (``daemon()``), stopped and accounted for by ``cleanup()``/``leftovers()``; images by
    ``image()``. ``check()`` runs the idmapped-overlay probe before anything is built."""

    name = "containerd"
    DIRNAME = "containerd"

    def __init__(self, cgroup_base: Path = CGROUP_ROOT) -> None:
        import secrets

        self.cgroup_base = cgroup_base
        self.token = secrets.token_hex(3)
        self.workdir: Path | None = None
        self.runc: Path | None = None
        self.probe: dict[str, object] | None = None
        self._daemons: dict[str, ContainerdDaemon] = {}
        self._images: dict[int, OciImage] = {}
        self._left: dict[str, HostLeftovers] = {}

    def check(self, project: object, comparison: object, target: object) -> None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="pb-idmap-probe-") as tmp:
            probe_idmapped_overlay(Path(tmp))
        mounttrace.check()
        cmd.which("runc")
        cmd.which("busybox")

    def prepare(self, workdir: Path, project: object, comparison: object, dry_run: bool,
                bin_dir: Path | None = None, variants: Sequence[object] = ()) -> None:
        self.workdir = workdir
        if dry_run:
            return
        self.probe = probe_idmapped_overlay(workdir / "idmap-probe")
        self.runc = Path(cmd.which("runc")).resolve()
        stale = [b for run in sorted(workdir.parent.iterdir())
                 if run != workdir and run.is_dir()
                 for b in sorted((run / self.DIRNAME).glob("*"))]
        removed = clean_stale(stale, cgroup_base=self.cgroup_base)
        if removed:
            cmd.say("removed what a killed earlier run left: " + "; ".join(removed))

    def namespace(self, variant: str) -> str:
        return _namespace(self.token, variant)

    def close(self) -> None:
        """Nothing runs for the whole run: each variant's daemon is stopped after its cells."""

    def record(self) -> dict[str, Any] | None:
        """Nothing for the whole run: the layers kind records the one runc in its result."""
        return None

    def runc_info(self) -> dict[str, str]:
        """The one runc every variant's shim runs (path, sha256, version), for the report."""
        return runc_record(self.runc) if self.runc is not None else {}

    def daemon_for(self, variant: str, bin_dir: Path) -> ContainerdDaemon:
        """The variant's daemon object (not started)."""
        if variant not in self._daemons:
            wd = self.workdir or Path("<run>")
            self._daemons[variant] = ContainerdDaemon(
                bin_dir, wd / self.DIRNAME / variant, self.namespace(variant),
                self.runc or Path("runc"), cgroup_base=self.cgroup_base)
        return self._daemons[variant]

    def daemon(self, variant: str, bin_dir: Path) -> ContainerdDaemon:
        """The variant's daemon, started on first use."""
        d = self.daemon_for(variant, bin_dir)
        if d.pid is None:
            d.start()
        return d

    def image(self, layers: int) -> OciImage:
        """The L-layer image (written once per run; the same bytes for every variant)."""
        if layers not in self._images:
            from patchbench.measure.oci_image import write_image
            from patchbench.runtimes.runc import find_busybox, is_static

            busybox = find_busybox().resolve()
            if not is_static(busybox):
                raise RequirementError(f"{busybox} is dynamically linked; images need a static "
                                       "busybox", hint="apt-get install busybox-static")
            assert self.workdir is not None
            self._images[layers] = write_image(
                self.workdir / "images" / f"layers-{layers}.tar", layers, busybox)
        return self._images[layers]

    def placeholders(self, variant: str, bin_dir: Path) -> dict[str, str]:
        d = self.daemon_for(variant, bin_dir)
        return {"ctr": str(bin_dir / "ctr"), "address": str(d.socket), "namespace": d.namespace}

    def cleanup(self, variant: str, bin_dir: Path) -> list[str]:
        """Stop the variant's daemon (first deleting what is left in its namespace) and remove
        what it left on the host; return what had to be removed."""
        d = self._daemons.get(variant)
        if d is None:
            return []
        removed: list[str] = []
        if d.pid is not None:
            with contextlib.suppress(BenchmarkError):
                removed += d.cleanup_state()
            d.stop()
        found, problems = d.cleanup_host()
        self._left[variant] = d.host_leftovers()
        return removed + found.summary() + problems

    def leftovers(self, variant: str, bin_dir: Path) -> list[str]:
        left = self._left.get(variant)
        return left.summary() if left is not None else []

    def plan_notes(self) -> list[str]:
        return [
            "before building: probe that idmapped mounts work as overlayfs lower directories",
            f"one containerd per variant: root, state, sockets under <run>/{self.DIRNAME}/<variant>, "
            "namespace pb-<run token>-<variant>, config from patchbench/runtimes/containerd/"
            "config.toml",
            "after: delete what is left in the namespace, stop the daemon, count and remove "
            "mounts, shims, shim sockets and cgroups of the run",
        ]
