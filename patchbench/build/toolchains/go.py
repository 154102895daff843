"""Go: the environment (-trimpath, cgo on or off, GOTOOLCHAIN pinned or local) and the fingerprint
(exact version, platform, hashes of go, compile and link, cgo's C compiler, extra libraries). A
host build without the network gets go.mod's modules first (``go mod download``, with the
network) and then builds with ``GOPROXY=off``; a vendored tree needs nothing fetched."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from patchbench.build.toolchains.runner import Runner
from patchbench.config import GoToolchain, Target
from patchbench.errors import SourceError, ToolchainError
from patchbench.util import cmd, sandbox


def env(tc: GoToolchain) -> dict[str, str]:
    # no telemetry: Go writes its counters under the user's config folder on every run (the
    # GOTELEMETRY variable alone does not stop it; a config folder of /dev/null does), while
    # GOENV keeps the user's `go env -w` settings
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ.get("HOME", "/"),
                                                               ".config")
    return {"GOFLAGS": "-trimpath", "CGO_ENABLED": "1" if tc.cgo else "0",
            "GOTOOLCHAIN": f"go{tc.version}" if tc.download else "local",
            "GOTELEMETRY": "off", "XDG_CONFIG_HOME": os.devnull,
            "GOENV": os.environ.get("GOENV") or os.path.join(config, "go", "env")}


def tree_env(env: dict[str, str], tree: Path, *, fetch: bool = False,
             timeout: float = 1800.0) -> dict[str, str]:
    """``env`` for a build in ``tree``: without a go.work of its own, the go command looks for
    none in the folders above it (builds/tmp/, builds/), where no one put one for this build.
    ``fetch`` (a host build without the network): the modules of the root's go.mod or go.work
    are downloaded now, with the network, unless the tree vendors them, and the build gets
    ``GOPROXY=off``; a tree with neither at its root is left as it is."""
    out = env if (tree / "go.work").is_file() else {**env, "GOWORK": "off"}
    if not fetch:
        return out
    need = modules(tree)
    if need == "fetch":
        cmd.run(sandbox.isolated(FETCH, network=True), cwd=tree, env=out, timeout=timeout,
                    error=SourceError, what=FETCH_WHAT)
    return offline(out, need)


FETCH = ["go", "mod", "download"]
FETCH_WHAT = "fetch the modules of go.mod (go mod download)"


def modules(tree: Path) -> str:
    """What an offline build of ``tree`` needs first: "vendored" (nothing), "fetch" (the modules
    of the root's go.mod or go.work: ``go mod download``), or "none" (no module at the root)."""
    if (tree / "vendor" / "modules.txt").is_file():
        return "vendored"
    if (tree / "go.mod").is_file() or (tree / "go.work").is_file():
        return "fetch"
    return "none"


def offline(env: dict[str, str], need: str) -> dict[str, str]:
    """``env`` for the build once its modules are at hand: ``GOPROXY=off``, unless nothing was
    fetched for it (no module at the root: the build's go keeps its proxy)."""
    return env if need == "none" else {**env, "GOPROXY": "off"}


# The linker's -randlayout (function order shuffled with a seed; go1.23.6's linker has it): a
# second build that differs in code layout only. GOFLAGS carries it to `go build`, EXTRA_LDFLAGS to
# a Makefile that passes its own -ldflags (runc's); a recipe giving -ldflags on its command line
# otherwise overrides GOFLAGS', and the layout build then comes out byte-identical (the A/A says so).
LAYOUT_SEED = 1  # nonzero: -randlayout=0 is off
LAYOUT_SINCE = (1, 23)


def layout(target: Target, tc: GoToolchain) -> tuple[str, str, dict[str, str]] | str:
    """(method, why, flags appended per variable) of a layout-only rebuild, or why there is none."""
    parts = tuple(int(x) for x in re.findall(r"\d+", tc.version)[:2])
    if parts < LAYOUT_SINCE:
        return (f"go {tc.version} is older than 1.23, whose linker patchbench knows to have "
                "-randlayout")
    if "-ldflags" in target.build.env.get("GOFLAGS", ""):
        return ("the target's GOFLAGS already has -ldflags, which a second -ldflags would "
                "replace (changing more than layout)")
    flag = f"-randlayout={LAYOUT_SEED}"
    return (f"go linker {flag}",
            f"the linker places the functions in a shuffled order (seed {LAYOUT_SEED}); each "
            "function's code and the behaviour are the same",
            {"GOFLAGS": f"-ldflags={flag}", "EXTRA_LDFLAGS": flag})


def describe(tc: GoToolchain) -> str:
    return f"go {tc.version}" + (" (downloaded through the module proxy)" if tc.download else "")


def fingerprint(target: Target, tc: GoToolchain, env: dict[str, str], runner: Runner,
                recorded: dict[str, str]) -> dict[str, Any]:
    try:
        version = runner.run(["go", "version"], env=env, timeout=900,
                             what=f"go version (GOTOOLCHAIN={env.get('GOTOOLCHAIN')})",
                             ).stdout.strip()
    except ToolchainError as exc:
        hint = ("install that Go version, or set toolchain.download: true to let the go command "
                "fetch it through the module proxy") if not tc.download else (
                "the go command could not fetch it: check GOPROXY and the network, or install "
                f"Go {tc.version}")
        raise ToolchainError(f"cannot get Go {tc.version} ({runner.where}): {exc.message}",
                             hint=hint, detail=exc.detail) from None
    m = re.match(r"go version go(\S+) (\S+)/(\S+)", version)
    if not m or m.group(1) != tc.version:
        raise ToolchainError(
            f"matrix.yaml pins Go {tc.version}, but the go command ({runner.where}) is {version!r}",
            hint=f"install Go {tc.version}" + ("" if tc.download else
                                               " or set toolchain.download: true")
            + "; patchbench never builds with another version silently",
        )
    goenv = json.loads(runner.run(
        ["go", "env", "-json", "GOROOT", "GOTOOLDIR", "GOOS", "GOARCH", "GOAMD64", "GOARM64",
         "CC", "CGO_ENABLED", "GOEXPERIMENT"], env=env, timeout=120).stdout)
    fp: dict[str, Any] = {
        "kind": "go",
        "version": f"go{m.group(1)}",
        "platform": f"{m.group(2)}/{m.group(3)}",
        "go_sha256": runner.sha256(f"{goenv['GOROOT']}/bin/go"),
        "compile_sha256": runner.sha256(f"{goenv['GOTOOLDIR']}/compile"),
        "link_sha256": runner.sha256(f"{goenv['GOTOOLDIR']}/link"),
        "goenv": {k: v for k, v in goenv.items() if k not in ("GOROOT", "GOTOOLDIR") and v},
        "env": recorded,
    }
    extra: dict[str, str] = {}
    if tc.cgo:
        cc = goenv.get("CC") or "cc"
        extra["cc"] = runner.run([cc, "--version"], env=env, timeout=60).stdout.splitlines()[0]
        extra["cc_sha256"] = runner.sha256(runner.resolve(cc, env))
        # what cgo's external link also reads: the linker and the C library's version
        ld = runner.run([cc, "-print-prog-name=ld"], env=env, timeout=60).stdout.strip() or "ld"
        extra["ld_sha256"] = runner.sha256(runner.resolve(ld, env))
        try:
            libc = runner.run(["ldd", "--version"], env=env, timeout=60).stdout.strip()
        except ToolchainError:  # musl's ldd exits 1 on --version
            libc = ""
        extra["libc"] = libc.splitlines()[0] if libc else "unknown"
    for name, argv in tc.fingerprint.items():
        extra[name] = runner.run(argv, env=env, timeout=60,
                                 what=f"toolchain fingerprint {name}").stdout.strip()
    if target.build.commands and any(c[0] == "make" for c in target.build.commands):
        extra["make"] = runner.run(["make", "--version"], env=env).stdout.splitlines()[0]
    fp["extra"] = extra
    return fp
