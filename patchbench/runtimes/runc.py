"""runc, or any OCI runtime CLI (crun, youki), as a runtime target: OCI bundles (a busybox rootfs
by default, or the comparison's ``rootfs``; the config from ``runc spec``; a scenario's own
``bundle`` changes the process's args and environment, copies host programs with their libraries
into the rootfs and adds bind mounts), a state root and a container id prefix of the run's own,
teardown that deletes what the run started and checks that nothing of it is listed or left in a
cgroup, and the cleanup of what a killed earlier run left. Scenarios name the CLI ``{runtime}``
(or ``{runc}``, ``{crun}``). docs/runtimes.md."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import secrets
import shutil
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchbench.config import Comparison, Project, Target
from patchbench.errors import BenchmarkError, RequirementError
from patchbench.util import cmd
from patchbench.util.progress import say

OCI_CLIS = ("runc", "crun", "youki")  # the artifacts taken for the runtime's CLI, in this order
BUSYBOX_APPLETS = ("sh", "true", "false", "sleep", "echo", "cat", "ls")
ID_PREFIX = "pb"
STATE_DIRNAME = "runc-state"
CGROUP_ROOT = Path("/sys/fs/cgroup")
MAX_CGROUP_DEPTH = 6  # v1 controllers may nest the parent cgroup (memory/process_api/<id>/...)
# Bundles: name -> the process args of its config.json
# bundle_trap: the container handles SIGTERM and SIGINT itself (exit 143 / 130), so a signal that
# runc forwards shows in runc's exit code, and one that runc loses leaves the container running.
BUNDLES = {
    "bundle": ["true"],
    "bundle_sleep": ["sleep", "1000000"],
    "bundle_trap": ["sh", "-c", "trap 'exit 143' TERM; trap 'exit 130' INT; sleep 3 & wait"],
}

if TYPE_CHECKING:
    from patchbench.runtimes import VariantBuild


def find_busybox() -> Path:
    for cand in ("busybox",):
        found = shutil.which(cand)
        if found:
            return Path(found)
    raise RequirementError(
        "no busybox to make the default rootfs from",
        hint="apt-get install busybox-static, or set 'rootfs:' in the comparison to a directory "
        "or tarball",
    )


def is_static(binary: Path) -> bool:
    """True when the ELF has no program interpreter (statically linked)."""
    with open(binary, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF":
            return False
        is64 = head[4] == 2
        f.seek(0)
        data = f.read(1 << 20)
    # PT_INTERP is program header type 3; scanning the headers needs offsets:
    import struct

    if is64:
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    else:
        phoff, = struct.unpack_from("<I", data, 0x1C)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x2A)
    for i in range(phnum):
        ptype, = struct.unpack_from("<I", data, phoff + i * phentsize)
        if ptype == 3:
            return False
    return True


def make_rootfs(dest: Path, spec: str | None, project_root: Path) -> str:
    """Create the rootfs at ``dest``; return a description of where it came from."""
    if dest.exists():
        shutil.rmtree(dest)
    if spec is None:
        busybox = find_busybox()
        if not is_static(busybox.resolve()):
            raise RequirementError(
                f"{busybox} is dynamically linked; the default rootfs needs a static busybox",
                hint="apt-get install busybox-static",
            )
        (dest / "bin").mkdir(parents=True)
        for d in ("proc", "sys", "dev", "tmp", "etc"):
            (dest / d).mkdir()
        shutil.copy2(busybox.resolve(), dest / "bin" / "busybox")
        for applet in BUSYBOX_APPLETS:
            os.symlink("busybox", dest / "bin" / applet)
        return "busybox (static, from the host)"
    src = Path(spec) if Path(spec).is_absolute() else project_root / spec
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True)
        return f"directory {spec}"
    if src.is_file():
        dest.mkdir(parents=True)
        try:
            with tarfile.open(src) as tar:
                tar.extractall(dest, filter="tar")
        except (tarfile.TarError, OSError) as exc:
            shutil.rmtree(dest, ignore_errors=True)
            raise RequirementError(f"rootfs tarball {spec!r} cannot be used: {exc}") from None
        return f"tarball {spec}"
    raise RequirementError(f"rootfs {spec!r} is neither a directory nor a tarball")


def oci_cli(names: Sequence[str]) -> str:
    """The OCI runtime CLI among artifact file names: runc, crun or youki (runc when none)."""
    return next((name for name in OCI_CLIS if name in names), "runc")


def write_config(runc: Path, bundle: Path, args: list[str], rootfs: Path) -> None:
    """``<cli> spec`` then: no terminal, the given args, the shared rootfs (read-only)."""
    cfg = bundle / "config.json"
    if cfg.exists():
        cfg.unlink()
    cmd.run([runc, "spec"], cwd=bundle, timeout=30, error=BenchmarkError,
                what=f"{runc.name} spec")
    data = json.loads(cfg.read_text())
    data["process"]["terminal"] = False
    data["process"]["args"] = args
    data["root"] = {"path": str(rootfs.resolve()), "readonly": True}
    data["hostname"] = "patchbench"
    cfg.write_text(json.dumps(data, indent=2))


@dataclass(frozen=True)
class BundleSpec:
    """A scenario's own bundle, placeholders filled: the process's args (None: the default
    bundle's), environment variables added, host programs copied in, bind mounts added."""

    args: tuple[str, ...] | None = None
    env: tuple[str, ...] = ()
    binaries: tuple[str, ...] = ()
    mounts: int = 0


MOUNT_DIR = "mnt/pb"  # the bind mounts' destinations in the rootfs: /mnt/pb/0, /mnt/pb/1, ...
_LDD_LIB = re.compile(r"^\s*(?:\S+ => )?(/\S+) \(0x[0-9a-f]+\)$")


def needed_libraries(binary: Path) -> list[Path]:
    """The shared libraries a dynamically linked program loads (its interpreter too), as ``ldd``
    resolves them on this host; RequirementError when one is not found."""
    res = cmd.run(["ldd", binary], timeout=30, check=False)
    missing = [line.split()[0] for line in res.stdout.splitlines() if "not found" in line]
    if missing:
        raise RequirementError(f"{binary} needs {', '.join(missing)}, which this host does not "
                               "have; it cannot be copied into the rootfs",
                               hint="name a static program, or give a rootfs that has it")
    libs = [Path(m.group(1)) for line in res.stdout.splitlines()
            if (m := _LDD_LIB.match(line)) is not None]
    if res.returncode != 0 or not libs:
        raise RequirementError(f"ldd could not list the libraries of {binary}: "
                               f"{(res.stdout + res.stderr).strip()[:200]}")
    return libs


def copy_binary(name: str, rootfs: Path) -> list[str]:
    """Copy the host program ``name`` (found with PATH) into ``rootfs`` at the same path, with
    the shared libraries it needs when it is dynamically linked; the paths copied."""
    found = shutil.which(name)
    if found is None:
        raise RequirementError(f"no program {name!r} on this host's PATH to copy into the rootfs")
    real = Path(found).resolve()
    files = [(Path(found), real)]
    if not is_static(real):
        files += [(lib, lib.resolve()) for lib in needed_libraries(real)]
    copied = []
    for at, src in files:
        dest = rootfs / str(at).lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_symlink() or dest.exists():
            dest.unlink()
        shutil.copy2(src, dest)
        copied.append(str(at))
    return copied


def write_custom(base_config: Path, bundle: Path, spec: BundleSpec, rootfs: Path,
                 bind_source: Path) -> None:
    """The default bundle's config.json with ``spec`` applied, written into ``bundle``."""
    data = json.loads(base_config.read_text())
    proc = data["process"]
    if spec.args is not None:
        proc["args"] = list(spec.args)
    proc["env"] = [*proc.get("env", []), *spec.env]
    data["root"] = {"path": str(rootfs.resolve()), "readonly": True}
    data["mounts"] = [*data.get("mounts", []), *[
        {"destination": f"/{MOUNT_DIR}/{i}", "type": "bind", "source": str(bind_source),
         "options": ["rbind", "ro"]} for i in range(spec.mounts)]]
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "config.json").write_text(json.dumps(data, indent=2))


