"""patchbench's own Go launcher (burst.go): releases k children at one moment and records each
one's latency; with --then, runs an instance's phases one after the other; with -deadline DUR
-evidence DIR (deadline.go), every command runs in its own process group with a deadline, a hang's
evidence is saved before its group is killed, and the launcher exits with 124 (see
patchbench.measure.hangs).

The launcher runs as root on every measurement, so what runs is pinned in the package: its
sources, the Go release it is built with (``GOTOOLCHAIN``) and, per platform, the sha256 of the
binary that gives (``pins.py``; Go builds it byte for byte the same anywhere). It is built into
``builds/tools/burst-<first 16 digits of the pin>``, a folder no build can see (builds run in a
sandbox that is given only their own worktree, util/sandbox.py), and before every use the file is
hashed again, never through a link, and must match the pin: a file in its place that does not (a
wrapper, with or without a stamp beside it: what a build running as root once planted) is built
again, with a warning, and the build is used only when it hashes to the pin. ``python3 -m
patchbench.measure.launcher pin`` writes pins.py after the sources or the Go release change."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from patchbench.errors import BenchmarkError
from patchbench.measure.launcher import pins
from patchbench.util import cmd, locks, progress
from patchbench.util.files import sha256_file
from patchbench.util.layout import Layout

SOURCE = Path(__file__).resolve().parent
FILES = ("burst.go", "deadline.go", "go.mod")
# what the go command sees of the caller's environment: where Go and its caches are, and where it
# fetches the pinned release when this machine has another (the module proxy, checked by sumdb)
PASSED = ("PATH", "HOME", "TMPDIR", "GOCACHE", "GOROOT", "GOPATH", "GOMODCACHE", "GOPROXY",
          "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "http_proxy",
          "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE",
          "SSL_CERT_DIR")
# the platforms pinned (cross-compiled by `pin`): GOOS/GOARCH -> the architecture's baseline level
PLATFORMS = {"linux/amd64": {"GOAMD64": "v1"}, "linux/arm64": {"GOARM64": "v8.0"}}


def sources_digest() -> str:
    """sha256 over the launcher's source files, as pins.py records them."""
    h = hashlib.sha256()
    for name in FILES:
        h.update(name.encode() + b"\0" + (SOURCE / name).read_bytes())
    return h.hexdigest()


def build_env(platform: str | None = None) -> dict[str, str]:
    """The go command's environment: an allowlist (no credential of a proxy's URL), the pinned Go
    release, no cgo, no telemetry, none of the user's ``go env -w`` settings (GOENV=off), and
    every setting that decides the bytes fixed (GOOS/GOARCH and the architecture's level)."""
    from patchbench import redact

    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    env.update({k: redact.without_credentials(v) for k, v in env.items()
                if k in ("GOPROXY", "GOSUMDB") or k.lower().endswith("_proxy")})
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"CGO_ENABLED": "0", "GOFLAGS": "-trimpath", "GOTOOLCHAIN": f"go{pins.GO}",
                "GOTELEMETRY": "off", "XDG_CONFIG_HOME": os.devnull, "GOENV": "off",
                "GOEXPERIMENT": "", "GOWORK": "off"})
    if platform is not None:
        goos, goarch = platform.split("/")
        env.update({"GOOS": goos, "GOARCH": goarch, **PLATFORMS.get(platform, {})})
    return env


def host_platform() -> str:
    """GOOS/GOARCH of this machine (as the go command names it)."""
    out = cmd.run(["go", "env", "GOHOSTOS", "GOHOSTARCH"], env=build_env(), timeout=300,
                      error=BenchmarkError, what="go env GOHOSTOS GOHOSTARCH").stdout.split()
    if len(out) != 2:
        raise BenchmarkError(f"go env GOHOSTOS GOHOSTARCH printed {' '.join(out)!r}")
    return "/".join(out)


