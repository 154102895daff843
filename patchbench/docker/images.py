"""Build images made here without a registry (the recipes ``go-busybox``, ``debian-runc``,
``debian-c`` and ``debian-rust``), and images named by digest. An image is written as a ``docker
save`` archive whose config and layers we write with fixed owners, modes and dates, so the same
recipe and inputs give the same image ID on every machine; a record under the state directory
caches the ID by the hash of the recipe's inputs. The pinned Go comes from the module proxy's
toolchain module (a module cache, a download, or the host's GOROOT when it is the pin); the Rust
image holds the host's pinned release. What each recipe holds: docs/docker.md."""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import io
import json
import os
import platform
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbench.docker import engine as engines
from patchbench.errors import RequirementError, ToolchainError
from patchbench.util import cmd, ownership, progress
from patchbench.util.files import is_sha256, sha256_file, write_json_atomic

FORMAT = 2  # bump when the way images are assembled changes (invalidates cached records)
EPOCH = "1970-01-01T00:00:00Z"
GOROOT_IN_IMAGE = "/usr/local/go"
PATH_IN_IMAGE = f"{GOROOT_IN_IMAGE}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RUST_IN_IMAGE = "/usr/local/rust"
RUST_PATH_IN_IMAGE = f"{RUST_IN_IMAGE}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEBIAN_SUITE = "bookworm"


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    base: str  # "busybox" or "debian"
    packages: tuple[str, ...] = ()
    toolchain: str = "go"  # the layer on top: "go" (the pinned Go), "rust" (the host's), "none"

    @property
    def path(self) -> str:
        """PATH in the image (its config and every container's environment)."""
        return RUST_PATH_IN_IMAGE if self.toolchain == "rust" else PATH_IN_IMAGE


RECIPES: dict[str, Recipe] = {
    "go-busybox": Recipe("go-busybox", "Debian's busybox-static plus the pinned Go", "busybox"),
    "debian-runc": Recipe(
        "debian-runc",
        f"Debian {DEBIAN_SUITE} (mmdebstrap) with runc's build dependencies plus the pinned Go",
        "debian",
        ("gcc", "libc6-dev", "make", "pkg-config", "libseccomp-dev", "git", "ca-certificates"),
    ),
    "debian-c": Recipe(
        "debian-c",
        f"Debian {DEBIAN_SUITE} (mmdebstrap) with gcc, autotools, ccache and crun's libraries",
        "debian",
        ("gcc", "libc6-dev", "make", "autoconf", "automake", "libtool", "gperf", "pkg-config",
         "python3", "ccache", "git", "ca-certificates", "libyajl-dev", "libcap-dev",
         "libseccomp-dev", "libsystemd-dev"),
        toolchain="none",
    ),
    "debian-rust": Recipe(
        "debian-rust",
        f"Debian {DEBIAN_SUITE} (mmdebstrap) with gcc, pkg-config and libseccomp-dev, plus the "
        "host's Rust toolchain of the pinned release",
        "debian",
        ("gcc", "libc6-dev", "make", "pkg-config", "libseccomp-dev", "git", "ca-certificates"),
        toolchain="rust",
    ),
}


@dataclass(frozen=True)
class Image:
    """An image in the engine, as the manifest records it."""

    ref: str  # what the matrix named: "recipe:go-busybox" or "name@sha256:..."
    id: str  # sha256:... (the engine's image ID)
    packages: list[str] = field(default_factory=list)  # dpkg-query -W, or the busybox version
    go: dict[str, str] = field(default_factory=dict)  # where the image's Go came from
    engine: dict[str, str] = field(default_factory=dict)
    rust: dict[str, str] = field(default_factory=dict)  # where the image's Rust came from
    path: str = PATH_IN_IMAGE  # PATH inside

    def record(self) -> dict[str, Any]:
        out = {"ref": self.ref, "id": self.id, "engine": self.engine, "go": self.go,
               "packages": self.packages}
        if self.rust:
            out["rust"] = self.rust
        return out


