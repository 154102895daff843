"""The docker-run runtime without an engine: selecting it in the matrix, the dockerd arguments,
the sha256 check of every registered runc, the engine's registration check, placeholders and the
dry-run plan, what results.json and report.md record. The real engine is in
tests/integration/test_docker_run_flow.py."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from patchbench import config, runtimes
from patchbench.docker import engine, images
from patchbench.errors import BenchmarkError, ConfigError
from patchbench.report import markdown
from patchbench.results import RuntimeRecord
from patchbench.runs import document
from patchbench.runtimes import VariantBuild
from patchbench.runtimes.docker_run import (
    DockerRunRuntime,
    add_runtime_args,
    check_binaries,
    check_registered,
)


def _variant(tmp: Path, name: str, content: bytes, manifest_sha: str | None = None) -> VariantBuild:
    bin_dir = tmp / name / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "runc").write_bytes(content)
    sha = manifest_sha if manifest_sha is not None else hashlib.sha256(content).hexdigest()
    return VariantBuild(name, bin_dir, {"runc": {"sha256": sha, "path": "runc"}})


def _matrix(tmp: Path, target_runtime: str | None, comp_runtime: str | None) -> Path:
    target: dict[str, Any] = {
        "url": "x", "ref": "v1", "commit": "a" * 40,
        "toolchain": {"kind": "go", "version": "1.26.8"},
        "build": {"commands": [["make"]], "artifacts": ["runc"]},
    }
    if target_runtime:
        target["runtime"] = target_runtime
    comp: dict[str, Any] = {"target": "t", "candidates": {"c": []},
                            "scenarios": [{"name": "s", "command": ["true"]}]}
    if comp_runtime:
        comp["runtime"] = comp_runtime
    path = tmp / "matrix.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "targets": {"t": target},
                                    "comparisons": {"cmp": comp}}))
    return path


def test_comparison_selects_docker_run_for_a_runc_target(tmp_path: Path) -> None:
    project = config.load(_matrix(tmp_path, "runc", "docker-run"))
    comp = project.comparison("cmp")
    assert config.runtime_of(comp, project.target(comp.target)) == "docker-run"
    assert isinstance(runtimes.get("docker-run"), DockerRunRuntime)
    plain = config.load(_matrix(tmp_path, "runc", None))
    assert config.runtime_of(plain.comparison("cmp"), plain.target("t")) == "runc"


def test_docker_run_refused_for_a_target_that_is_not_runc(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"comparisons\.cmp\.runtime: docker-run .* has runtime none"):
        config.load(_matrix(tmp_path, None, "docker-run"))


def test_unknown_comparison_runtime_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="runtime"):
        config.load(_matrix(tmp_path, "runc", "podman"))


def test_add_runtime_args_and_dockerd_argv(tmp_path: Path) -> None:
    vs = [_variant(tmp_path, "baseline", b"a"), _variant(tmp_path, "fix-v1", b"b")]
    args = add_runtime_args(vs)
    assert args == [f"--add-runtime=pb-baseline={tmp_path}/baseline/bin/runc",
                    f"--add-runtime=pb-fix-v1={tmp_path}/fix-v1/bin/runc"]
    argv = engine.dockerd_argv("dockerd", tmp_path / "state", args)
    assert argv[-2:] == args
    assert "--bridge=none" in argv and "--iptables=false" in argv
    assert argv[argv.index("--host") + 1] == engine.own_host(tmp_path / "state")


def test_binaries_matching_their_manifests_pass(tmp_path: Path) -> None:
    vs = [_variant(tmp_path, "baseline", b"one"), _variant(tmp_path, "fix", b"two")]
    got = check_binaries(vs)
    assert got["pb-fix"] == {"variant": "fix", "path": str(tmp_path / "fix/bin/runc"),
                             "sha256": hashlib.sha256(b"two").hexdigest()}
    assert list(got) == ["pb-baseline", "pb-fix"]


def test_a_binary_that_differs_from_its_manifest_is_refused(tmp_path: Path) -> None:
    good = _variant(tmp_path, "baseline", b"one")
    bad = _variant(tmp_path, "fix", b"changed after the build", hashlib.sha256(b"two").hexdigest())
    with pytest.raises(BenchmarkError) as err:
        check_binaries([good, bad])
    assert "nothing was measured" in err.value.message
    assert err.value.detail is not None and err.value.detail.startswith("fix: ")
    assert "baseline" not in err.value.detail


def test_missing_binary_or_manifest_hash_is_refused(tmp_path: Path) -> None:
    nohash = VariantBuild("a", _variant(tmp_path, "a", b"x").bin_dir, {"runc": {}})
    gone = VariantBuild("b", tmp_path / "nowhere", {"runc": {"sha256": "0" * 64}})
    with pytest.raises(BenchmarkError) as err:
        check_binaries([nohash, gone])
    assert err.value.detail is not None
    assert "records no sha256" in err.value.detail and "does not exist" in err.value.detail


def test_engine_registration_must_name_every_path() -> None:
    expected = {"pb-baseline": {"variant": "baseline", "path": "/b/runc", "sha256": "x"},
                "pb-fix": {"variant": "fix", "path": "/f/runc", "sha256": "y"}}
    check_registered({"Runtimes": {"runc": {"path": "runc"}, "pb-baseline": {"path": "/b/runc"},
                                   "pb-fix": {"path": "/f/runc"}}}, expected)
    with pytest.raises(BenchmarkError) as err:
        check_registered({"Runtimes": {"pb-baseline": {"path": "/other/runc"}}}, expected)
    assert err.value.detail is not None
    assert "pb-baseline: engine has /other/runc" in err.value.detail
    assert "pb-fix: engine has nothing" in err.value.detail


def test_dry_run_placeholders_and_plan(tmp_path: Path) -> None:
    rt = DockerRunRuntime()
    workdir = tmp_path / "builds" / "runs" / "cmp-DRYRUN"
    vs = [VariantBuild("baseline", tmp_path / "<baseline>" / "bin"),
          VariantBuild("fix", tmp_path / "<fix>" / "bin")]
    project = config.load(_matrix(tmp_path, "runc", "docker-run"))
    rt.prepare(workdir, project, project.comparison("cmp"), dry_run=True, variants=vs)
    assert rt.state == tmp_path / "builds" / "docker-run"
    assert rt.engine is None and rt.record() is None  # nothing started
    ph = rt.placeholders("fix", vs[1].bin_dir)
    assert ph["runtime"] == "pb-fix"
    assert ph["host"] == engine.own_host(tmp_path / "builds" / "docker-run")
    if shutil.which("busybox"):  # the ID the real run will load
        assert ph["image"].startswith("sha256:") and len(ph["image"]) == 71
    notes = "\n".join(rt.plan_notes())
    assert f"--add-runtime=pb-fix={tmp_path}/<fix>/bin/runc" in notes
    assert "sha256" in notes and "image" in notes and "SIGTERM dockerd" in notes


def test_without_an_engine_nothing_is_left_and_close_is_idempotent(tmp_path: Path) -> None:
    rt = DockerRunRuntime(state=tmp_path / "state")
    rt.close()
    rt.close()
    assert rt.cleanup("baseline", tmp_path) == []
    assert rt.leftovers("baseline", tmp_path) == []


@pytest.mark.skipif(shutil.which("busybox") is None, reason="needs the host's busybox")
def test_busybox_image_is_byte_stable(tmp_path: Path) -> None:
    first = images.busybox_image_id(tmp_path / "a")
    assert first == images.busybox_image_id(tmp_path / "b")
    assert list((tmp_path / "a").iterdir()) == []  # the scratch archive is removed


def test_runtime_record_in_report() -> None:
    rec = RuntimeRecord.model_validate({
        "name": "docker-run",
        "engine": {"engine": "20.10.24", "api": "1.41", "containerd": "1.6.20", "cli": "Docker 28"},
        "image": {"ref": "recipe:busybox", "id": "sha256:" + "ab" * 32, "packages": "BusyBox"},
        "registered": {"pb-baseline": {"variant": "baseline", "path": "<builds>/x/bin/runc",
                                       "sha256": "cd" * 32}},
    })

    class R:
        runtime = rec

    text = markdown.document(document.runtime_blocks(R()))  # type: ignore[arg-type]
    assert "engine 20.10.24 (API 1.41" in text and "docker CLI Docker 28" in text
    assert "sha256:" + "ab" * 32 in text
    assert "`pb-baseline` = <builds>/x/bin/runc (sha256 `cdcdcdcdcdcd`" in text
