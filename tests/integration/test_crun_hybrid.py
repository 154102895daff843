"""crun on hybrid cgroups (v1 controllers plus a ``unified`` v2 hierarchy that lists one) refuses
to start a container ("cgroups in hybrid mode not supported, drop all controllers from
cgroupv2"). patchbench lifts that for its own runs, with nothing wrapped by the user: the
measuring process goes into a mount namespace of its own where an empty file is bind-mounted over
``unified/cgroup.controllers``; the host's file is untouched.

- As root, on any Linux: the namespace and the bind mount over a fake hierarchy, in a process of
  its own (the test process's mounts are never changed), and the host's view afterwards.
- As root, on a hybrid machine whose v2 hierarchy lists a controller, with Debian's crun: a
  comparison of that crun (a target whose recipe copies it) measured with no flag, where crun
  alone refuses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from patchbench.runtimes import runc
from tests.faults.scaffold_support import run_cli
from tests.support import REPO_ROOT, git

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0 or sys.platform != "linux",
                                 reason="mount namespaces and bind mounts need root on Linux")]

HIDE = """
import sys
from pathlib import Path
from patchbench.runtimes.runc import hide_hybrid_controllers
base, work = Path(sys.argv[1]), Path(sys.argv[2])
print(",".join(hide_hybrid_controllers(base, work)))
print(repr((base / "unified" / "cgroup.controllers").read_text()))
"""


def test_the_controllers_are_hidden_in_a_namespace_of_the_process_only(tmp_path: Path) -> None:
    base = tmp_path / "cgroup"
    (base / "unified").mkdir(parents=True)
    (base / "unified" / "cgroup.controllers").write_text("hugetlb pids\n")
    res = subprocess.run([sys.executable, "-c", HIDE, str(base), str(tmp_path)],
                         capture_output=True, text=True, check=False, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert res.returncode == 0, res.stderr
    hidden, seen = res.stdout.splitlines()
    assert hidden == "hugetlb,pids" and seen == "''"  # inside: empty
    # outside (this process, the host): as it was, and nothing stays mounted on it
    assert (base / "unified" / "cgroup.controllers").read_text() == "hugetlb pids\n"
    assert str(base) not in Path("/proc/self/mountinfo").read_text()


def _static_busybox() -> bool:
    found = shutil.which("busybox")
    return found is not None and runc.is_static(Path(found).resolve())


@pytest.mark.root
@pytest.mark.skipif(not runc.hybrid_v2_controllers(), reason="needs hybrid cgroups whose v2 "
                    "hierarchy lists a controller (this machine's does not)")
@pytest.mark.skipif(shutil.which("crun") is None, reason="needs crun (apt-get install crun)")
@pytest.mark.skipif(not _static_busybox(), reason="needs a static busybox on PATH")
def test_crun_is_measured_on_hybrid_cgroups_without_a_wrapper(tmp_path: Path) -> None:
    crun = shutil.which("crun")
    assert crun is not None
    bundle = tmp_path / "alone"
    (bundle / "rootfs" / "bin").mkdir(parents=True)
    shutil.copy2(Path(shutil.which("busybox") or "").resolve(), bundle / "rootfs" / "bin" / "true")
    subprocess.run([crun, "spec"], cwd=bundle, check=True, capture_output=True)
    cfg = json.loads((bundle / "config.json").read_text())
    cfg["process"].update(terminal=False, args=["true"])
    (bundle / "config.json").write_text(json.dumps(cfg))
    alone = subprocess.run([crun, "--root", str(tmp_path / "state"), "run", "-b", str(bundle),
                            "pb-hybrid-alone"], capture_output=True, text=True, check=False)
    assert alone.returncode != 0 and "hybrid" in alone.stderr  # what a user of crun meets

    src = tmp_path / "src"
    src.mkdir()
    (src / "Makefile").write_text(f"crun:\n\tcp {crun} crun\n")
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "the system's crun")
    commit = git(src, "rev-parse", "HEAD")
    gcc = subprocess.run(["gcc", "-dumpfullversion", "-dumpversion"], capture_output=True,
                         text=True, check=True).stdout.strip()
    project = tmp_path / "project"
    project.mkdir()
    (project / "matrix.yaml").write_text(yaml.safe_dump({"version": 1, "targets": {"crun": {
        "url": str(src), "ref": commit, "commit": commit,
        "toolchain": {"kind": "c", "version": gcc},
        "build": {"commands": [["make", "crun"]], "artifacts": ["crun"]},
        "requires": ["linux", "root", "cgroups"], "runtime": "runc"}},
        "comparisons": {"hybrid": {"target": "crun", "candidates": {"again": []}, "scenarios": [
            {"name": "run", "command": ["{runtime}", "--root", "{root}", "run", "-b", "{bundle}",
                                        "{id}-run"], "runs": 10, "rounds": 5, "warmup": 1}]}}},
        sort_keys=False))
    args = ["--project", str(project), "compare", "hybrid", "--seed", "1", "--builds",
            str(project / "builds"), "--reports", str(project / "reports")]
    code, out, err = run_cli([*args, "--dry-run"])  # in this process: a dry run mounts nothing
    assert code == 0, err
    assert "cgroup.controllers is an empty file" in out
    # the run itself in a process of its own, as a user runs it: its namespace ends with it
    res = subprocess.run([sys.executable, "-m", "patchbench", *args], capture_output=True,
                         text=True, check=False, timeout=600, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "shows no controller to this run" in res.stderr
    assert runc.hybrid_v2_controllers()  # the host's hierarchy, untouched
    (run_dir,) = (project / "reports" / "hybrid").iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    (sc,) = results["scenarios"]
    assert [c["summary"]["n"] for c in sc["cells"]] == [10, 10], sc["cells"]
