"""What a build's sandbox (util/sandbox.py) is given, and nothing more.

- Its worktree, read-write, and the git repositories the worktree points to (its own and each
  submodule's), read-only, at their host paths: git works as on the host.
- Its dependency caches (``GOPATH`` with Go's module cache, ``CARGO_HOME``): read-only to the
  build; read-write only to the steps that fetch into them (``go mod download``, ``cargo fetch``,
  a toolchain that ``GOTOOLCHAIN`` names), which run no code of the tree.
- Its compile caches (``GOCACHE``, ``CARGO_TARGET_DIR``, ``CCACHE_DIR``): read-write. A build of
  upstream code alone (no patch series, no overlay) writes the shared ones; a build with the
  project's patches gets private copies of them (``private_caches``), gone with its temporary
  folder, so nothing a series runs reaches another build.
- Its toolchain's folders outside the system's (rustup's, cargo's bin, a Go under /root): read-
  only at ``/patchbench/tool/N``, with the variables naming them changed to match.

Everything runs as the build's uid (``sandbox.give`` hands it what it may write).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from patchbench.errors import CommandError, PatchbenchError
from patchbench.util import cmd, sandbox
from patchbench.util.sandbox import Bind

# written by the steps that fetch (no code of the tree runs there); read-only to a build
DEPENDENCY_CACHES = ("GOPATH", "GOMODCACHE", "CARGO_HOME")
# written by the build itself (shared by upstream builds, private to a patched one)
COMPILE_CACHES = ("GOCACHE", "CARGO_TARGET_DIR", "CCACHE_DIR")
# toolchain programs whose folder is shown when it lies outside the system's folders, by a
# variable only that toolchain's environment sets (build/toolchains: go.env, rust.env)
TOOLCHAIN_PROGRAMS = {"GOTOOLCHAIN": ("go",), "RUSTUP_AUTO_INSTALL": ("cargo", "rustc", "rustup")}


def git_common_dir(tree: Path) -> Path | None:
    """The repository a worktree's ``.git`` file points to (its common dir), or None."""
    dotgit = tree / ".git"
    if not dotgit.is_file() or dotgit.is_symlink():
        return None
    text = dotgit.read_text().strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = (tree / text.removeprefix("gitdir:").strip()).resolve()
    common = gitdir / "commondir"
    if common.is_file():
        return (gitdir / common.read_text().strip()).resolve()
    return gitdir


def repositories(tree: Path) -> list[Path]:
    """The repositories the worktrees in ``tree`` point to: its own and every submodule's."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        if ".git" in filenames:
            common = git_common_dir(Path(dirpath))
            if common is not None and common not in out:
                out.append(common)
    return out


def source_binds(tree: Path, *, writable: bool = True) -> list[Bind]:
    """The worktree (read-write unless ``writable`` is False) and its repositories (read-only)."""
    return [Bind(tree, writable), *(Bind(r) for r in repositories(tree))]


def _search(program: str, path: str) -> Path | None:
    found = shutil.which(program, path=path)
    return Path(found) if found else None


def with_toolchain_homes(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with ``RUSTUP_HOME`` named for a Rust build when rustup is on PATH and the
    variable is not set (rustup's default, ``$HOME/.rustup``, is not where the sandbox's HOME
    is), and without it for any other build."""
    out = dict(env)
    if "RUSTUP_AUTO_INSTALL" not in out:  # not a Rust build: rustup's folder is not shown
        out.pop("RUSTUP_HOME", None)
    elif "RUSTUP_HOME" not in out and _search("rustup", out.get("PATH", "")) is not None:
        default = Path(out.get("HOME") or os.path.expanduser("~")) / ".rustup"
        if default.is_dir():
            out["RUSTUP_HOME"] = str(default)
    return out


def tool_dirs(env: Mapping[str, str]) -> list[Path]:
    """The folders of the toolchain programs on ``env``'s PATH (go for a Go toolchain's
    environment; cargo, rustc and rustup for Rust's), where each is found and, for Go, its
    GOROOT (the sandbox shows those outside the system's folders, read-only)."""
    out: list[Path] = []
    path = env.get("PATH", "")
    programs = [p for key, names in TOOLCHAIN_PROGRAMS.items() if key in env for p in names]
    for program in programs:
        found = _search(program, path)
        if found is None:
            continue
        out.append(found.parent)
        real = found.resolve()
        if real.parent != found.parent:
            out.append(real.parent)
        if program == "go":
            out.append(real.parent.parent)  # GOROOT: go finds it from its own path
    return list(dict.fromkeys(out))


