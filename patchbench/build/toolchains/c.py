"""C: the environment (``CC``, pinned ``CFLAGS``/``CPPFLAGS``/``LDFLAGS``, ``-ffile-prefix-map``,
optionally ccache) and the fingerprint (the compiler driver and the programs it runs, cc1,
collect2, as and ld, by path, version and sha256; the C library; the pkg-config versions of the
linked libraries).

The worktree's path differs from build to build, so ``CFLAGS`` carries ``TREE`` and is completed
for each tree by ``tree_env``; the fingerprint records the template, never a path of the machine.
ccache (``ccache: true``) keeps its cache under ``builds/ccache/<fingerprint digest>``: a
toolchain that changes in any recorded way gets a new, empty cache, and the variants of one
toolchain share theirs. With ``CCACHE_BASEDIR`` at the tree and the prefix map, a hit gives the
bytes a compile would.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from patchbench.build.toolchains.runner import Runner
from patchbench.config import CToolchain, Target
from patchbench.errors import PatchbenchError, ToolchainError

TREE = "@PATCHBENCH_TREE@"  # replaced by the worktree's path in tree_env
PREFIX_MAP = f"-ffile-prefix-map={TREE}=."
PROGRAMS = ("cc1", "collect2", "as", "ld")  # what the driver runs, by -print-prog-name
RECORDED = ("CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "CCACHE_NOHASHDIR", "CCACHE_COMPILERCHECK")


def env(tc: CToolchain) -> dict[str, str]:
    out = {"CC": f"ccache {tc.cc}" if tc.ccache else tc.cc,
           "CFLAGS": f"{tc.cflags} {PREFIX_MAP}".strip(),
           "CPPFLAGS": tc.cppflags, "LDFLAGS": tc.ldflags}
    if tc.ccache:  # the directory is hashed out by the prefix map; the compiler by content
        out.update({"CCACHE_NOHASHDIR": "true", "CCACHE_COMPILERCHECK": "content"})
    return out


# A layout-only rebuild: every function in its own section, and GNU ld sorting the sections of
# each wildcard by name (instead of the order of the source files): the same code, placed in
# another order. ld.bfd and gold accept --sort-section; lld does not.
LAYOUT_FLAGS = {"CFLAGS": "-ffunction-sections", "LDFLAGS": "-Wl,--sort-section=name"}


def layout(tc: CToolchain) -> tuple[str, str, dict[str, str]] | str:
    """(method, why, flags appended per variable) of a layout-only rebuild, or why there is none."""
    if "fuse-ld=lld" in tc.ldflags or "fuse-ld=mold" in tc.ldflags:
        return "the target links with lld or mold, which have no --sort-section"
    return ("-ffunction-sections, ld --sort-section=name",
            "each function gets its own section and the linker orders them by name, not by "
            "source file: the same code in another order", dict(LAYOUT_FLAGS))


def describe(tc: CToolchain) -> str:
    return f"{tc.cc} {tc.version}" + (" through ccache" if tc.ccache else "")


def cache_dir(builds: Path, fingerprint: dict[str, Any]) -> Path:
    """ccache's directory for one toolchain fingerprint (its sources excluded)."""
    material = {k: v for k, v in fingerprint.items() if k != "sources"}
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return builds / "ccache" / digest[:20]


