"""Toolchains: the build environment and the fingerprint that proves two builds used the same one.
One module per language (go, swift, c, rust), registered in ``TOOLCHAINS``; each supplies its environment,
its fingerprint (taken through the build backend's ``Runner``, where the build runs) and a
one-line description.

The environment is built from an allowlist, never inherited wholesale; proxy and module proxy
settings reach a build without their credentials. The fingerprint holds what decides the output
and no path of the machine, so manifests can be committed and compared.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchbench import redact
from patchbench.build import sandboxing
from patchbench.build.toolchains import c, go, rust, swift
from patchbench.build.toolchains.runner import (
    HostRunner,
    Runner,
    SandboxRunner,
    StatCachedRunner,
)
from patchbench.config import CToolchain, GoToolchain, RustToolchain, SwiftToolchain, Target
from patchbench.util import cmd, locks, sandbox
from patchbench.util.files import sha256_file
from patchbench.util.layout import locks_dir
from patchbench.util.sandbox import Bind

__all__ = ["HostRunner", "LayoutChange", "Runner", "SandboxRunner", "StatCachedRunner",
           "build_env", "cache_env", "describe", "differing_keys", "fingerprint",
           "layout_change", "recorded_env", "shared_cache", "source_hashes", "tree_env"]

# Passed through from the caller's environment when set; values of path-like ones are not
# recorded in the fingerprint (they differ between machines but do not change the output).
PASS_THROUGH = (
    "PATH", "HOME", "USER", "TMPDIR", "GOPATH", "GOCACHE", "GOMODCACHE", "GOPROXY", "GOSUMDB",
    "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "http_proxy", "https_proxy", "no_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "PKG_CONFIG_PATH",
    "DEVELOPER_DIR", "RUSTUP_HOME",
)
RECORDED_PASS_THROUGH = ("GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE")
# passed without the userinfo of their URLs: a build is never given a proxy's password
URL_VALUED = ("GOPROXY", "GOSUMDB", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")
# A build's `git describe` (runc's Makefile embeds it) abbreviates hashes by the repository's
# object count: a shallow source cache gives g59923ef, one holding full history g59923ef1, so the
# same commit and toolchain gave different binaries. Pinned above every config file, like git -c.
GIT_PINNED = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.abbrev", "GIT_CONFIG_VALUE_0": "7"}
RECORDED = ("TZ", "LC_ALL", "SOURCE_DATE_EPOCH", "GOFLAGS", "CGO_ENABLED", "GOTOOLCHAIN",
            *GIT_PINNED)


def build_env(target: Target, source_date_epoch: int) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.update({k: redact.without_credentials(env[k]) for k in URL_VALUED if k in env})
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"TZ": "UTC", "LC_ALL": "C", "SOURCE_DATE_EPOCH": str(source_date_epoch)})
    env.update(GIT_PINNED)
    tc = target.toolchain
    if isinstance(tc, CToolchain):
        env.update(c.env(tc))
    elif isinstance(tc, RustToolchain):
        env.update(rust.env(tc))
    else:
        env.update(go.env(tc) if isinstance(tc, GoToolchain) else swift.env(tc))
    env.update(target.build.env)
    return env


GO_CACHE_VARIABLE = "PATCHBENCH_GO_CACHE"  # where upstream builds keep Go's build cache
GO_CACHE_KEYS = ("GOPATH", "GOMODCACHE", "GOCACHE")


def cache_env(target: Target, env: dict[str, str], builds: Path) -> dict[str, str]:
    """``env`` with the caches a build of ``target`` uses, all patchbench's own (a build cannot
    see the user's, under /root or /home): a Go target's GOPATH (with the module cache) under
    builds/sources/go, shared by every Go target, and its build cache per Go release under
    builds/go-cache (or ``PATCHBENCH_GO_CACHE``). Paths: not in the fingerprint."""
    tc = target.toolchain
    if not isinstance(tc, GoToolchain):  # the caller's Go caches are not a C or Rust build's
        return {k: v for k, v in env.items()
                if k not in GO_CACHE_KEYS or k in target.build.env}
    gopath = builds / "sources" / "go"
    cache_root = Path(os.environ.get(GO_CACHE_VARIABLE) or builds / "go-cache")
    return {**env, "GOPATH": str(gopath), "GOMODCACHE": str(gopath / "pkg" / "mod"),
            "GOCACHE": str(cache_root / f"go{tc.version}")}


def recorded_env(env: dict[str, str], target: Target) -> dict[str, str]:
    keys = set(RECORDED) | set(RECORDED_PASS_THROUGH) | set(target.build.env)
    return redact.env({k: env[k] for k in sorted(keys) if k in env})  # never a secret


def fingerprint(target: Target, env: dict[str, str], runner: Runner | None = None
                ) -> dict[str, Any]:
    """What decides the build's output, taken through ``runner`` (default: this host)."""
    runner = runner or HostRunner()
    tc = target.toolchain
    recorded = recorded_env(env, target)
    if isinstance(tc, SwiftToolchain):
        return swift.fingerprint(target, tc, env, runner, recorded)
    if isinstance(tc, CToolchain):
        return c.fingerprint(target, tc, env, runner, recorded)
    if isinstance(tc, RustToolchain):
        return rust.fingerprint(target, tc, env, runner, recorded)
    return go.fingerprint(target, tc, env, runner, recorded)