def make_bundles(workdir: Path, runc: Path, rootfs_spec: str | None, project_root: Path) -> str:
    rootfs = workdir / "rootfs"
    origin = make_rootfs(rootfs, rootfs_spec, project_root)
    for name, args in BUNDLES.items():
        b = workdir / name
        b.mkdir(parents=True, exist_ok=True)
        write_config(runc, b, args, rootfs)
    return origin


def container_ids(listing: str) -> list[str]:
    """The container ids in ``<cli> list -q`` output: one per line (runc, crun). youki ignores
    ``-q`` and prints its table (a header ``ID  PID  STATUS ...``, then one row per container,
    even with none): then each row's first column."""
    lines = [line.strip() for line in listing.splitlines() if line.strip()]
    if lines and lines[0].split()[:3] == ["ID", "PID", "STATUS"]:
        return [line.split()[0] for line in lines[1:]]
    return lines


def list_containers(runc: Path, root: Path) -> list[str]:
    if not root.exists():
        return []
    res = cmd.run([runc, "--root", root, "list", "-q"], timeout=30, check=False)
    return container_ids(res.stdout)


def cgroups_of(prefix: str, base: Path = CGROUP_ROOT) -> list[Path]:
    """Cgroup directories (v1 controllers or v2) whose name starts with ``prefix``."""
    found: list[Path] = []
    base_depth = len(base.parts)
    for dirpath, dirnames, _ in os.walk(base):
        depth = len(Path(dirpath).parts) - base_depth
        keep = []
        for d in dirnames:
            if d.startswith(prefix):
                found.append(Path(dirpath) / d)
            elif depth < MAX_CGROUP_DEPTH:
                keep.append(d)
        dirnames[:] = keep
    return sorted(found)


