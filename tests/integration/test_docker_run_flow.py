"""The docker-run runtime against a real dockerd that patchbench starts itself (root only), with a
real runc: Debian's ``runc`` binary copied in as each variant's build (apt-get install -y runc).

- the runtime on its own: both copies registered, a container run through each (seen in the
  engine's per-runtime state directory), a refused start when a binary differs from its manifest,
  nothing left after close;
- ``compare`` of a fixture target whose build copies that runc, measured through ``docker run``:
  the record (engine, image ID, registered binaries), clean teardown.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any, cast

import pytest

from patchbench.config import Comparison, Project
from patchbench.docker import engine
from patchbench.errors import BenchmarkError
from patchbench.runtimes import VariantBuild
from patchbench.runtimes.docker_run import DockerRunRuntime
from patchbench.util import cmd
from tests import support

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="patchbench starts its own dockerd only as root"),
]

NOTHING = cast(Any, None)  # prepare's project and comparison: docker-run reads neither


def _runc() -> Path:
    found = shutil.which("runc")
    if found is None:
        pytest.fail("this test needs Debian's runc: apt-get install -y runc")
    return Path(found).resolve()


def _copy(tmp: Path, name: str, runc: Path) -> VariantBuild:
    bin_dir = tmp / "artifacts" / name / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy2(runc, bin_dir / "runc")
    sha = hashlib.sha256((bin_dir / "runc").read_bytes()).hexdigest()
    return VariantBuild(name, bin_dir, {"runc": {"sha256": sha, "path": "runc"}})


def _docker_run(rt: DockerRunRuntime, variant: str, *args: str) -> cmd.Result:
    ph = rt.placeholders(variant, Path("/unused"))
    return cmd.run([ph["docker"], "--host", ph["host"], "run", "--rm", "--network", "none",
                        "--runtime", ph["runtime"], ph["image"], *args], timeout=120, check=False)


def test_each_variant_runs_through_its_own_registered_runc(tmp_path: Path) -> None:
    runc = _runc()
    state = tmp_path / "state"
    variants = [_copy(tmp_path, "baseline", runc), _copy(tmp_path, "fix", runc)]
    rt = DockerRunRuntime(state=state)
    try:
        rt.prepare(tmp_path / "runs" / "r", NOTHING, NOTHING, dry_run=False, variants=variants)
        assert rt.engine is not None and rt.image is not None
        for v in variants:
            res = _docker_run(rt, v.name, "true")
            assert res.returncode == 0, res.stderr
        # the engine runs exactly the registered file: made non-executable, pb-fix fails while
        # pb-baseline (the same bytes at another path) still runs
        fix_runc = variants[1].bin_dir / "runc"
        fix_runc.chmod(0o644)
        try:
            res = _docker_run(rt, "fix", "true")
            assert res.returncode != 0 and str(fix_runc) in res.stderr, res.stderr
            assert _docker_run(rt, "baseline", "true").returncode == 0
        finally:
            fix_runc.chmod(0o755)
        res = _docker_run(rt, "fix", "sh", "-c", "exit 3")
        assert res.returncode == 3, res.stderr
        # a runtime that is not registered is refused by the engine
        res = _docker_run(rt, "nope", "true")
        assert res.returncode != 0 and "pb-nope" in res.stderr
        # a container left running is removed by its variant's cleanup
        ph = rt.placeholders("fix", Path("/unused"))
        cmd.run([ph["docker"], "--host", ph["host"], "run", "-d", "--network", "none",
                     "--runtime", "pb-fix", "--name", f"{ph['id']}-left", ph["image"],
                     "sleep", "1000"], timeout=120)
        assert rt.leftovers("fix", Path("/unused")) == [f"container {ph['id']}-left"]
        assert rt.cleanup("baseline", Path("/unused")) == []
        assert rt.cleanup("fix", Path("/unused")) == [f"container {ph['id']}-left (pb-fix)"]
        record = rt.record()
        assert record is not None
        assert record["image"]["id"] == rt.image.id
        assert record["engine"]["engine"] and "Docker version" in record["engine"]["cli"]
        assert {n: r["sha256"] for n, r in record["registered"].items()} == {
            "pb-baseline": variants[0].artifacts["runc"]["sha256"],
            "pb-fix": variants[1].artifacts["runc"]["sha256"]}
    finally:
        rt.close()
    assert [rt.leftovers(v.name, v.bin_dir) for v in variants] == [[], []]
    assert engine.leftovers(state) == ([], [])
    assert support.processes_with(str(engine.run_dir_for(state))) == []


def test_a_binary_differing_from_its_manifest_starts_no_engine(tmp_path: Path) -> None:
    runc = _runc()
    state = tmp_path / "state"
    good, bad = _copy(tmp_path, "baseline", runc), _copy(tmp_path, "fix", runc)
    with open(bad.bin_dir / "runc", "ab") as f:
        f.write(b"\0")  # changed after the build
    rt = DockerRunRuntime(state=state)
    with pytest.raises(BenchmarkError) as err:
        rt.prepare(tmp_path / "runs" / "r", NOTHING, NOTHING, dry_run=False, variants=[good, bad])
    assert "do not match their builds" in err.value.message
    assert rt.engine is None and not (state / "dockerd.log").exists()
    rt.close()


def test_compare_measures_docker_run_with_each_variants_runc(project: support.Project) -> None:
    runc = _runc()
    data = support.matrix_data(project.upstream, project.go_version,
                               commands=[["cp", str(runc), "runc"]])
    target = data["targets"][support.TARGET]
    target["build"]["artifacts"] = ["runc"]
    target.update({"requires": ["linux", "root"], "runtime": "runc"})
    comp = data["comparisons"]["fx"]
    comp["runtime"] = "docker-run"
    comp["scenarios"] = [{
        "name": "docker-run",
        "command": ["{docker}", "--host", "{host}", "run", "--rm", "--network", "none",
                    "--runtime", "{runtime}", "{image}", "true"],
        "warmup": 0, "runs": 4, "rounds": 2, "timeout": 60}]  # a docker run: ~0.4 s
    support.write_matrix(project.root, data)
    loaded: Project = project.load()
    assert isinstance(loaded.comparison("fx"), Comparison)

    res, run_dir = support.compare(loaded, project.options(), "fx")

    assert run_dir is not None
    want = hashlib.sha256(runc.read_bytes()).hexdigest()
    rt = res["runtime"]
    assert rt["name"] == "docker-run"
    assert sorted(rt["registered"]) == ["pb-baseline", "pb-greet"]
    assert {r["sha256"] for r in rt["registered"].values()} == {want}
    assert all(r["path"].startswith("<builds>/artifacts/") for r in rt["registered"].values())
    assert rt["image"]["id"].startswith("sha256:") and rt["engine"]["engine"]
    sc = res["scenarios"][0]
    assert "--runtime pb-" in sc["command"] or "{runtime}" in sc["command"]
    for cell in sc["cells"]:
        assert len(cell["samples"]["times"]) == 4
        assert set(cell["samples"]["exit_codes"]) == {0}
    assert res["teardown"] == {v: {"removed_at_teardown": [], "left_after_teardown": []}
                               for v in ("baseline", "greet")}
    assert engine.leftovers(project.builds / "docker-run") == ([], [])
    report = (run_dir / "report.md").read_text()
    assert f"image `{rt['image']['id']}`" in report and "`pb-greet` = <builds>/" in report
