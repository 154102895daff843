"""Builds with the real go: the toolchain pin, a failing build, the cache (hit, miss after a
patch change, an interrupted build that is never taken), and reproducibility."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from patchbench import build
from patchbench.build import Variant
from patchbench.errors import BuildError, ToolchainError
from tests import support
from tests.support import TARGET, Project, assert_nothing_left, cache_state

pytestmark = pytest.mark.integration

BASE = Variant("baseline", ())
GREET = Variant("greet", ("greet",))


def build_all(project: Project, variants: list[Variant], builds: Path | None = None
              ) -> list[build.Built]:
    opts = project.options()
    if builds is not None:
        opts = dataclasses.replace(opts, builds=builds)
    return support.build(project.load(), opts, TARGET, variants, [])


def run_binary(b: build.Built) -> str:
    return subprocess.run([str(b.bin / "hello")], capture_output=True, text=True,
                          check=True).stdout


def other_go_version(installed: str) -> str:
    major, minor, *_ = installed.split(".")
    return f"{major}.{int(minor) - 1}.0"


def test_a_pinned_go_other_than_the_installed_one_is_refused(project: Project) -> None:
    wrong = other_go_version(project.go_version)
    project.go_version = wrong
    project.write()
    with pytest.raises(ToolchainError) as info:
        build_all(project, [BASE, GREET])
    err = info.value
    assert err.exit_code == 13
    assert err.message.startswith(f"matrix.yaml pins Go {wrong}, but the go command (host) is ")
    assert f"go{project.go_version}" not in err.message
    assert "download: true" in (err.hint or "")
    assert not (project.builds / "artifacts").exists()
    assert not (project.builds / "logs").exists()
    assert_nothing_left(project.builds, project.cache)


def test_baseline_and_candidate_are_built_from_the_pinned_commit(project: Project) -> None:
    base, greet = build_all(project, [BASE, GREET])
    assert (base.cached, greet.cached) == (False, False)
    assert run_binary(base) == "hello\nbye\n"
    assert run_binary(greet) == "hello, patched\nbye\n"
    up = project.upstream
    assert base.manifest["commit"] == up.a and base.manifest["built_commit"] == up.a
    assert greet.manifest["commit"] == up.a and greet.manifest["built_commit"] != up.a
    assert greet.manifest["series"][0]["name"] == "greet"
    assert greet.manifest["series"][0]["patches"][0]["file"] == "0001-greet.patch"
    assert base.manifest["fingerprint"] == {**greet.manifest["fingerprint"]}
    assert base.manifest["fingerprint"]["version"] == f"go{project.go_version}"
    assert base.manifest["fingerprint"]["env"]["GOTOOLCHAIN"] == "local"
    for b in (base, greet):
        assert (b.path / build.STAMP).read_text().strip() == b.manifest["cache_key"]
        assert json.loads((b.path / "manifest.json").read_text()) == b.manifest
        art = b.manifest["artifacts"]["hello"]
        assert art["sha256"] == build.sha256_file(b.bin / "hello")
        assert str(project.builds) not in json.dumps(b.manifest)
    assert_nothing_left(project.builds, project.cache)


def test_builds_are_reproducible(project: Project, tmp_path: Path) -> None:
    one = build_all(project, [BASE, GREET])
    two = build_all(project, [BASE, GREET], builds=tmp_path / "other-builds")
    for a, b in zip(one, two, strict=True):
        assert a.path != b.path
        assert a.manifest["built_commit"] == b.manifest["built_commit"]
        assert a.manifest["cache_key"] == b.manifest["cache_key"]
        assert a.manifest["artifacts"] == b.manifest["artifacts"]


def test_a_failing_build(project: Project) -> None:
    project.write(candidates={"broken": ["broken"]})
    with pytest.raises(BuildError) as info:
        build_all(project, [BASE, Variant("broken", ("broken",))])
    err = info.value
    assert err.exit_code == 14
    assert err.message == f"build {TARGET}/broken: exited with code 1"
    assert err.detail is not None
    assert "undefined: undefinedGreetingForTests" in err.detail
    log = Path(err.detail.rsplit("(full log: ", 1)[1].rstrip(")\n"))
    assert log.is_file() and log.parent == project.builds / "logs"
    assert "undefinedGreetingForTests" in log.read_text()
    # only the baseline was stamped; no directory at all for the failed variant
    dirs = list((project.builds / "artifacts" / TARGET).iterdir())
    assert len(dirs) == 1 and (dirs[0] / build.STAMP).is_file()
    assert json.loads((dirs[0] / "manifest.json").read_text())["variant"] == "baseline"
    assert_nothing_left(project.builds, project.cache)
    # and it fails again the same way: nothing half-built was kept
    with pytest.raises(BuildError, match="exited with code 1"):
        build_all(project, [Variant("broken", ("broken",))])


def test_cache_hit_then_miss_after_a_patch_change(project: Project) -> None:
    base1, greet1 = build_all(project, [BASE, GREET])
    base2, greet2 = build_all(project, [BASE, GREET])
    assert (base2.cached, greet2.cached) == (True, True)
    assert (base2.path, greet2.path) == (base1.path, greet1.path)
    def recorded(manifest: dict[str, object]) -> dict[str, object]:  # without the check's cost
        return {k: v for k, v in manifest.items() if k != "cache_check"}

    assert (recorded(base2.manifest), recorded(greet2.manifest)) == (base1.manifest,
                                                                     greet1.manifest)
    assert base2.manifest["cache_check"]["state"] == "ok"  # re-hashed before it was used
    before = cache_state(project.cache)
    patch = project.root / "patches" / "greet" / "0001-greet.patch"
    patch.write_text(patch.read_text().replace("hello, patched", "hello, PATCHED"))
    base3, greet3 = build_all(project, [BASE, GREET])
    assert base3.cached and base3.path == base1.path
    assert not greet3.cached
    assert greet3.path != greet1.path
    assert greet3.manifest["cache_key"] != greet1.manifest["cache_key"]
    assert run_binary(greet3) == "hello, PATCHED\nbye\n"
    assert (greet1.path / build.STAMP).is_file()  # the old entry is still valid for its key
    assert cache_state(project.cache)["refs"] == before["refs"]
    assert_nothing_left(project.builds, project.cache)


def test_an_unstamped_build_directory_is_rebuilt(project: Project) -> None:
    (first,) = build_all(project, [GREET])
    # simulate a build interrupted after its directory was moved into place
    (first.path / build.STAMP).unlink()
    (first.bin / "hello").write_text("#!/bin/sh\necho half-built\n")
    (first.path / "junk").write_text("left by the interrupted build")
    (again,) = build_all(project, [GREET])
    assert not again.cached
    assert again.path == first.path
    assert not (again.path / "junk").exists()
    assert (again.path / build.STAMP).is_file()
    assert run_binary(again) == "hello, patched\nbye\n"
    assert_nothing_left(project.builds, project.cache)


@pytest.mark.integration
def test_a_directory_artifact_is_kept_whole_and_hashed(project: Project) -> None:
    from patchbench.build import tree_digest
    from tests.support import matrix_data, write_matrix

    data = matrix_data(project.upstream, project.go_version, commands=[
        ["go", "build", "-o", "install/bin/hello", "."],
        ["sh", "-c", "mkdir -p install/libexec && echo x > install/libexec/p"]])
    data["targets"][TARGET]["build"]["artifacts"] = ["install/"]
    data["comparisons"]["fx"]["scenarios"][0]["command"] = ["{bin}/install/bin/hello"]
    write_matrix(project.root, data)
    opts = project.options()
    (b,) = support.build(project.load(), opts, TARGET, [Variant("baseline", ())], [])
    assert (b.bin / "install" / "bin" / "hello").is_file()
    assert (b.bin / "install" / "libexec" / "p").read_text() == "x\n"
    art = b.manifest["artifacts"]["install"]
    assert art["path"] == "install/" and art["sha256"] == tree_digest(b.bin / "install")[0]
