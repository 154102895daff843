"""The C toolchain's environment and fingerprint, against a scripted runner (no compiler run):
what is recorded, what is refused, and how the tree and ccache enter the environment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from patchbench.build import toolchains
from patchbench.build.toolchains import c
from patchbench.config import Target
from patchbench.errors import PatchbenchError, ToolchainError
from patchbench.util import cmd


class Scripted:
    where = "host"

    def __init__(self, version: str = "12.2.0", libs: Mapping[str, str] | None = None):
        self.version = version
        self.libs = dict(libs or {"libseccomp": "2.5.4"})
        self.calls: list[list[str]] = []

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 120.0,
            what: str | None = None, error: type[PatchbenchError] = ToolchainError,
            ) -> cmd.Result:
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        outputs = {
            "-dumpfullversion": self.version, "--version": f"{argv[0]} (Debian) 9.9",
            "-dumpmachine": "x86_64-linux-gnu",
            "-print-prog-name=cc1": "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
            "-print-prog-name=collect2": "/usr/lib/gcc/x86_64-linux-gnu/12/collect2",
            "-print-prog-name=as": "as", "-print-prog-name=ld": "ld",
        }
        if argv[0] == "pkg-config":
            if argv[-1] not in self.libs:
                raise error(f"Package {argv[-1]} was not found")
            out = self.libs[argv[-1]]
        elif argv[0] == "readlink":
            out = argv[-1]
        elif argv[0] == "ldd":
            out = "ldd (Debian GLIBC 2.36) 2.36"
        else:
            out = outputs.get(argv[1], "")
        return cmd.Result(tuple(argv), 0, out + "\n", "", 0.0)

    def sha256(self, path: str) -> str:
        return f"{abs(hash(path)):064d}"[:64]

    def resolve(self, tool: str, env: Mapping[str, str]) -> str:
        return f"/usr/bin/{tool}"


def target(**tc: object) -> Target:
    return Target.model_validate({
        "url": "https://example.invalid/x", "ref": "v1", "commit": "a" * 40,
        "toolchain": {"kind": "c", "version": "12.2.0", "libraries": ["libseccomp"], **tc},
        "build": {"commands": [["make"]], "artifacts": ["x"]}})


def test_the_fingerprint_names_the_driver_its_programs_flags_and_libraries() -> None:
    t = target(cflags="-O2", ldflags="-Wl,-z,now")
    env = toolchains.build_env(t, 1700000000)
    fp = toolchains.fingerprint(t, env, Scripted())
    assert fp["kind"] == "c" and fp["cc"]["version"] == "12.2.0"
    assert fp["cc"]["path"] == "/usr/bin/gcc"
    assert set(fp["programs"]) == {"cc1", "collect2", "as", "ld"}
    assert fp["programs"]["cc1"]["path"].endswith("/cc1")
    assert fp["programs"]["ld"]["version"].startswith("/usr/bin/ld")  # its --version line
    assert fp["flags"] == {"CFLAGS": f"-O2 {c.PREFIX_MAP}", "CPPFLAGS": "",
                           "LDFLAGS": "-Wl,-z,now"}
    assert fp["libraries"] == {"libseccomp": "2.5.4"}
    assert fp["env"]["SOURCE_DATE_EPOCH"] == "1700000000" and fp["env"]["CC"] == "gcc"
    assert fp["extra"]["make"]


def test_another_compiler_version_is_refused() -> None:
    t = target()
    with pytest.raises(ToolchainError, match=r"pins gcc 12\.2\.0, but gcc .* is 13\.1\.0"):
        toolchains.fingerprint(t, toolchains.build_env(t, 1), Scripted(version="13.1.0"))


def test_a_library_pkg_config_does_not_know_is_refused() -> None:
    t = target(libraries=["libseccomp", "yajl"])
    with pytest.raises(ToolchainError, match="links yajl"):
        toolchains.fingerprint(t, toolchains.build_env(t, 1), Scripted())


def test_the_tree_enters_the_prefix_map_and_ccache_is_keyed_by_the_fingerprint(
        tmp_path: Path) -> None:
    t = target(ccache=True)
    env = toolchains.build_env(t, 1)
    assert env["CC"] == "ccache gcc" and c.TREE in env["CFLAGS"]
    fp = toolchains.fingerprint(t, env, Scripted())
    tree = tmp_path / "tmp" / "src"
    got = toolchains.tree_env(t, env, tree, tmp_path, fp)
    assert got["CFLAGS"] == f"-O2 -g -ffile-prefix-map={tree}=."
    assert got["CCACHE_BASEDIR"] == str(tree)
    same = toolchains.tree_env(t, env, tmp_path / "elsewhere", tmp_path, {**fp, "sources": {}})
    assert same["CCACHE_DIR"] == got["CCACHE_DIR"]  # per-tree source hashes do not split it
    other = toolchains.tree_env(t, env, tree, tmp_path, {**fp, "libraries": {"libseccomp": "2.6"}})
    assert other["CCACHE_DIR"] != got["CCACHE_DIR"]  # another toolchain: another cache
    plain = target()
    penv = toolchains.build_env(plain, 1)
    assert "CCACHE_DIR" not in toolchains.tree_env(plain, penv, tree, tmp_path, fp)


def test_an_unknown_toolchain_key_and_a_bad_version_are_config_errors() -> None:
    with pytest.raises(Exception, match="version"):
        target(version="twelve")
    with pytest.raises(Exception, match="extra"):
        target(cxx="g++")


def test_the_rust_channel_a_repository_pins_is_read_for_the_manifest(tmp_path: Path) -> None:
    from patchbench.build.toolchains import rust

    assert rust.pinned_channel(tmp_path) is None
    (tmp_path / "rust-toolchain.toml").write_text('[toolchain]\nprofile="default"\nchannel="1.96.0"\n')
    assert rust.pinned_channel(tmp_path) == "1.96.0"
    assert toolchains.source_hashes(tmp_path)["rust_toolchain_channel"] == "1.96.0"
    (tmp_path / "rust-toolchain.toml").unlink()
    (tmp_path / "rust-toolchain").write_text("nightly-2026-01-01\n")
    assert rust.pinned_channel(tmp_path) == "nightly-2026-01-01"