# --- the Rust toolchain (the host's, copied in) -----------------------------------------------

RUST_ENTRIES = ("bin", "etc", "lib", "libexec")  # of a sysroot: no share/ (docs, man pages)


@dataclass(frozen=True)
class RustTree:
    root: Path  # the host sysroot
    origin: str
    release: str
    sha256: str  # of RUST_ENTRIES (paths, modes, contents)


def rust_tree(version: str, rustup_toolchain: str | None,
              environ: Mapping[str, str] | None = None) -> RustTree:
    """The host's Rust sysroot of release ``version`` (through rustup's ``rustup_toolchain`` when
    the target names one); refused when the host has another release there."""
    env = dict(os.environ if environ is None else environ)
    if rustup_toolchain:
        env["RUSTUP_TOOLCHAIN"] = rustup_toolchain
    where = f"RUSTUP_TOOLCHAIN={rustup_toolchain}" if rustup_toolchain else "the host's default"
    vv = cmd.run(["rustc", "-vV"], env=env, timeout=300, error=ToolchainError,
                     what=f"rustc -vV ({where})").stdout
    release = next((ln.split(": ", 1)[1].strip() for ln in vv.splitlines()
                    if ln.startswith("release: ")), "")
    if release != version:
        raise ToolchainError(f"the debian-rust image copies the host's Rust {version}, but rustc "
                             f"({where}) is {release or '?'}",
                             hint=f"rustup toolchain install {version}, or name it with "
                             "rustup_toolchain")
    sysroot = Path(cmd.run(["rustc", "--print", "sysroot"], env=env, timeout=60,
                               error=ToolchainError).stdout.strip()).resolve()
    return RustTree(sysroot, f"the host's rustc {release} ({where}), copied in", release,
                    _entries_sha256(sysroot, RUST_ENTRIES))


