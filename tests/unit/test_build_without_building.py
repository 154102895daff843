"""Builds without building: the toolchain check, the fingerprint comparison, the environment,
the cache key, and what build_variant does with a cached or an unstamped directory."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from patchbench import build
from patchbench.build import Built, Variant
from patchbench.build import toolchains as toolchain
from patchbench.config import Target
from patchbench.errors import ToolchainError
from patchbench.util import cmd
from patchbench.util.layout import Layout

FP: dict[str, Any] = {
    "kind": "go", "version": "go1.22.1", "platform": "linux/amd64",
    "go_sha256": "a" * 64, "compile_sha256": "b" * 64, "link_sha256": "c" * 64,
    "goenv": {"GOOS": "linux", "GOARCH": "amd64", "CGO_ENABLED": "0"},
    "env": {"GOFLAGS": "-trimpath", "TZ": "UTC"}, "extra": {},
}


def built(name: str, fp: dict[str, Any]) -> Built:
    return Built(Variant(name, ()), Path("/nowhere") / name, {"fingerprint": fp}, cached=True)


def test_same_toolchain_passes() -> None:
    other = copy.deepcopy(FP)
    other["sources"] = {"go.sum_sha256": "d" * 64}  # per-tree hashes are recorded, not compared
    build.check_same_toolchain([built("baseline", FP), built("fix", other)])


def test_different_toolchains_are_refused_naming_the_keys() -> None:
    other = copy.deepcopy(FP)
    other["version"] = "go1.22.2"
    other["compile_sha256"] = "e" * 64
    other["goenv"]["GOAMD64"] = "v3"
    with pytest.raises(ToolchainError) as info:
        build.check_same_toolchain([built("baseline", FP), built("fix", FP), built("x", other)])
    err = info.value
    assert err.exit_code == 13
    assert "baseline and x were built with different toolchains" in err.message
    assert err.message.endswith("differing keys: compile_sha256, goenv.GOAMD64, version")


def test_differing_keys_nested_and_missing() -> None:
    a = {"x": 1, "n": {"a": 1, "b": 2}, "sources": {"q": 1}}
    b = {"x": 1, "n": {"a": 1, "b": 3}, "y": 0, "sources": {"q": 2}}
    assert toolchain.differing_keys(a, b) == ["n.b", "y"]


def target(version: str = "1.22.1", download: bool = False, **build_kw: Any) -> Target:
    return Target.model_validate({
        "url": "/x", "ref": "v1", "commit": "0" * 40,
        "toolchain": {"kind": "go", "version": version, "download": download},
        "build": {"commands": [["go", "build", "."]], "artifacts": ["hello"], **build_kw},
    })


class FakeGo:
    """cmd.run standing in for the go command."""

    def __init__(self, version_line: str):
        self.version_line = version_line
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], **kw: Any) -> cmd.Result:
        self.calls.append(list(argv))
        return cmd.Result(tuple(argv), 0, self.version_line + "\n", "", 0.0)


def test_a_pinned_go_that_is_not_installed_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGo("go version go1.21.0 linux/amd64")
    monkeypatch.setattr(cmd, "run", fake)
    t = target("1.22.1")
    env = toolchain.build_env(t, 0)
    with pytest.raises(ToolchainError) as info:
        toolchain.fingerprint(t, env)
    assert "pins Go 1.22.1" in info.value.message
    assert "go1.21.0" in info.value.message
    assert fake.calls == [["go", "version"]]  # refused before anything else ran


def test_build_env_is_an_allowlist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("GOPATH", "/gp")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    env = toolchain.build_env(target(env={"EXTRA": "1"}), 1700000000)
    assert "SECRET_TOKEN" not in env
    assert env["GOPATH"] == "/gp"
    assert env["GOFLAGS"] == "-trimpath"
    assert env["GOTOOLCHAIN"] == "local"
    assert env["CGO_ENABLED"] == "0"
    assert env["SOURCE_DATE_EPOCH"] == "1700000000"
    assert env["EXTRA"] == "1"
    assert toolchain.build_env(target(download=True), 0)["GOTOOLCHAIN"] == "go1.22.1"
    recorded = toolchain.recorded_env(env, target(env={"EXTRA": "1"}))
    assert "GOPATH" not in recorded and "PATH" not in recorded and "HOME" not in recorded
    assert recorded["EXTRA"] == "1"


def test_recipe_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError):
        target(timeout=0)


# --- build_variant's cache logic, with _build faked ------------------------------------------


class FakeSeries:
    def __init__(self, name: str, digest: str):
        self.name = name
        self.digest = digest


def make_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> build.BuildPlan:
    digests = {"fix": "1" * 64}
    monkeypatch.setattr(build.patching, "load_series",
                        lambda root, name: FakeSeries(name, digests[name]))

    class FakeProject:
        root = tmp_path

    class FakeCheckout:
        commit = "f" * 40

    return build.BuildPlan(FakeProject(), "hello", target(), FakeCheckout(),  # type: ignore[arg-type]
                           Layout(tmp_path / "builds", tmp_path / "reports"), [], {}, dict(FP))


def fake_build(calls: list[str]):  # type: ignore[no-untyped-def]
    def _build(plan: build.BuildPlan, variant: Variant, series: list[Any], key: str,
               final: Path) -> Built:
        calls.append(key)
        assert not final.exists(), "an unstamped directory must be removed before building"
        (final / "bin").mkdir(parents=True)
        (final / "bin" / "hello").write_text("built")
        manifest = {"cache_key": key, "artifacts": {"hello": {
            "path": "hello", "sha256": hashlib.sha256(b"built").hexdigest(), "bytes": 5}}}
        (final / "manifest.json").write_text(json.dumps(manifest))
        (final / build.STAMP).write_text(key + "\n")
        return Built(variant, final, manifest, cached=False)

    return _build


def test_cache_hit_and_unstamped_directory(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    plan = make_plan(tmp_path, monkeypatch)
    calls: list[str] = []
    monkeypatch.setattr(build, "_build", fake_build(calls))
    v = Variant("fix", ("fix",))
    key = plan.key([FakeSeries("fix", "1" * 64)])  # type: ignore[list-item]
    final = plan.layout.artifacts("hello") / key[:20]
    # an interrupted build: the directory exists, without its stamp
    (final / "bin").mkdir(parents=True)
    (final / "bin" / "hello").write_text("half written")
    (final / "manifest.json").write_text("{}")
    first = build.build_variant(plan, v)
    assert calls == [key]
    assert not first.cached
    assert first.path == final
    assert (final / "bin" / "hello").read_text() == "built"
    second = build.build_variant(plan, v)
    assert second.cached
    assert second.path == final
    assert second.manifest["cache_key"] == key
    assert second.manifest["cache_check"]["state"] == "ok"  # re-hashed before use
    assert calls == [key]


def test_the_key_changes_with_each_input(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    plan = make_plan(tmp_path, monkeypatch)
    s = [FakeSeries("fix", "1" * 64)]
    key = plan.key(s)  # type: ignore[arg-type]
    assert key == plan.key(s)  # type: ignore[arg-type]
    assert plan.key([]) != key
    assert plan.key([FakeSeries("fix", "2" * 64)]) != key  # type: ignore[list-item]
    other_fp = dict(FP, version="go1.22.2")
    assert build.BuildPlan(plan.project, "hello", plan.target, plan.checkout, plan.layout, [],
                           {}, other_fp).key(s) != key  # type: ignore[arg-type]
    other_target = target(env={"X": "1"})
    assert build.BuildPlan(plan.project, "hello", other_target, plan.checkout, plan.layout,
                           [], {}, dict(FP)).key(s) != key  # type: ignore[arg-type]


# --- the toolchain binaries' hashes, kept by their stat ---------------------------------------


class CountingRunner(toolchain.HostRunner):
    def __init__(self) -> None:
        self.hashed: list[str] = []

    def sha256(self, path: str) -> str:
        self.hashed.append(path)
        return super().sha256(path)


def test_a_toolchain_binary_is_hashed_again_only_when_its_stat_changes(tmp_path: Path) -> None:
    builds = tmp_path / "builds"
    builds.mkdir()
    cache = builds / "toolchain-hashes.json"
    tool = tmp_path / "go"
    tool.write_bytes(b"go 1")
    inner = CountingRunner()
    first = toolchain.StatCachedRunner(inner, cache).sha256(str(tool))
    assert first == hashlib.sha256(b"go 1").hexdigest() and inner.hashed == [str(tool)]
    # another process (a new runner) with the binary unchanged: from the cache
    again = CountingRunner()
    assert toolchain.StatCachedRunner(again, cache).sha256(str(tool)) == first
    assert again.hashed == []
    # the same size, another content, the mtime put back: the ctime still moved
    st = tool.stat()
    tool.write_bytes(b"go 2")
    os.utime(tool, ns=(st.st_atime_ns, st.st_mtime_ns))
    changed = CountingRunner()
    assert toolchain.StatCachedRunner(changed, cache).sha256(str(tool)) == \
        hashlib.sha256(b"go 2").hexdigest()
    assert changed.hashed == [str(tool)]
    # replaced by another file (a new inode): hashed again
    new = tmp_path / "go.new"
    new.write_bytes(b"go 3")
    new.replace(tool)
    replaced = CountingRunner()
    assert toolchain.StatCachedRunner(replaced, cache).sha256(str(tool)) == \
        hashlib.sha256(b"go 3").hexdigest()
    assert replaced.hashed == [str(tool)]


@pytest.mark.parametrize("damage", ["no hash", "a link"])
def test_a_kept_toolchain_hash_that_is_no_hash_or_a_link_is_taken_again(
        tmp_path: Path, damage: str) -> None:
    """The kept hashes are untrusted input: an entry whose hash is not one, or a link in the
    file's place (to a file that would claim another hash), is not believed."""
    builds = tmp_path / "builds"
    builds.mkdir()
    tool = tmp_path / "go"
    tool.write_bytes(b"go 1")
    cache = builds / "toolchain-hashes.json"
    toolchain.StatCachedRunner(CountingRunner(), cache).sha256(str(tool))
    entry = json.loads(cache.read_text())[str(tool)]
    if damage == "no hash":
        cache.write_text(json.dumps({str(tool): {**entry, "sha256": "not a hash; rm -rf"}}))
    else:
        real = builds / "real.json"
        real.write_text(json.dumps({str(tool): {**entry, "sha256": "0" * 64}}))
        cache.unlink()
        cache.symlink_to(real)
    runner = CountingRunner()
    assert toolchain.StatCachedRunner(runner, cache).sha256(str(tool)) == \
        hashlib.sha256(b"go 1").hexdigest()
    assert runner.hashed == [str(tool)]


