"""patchbench's own Go launcher (burst.go): releases k children at one moment and records each
one's latency; with --then, runs an instance's phases one after the other; with -deadline DUR
-evidence DIR (deadline.go), every command runs in its own process group with a deadline, a hang's
evidence is saved before its group is killed, and the launcher exits with 124 (see
patchbench.measure.hangs). Built once per content with the host's Go into builds/tools/."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from patchbench.errors import BenchmarkError
from patchbench.util import command, locks
from patchbench.util.layout import Layout

SOURCE = Path(__file__).resolve().parent
FILES = ("burst.go", "deadline.go", "go.mod")


def build(layout: Layout) -> Path:
    """Build (once, cached by content and Go version) the launcher; return its path."""
    h = hashlib.sha256()
    for name in FILES:
        h.update(name.encode() + b"\0" + (SOURCE / name).read_bytes())
    h.update(command.run(["go", "version"], timeout=120).stdout.encode())
    dest = layout.tools / f"burst-{h.hexdigest()[:16]}"
    if dest.is_file():
        return dest
    with locks.locked(layout.locks, "tool-burst"):
        if dest.is_file():
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
            src = Path(tmp) / "src"
            src.mkdir()
            for name in FILES:
                shutil.copy2(SOURCE / name, src / name)
            env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-trimpath", "GOTOOLCHAIN": "local"}
            command.run(["go", "build", "-o", str(Path(tmp) / "burst"), "."],
                        cwd=src, env=env, timeout=300, error=BenchmarkError,
                        what="build the burst launcher")
            os.replace(Path(tmp) / "burst", dest)
    return dest