def compile_to(dest: Path, platform: str) -> str:
    """Build the launcher for ``platform`` into ``dest`` (a new file); return its sha256."""
    with tempfile.TemporaryDirectory(prefix="patchbench-launcher-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name in FILES:
            (src / name).write_bytes((SOURCE / name).read_bytes())
        cmd.run(["go", "build", "-o", str(dest), "."], cwd=src, env=build_env(platform),
                    timeout=900, error=BenchmarkError,
                    what=f"build the burst launcher (Go {pins.GO}, {platform})")
    return sha256_file(dest, follow=False)


def _problem(exe: Path, want: str) -> str | None:
    """Why ``exe`` is not the pinned launcher, or None. Only a regular file (no link) of ours or
    root's that no one else may write, hashing to the pin, is."""
    try:
        st = os.lstat(exe)
    except FileNotFoundError:
        return "is missing"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a link?)"
    if st.st_uid not in (0, os.geteuid()):
        return f"is owned by uid {st.st_uid}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by other users"
    try:
        got = sha256_file(exe, follow=False)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if got != want:
        return f"has sha256 {got}, but the package pins {want}"
    return None


def _tools_dir(layout: Layout) -> Path:
    """builds/tools/, made by us (0755) and no link: no one else may put a file in it."""
    tools = layout.tools
    tools.mkdir(mode=0o755, parents=True, exist_ok=True)
    st = os.lstat(tools)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (0, os.geteuid()) or \
            st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise BenchmarkError(f"{tools} is not a folder of patchbench's that only it may write "
                             "(a link, another owner, or writable by others); the launcher is "
                             "never put there", hint=f"remove it: rm -r {tools}")
    return tools


def build(layout: Layout) -> Path:
    """The pinned launcher of this machine's platform, built once into builds/tools/ and hashed
    again against the pin on every call; its path."""
    if sources_digest() != pins.SOURCES:
        raise BenchmarkError("the launcher's sources differ from the ones pins.py was written "
                             "for", hint="after changing them: python3 -m "
                             "patchbench.measure.launcher pin (and commit pins.py)")
    platform = host_platform()
    want = pins.SHA256.get(platform)
    if want is None:
        raise BenchmarkError(f"no launcher is pinned for {platform} (pinned: "
                             f"{', '.join(sorted(pins.SHA256))})",
                             hint="add it to PLATFORMS in patchbench/measure/launcher, then "
                             "python3 -m patchbench.measure.launcher pin")
    dest = layout.tools / f"burst-{want[:16]}"
    if _problem(dest, want) is None:
        return dest
    tools = _tools_dir(layout)
    with locks.locked(layout.locks, "tool-burst"):
        why = _problem(dest, want)
        if why is None:
            return dest
        if why != "is missing":
            progress.say(f"warning: the launcher {dest} {why}; building it again")
        fd, tmp_s = tempfile.mkstemp(prefix=f".{dest.name}.", dir=tools)
        os.close(fd)
        tmp = Path(tmp_s)
        try:
            tmp.unlink()  # go build writes a new file
            got = compile_to(tmp, platform)
            if got != want:
                raise BenchmarkError(
                    f"the launcher built here (Go {pins.GO}, {platform}) has sha256 {got}, but "
                    f"the package pins {want}; it is not used",
                    hint=f"a Go {pins.GO} that differs from the release, or a build cache "
                    "that is not Go's (GOCACHE); clean it with go clean -cache and try again")
            tmp.chmod(0o755)
            try:
                os.replace(tmp, dest)  # over a planted link: the link goes, never its target
            except OSError as exc:
                raise BenchmarkError(f"cannot put the launcher at {dest}: {exc.strerror}",
                                     hint=f"remove {dest}") from None
        finally:
            tmp.unlink(missing_ok=True)
    why = _problem(dest, want)
    if why is not None:
        raise BenchmarkError(f"the launcher {dest} {why} right after it was built")
    return dest
