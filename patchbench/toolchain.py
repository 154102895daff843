"""Toolchains: the build environment and the fingerprint that proves two builds used the same one.

The environment is built from an allowlist, never inherited wholesale. The fingerprint holds what
decides the output (version, compiler hash, target platform, cgo's C compiler, extra libraries) and
no path of the machine, so manifests can be committed and compared across runs.
"""

from __future__ import annotations

import json
import os
import platform
import re
from pathlib import Path
from typing import Any

from patchbench import command
from patchbench.config import GoToolchain, SwiftToolchain, Target
from patchbench.errors import RequirementError, ToolchainError
from patchbench.files import sha256_file
from patchbench.runner import HOST, Runner

# Passed through from the caller's environment when set; values of path-like ones are not
# recorded in the fingerprint (they differ between machines but do not change the output).
PASS_THROUGH = (
    "PATH", "HOME", "USER", "TMPDIR", "GOPATH", "GOCACHE", "GOMODCACHE", "GOPROXY", "GOSUMDB",
    "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "http_proxy", "https_proxy", "no_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "PKG_CONFIG_PATH",
    "DEVELOPER_DIR",
)
RECORDED_PASS_THROUGH = ("GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE")
# A build's `git describe` (runc's Makefile embeds it) abbreviates hashes by the repository's
# object count: a shallow source cache gives g59923ef, one holding full history g59923ef1, so the
# same commit and toolchain gave different binaries. Pinned above every config file, like git -c.
GIT_PINNED = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.abbrev", "GIT_CONFIG_VALUE_0": "7"}


def build_env(target: Target, source_date_epoch: int) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"TZ": "UTC", "LC_ALL": "C", "SOURCE_DATE_EPOCH": str(source_date_epoch)})
    env.update(GIT_PINNED)
    tc = target.toolchain
    if isinstance(tc, GoToolchain):
        env["GOFLAGS"] = "-trimpath"
        env["CGO_ENABLED"] = "1" if tc.cgo else "0"
        env["GOTOOLCHAIN"] = f"go{tc.version}" if tc.download else "local"
    env.update(target.build.env)
    return env


def recorded_env(env: dict[str, str], target: Target) -> dict[str, str]:
    keys = {"TZ", "LC_ALL", "SOURCE_DATE_EPOCH", "GOFLAGS", "CGO_ENABLED", "GOTOOLCHAIN", *GIT_PINNED}
    keys.update(RECORDED_PASS_THROUGH)
    keys.update(target.build.env)
    return {k: env[k] for k in sorted(keys) if k in env}




def fingerprint(
    target: Target, env: dict[str, str], cwd: Path | None = None, runner: Runner = HOST
) -> dict[str, Any]:
    """The toolchain's fingerprint, taken through ``runner`` (where the build runs)."""
    tc = target.toolchain
    if isinstance(tc, SwiftToolchain):
        return _swift_fingerprint(tc, env)
    return _go_fingerprint(target, tc, env, cwd, runner)


def _go_fingerprint(
    target: Target, tc: GoToolchain, env: dict[str, str], cwd: Path | None, runner: Runner = HOST
) -> dict[str, Any]:
    try:
        version = runner.run(
            ["go", "version"], env=env, cwd=cwd, timeout=900, error=ToolchainError,
            what=f"go version (GOTOOLCHAIN={env.get('GOTOOLCHAIN')})",
        ).stdout.strip()
    except ToolchainError as exc:
        raise ToolchainError(
            f"cannot get Go {tc.version}: {exc.message}",
            hint="install that Go version, or set toolchain.download: true to let the go command "
            "fetch it through the module proxy",
            detail=exc.detail,
        ) from None
    m = re.match(r"go version go(\S+) (\S+)/(\S+)", version)
    if not m or m.group(1) != tc.version:
        raise ToolchainError(
            f"matrix.yaml pins Go {tc.version}, but the go command is {version!r}",
            hint="install Go " + tc.version + " or set toolchain.download: true; patchbench never "
            "builds with another version silently",
        )
    goenv = json.loads(
        runner.run(
            ["go", "env", "-json", "GOROOT", "GOTOOLDIR", "GOOS", "GOARCH", "GOAMD64", "GOARM64",
             "CC", "CGO_ENABLED", "GOEXPERIMENT"],
            env=env, cwd=cwd, timeout=120, error=ToolchainError,
        ).stdout
    )
    fp: dict[str, Any] = {
        "kind": "go",
        "version": f"go{m.group(1)}",
        "platform": f"{m.group(2)}/{m.group(3)}",
        "go_sha256": runner.sha256(f"{goenv['GOROOT']}/bin/go", env),
        "compile_sha256": runner.sha256(f"{goenv['GOTOOLDIR']}/compile", env),
        "link_sha256": runner.sha256(f"{goenv['GOTOOLDIR']}/link", env),
        "goenv": {k: v for k, v in goenv.items() if k not in ("GOROOT", "GOTOOLDIR") and v},
        "env": recorded_env(env, target),
    }
    extra: dict[str, str] = {}
    if tc.cgo:
        cc = goenv.get("CC") or "cc"
        extra["cc"] = runner.run([cc, "--version"], env=env, timeout=60).stdout.splitlines()[0]
        extra["cc_sha256"] = runner.sha256(runner.resolve(cc, env), env)
        # what cgo's external link also reads: the linker and the C library's version
        ld = runner.run([cc, "-print-prog-name=ld"], env=env, timeout=60).stdout.strip() or "ld"
        extra["ld_sha256"] = runner.sha256(runner.resolve(ld, env), env)
        libc = runner.run(["ldd", "--version"], env=env, timeout=60, check=False)
        extra["libc"] = (libc.stdout + libc.stderr).strip().splitlines()[0] if (
            libc.stdout + libc.stderr).strip() else "unknown"
    for name, argv in tc.fingerprint.items():
        extra[name] = runner.run(
            argv, env=env, timeout=60, error=ToolchainError, what=f"toolchain fingerprint {name}"
        ).stdout.strip()
    if target.build.commands and any(c[0] == "make" for c in target.build.commands):
        extra["make"] = runner.run(["make", "--version"], env=env).stdout.splitlines()[0]
    fp["extra"] = extra
    return fp


def source_hashes(tree: Path) -> dict[str, str]:
    """Hashes of the dependency lock files of a patched tree (recorded, not compared: a patch may
    legitimately change them)."""
    return {
        f"{name}_sha256": sha256_file(tree / name)
        for name in ("go.sum", "Package.resolved")
        if (tree / name).is_file()
    }


def _swift_fingerprint(tc: SwiftToolchain, env: dict[str, str]) -> dict[str, Any]:
    if platform.system() != "Darwin":
        raise RequirementError(
            f"the Swift toolchain ({tc.version}) builds only on macOS here",
            hint="run this build on a Mac with Apple silicon, macOS 15 or newer, and Xcode",
        )
    swift = command.run(["swift", "--version"], env=env, error=ToolchainError).stdout.strip()
    xcode = command.run(["xcodebuild", "-version"], env=env, error=ToolchainError).stdout.strip()
    if tc.version not in swift:
        raise ToolchainError(f"matrix.yaml pins Swift {tc.version}, but swift says {swift!r}")
    extra = {
        name: command.run(argv, env=env, error=ToolchainError).stdout.strip()
        for name, argv in tc.fingerprint.items()
    }
    return {"kind": "swift", "swift": swift, "xcode": xcode, "extra": extra}


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