@dataclass(frozen=True)
class LayoutChange:
    """How a second build of the same source differs from the first in code layout only (for
    ``compare --aa-layout``): flags appended to the build's variables, per toolchain kind."""

    method: str  # the flags, in a few words
    why: str  # what they change, and why the behaviour is the same
    append: tuple[tuple[str, str], ...]  # (variable, flags appended to it)

    def apply(self, env: dict[str, str]) -> dict[str, str]:
        out = dict(env)
        for key, flags in self.append:
            out[key] = f"{out.get(key, '')} {flags}".strip()
        return out

    def record(self) -> dict[str, Any]:
        """What the manifest holds of it."""
        return {"method": self.method, "why": self.why, "appended": dict(self.append)}

    def key(self) -> dict[str, Any]:
        """What the cache key holds of it: the flags (not the wording)."""
        return {"appended": dict(self.append)}


def layout_change(target: Target, machine: str | None = None) -> LayoutChange | str:
    """The layout-only rebuild of ``target``'s toolchain kind, or why this kind has none
    (Swift: xcodebuild has no option patchbench knows to reorder code without changing it)."""
    tc = target.toolchain
    if isinstance(tc, SwiftToolchain):
        return "no layout-only option is known for Swift builds (xcodebuild)"
    if isinstance(tc, CToolchain):
        found = c.layout(tc)
    elif isinstance(tc, RustToolchain):
        found = rust.layout(tc, machine or platform.machine())
    else:
        found = go.layout(target, tc)
    if isinstance(found, str):
        return found
    method, why, flags = found
    return LayoutChange(method, why, tuple(flags.items()))


def describe(target: Target) -> str:
    tc = target.toolchain
    if isinstance(tc, CToolchain):
        return c.describe(tc)
    if isinstance(tc, RustToolchain):
        return rust.describe(tc)
    return go.describe(tc) if isinstance(tc, GoToolchain) else swift.describe(tc)


def tree_env(target: Target, env: dict[str, str], tree: Path, builds: Path,
             fingerprint: dict[str, Any]) -> dict[str, str]:
    """The environment of one build in ``tree`` (a C toolchain's prefix map and ccache name the
    tree; a Rust or Go build without the network gets its crates or modules first)."""
    tc = target.toolchain
    if isinstance(tc, CToolchain):
        return c.tree_env(tc, env, tree, builds, fingerprint)
    if isinstance(tc, RustToolchain):  # also fetches the crates of a new Cargo.lock
        return rust.tree_env(target, tc, env, tree, builds, fingerprint)
    if isinstance(tc, GoToolchain):  # a host build without the network: go.mod's modules first
        offline = not target.build.network and target.build.backend == "host"
        return go.tree_env(env, tree, fetch=offline, timeout=target.build.timeout)
    return env



@contextmanager
def shared_cache(target: Target, env: dict[str, str], tree: Path, builds: Path,
                 private: Path | None = None) -> Iterator[list[Bind]]:
    """Around one build in ``tree``: its compile caches (Go's build cache, the cargo target
    directory, ccache's), each locked for the build, as binds of its sandbox. A build of
    upstream code alone (``private`` None) writes the shared folders; a build with the project's
    patches writes copies of them made under ``private`` (seen at the shared paths, so its
    flags and remapped paths are the same), which go with its temporary folder: nothing a patch
    series runs reaches another build. A Rust target also dates the tree's files so that cargo
    recompiles only what changed (rust.shared_target), in whichever folder the build writes."""
    caches = [Path(env[k]) for k in sandboxing.COMPILE_CACHES if env.get(k)]
    with contextlib.ExitStack() as stack:
        binds: list[Bind] = []
        places: dict[Path, Path] = {}
        for i, cache in enumerate(caches):
            cache.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256(str(cache).encode()).hexdigest()[:20]
            stack.enter_context(locks.locked(locks_dir(builds), f"cache-{digest}",
                                             float(target.build.timeout)))
            if private is None:
                places[cache] = cache
                binds.append(Bind(cache, writable=True))
                continue
            copy = private / f"{i}-{cache.name}"
            copy.parent.mkdir(parents=True, exist_ok=True)
            cmd.run(["cp", "-a", "--reflink=auto", "--", str(cache), str(copy)],
                        timeout=float(target.build.timeout),
                        what=f"copy the compile cache {cache} for a patched build")
            places[cache] = copy
            binds.append(Bind(copy, writable=True, inside=cache))
        sandbox.give(list(places.values()), walk=False)
        target_dir = env.get("CARGO_TARGET_DIR")
        if isinstance(target.toolchain, RustToolchain) and target_dir:
            stack.enter_context(rust.shared_target(tree, env, builds, float(target.build.timeout),
                                                   place=places.get(Path(target_dir))))
        yield binds


def source_hashes(tree: Path) -> dict[str, str]:
    """Hashes of the dependency lock files of a patched tree (recorded, not compared: a patch may
    legitimately change them)."""
    out = {f"{name}_sha256": sha256_file(tree / name)
           for name in ("go.sum", "Package.resolved", "Cargo.lock", "rust-toolchain.toml")
           if (tree / name).is_file()}
    channel = rust.pinned_channel(tree)
    if channel:  # what the repository asks for, beside the toolchain the target builds with
        out["rust_toolchain_channel"] = channel
    return out


def differing_keys(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    """Key paths whose values differ between two fingerprints, ignoring per-tree source hashes."""
    out: list[str] = []
    for key in sorted(set(a) | set(b)):
        if not prefix and key == "sources":
            continue
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            out.extend(differing_keys(va, vb, f"{prefix}{key}."))
        elif va != vb:
            out.append(f"{prefix}{key}")
    return out