def _entries_sha256(root: Path, entries: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for rel, p in _entry_paths(root, entries):
        st = p.lstat()
        h.update(f"{rel}\0{stat.S_IFMT(st.st_mode)}\0{_exec_mode(st.st_mode):o}\0".encode())
        if stat.S_ISLNK(st.st_mode):
            h.update(os.readlink(p).encode())
        elif stat.S_ISREG(st.st_mode):
            h.update(bytes.fromhex(sha256_file(p)))
        h.update(b"\n")
    return h.hexdigest()


def _entry_paths(root: Path, entries: tuple[str, ...]) -> Iterator[tuple[str, Path]]:
    for entry in entries:
        top = root / entry
        if top.is_dir() and not top.is_symlink():
            yield entry, top
            for p in _walk(top):
                yield p.relative_to(root).as_posix(), p


def _exec_mode(mode: int) -> int:
    return 0o755 if mode & 0o111 else 0o644


def _rust_layer(path: Path, tree: RustTree) -> str:
    return _tree_layer(path, RUST_IN_IMAGE, _entry_paths(tree.root, RUST_ENTRIES),
                       lambda rel, st: _exec_mode(st.st_mode))


def _tree_layer(path: Path, dest_dir: str, entries: Iterable[tuple[str, Path]],
                mode: Callable[[str, os.stat_result], int]) -> str:
    """A layer holding ``entries`` (relative name, host path) under ``dest_dir``: links as links,
    directories, and regular files with ``mode(rel, stat)``."""
    layer = _Layer(path)
    dest = dest_dir.lstrip("/")
    layer.dir(dest)
    for rel, p in entries:
        name = f"{dest}/{rel}"
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            layer.symlink(name, os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            layer.dir(name)
        elif stat.S_ISREG(st.st_mode):
            layer.regular(name, p, mode(rel, st))
    return layer.close()


# --- the Go toolchain ------------------------------------------------------------------------


@dataclass(frozen=True)
class GoTree:
    root: Path
    origin: str  # "module cache", "host GOROOT", "downloaded from the Go module proxy"
    module: str
    sha256: str  # of the tree (paths, modes, contents)


def toolchain_module(version: str) -> str:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"golang.org/toolchain@v0.0.1-go{version}.linux-{arch}"


def go_tree(version: str, cache: Path, environ: Mapping[str, str] | None = None,
            allow_download: bool = True) -> GoTree:
    """The pinned Go's GOROOT: from a module cache; else downloaded from the module proxy (the
    same bytes on every machine) unless GOPROXY is off; else the host's GOROOT when its VERSION
    is the pin (offline; a host may have edited it, e.g. go.env, which the tree hash shows)."""
    env = dict(os.environ if environ is None else environ)
    module = toolchain_module(version)
    path, _, ver = module.partition("@")
    for modcache in (cache / "gomod", Path(env.get("GOMODCACHE") or Path.home() / "go/pkg/mod")):
        candidate = modcache / f"{path}@{ver}"
        if _is_go(candidate, version):
            return GoTree(candidate, "module cache", module,
                          tree_sha256(candidate, kept_tree_path(cache, candidate)))
    host = _host_goroot(env)
    host_ok = host is not None and _is_go(host, version)
    proxy = env.get("GOPROXY") or "https://proxy.golang.org,direct"
    if allow_download and proxy != "off" and shutil.which("go") is not None:
        try:
            return _download(version, module, cache, env, proxy)
        except ToolchainError as exc:
            if not host_ok:
                raise
            progress.say(f"warning: {exc.message}; using the host's GOROOT instead")
    if host is not None and host_ok:
        return GoTree(host, "host GOROOT", module, tree_sha256(host, kept_tree_path(cache, host)))
    raise ToolchainError(f"Go {version} is neither in a module cache nor the host's GOROOT, and "
                         "GOPROXY is off", hint=f"go mod download {module}")


def _download(version: str, module: str, cache: Path, env: Mapping[str, str], proxy: str
              ) -> GoTree:
    dl_env = {k: v for k, v in env.items() if not k.startswith("GO")}
    dl_env.update({"GOMODCACHE": str(cache / "gomod"), "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod",
                   "GOPROXY": proxy})
    for key in ("GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOINSECURE"):
        if key in env:
            dl_env[key] = env[key]
    (cache / "gomod").mkdir(parents=True, exist_ok=True)
    progress.say(f"downloading Go {version} ({module}) through {proxy}")
    res = cmd.run(["go", "mod", "download", "-json", module], env=dl_env, cwd=cache,
                      timeout=1200, error=ToolchainError, what=f"download Go {version}")
    info = json.loads(res.stdout)
    root = Path(info["Dir"])
    if not _is_go(root, version):
        raise ToolchainError(f"the module {module} does not hold Go {version} (in {root})")
    return GoTree(root, "downloaded from the Go module proxy", module,
                  tree_sha256(root, kept_tree_path(cache, root)))


def _host_goroot(env: Mapping[str, str]) -> Path | None:
    if shutil.which("go") is None:
        return None
    res = cmd.run(["go", "env", "GOROOT"], env={**env, "GOTOOLCHAIN": "local"}, check=False,
                      timeout=60)
    out = res.stdout.strip()
    return Path(out) if res.returncode == 0 and out else None


def _is_go(root: Path, version: str) -> bool:
    try:
        first = (root / "VERSION").read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        return False
    return first == f"go{version}" and (root / "bin" / "go").is_file()


def _walk(root: Path) -> Iterator[Path]:
    """Every path under ``root`` in a fixed order."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(filenames + [d for d in dirnames if (base / d).is_symlink()]):
            yield base / name
        for d in dirnames:
            if not (base / d).is_symlink():
                yield base / d


# What the golang.org/toolchain module holds; a release tarball (a host GOROOT) also has api/,
# doc/, misc/ and test/, which no build reads. Only these go into the image, so a GOROOT from the
# host and one from the module proxy give the same layer.
GOROOT_ENTRIES = ("CONTRIBUTING.md", "LICENSE", "PATENTS", "README.md", "SECURITY.md", "VERSION",
                  "bin", "codereview.cfg", "go.env", "lib", "pkg", "src")


def goroot_paths(root: Path) -> Iterator[tuple[str, Path]]:
    """(path in the image, path) of the GOROOT files that go into the image, in a fixed order.

    The module renames every go.mod to _go.mod (a module zip cannot hold nested modules); the go
    command copies them back after a toolchain download, and so does this: the image holds the
    release tarball's layout whichever source the GOROOT came from."""
    for entry in GOROOT_ENTRIES:
        top = root / entry
        if top.is_dir() and not top.is_symlink():
            yield entry, top
            for p in _walk(top):
                rel = p.relative_to(root).as_posix()
                if p.name == "_go.mod":
                    if (p.parent / "go.mod").exists():
                        continue  # a toolchain the go command has already set up
                    rel = rel.removesuffix("_go.mod") + "go.mod"
                yield rel, p
        elif top.exists() or top.is_symlink():
            yield entry, top


def goroot_mode(rel: str) -> int:
    """The module cache holds files read-only and not executable; like the go command after a
    toolchain download (cmd/go/internal/toolchain), bin/, pkg/tool/ and lib's go_*_*_exec are
    executable, nothing else."""
    name = rel.rsplit("/", 1)[-1]
    exec_lib = rel.startswith("lib/") and fnmatch.fnmatch(name, "go_?*_?*_exec")
    return 0o755 if rel.startswith(("bin/", "pkg/tool/")) or exec_lib else 0o644


KEPT_TREE_VERSION = 1


def _tree_identity(root: Path, entries: list[tuple[str, Path, os.stat_result]]) -> str:
    """A digest of every entry's path and identity (device, inode, mode, size, mtime, ctime),
    and of this module's: any file replaced, rewritten or touched, added or removed, or a change
    to how a tree is hashed, changes it."""
    code = os.stat(__file__)  # how a tree is hashed (goroot_mode, the lines) is this module
    h = hashlib.sha256(f"{KEPT_TREE_VERSION}\0{FORMAT}\0{code.st_size} {code.st_mtime_ns}\0"
                       f"{root}\0".encode())
    for rel, _, st in entries:
        h.update(f"{rel}\0{st.st_dev} {st.st_ino} {st.st_mode} {st.st_size} {st.st_mtime_ns} "
                 f"{st.st_ctime_ns}\n".encode())
    return h.hexdigest()


def _kept_tree(path: Path, identity: str) -> str | None:
    """The tree hash kept under ``identity``: read as untrusted input (a regular file, never
    through a link, bounded, of a known shape; as root owned by root and writable by no one
    else), else None (the tree is hashed again)."""
    try:
        data = ownership.read_kept(path, 4096)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("identity") != identity:
        return None
    digest = data.get("sha256")
    return digest if is_sha256(digest) else None


def tree_sha256(root: Path, kept: Path | None = None) -> str:
    """sha256 over the GOROOT as it goes into the image (paths, normalised modes, contents).
    ``kept``: a file keeping the hash with the identity of every entry (``_tree_identity``); the
    tree (about 270 MB for a host GOROOT: 1.7 s) is hashed again only when an entry changed,
    as a toolchain binary's hash is (build/toolchains/runner.py)."""
    entries = [(rel, p, p.lstat()) for rel, p in sorted(goroot_paths(root))]
    identity = _tree_identity(root, entries)
    if kept is not None:
        found = _kept_tree(kept, identity)
        if found is not None:
            return found
    h = hashlib.sha256()
    for rel, p, st in entries:
        if stat.S_ISLNK(st.st_mode):
            h.update(f"L {rel} {os.readlink(p)}\n".encode())
        elif stat.S_ISDIR(st.st_mode):
            h.update(f"D {rel}\n".encode())
        else:
            h.update(f"F {rel} {goroot_mode(rel):o} {sha256_file(p)}\n".encode())
    digest = h.hexdigest()
    if kept is not None:
        after = [(rel, p, p.lstat()) for rel, p in sorted(goroot_paths(root))]
        if _tree_identity(root, after) == identity:  # nothing changed while it was read
            with contextlib.suppress(OSError):
                write_json_atomic(kept, {"version": KEPT_TREE_VERSION, "root": str(root),
                                         "identity": identity, "sha256": digest})
    return digest


def kept_tree_path(state: Path, root: Path) -> Path:
    """Where the hash of the GOROOT at ``root`` is kept in the image state ``state``."""
    return state / "trees" / f"goroot-{hashlib.sha256(str(root).encode()).hexdigest()[:16]}.json"


# --- deterministic layers ------------------------------------------------------------------


class _Layer:
    """A tar layer with fixed owners, modes and dates (the same input gives the same bytes)."""

    def __init__(self, path: Path):
        self.path = path
        self.tar = tarfile.open(path, "w", format=tarfile.PAX_FORMAT)  # noqa: SIM115
        self.seen: set[str] = set()

    def _info(self, name: str, type_: bytes, mode: int) -> tarfile.TarInfo:
        ti = tarfile.TarInfo(name)
        ti.type, ti.mode, ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = type_, mode, 0, 0, 0, "", ""
        return ti

    def dir(self, name: str, mode: int = 0o755) -> None:
        parts = name.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if sub not in self.seen:
                self.seen.add(sub)
                self.tar.addfile(self._info(sub, tarfile.DIRTYPE, mode if i == len(parts) else 0o755))

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        if "/" in name:
            self.dir(name.rsplit("/", 1)[0])
        ti = self._info(name, tarfile.REGTYPE, mode)
        ti.size = len(data)
        self.tar.addfile(ti, io.BytesIO(data))
        self.seen.add(name)

    def symlink(self, name: str, target: str) -> None:
        if "/" in name:
            self.dir(name.rsplit("/", 1)[0])
        ti = self._info(name, tarfile.SYMTYPE, 0o777)
        ti.linkname = target
        self.tar.addfile(ti)
        self.seen.add(name)

    def regular(self, name: str, src: Path, mode: int) -> None:
        self.dir(name.rsplit("/", 1)[0])
        ti = self._info(name, tarfile.REGTYPE, mode)
        ti.size = src.stat().st_size
        with open(src, "rb") as f:
            self.tar.addfile(ti, f)
        self.seen.add(name)

    def close(self) -> str:
        self.tar.close()
        return "sha256:" + sha256_file(self.path)


def _busybox_layer(path: Path) -> tuple[str, str]:
    """A busybox rootfs: the static binary, a link per applet, /tmp, root's passwd entry."""
    busybox = Path(cmd.which("busybox")).resolve()
    version = cmd.run([str(busybox)], check=False, timeout=30).stdout.splitlines()[0].strip()
    applets = cmd.run([str(busybox), "--list-full"], timeout=30).stdout.split()
    layer = _Layer(path)
    layer.file("bin/busybox", busybox.read_bytes(), 0o755)
    for applet in sorted(set(applets)):
        if applet != "bin/busybox":
            layer.symlink(applet, "/bin/busybox")
    for d in ("dev", "proc", "sys", "etc", "root", "usr/local", "var"):
        layer.dir(d)
    layer.dir("tmp", 0o1777)
    layer.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    layer.file("etc/group", b"root:x:0:\n")
    return layer.close(), version


def _go_layer(path: Path, tree: GoTree) -> str:
    return _tree_layer(path, GOROOT_IN_IMAGE, goroot_paths(tree.root),
                       lambda rel, st: goroot_mode(rel))


def _debian_layer(path: Path, recipe: Recipe, log: Path) -> str:
    """A Debian rootfs from Debian's packages, by mmdebstrap (SOURCE_DATE_EPOCH fixed, so the
    same packages give the same tarball)."""
    if shutil.which("mmdebstrap") is None:
        raise RequirementError(f"the {recipe.name} image needs mmdebstrap",
                               hint="apt-get install -y mmdebstrap")
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "SOURCE_DATE_EPOCH": "0",
           "LC_ALL": "C", "TMPDIR": str(path.parent)}
    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy"):
        if key in os.environ:
            env[key] = os.environ[key]
    raw = path.with_suffix(".raw.tar")
    cmd.run(
        ["mmdebstrap", "--variant=minbase", "--mode=root", "--format=tar",
         "--include=" + ",".join(recipe.packages),
         "--skip=output/dev",  # device nodes: the engine provides /dev
         DEBIAN_SUITE, str(raw)],
        env=env, log=log, timeout=1800, error=RequirementError,
        what=f"mmdebstrap the {recipe.name} image",
    )
    # re-pack with fixed owners/dates so layers are byte-stable (mmdebstrap already sorts)
    layer = _Layer(path)
    with tarfile.open(raw) as src:
        for member in src:
            name = member.name.removeprefix("./").rstrip("/")
            if not name:
                continue
            member.name = name
            member.mtime = 0
            member.uname = member.gname = ""
            if member.islnk():
                member.linkname = member.linkname.removeprefix("./")
            if member.isfile():
                layer.tar.addfile(member, src.extractfile(member))
            else:
                layer.tar.addfile(member)
    raw.unlink()
    return layer.close()


def _archive(out: Path, layers: list[Path], diff_ids: list[str], recipe: Recipe, key: str,
             tag: str) -> str:
    """A ``docker save`` archive of one image; returns its image ID (sha256 of the config)."""
    config = {
        "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), "amd64"),
        "os": "linux",
        "created": EPOCH,
        "config": {
            "Env": [f"PATH={recipe.path}"],
            "Cmd": ["/bin/sh"],
            "WorkingDir": "/",
            "Labels": {"org.patchbench.recipe": recipe.name, "org.patchbench.key": key},
        },
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created": EPOCH, "created_by": f"patchbench image recipe {recipe.name}"}
                    for _ in layers],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    image_id = hashlib.sha256(config_bytes).hexdigest()
    names = [f"{d.removeprefix('sha256:')}/layer.tar" for d in diff_ids]
    manifest = [{"Config": f"{image_id}.json", "RepoTags": [tag], "Layers": names}]
    with tarfile.open(out, "w") as tar:
        for data, name in ((config_bytes, f"{image_id}.json"),
                           (json.dumps(manifest).encode(), "manifest.json")):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
        for layer, name in zip(layers, names, strict=True):
            tar.add(layer, arcname=name)
    return f"sha256:{image_id}"


# --- ensuring an image -------------------------------------------------------------------------


def recipe_key(recipe: Recipe, go: GoTree | None, extra: Mapping[str, str]) -> str:
    material: dict[str, Any] = {"format": FORMAT, "recipe": recipe.name, "base": recipe.base,
                                "packages": list(recipe.packages), "suite": DEBIAN_SUITE, **extra}
    if go is not None:
        material["go"] = go.sha256
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _strings(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str)
                                           for k, v in value.items())