def test_a_damaged_hash_cache_is_ignored_and_no_builds_dir_is_made(tmp_path: Path) -> None:
    tool = tmp_path / "link"
    tool.write_bytes(b"link")
    cache = tmp_path / "builds" / "toolchain-hashes.json"
    cache.parent.mkdir()
    for damaged in ("{not json", "[]", json.dumps({str(tool): {"stat": "x", "sha256": 3}})):
        cache.write_text(damaged)
        inner = CountingRunner()
        assert toolchain.StatCachedRunner(inner, cache).sha256(str(tool)) == \
            hashlib.sha256(b"link").hexdigest()
        assert inner.hashed == [str(tool)]
    # a dry run's builds/ does not exist: the hash is taken, nothing is written
    nowhere = tmp_path / "no-builds" / "toolchain-hashes.json"
    toolchain.StatCachedRunner(CountingRunner(), nowhere).sha256(str(tool))
    assert not nowhere.parent.exists()
    # a missing binary is the inner runner's error, as without a cache
    with pytest.raises(FileNotFoundError):
        toolchain.StatCachedRunner(CountingRunner(), cache).sha256(str(tmp_path / "gone"))


def test_the_docker_backend_is_imported_only_when_a_target_builds_with_it() -> None:
    """A host build (every comparison of the demo) does not import the docker backend, its
    engine and image code; asking for the backend by name makes it once."""
    import subprocess
    import sys

    from tests.support import REPO_ROOT

    code = ("import sys\nfrom patchbench import build\n"
            "print('patchbench.build.docker' in sys.modules, 'patchbench.docker.images' in "
            "sys.modules)\n"
            "host = build.backend('host')\nprint(host is build.backend('host'), host.name)\n"
            "docker = build.backend('docker')\n"
            "print('patchbench.build.docker' in sys.modules, docker.name, sorted(build.BACKENDS))\n"
            "build.close_backends()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60, cwd=REPO_ROOT).stdout.splitlines()
    assert out == ["False False", "True host", "True docker ['docker', 'host']"]
