"""The cache is verified: before a cached build is used, every artifact is hashed again and
compared with its manifest, so that a replaced or truncated binary is never measured. An entry
is ``ok``, ``partial`` (something missing), ``corrupt`` (an unreadable manifest, or an artifact of
another size) or ``mismatch`` (the same size, another sha256); a bad entry is rebuilt, naming
both hashes. The time and bytes the check took are recorded. docs/safety.md, class 3."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbench.util.files import sha256_file, tree_digest

STAMP = "COMPLETE"
MANIFEST = "manifest.json"


@dataclass
class Verdict:
    path: Path
    state: str = "ok"  # ok | partial | corrupt | mismatch
    problems: list[str] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    seconds: float = 0.0
    bytes_hashed: int = 0

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    def flag(self, state: str, problem: str) -> None:
        # the worst state wins: corrupt and mismatch over partial
        order = {"ok": 0, "partial": 1, "mismatch": 2, "corrupt": 3}
        if order[state] > order[self.state]:
            self.state = state
        self.problems.append(problem)

    def record(self) -> dict[str, Any]:
        """What goes into the manifest of the run: the check and its cost."""
        return {"state": self.state, "seconds": round(self.seconds, 4),
                "bytes_hashed": self.bytes_hashed}

    def summary(self) -> str:
        return f"{self.state}: " + "; ".join(self.problems)


def _read_manifest(entry: Path, verdict: Verdict) -> dict[str, Any] | None:
    path = entry / MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        verdict.flag("partial", "manifest.json is missing")
        return None
    except OSError as exc:
        verdict.flag("corrupt", f"manifest.json cannot be read ({exc.strerror or exc})")
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        verdict.flag("corrupt", "manifest.json is not JSON")
        return None
    arts = data.get("artifacts") if isinstance(data, dict) else None
    if not isinstance(arts, dict) or not arts or not all(
            isinstance(k, str) and "/" not in k and k not in ("", ".", "..") and isinstance(v, dict)
            and isinstance(v.get("sha256"), str) and isinstance(v.get("bytes"), int)
            for k, v in arts.items()):
        verdict.flag("corrupt", "manifest.json does not list artifacts with sha256 and bytes")
        return None
    manifest: dict[str, Any] = data
    return manifest


def verify_entry(entry: Path) -> Verdict:
    """Check one build directory (``builds/artifacts/<target>/<key>``) against its manifest."""
    started = time.perf_counter()
    verdict = Verdict(entry)
    if not (entry / STAMP).is_file():
        verdict.flag("partial", "the completion stamp is missing (an interrupted build)")
    manifest = _read_manifest(entry, verdict)
    if manifest is not None:
        verdict.manifest = manifest
        for name, info in manifest["artifacts"].items():
            path = entry / "bin" / name
            is_dir = str(info.get("path", "")).endswith("/")
            if not (path.is_dir() if is_dir else path.is_file()) or path.is_symlink():
                verdict.flag("partial", f"{name} is missing")
                continue
            if is_dir:
                digest, size = tree_digest(path)
            else:
                size = path.stat().st_size
                if size != info["bytes"]:
                    verdict.flag("corrupt", f"{name} has {size} bytes, the manifest says "
                                 f"{info['bytes']} (truncated or replaced)")
                digest = sha256_file(path)
            verdict.bytes_hashed += size
            if digest != info["sha256"]:
                if is_dir or size == info["bytes"]:
                    verdict.flag("mismatch", f"{name} has sha256 {digest}, the manifest says "
                                 f"{info['sha256']}")
                else:
                    verdict.problems[-1] += f"; sha256 {digest}, the manifest says {info['sha256']}"
    verdict.seconds = time.perf_counter() - started
    return verdict