def hybrid_v2_controllers(base: Path = CGROUP_ROOT) -> list[str]:
    """The controllers of the cgroup v2 hierarchy of a hybrid (v1 plus ``unified``) setup; crun
    refuses to start a container while there is any."""
    try:
        return (base / "unified" / "cgroup.controllers").read_text().split()
    except OSError:
        return []


def remove_cgroup(path: Path) -> None:
    # children first; a cgroup directory is removed with rmdir
    for child in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            child.rmdir()
    with contextlib.suppress(OSError):
        path.rmdir()


def purge(runc: Path, root: Path, prefix: str, cgroup_base: Path = CGROUP_ROOT) -> list[str]:
    """Delete every container under ``root`` and every cgroup named ``prefix*``; return what was
    found and removed."""
    removed: list[str] = []
    for cid in list_containers(runc, root):
        cmd.run([runc, "--root", root, "kill", cid, "KILL"], timeout=30, check=False)
        cmd.run([runc, "--root", root, "delete", "-f", cid], timeout=60, check=False)
        removed.append(f"container {cid}")
    for cg in cgroups_of(prefix, cgroup_base):
        remove_cgroup(cg)
        removed.append(f"cgroup {cg}")
    return removed


def _alive(run_dir: Path) -> bool:
    """Whether the patchbench process that owns ``run_dir`` still runs. Run directories are named
    ``<comparison>-<time>-<pid>-<4 hex>`` (older ones ``…-<pid>``); a name without a pid is never
    taken for a dead run's, so its containers are left alone."""
    parts = run_dir.name.rsplit("-", 2)
    # new: [..time, pid, hex]; old: [.., time, pid] (the time has a "T", a pid never does)
    pid = parts[-2] if len(parts) == 3 and parts[-2].isdigit() else parts[-1]
    if not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RuncRuntime:
    name = "runc"

    def __init__(self, cgroup_base: Path = CGROUP_ROOT):
        self.cgroup_base = cgroup_base
        self.token = secrets.token_hex(3)
        self.workdir: Path | None = None
        self.rootfs_origin = ""
        self.cli = "runc"  # the OCI runtime CLI's artifact name (set from the target)

    @property
    def prefix(self) -> str:
        return f"{ID_PREFIX}-{self.token}"

    def variant_prefix(self, variant: str) -> str:
        """What every container id of ``variant`` starts with. Variant names cannot contain "+"
        (runc ids can), so no variant's prefix is a prefix of another's ("fix" vs "fix-v1")."""
        return f"{self.prefix}-{variant}+-"

    def check(self, project: Project, comparison: Comparison, target: Target) -> None:
        self.cli = oci_cli([Path(a.rstrip("/")).name for a in target.build.artifacts])
        problems, hints = [], []
        if platform.system() != "Linux":
            problems.append("Linux")
        if os.geteuid() != 0:
            problems.append("root")
            hints.append("run as root: sudo -E invoke compare ...")
        if not (self.cgroup_base.is_dir() and any(self.cgroup_base.iterdir())):
            problems.append("cgroups mounted at /sys/fs/cgroup")
        if self.cli == "crun" and hybrid_v2_controllers(self.cgroup_base):
            problems.append("no cgroup controller on the cgroup v2 hierarchy of a hybrid setup "
                            f"({self.cgroup_base}/unified has "
                            f"{' '.join(hybrid_v2_controllers(self.cgroup_base))})")
            hints.append("crun refuses hybrid cgroups whose v2 hierarchy has controllers; run "
                         "the comparison in a mount namespace where that hierarchy lists none: "
                         "unshare -m --propagation private sh -c 'mount --bind EMPTY_FILE "
                         f"{self.cgroup_base}/unified/cgroup.controllers && exec invoke compare ...'")
        if comparison.rootfs is None:
            try:
                find_busybox()
            except RequirementError as exc:
                problems.append("busybox")
                hints.append(exc.hint or "")
        if problems:
            raise RequirementError(
                f"{self.cli} comparisons need " + ", ".join(problems),
                hint="; ".join(h for h in hints if h) or None,
            )

    def state_root(self, variant: str) -> Path:
        assert self.workdir is not None
        return self.workdir / STATE_DIRNAME / variant

    def prepare(
        self, workdir: Path, project: Project, comparison: Comparison, dry_run: bool,
        bin_dir: Path | None = None, variants: Sequence[VariantBuild] = (),
    ) -> None:
        self.workdir = workdir
        if dry_run:  # nothing built yet: the CLI the target's artifacts name (crun, youki)
            self.cli = oci_cli([name for v in variants[:1] for name in v.artifacts])
        if dry_run or bin_dir is None:
            return
        self.cli = oci_cli([p.name for p in bin_dir.iterdir()])
        runc = bin_dir / self.cli
        stale = self.clean_stale(workdir.parent, runc)
        if stale:
            say("removed what a killed earlier run left: " + "; ".join(stale))
        self.rootfs_origin = make_bundles(workdir, runc, comparison.rootfs, project.root)

    def clean_stale(self, runs_dir: Path, runc: Path) -> list[str]:
        """Containers, cgroups and state a killed earlier run left under builds/runs/."""
        removed: list[str] = []
        for root in sorted(runs_dir.glob(f"*/{STATE_DIRNAME}/*")):
            run_dir = root.parent.parent
            if (self.workdir is not None and self.workdir in root.parents) or _alive(run_dir):
                continue
            # the tokens of the dead run, from its containers' ids (pb-<token>-<variant>-...)
            tokens = {cid.split("-")[1] for cid in list_containers(runc, root)
                      if cid.startswith(f"{ID_PREFIX}-") and cid.count("-") >= 2}
            removed += purge(runc, root, "\0never", self.cgroup_base)
            for token in sorted(tokens):
                for cg in cgroups_of(f"{ID_PREFIX}-{token}-", self.cgroup_base):
                    remove_cgroup(cg)
                    removed.append(f"cgroup {cg}")
            shutil.rmtree(root, ignore_errors=True)
        return removed

    def placeholders(self, variant: str, bin_dir: Path) -> dict[str, str]:
        wd = self.workdir or Path("<run>")
        return {
            "runc": str(bin_dir / self.cli),
            "runtime": str(bin_dir / self.cli),
            "root": str(self.state_root(variant)) if self.workdir else f"{wd}/{STATE_DIRNAME}/{variant}",
            "bundle": str(wd / "bundle"),
            "bundle_sleep": str(wd / "bundle_sleep"),
            "bundle_trap": str(wd / "bundle_trap"),
            "id": self.variant_prefix(variant)[:-1],
        }

    def custom_bundle(self, name: str, spec: BundleSpec) -> Path:
        """A bundle of the default one's config with ``spec`` applied (its rootfs a copy with
        the programs added when there are any; the bind mounts' destinations made in it)."""
        assert self.workdir is not None
        rootfs = self.workdir / "rootfs"
        if spec.binaries:
            key = hashlib.sha256("\0".join(spec.binaries).encode()).hexdigest()[:12]
            copy = self.workdir / f"rootfs-{key}"
            if not copy.exists():
                shutil.copytree(rootfs, copy, symlinks=True)
                for b in spec.binaries:
                    copy_binary(b, copy)
            rootfs = copy
        for i in range(spec.mounts):
            (rootfs / MOUNT_DIR / str(i)).mkdir(parents=True, exist_ok=True)
        source = self.workdir / "bind-source"
        source.mkdir(exist_ok=True)
        bundle = self.workdir / "bundles" / name
        write_custom(self.workdir / "bundle" / "config.json", bundle, spec, rootfs, source)
        return bundle

    def leftovers(self, variant: str, bin_dir: Path) -> list[str]:
        """One entry per container left behind, saying what remains of it (state kept by runc,
        cgroup directories), e.g. "pb-…-s14-0 (state, 10 cgroups)"."""
        state = set(list_containers(bin_dir / self.cli, self.state_root(variant)))
        groups: dict[str, int] = {}
        for cg in cgroups_of(self.variant_prefix(variant), self.cgroup_base):
            groups[cg.name] = groups.get(cg.name, 0) + 1
        out = []
        for cid in sorted(state | set(groups)):
            parts = (["state"] if cid in state else []) + (
                [f"{groups[cid]} cgroup{'s' if groups[cid] > 1 else ''}"] if cid in groups else [])
            out.append(f"{cid} ({', '.join(parts)})")
        return out

    def cleanup(self, variant: str, bin_dir: Path) -> list[str]:
        if self.workdir is None:
            return []
        # never raises: what could not be removed shows in leftovers(), which the caller records
        return purge(bin_dir / self.cli, self.state_root(variant), self.variant_prefix(variant),
                     self.cgroup_base)

    def close(self) -> None:
        """Nothing runs for the whole run: each variant's cleanup removed its containers."""

    def record(self) -> dict[str, Any] | None:
        return None

    def plan_notes(self) -> list[str]:
        return [
            f"bundles: rootfs from busybox (or 'rootfs:'), config from `{self.cli} spec`, no "
            "terminal",
            f"every container id starts with {ID_PREFIX}-<run token>-<variant>; state lives in "
            f"<run>/{STATE_DIRNAME}/<variant> ({self.cli} --root)",
            "before: remove what a killed earlier run left; after: delete every container, "
            f"check `{self.cli} list` is empty and no cgroup named after the run remains",
        ]