def _kept_record(path: Path) -> dict[str, Any] | None:
    """An image's kept record (written below), read as untrusted input: a regular file, never
    through a link, bounded, of the shape written; else None (the image is built again)."""
    try:
        rec = ownership.read_kept(path, 1 << 20)
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("id"), str) or \
            not rec["id"].startswith("sha256:") or not is_sha256(rec["id"][len("sha256:"):]) or \
            not isinstance(rec.get("packages"), list) or \
            not all(isinstance(x, str) for x in rec["packages"]) or \
            not _strings(rec.get("go")) or not _strings(rec.setdefault("rust", {})):
        return None
    return rec


def ensure_recipe(eng: engines.Engine, name: str, go_version: str | None, state: Path,
                  environ: Mapping[str, str] | None = None, *,
                  rust: tuple[str, str | None] | None = None) -> Image:
    """The image of recipe ``name`` with Go ``go_version`` (a Go recipe) or the host's Rust
    ``rust`` = (release, rustup toolchain) (debian-rust): from the record cache when the engine
    holds it, else built and loaded."""
    if name not in RECIPES:
        raise RequirementError(f"no image recipe {name!r}; known: {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    state.mkdir(parents=True, exist_ok=True)
    go: GoTree | None = None
    rtree: RustTree | None = None
    extra: dict[str, str] = {}
    if recipe.toolchain == "go":
        if go_version is None:
            raise RequirementError(f"image recipe {name} needs a Go toolchain")
        go = go_tree(go_version, state, environ)
    elif recipe.toolchain == "rust":
        if rust is None:
            raise RequirementError(f"image recipe {name} needs a Rust toolchain (kind: rust)")
        rtree = rust_tree(rust[0], rust[1], environ)
        extra["rust"] = rtree.sha256
    if recipe.base == "busybox":
        extra["busybox"] = sha256_file(Path(cmd.which("busybox")).resolve())
    key = recipe_key(recipe, go, extra)
    record_path = state / f"{name}-{key[:16]}.json"
    rec = _kept_record(record_path)
    if rec is not None and _present(eng, rec["id"]):
        return Image(f"recipe:{name}", rec["id"], rec["packages"], rec["go"], eng.describe(),
                     rec["rust"], recipe.path)
    what = (f"Go {go_version}: {go.origin}" if go is not None else
            f"Rust {rtree.release}: {rtree.origin}" if rtree is not None else "no toolchain layer")
    progress.say(f"building image {name} ({what})")
    log = state / f"{name}-{key[:16]}.log"
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=state) as tmp_s:
        tmp = Path(tmp_s)
        layers: list[Path] = []
        diff_ids: list[str] = []
        if recipe.base == "busybox":
            base = tmp / "base.tar"
            diff, _busybox_version = _busybox_layer(base)
        else:
            base = tmp / "base.tar"
            diff = _debian_layer(base, recipe, log)
        layers.append(base)
        diff_ids.append(diff)
        if go is not None:
            golayer = tmp / "go.tar"
            diff_ids.append(_go_layer(golayer, go))
            layers.append(golayer)
        if rtree is not None:
            rustlayer = tmp / "rust.tar"
            diff_ids.append(_rust_layer(rustlayer, rtree))
            layers.append(rustlayer)
        archive = tmp / "image.tar"
        tag = f"patchbench/{name}:{key[:16]}"
        image_id = _archive(archive, layers, diff_ids, recipe, key, tag)
        if not _present(eng, image_id):
            with engines.sdk_errors(f"load the {name} image", RequirementError), open(archive, "rb") as f:
                eng.client.images.load(f)
        if not _present(eng, image_id):
            raise RequirementError(f"loading the {name} image did not produce {image_id}")
    go_info = ({"version": f"go{go_version}", "module": go.module, "origin": go.origin,
                "tree_sha256": go.sha256} if go is not None else {})
    rust_info = ({"release": rtree.release, "origin": rtree.origin, "path": RUST_IN_IMAGE,
                  "tree_sha256": rtree.sha256} if rtree is not None else {})
    packages = package_list(eng, image_id)
    record = {"recipe": name, "key": key, "id": image_id, "tag": tag, "go": go_info,
              "packages": packages, "engine": eng.describe()}
    if rust_info:
        record["rust"] = rust_info
    tmp_record = record_path.with_suffix(".tmp")
    tmp_record.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    os.replace(tmp_record, record_path)
    return Image(f"recipe:{name}", image_id, packages, go_info, eng.describe(), rust_info,
                 recipe.path)


