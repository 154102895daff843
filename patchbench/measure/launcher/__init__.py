"""patchbench's own Go launcher (burst.go): releases k children at one moment and records each
one's latency; with --then, runs an instance's phases one after the other; with -deadline DUR
-evidence DIR (deadline.go), every command runs in its own process group with a deadline, a hang's
evidence is saved before its group is killed, and the launcher exits with 124 (see
patchbench.measure.hangs). Built once per content with the host's Go into builds/tools/.

The launcher runs (as root, on every measurement) whatever file sits at its name, so it is used
only when it is the one patchbench built: its sha256 is kept in a stamp beside it when it is
built, and before each use the file is hashed again and must be a regular file of ours (or
root's) that no one else may write, and the stamp too. Anything else (replaced, a link, another
owner, mode 0777, no stamp) is built again, with a warning."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from patchbench.errors import BenchmarkError
from patchbench.util import cmd, locks, ownership, progress
from patchbench.util.files import is_sha256, sha256_file, write_json_atomic
from patchbench.util.layout import Layout

SOURCE = Path(__file__).resolve().parent
FILES = ("burst.go", "deadline.go", "go.mod")
# what the go command sees: nothing of the caller's environment but where Go and its caches are
PASSED = ("PATH", "HOME", "TMPDIR", "GOCACHE", "GOROOT", "GOPATH", "GOMODCACHE")


def stamp_of(exe: Path) -> Path:
    """The stamp beside a built launcher: the sha256 patchbench built it with."""
    return exe.with_name(exe.name + ".sha256")


def _trusted_owners() -> frozenset[int]:
    if os.geteuid() == 0:
        return ownership.Trust.from_environment().uids
    return frozenset({0, os.geteuid()})


def _problem(exe: Path) -> str | None:
    """Why ``exe`` is not the launcher patchbench built, or None."""
    for path in (exe, stamp_of(exe)):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return "is missing" if path == exe else "has no stamp"
        if not stat.S_ISREG(st.st_mode):
            return f"{'' if path == exe else 'its stamp '}is not a regular file (a link?)"
        if st.st_uid not in _trusted_owners():
            return f"{'' if path == exe else 'its stamp '}is owned by uid {st.st_uid}"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{'' if path == exe else 'its stamp '}is writable by other users"
    try:
        data = ownership.read_kept(stamp_of(exe), 4096)
    except (OSError, ValueError, UnicodeDecodeError):
        return "has a stamp patchbench cannot read"
    want = data.get("sha256") if isinstance(data, dict) else None
    if not is_sha256(want):
        return "has a stamp that is not patchbench's"
    got = sha256_file(exe, follow=False)
    if got != want:
        return f"has sha256 {got}, but patchbench built {want}"
    return None


def build_env() -> dict[str, str]:
    """The go command's environment: an allowlist, no cgo, no telemetry (XDG_CONFIG_HOME where
    Go would write its counters is /dev/null; GOENV keeps the user's `go env -w` settings)."""
    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ.get("HOME", "/"),
                                                               ".config")
    env.update({"CGO_ENABLED": "0", "GOFLAGS": "-trimpath", "GOTOOLCHAIN": "local",
                "GOPROXY": "off", "GOTELEMETRY": "off", "XDG_CONFIG_HOME": os.devnull,
                "GOENV": os.environ.get("GOENV") or os.path.join(config, "go", "env")})
    return env


def build(layout: Layout) -> Path:
    """Build (once, cached by content and Go version) the launcher; return its path, checked
    against the sha256 it was built with."""
    h = hashlib.sha256()
    for name in FILES:
        h.update(name.encode() + b"\0" + (SOURCE / name).read_bytes())
    env = build_env()
    h.update(cmd.run(["go", "version"], env=env, timeout=120).stdout.encode())
    dest = layout.tools / f"burst-{h.hexdigest()[:16]}"
    if _problem(dest) is None:
        return dest
    with locks.locked(layout.locks, "tool-burst"):
        why = _problem(dest)
        if why is None:
            return dest
        if why != "is missing":
            progress.say(f"warning: the launcher {dest} {why}; building it again")
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
            src = Path(tmp) / "src"
            src.mkdir()
            for name in FILES:
                shutil.copy2(SOURCE / name, src / name)
            built = Path(tmp) / "burst"
            cmd.run(["go", "build", "-o", str(built), "."],
                        cwd=src, env=env, timeout=300, error=BenchmarkError,
                        what="build the burst launcher")
            built.chmod(0o755)
            digest = sha256_file(built)
            try:
                os.replace(built, dest)  # over a planted link: the link goes, never its target
            except OSError as exc:
                raise BenchmarkError(f"cannot put the launcher at {dest}: {exc.strerror}",
                                     hint=f"remove {dest}") from None
            write_json_atomic(stamp_of(dest), {"sha256": digest})
    return dest
