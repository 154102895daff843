"""The ``mounts`` kind on a real OCI runtime (root only): ``compare`` of a fixture target whose
build copies Debian's runc (apt-get install -y runc), each variant's starts of a `true` bundle
traced with strace and with bpftrace. A real start makes mount syscalls (runc mounts /proc,
/dev, ... in the container); every start of a build makes the same; both tracers count the same;
both variants (the same runc) count the same, so the change row is zero; the report shows the
table, and results.json loads back."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from patchbench import results
from patchbench.scenarios.mounts import MountsResult
from tests import support

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="runc starts containers only as root"),
]

START = ["{runtime}", "--root", "{root}", "run", "-b", "{bundle}", "{id}-m{i}"]


def _runc() -> Path:
    found = shutil.which("runc")
    if found is None:
        pytest.fail("this test needs Debian's runc: apt-get install -y runc")
    return Path(found).resolve()


def test_mounts_of_a_real_runc_start(project: support.Project) -> None:
    runc = _runc()
    tracers = ["strace"] + (["bpftrace"] if shutil.which("bpftrace") else [])
    if shutil.which("strace") is None:
        pytest.fail("this test needs strace: apt-get install -y strace")
    data = support.matrix_data(project.upstream, project.go_version,
                               commands=[["cp", str(runc), "runc"]])
    target = data["targets"][support.TARGET]
    target["build"]["artifacts"] = ["runc"]
    target.update({"requires": ["linux", "root"], "runtime": "runc"})
    # bpftrace starts afresh for every traced start (about 1.4 s each): one start per cell and
    # round, strace two
    runs = {"strace": 4, "bpftrace": 2}
    data["comparisons"]["fx"]["scenarios"] = [
        {"name": f"mounts-{t}", "kind": "mounts", "tracer": t, "command": START, "warmup": 1,
         "runs": runs[t], "rounds": 2, "timeout": 120} for t in tracers]
    support.write_matrix(project.root, data)

    res, run_dir = support.compare(project.load(), project.options(), "fx")

    assert run_dir is not None
    loaded = results.load(run_dir)
    counts: dict[str, dict[str, int]] = {}
    for sc in loaded.scenarios:
        assert isinstance(sc, MountsResult)
        assert sc.variants == ["baseline", "greet"] and len(sc.starts) == 2 * runs[sc.tracer]
        assert {s.exit_code for s in sc.starts} == {0}
        per = {tuple(sorted(s.calls.items())) for s in sc.starts}
        assert len(per) == 1, f"{sc.tracer}: the starts differ: {per}"
        calls = sc.starts[0].calls
        assert calls["mount"] > 0, calls
        counts[sc.tracer] = calls
    assert len({tuple(sorted(c.items())) for c in counts.values()}) == 1, counts
    report = (run_dir / "report.md").read_text()
    assert "## Scenario `mounts-strace` (mounts)" in report
    assert "| greet − baseline " in report
    assert not [w for w in res["warnings"] if "mounts" in w]
    assert res["teardown"] == {v: {"removed_at_teardown": [], "left_after_teardown": []}
                               for v in ("baseline", "greet")}