def _present(eng: engines.Engine, ref: str) -> bool:
    import docker.errors

    try:
        with engines.sdk_errors(f"look up image {ref}", RequirementError):
            eng.client.images.get(ref)
    except RequirementError as exc:
        if "not present" in exc.message:
            return False
        raise
    except docker.errors.ImageNotFound:  # pragma: no cover - classified above
        return False
    return True


def ensure_ref(eng: engines.Engine, ref: str) -> Image:
    """An image named by digest: used when present, pulled only when absent."""
    if "@sha256:" not in ref:
        raise RequirementError(f"image {ref!r} is not pinned by digest (name@sha256:...)")
    if not _present(eng, ref):
        progress.say(f"pulling {ref}")
        repo, _, digest = ref.partition("@")
        with engines.sdk_errors(f"pull {ref}", RequirementError):
            eng.client.images.pull(repo, tag=digest)
    with engines.sdk_errors(f"inspect {ref}", RequirementError):
        image_id = str(eng.client.images.get(ref).id)
    return Image(ref, image_id, package_list(eng, image_id), {}, eng.describe())


PACKAGES_SCRIPT = (
    "if command -v dpkg-query >/dev/null 2>&1; then dpkg-query -W -f '${Package}=${Version}\\n'; "
    "else busybox 2>&1 | head -n 1; fi"
)