def tree_env(tc: CToolchain, env: dict[str, str], tree: Path, builds: Path,
             fingerprint: dict[str, Any]) -> dict[str, str]:
    """``env`` for a build in ``tree``: the prefix map names it, and ccache (when on) its base
    directory and the cache of this fingerprint."""
    out = {k: v.replace(TREE, str(tree)) for k, v in env.items()}
    if tc.ccache:
        ccache = cache_dir(builds, fingerprint)
        ccache.mkdir(parents=True, exist_ok=True)
        # not the ccache.conf a cache folder may hold (its prefix_command would run): the
        # environment above and the system's file configure ccache
        out.update({"CCACHE_DIR": str(ccache), "CCACHE_BASEDIR": str(tree),
                    "CCACHE_TEMPDIR": str(ccache / "tmp"), "CCACHE_CONFIGPATH": os.devnull})
    return out


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _program(runner: Runner, cc: str, name: str, env: dict[str, str]) -> dict[str, str]:
    """A program the driver runs: its resolved path, sha256 and (for as, ld) version line."""
    found = runner.run([cc, f"-print-prog-name={name}"], env=env, timeout=60).stdout.strip()
    if not found:
        raise ToolchainError(f"{cc} -print-prog-name={name} printed nothing")
    try:
        if "/" in found:
            path = runner.run(["readlink", "-f", "--", found], env=env, timeout=30).stdout.strip()
        elif name in ("cc1", "collect2"):  # not a program of this driver (clang runs itself)
            return {"path": "", "sha256": "", "version": "not run by this driver"}
        else:
            path = runner.resolve(found, env)
        digest = runner.sha256(path)
    except (OSError, PatchbenchError) as exc:
        raise ToolchainError(f"{cc}'s {name} ({found}) cannot be read: {exc}",
                             hint=f"install the whole {cc} toolchain (cc1, as, ld)") from None
    info = {"path": path, "sha256": digest}
    if name in ("as", "ld"):
        info["version"] = _first_line(runner.run([path, "--version"], env=env, timeout=60).stdout)
    return info


def fingerprint(target: Target, tc: CToolchain, env: dict[str, str], runner: Runner,
                recorded: dict[str, str]) -> dict[str, Any]:
    cc = tc.cc
    try:
        version = runner.run([cc, "-dumpfullversion", "-dumpversion"], env=env, timeout=60,
                             what=f"{cc} -dumpfullversion").stdout.strip()
    except ToolchainError as exc:
        raise ToolchainError(f"cannot run the C compiler {cc!r} ({runner.where}): {exc.message}",
                             hint=f"install {cc} {tc.version} (Debian: gcc, build-essential)",
                             detail=exc.detail) from None
    if version != tc.version:
        raise ToolchainError(
            f"matrix.yaml pins {cc} {tc.version}, but {cc} ({runner.where}) is {version}",
            hint=f"install {cc} {tc.version}, or pin the one installed; patchbench never builds "
            "with another version silently")
    driver = runner.resolve(cc, env)
    fp: dict[str, Any] = {
        "kind": "c",
        "version": f"{cc} {version}",
        "cc": {"name": cc, "path": driver, "version": version, "sha256": runner.sha256(driver),
               "banner": _first_line(runner.run([cc, "--version"], env=env, timeout=60).stdout),
               "machine": runner.run([cc, "-dumpmachine"], env=env, timeout=60).stdout.strip()},
        "programs": {name: _program(runner, cc, name, env) for name in PROGRAMS},
        "flags": {k: env.get(k, "") for k in ("CFLAGS", "CPPFLAGS", "LDFLAGS")},
        "env": {**recorded, **{k: env[k] for k in RECORDED if k in env}},
    }
    try:
        libc = runner.run(["ldd", "--version"], env=env, timeout=60).stdout
    except ToolchainError:  # musl's ldd exits 1 on --version
        libc = ""
    fp["libc"] = _first_line(libc) or "unknown"
    libraries: dict[str, str] = {}
    for lib in tc.libraries:
        try:
            libraries[lib] = runner.run(["pkg-config", "--modversion", lib], env=env,
                                        timeout=60).stdout.strip()
        except ToolchainError as exc:
            raise ToolchainError(f"the build links {lib}, but pkg-config ({runner.where}) does "
                                 "not know it", hint=f"install its development package "
                                 f"(Debian: {lib}-dev)", detail=exc.detail) from None
    fp["libraries"] = libraries
    if tc.ccache:
        fp["ccache"] = _first_line(runner.run(["ccache", "--version"], env=env, timeout=60).stdout)
    extra = {name: runner.run(argv, env=env, timeout=60, what=f"toolchain fingerprint {name}"
                              ).stdout.strip() for name, argv in tc.fingerprint.items()}
    if any(c[0] == "make" for c in target.build.commands):
        extra["make"] = _first_line(runner.run(["make", "--version"], env=env).stdout)
    fp["extra"] = extra
    return fp
