"""Safety class 3 (docs/safety.md): the cache is verified. Before a cached build is used every
artifact is hashed again against its manifest: a replaced binary (the example: the candidate's
copied over the baseline's), a truncated one, a missing manifest or stamp is never used but
rebuilt, with a message naming both hashes, and never a traceback. The check's cost is recorded."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from patchbench import build
from patchbench.build import Variant, cache_verify
from patchbench.util import files
from tests import support
from tests.support import TARGET, Project


def entry(tmp_path: Path, payload: bytes = b"\x7fELF binary " * 100) -> Path:
    d = tmp_path / "artifacts" / "hello" / "k"
    (d / "bin" / "tree" / "sub").mkdir(parents=True)
    (d / "bin" / "hello").write_bytes(payload)
    (d / "bin" / "tree" / "sub" / "a").write_text("a")
    digest, size = cache_verify.tree_digest(d / "bin" / "tree")
    manifest = {"artifacts": {
        "hello": {"path": "hello", "sha256": hashlib.sha256(payload).hexdigest(),
                  "bytes": len(payload)},
        "tree": {"path": "tree/", "sha256": digest, "bytes": size}}}
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "COMPLETE").write_text("k\n")
    return d


def test_an_intact_entry_is_ok(tmp_path: Path) -> None:
    v = cache_verify.verify_entry(entry(tmp_path))
    assert v.ok, v.problems
    assert v.bytes_hashed == 1200 + 1 and v.record()["state"] == "ok"


def test_the_directory_digest_is_the_builds_own() -> None:
    # one function: the build's record and the cache check can never drift apart
    assert cache_verify.tree_digest is build.tree_digest is files.tree_digest


def test_a_binary_replaced_in_place_is_a_mismatch_naming_both_hashes(tmp_path: Path) -> None:
    d = entry(tmp_path)
    old = hashlib.sha256((d / "bin" / "hello").read_bytes()).hexdigest()
    other = b"\x7fELF BINARY " * 100  # the same size, other bytes
    (d / "bin" / "hello").write_bytes(other)
    v = cache_verify.verify_entry(d)
    assert v.state == "mismatch"
    assert v.problems == [f"hello has sha256 {hashlib.sha256(other).hexdigest()}, the manifest "
                          f"says {old}"]


@pytest.mark.parametrize("damage, state, words", [
    (lambda d: (d / "bin" / "hello").write_bytes(b"\x7fELF"), "corrupt", "4 bytes"),
    (lambda d: (d / "bin" / "hello").write_bytes(b"x" * 5000), "corrupt", "truncated or replaced"),
    (lambda d: (d / "bin" / "hello").unlink(), "partial", "hello is missing"),
    (lambda d: (d / "manifest.json").unlink(), "partial", "manifest.json is missing"),
    (lambda d: (d / "manifest.json").write_bytes(b"\xff{"), "corrupt", "not JSON"),
    (lambda d: (d / "manifest.json").write_text("[]"), "corrupt", "does not list"),
    (lambda d: (d / "manifest.json").write_text('{"artifacts": {"../x": {"sha256": "a", '
                                                 '"bytes": 1}}}'), "corrupt", "does not list"),
    (lambda d: (d / "COMPLETE").unlink(), "partial", "stamp"),
    (lambda d: (d / "bin" / "tree" / "sub" / "a").write_text("b"), "mismatch", "tree has"),
    (lambda d: (d / "bin" / "tree" / "new").write_text("b"), "mismatch", "tree has"),
    (lambda d: os.symlink("/bin/true", d / "bin" / "tree" / "sub" / "l"), "mismatch", "tree"),
])
def test_every_kind_of_damage_is_classified(tmp_path: Path, damage: object, state: str,
                                            words: str) -> None:
    d = entry(tmp_path)
    damage(d)  # type: ignore[operator]
    v = cache_verify.verify_entry(d)
    assert v.state == state, v.problems
    assert words in v.summary()


def test_rehashing_a_runc_sized_binary_is_cheap(tmp_path: Path) -> None:
    """runc is about 13 MB: its check must stay well under 0.2 s (measured on a shared machine,
    so the bound is generous; the number is printed)."""
    d = entry(tmp_path, os.urandom(13 << 20))
    best = min(cache_verify.verify_entry(d).seconds for _ in range(3))
    print(f"re-hashing 13 MiB took {best * 1000:.1f} ms")
    assert best < 0.2


# --- end to end, with real builds -----------------------------------------------------------

def built(project: Project) -> list[build.Built]:
    return support.build(project.load(), project.options(), TARGET,
                                   [Variant("baseline", ()), Variant("greet", ("greet",))], [])


@pytest.mark.integration
def test_the_candidate_copied_over_the_cached_baseline_is_rebuilt(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = built(project)
    expected = base.manifest["artifacts"]["hello"]["sha256"]
    shutil.copy2(cand.bin / "hello", base.bin / "hello")  # the candidate's binary over the baseline's
    capsys.readouterr()
    again, _ = built(project)
    err = capsys.readouterr().err
    assert not again.cached
    assert "warning: the cached build of hello/baseline" in err and "rebuilding it" in err
    assert cand.manifest["artifacts"]["hello"]["sha256"] in err and expected in err
    on_disk = hashlib.sha256((again.bin / "hello").read_bytes()).hexdigest()
    assert on_disk == expected == again.manifest["artifacts"]["hello"]["sha256"]


@pytest.mark.integration
@pytest.mark.parametrize("damage", ["truncate", "no manifest", "garbage manifest"])
def test_a_damaged_cache_entry_is_rebuilt_never_a_traceback(project: Project,
                                                            damage: str) -> None:
    base, _ = built(project)
    if damage == "truncate":
        with open(base.bin / "hello", "r+b") as f:
            f.truncate(1000)
    elif damage == "no manifest":
        (base.path / "manifest.json").unlink()
    else:
        (base.path / "manifest.json").write_bytes(b"\x00\xff")
    again, _ = built(project)
    assert not again.cached
    assert cache_verify.verify_entry(again.path).ok


@pytest.mark.integration
def test_a_cached_build_records_the_cost_of_its_check(project: Project) -> None:
    built(project)
    t0 = time.perf_counter()
    base, cand = built(project)
    assert base.cached and cand.cached
    check = base.manifest["cache_check"]
    assert check["state"] == "ok" and check["bytes_hashed"] > 0
    assert 0 <= check["seconds"] <= time.perf_counter() - t0