def package_list(eng: engines.Engine, image: str) -> list[str]:
    """What is installed in the image: dpkg's package list, or busybox's version line."""
    res = engines.run_container(eng.client, image, ["/bin/sh", "-c", PACKAGES_SCRIPT],
                                what=f"list the packages of image {image[:19]}", timeout=120,
                                error=RequirementError)
    return sorted(line.strip() for line in res.stdout.splitlines() if line.strip())


# --- a plain busybox image (no Go): what the docker-run runtime's containers run -------------

BUSYBOX = Recipe("busybox", "Debian's busybox-static only, one layer", "busybox")


def busybox_archive(tmp: Path) -> tuple[str, str, str]:
    """Write the busybox image as a ``docker save`` archive ``tmp/image.tar``; return its image
    ID, tag and busybox's version line. Nothing is loaded (``--dry-run`` shows the ID)."""
    busybox = Path(cmd.which("busybox")).resolve()
    key = hashlib.sha256(json.dumps({"format": FORMAT, "recipe": BUSYBOX.name,
                                     "busybox": sha256_file(busybox)}).encode()).hexdigest()
    tag = f"patchbench/{BUSYBOX.name}:{key[:16]}"
    diff, version = _busybox_layer(tmp / "base.tar")
    image_id = _archive(tmp / "image.tar", [tmp / "base.tar"], [diff], BUSYBOX, key, tag)
    return image_id, tag, version


def busybox_image_id(scratch: Path) -> str:
    """The ID ``ensure_busybox`` will load (the image is byte-stable)."""
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="busybox-", dir=scratch) as tmp_s:
        return busybox_archive(Path(tmp_s))[0]


def ensure_busybox(eng: engines.Engine, state: Path) -> Image:
    """A one-layer image of the host's static busybox, made here and loaded without a registry.
    The layer and config are byte-stable, so the same busybox gives the same image ID."""
    state.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="busybox-", dir=state) as tmp_s:
        tmp = Path(tmp_s)
        image_id, tag, version = busybox_archive(tmp)
        if not _present(eng, image_id):
            progress.say(f"loading the busybox image {tag} ({image_id[:19]})")
            with engines.sdk_errors("load the busybox image", RequirementError), \
                    open(tmp / "image.tar", "rb") as f:
                eng.client.images.load(f)
        if not _present(eng, image_id):
            raise RequirementError(f"loading the busybox image did not produce {image_id}")
    return Image(f"recipe:{BUSYBOX.name}", image_id, [version], {}, eng.describe())
