"""The Rust toolchain: the environment (pinned ``RUSTFLAGS`` with ``--remap-path-prefix``, offline
cargo, the target's rustup toolchain) and the fingerprint (``rustc -vV``, ``cargo -V``, both
binaries' sha256, the linker). The crates of ``Cargo.lock`` are fetched once into the source
cache, and builds run offline. The variants of one target share a cargo target directory, with
the sources it was last built from recorded (``shared_target``), so that a candidate recompiles
only the crates its patch changed and builds in different directories give the same bytes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from patchbench.build.toolchains.runner import Runner
from patchbench.config import RustToolchain, Target
from patchbench.errors import BuildError, PatchbenchError, SourceError, ToolchainError
from patchbench.util import cmd, locks
from patchbench.util.files import sha256_file, write_json_atomic
from patchbench.util.layout import locks_dir

CARGO_HOME = "@PATCHBENCH_CARGO_HOME@"  # replaced by the crate cache's path in tree_env
TARGET_DIR = "@PATCHBENCH_CARGO_TARGET@"  # replaced by the shared target directory's path
# Not the tree: cargo passes a workspace's sources to rustc relative to the workspace root, so its
# path never reaches the output, and a RUSTFLAGS naming it (different per build) would enter
# every unit's cargo fingerprint and make every variant's build cold.
REMAP = f"--remap-path-prefix={CARGO_HOME}=/cargo --remap-path-prefix={TARGET_DIR}=/target"
SOURCES_STAMP = "patchbench-sources.json"  # in the target directory: what it was last built from
OLD_NS = 946_684_800 * 10**9  # 2000-01-01T00:00:00Z: older than any compile
RECORDED = ("RUSTFLAGS", "RUSTUP_TOOLCHAIN", "CARGO_NET_OFFLINE", "CARGO_INCREMENTAL",
            "RUSTUP_AUTO_INSTALL")


def env(tc: RustToolchain) -> dict[str, str]:
    out = {"RUSTFLAGS": f"{tc.rustflags} {REMAP}".strip(), "CARGO_NET_OFFLINE": "true",
           "CARGO_INCREMENTAL": "0", "CARGO_TERM_COLOR": "never",
           "RUSTUP_AUTO_INSTALL": "0"}  # rustup never fetches a toolchain behind the target's back
    if tc.rustup_toolchain:
        out["RUSTUP_TOOLCHAIN"] = tc.rustup_toolchain
    return out


# A layout-only rebuild. rustc puts every function in its own section; from 1.90 on it links
# x86_64-unknown-linux-gnu with its bundled lld, whose --shuffle-sections orders them by a seed;
# elsewhere the C compiler's linker (GNU ld) sorts them by name with --sort-section.
LAYOUT_SEED = 1
LLD_SINCE = (1, 90)


def layout(tc: RustToolchain, machine: str) -> tuple[str, str, dict[str, str]] | str:
    """(method, why, flags appended per variable) of a layout-only rebuild (``machine``: the
    build machine's architecture, platform.machine()), or why there is none."""
    version = tuple(int(x) for x in tc.version.split(".")[:2])
    if "linker" in tc.rustflags:
        return "the target's RUSTFLAGS choose a linker, whose layout options patchbench does not know"
    if version >= LLD_SINCE and machine in ("x86_64", "amd64"):
        flag = f"--shuffle-sections=.text*={LAYOUT_SEED}"
        return (f"rust-lld {flag}", "lld places the functions' sections in a shuffled order "
                f"(seed {LAYOUT_SEED}): the same code in another order",
                {"RUSTFLAGS": f"-C link-arg=-Wl,{flag}"})
    return ("ld --sort-section=name", "the linker orders the functions' sections by name: the "
            "same code in another order", {"RUSTFLAGS": "-C link-arg=-Wl,--sort-section=name"})


def describe(tc: RustToolchain) -> str:
    return f"rustc {tc.version}" + (f" (rustup {tc.rustup_toolchain})" if tc.rustup_toolchain
                                    else "")


def pinned_channel(tree: Path) -> str | None:
    """The channel the repository's ``rust-toolchain.toml`` (or ``rust-toolchain``) pins."""
    import tomllib  # here: only a tree that has the file needs it

    for name in ("rust-toolchain.toml", "rust-toolchain"):
        path = tree / name
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return text.strip().splitlines()[0] if text.strip() else None  # the legacy one-liner
        channel = data.get("toolchain", {}).get("channel")
        return str(channel) if channel else None
    return None


def cargo_home(builds: Path) -> Path:
    """The crate cache: part of the source cache, shared by every Rust target."""
    return builds / "sources" / "cargo-home"


def target_dir(builds: Path, target: Target, fingerprint: dict[str, Any], lock_hash: str) -> Path:
    """The cargo target directory shared by the variants of one (target, toolchain, lock)."""
    material = {"url": target.url, "fingerprint": {k: v for k, v in fingerprint.items()
                                                   if k != "sources"}}
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return builds / "cargo-target" / f"{digest[:16]}-{lock_hash[:16]}"


def fetch_crates(tree: Path, env: dict[str, str], builds: Path, lock_hash: str) -> bool:
    """``cargo fetch --locked`` of the tree's lock file into the crate cache, once per lock hash;
    True when it fetched (False: already there)."""
    home = cargo_home(builds)
    stamp = home / "patchbench-fetched" / f"{lock_hash}.json"
    if stamp.is_file():
        return False
    home.mkdir(parents=True, exist_ok=True)
    with locks.locked(locks_dir(builds), f"cargo-fetch-{lock_hash[:20]}", 3600.0):
        if stamp.is_file():
            return False
        online = {k: v for k, v in env.items() if k != "CARGO_NET_OFFLINE"}
        # the fetch runs on this machine, also for a docker build (whose env has the image's PATH)
        online.update({k: os.environ[k] for k in ("PATH", "RUSTUP_HOME") if k in os.environ})
        cmd.run(["cargo", "fetch", "--locked"], cwd=tree, env=online, timeout=3600,
                    error=SourceError, what="fetch the crates of Cargo.lock (cargo fetch --locked)")
        write_json_atomic(stamp, {"cargo_lock_sha256": lock_hash})
    return True


def tree_env(target: Target, tc: RustToolchain, env: dict[str, str], tree: Path, builds: Path,
             fingerprint: dict[str, Any]) -> dict[str, str]:
    """``env`` for a build in ``tree``: the crate cache (fetched first when this lock file is
    new) and the shared target directory, both remapped in ``RUSTFLAGS``; the same for every
    variant of one lock file, so cargo reuses what the first one compiled."""
    lock = tree / "Cargo.lock"
    if not lock.is_file():
        raise BuildError("a rust target needs a Cargo.lock in its tree (builds are --locked)",
                         hint="commit the lock file upstream, or add it with a patch series")
    lock_hash = sha256_file(lock)
    home = cargo_home(builds)
    _no_kept_cargo_config(tree, builds, home)
    shared = target_dir(builds, target, fingerprint, lock_hash)
    out = {k: v.replace(CARGO_HOME, str(home)).replace(TARGET_DIR, str(shared))
           for k, v in env.items()}
    out["CARGO_HOME"] = str(home)
    fetch_crates(tree, out, builds, lock_hash)
    shared.mkdir(parents=True, exist_ok=True)
    out["CARGO_TARGET_DIR"] = str(shared)
    return out


def _no_kept_cargo_config(tree: Path, builds: Path, home: Path) -> None:
    """Cargo reads a config from every folder above the tree and from its home; one there can
    name commands it runs (``build.rustc-wrapper``, a linker, a runner). patchbench writes none
    under builds/ (the crate cache is restored in CI from a cache a pull request can influence),
    so one found there is refused, never used."""
    places = [home / name for name in ("config", "config.toml", "credentials",
                                       "credentials.toml")]
    places += [d / ".cargo" for d in tree.parents if d == builds or builds in d.parents]
    for place in places:
        if place.exists() or place.is_symlink():
            raise BuildError(f"{place} is a cargo configuration patchbench did not write (it can "
                             "name commands cargo runs); refused", hint=f"remove it: rm -r {place}")


def _source_files(tree: Path) -> dict[str, str]:
    """Every regular file of ``tree`` (submodule worktrees too; no ``.git``, no link) by its path
    relative to the tree, with its sha256."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in filenames:
            path = Path(dirpath) / name
            if name == ".git" or path.is_symlink() or not path.is_file():
                continue
            out[path.relative_to(tree).as_posix()] = sha256_file(path)
    return out


def _last_sources(stamp: Path) -> dict[str, str]:
    """The record of the target directory's last successful build; {} when there is none or it
    is not one of ours (then every file counts as new: a full rebuild of the workspace crates)."""
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


@contextmanager
def shared_target(tree: Path, env: dict[str, str], builds: Path, timeout: float
                  ) -> Iterator[None]:
    """Hold the shared target directory of ``env`` for one build in ``tree``: files whose content
    it was last built from are dated 2000-01-01, all others now, so cargo reuses exactly the
    crates that did not change; the record is removed before the build and written only after
    it succeeded."""
    shared = Path(env["CARGO_TARGET_DIR"])
    stamp = shared / SOURCES_STAMP
    with locks.locked(locks_dir(builds), f"cargo-target-{shared.name}", timeout):
        files = _source_files(tree)
        last = _last_sources(stamp)
        stamp.unlink(missing_ok=True)  # a build that fails half-way leaves no record
        now = time.time_ns()
        for rel, digest in files.items():
            when = OLD_NS if last.get(rel) == digest else now
            os.utime(tree / rel, ns=(when, when), follow_symlinks=False)
        yield
        write_json_atomic(stamp, {"schema_version": 1, "files": files})


def _field(text: str, key: str) -> str:
    m = re.search(rf"^{re.escape(key)}: (.+)$", text, re.M)
    return m.group(1).strip() if m else ""


def _sha_of(runner: Runner, candidates: list[str], tool: str, env: dict[str, str]) -> str:
    """sha256 of the first readable candidate path, else of ``tool`` on PATH."""
    for path in candidates:
        try:
            return runner.sha256(path)
        except (OSError, PatchbenchError):
            continue
    return runner.sha256(runner.resolve(tool, env))


def fingerprint(target: Target, tc: RustToolchain, env: dict[str, str], runner: Runner,
                recorded: dict[str, str]) -> dict[str, Any]:
    try:
        vv = runner.run(["rustc", "-vV"], env=env, timeout=300, what="rustc -vV").stdout
    except ToolchainError as exc:
        raise ToolchainError(f"cannot run rustc ({runner.where}): {exc.message}",
                             hint=f"install Rust {tc.version} (rustup toolchain install "
                             f"{tc.version}) and put cargo's bin directory on PATH",
                             detail=exc.detail) from None
    release = _field(vv, "release")
    if release != tc.version:
        raise ToolchainError(
            f"matrix.yaml pins rustc {tc.version}, but rustc ({runner.where}"
            + (f", RUSTUP_TOOLCHAIN={tc.rustup_toolchain}" if tc.rustup_toolchain else "")
            + f") is {release or vv.strip()!r}",
            hint="install that release, or name the installed one with rustup_toolchain; a "
            "repository's rust-toolchain.toml is overridden only by rustup_toolchain")
    sysroot = runner.run(["rustc", "--print", "sysroot"], env=env, timeout=60).stdout.strip()
    cargo_v = runner.run(["cargo", "-V"], env=env, timeout=300, what="cargo -V").stdout.strip()
    cc = runner.resolve("cc", env)
    fp: dict[str, Any] = {
        "kind": "rust",
        "version": f"rustc {release}",
        "rustc": {"commit": _field(vv, "commit-hash"), "host": _field(vv, "host"),
                  "llvm": _field(vv, "LLVM version"),
                  "sha256": _sha_of(runner, [f"{sysroot}/bin/rustc"], "rustc", env)},
        "cargo": {"version": cargo_v,
                  "sha256": _sha_of(runner, [f"{sysroot}/bin/cargo"], "cargo", env)},
        "rustup_toolchain": tc.rustup_toolchain,
        "linker": {"cc": runner.run(["cc", "--version"], env=env, timeout=60
                                    ).stdout.splitlines()[0], "cc_sha256": runner.sha256(cc)},
        "env": {**recorded, **{k: env[k] for k in RECORDED if k in env}},
    }
    fp["extra"] = {name: runner.run(argv, env=env, timeout=60, what=f"toolchain fingerprint "
                                    f"{name}").stdout.strip() for name, argv in tc.fingerprint.items()}
    return fp