def cache_binds(env: Mapping[str, str], *, fetching: bool = False,
                compile_caches: Sequence[Bind] = ()) -> list[Bind]:
    """The caches ``env`` names: the dependency caches (read-write only when ``fetching``), and
    ``compile_caches`` as given (see ``private_caches``). A cache inside another is bound once."""
    binds: list[Bind] = list(compile_caches)
    for key in DEPENDENCY_CACHES:
        value = env.get(key)
        if value and Path(value).is_dir():
            binds.append(Bind(Path(value), fetching))
    out: list[Bind] = []
    for b in sorted(binds, key=lambda b: len(b.at.parts)):
        if not any(o.at == b.at or o.at in b.at.parents for o in out):
            out.append(b)
    return out


def writable_caches(env: Mapping[str, str], *, fetching: bool) -> list[Path]:
    """The cache folders a step writes: the dependency caches when fetching, else the compile
    caches (made here when missing)."""
    keys = DEPENDENCY_CACHES if fetching else COMPILE_CACHES
    out = []
    for key in keys:
        value = env.get(key)
        if value:
            Path(value).mkdir(parents=True, exist_ok=True)
            out.append(Path(value))
    return out


HOST_MODULES = Path("/patchbench/host-modules")  # the user's module cache, as a file proxy
FILE_PROXIES = Path("/patchbench/proxy")  # a GOPROXY entry file://DIR: DIR, read-only


def host_module_cache() -> Path | None:
    """The download folder of this user's own Go module cache (GOMODCACHE, else GOPATH's, else
    ~/go's), when there is one."""
    env = os.environ
    mod = env.get("GOMODCACHE") or os.path.join(
        (env.get("GOPATH") or os.path.expanduser("~/go")).split(os.pathsep)[0], "pkg", "mod")
    download = Path(mod) / "cache" / "download"
    return download if download.is_dir() else None


def fetch_env(env: Mapping[str, str]) -> tuple[dict[str, str], list[Bind]]:
    """A Go step that fetches (``go mod download``, a toolchain ``GOTOOLCHAIN`` names): ``env``
    with GOPROXY trying the user's own module cache first (read-only, as a file proxy: what is
    there needs no network, and is checked against go.sum or the checksum database like any
    download), a ``file://`` proxy of GOPROXY shown read-only, and the binds that show them.
    Anything else: as it is."""
    out = dict(env)
    if "GOPATH" not in out:
        return out, []
    binds: list[Bind] = []
    entries = []
    for entry in re.split(r"([,|])", out.get("GOPROXY") or "https://proxy.golang.org,direct"):
        if entry.startswith("file://") and Path(entry[7:]).is_dir():  # a proxy in a folder
            inside = FILE_PROXIES / str(len(binds))
            binds.append(Bind(Path(entry[7:]), inside=inside))
            entry = f"file://{inside}"
        entries.append(entry)
    proxy = "".join(entries)
    download = host_module_cache()
    if download is not None:
        binds.append(Bind(download, inside=HOST_MODULES))
        proxy = f"file://{HOST_MODULES},{proxy}"
    out["GOPROXY"] = proxy
    return out, binds


def run(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None,
        binds: Sequence[Bind], network: bool, timeout: float, what: str,
        error: type[PatchbenchError] = CommandError, log: Path | None = None,
        check: bool = True) -> cmd.Result:
    """``argv`` in the build sandbox with ``binds`` and the toolchain's folders, as the build's
    user (cmd.run of what ``sandbox.wrap`` gives)."""
    full = with_toolchain_homes(env)
    wrapped = sandbox.wrap(argv, env=full, cwd=cwd, binds=binds, tools=tool_dirs(full),
                           network=network)
    return cmd.run(wrapped.argv, env=wrapped.env, cwd=cwd, timeout=timeout, log=log,
                       error=error, what=what, check=check)
