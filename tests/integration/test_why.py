"""Why a start changed, end to end with the real tools: a ``compare`` of the fixture target
whose command is a small program that behaves by variant (the candidate stats a file 1,000 more
times; the baseline sleeps n times as long, the candidate once, over a scan of n), with its
syscall profile under strace (and bpftrace, as root), its scan's fits and chart, and, as root
with Debian's runc, a scenario's own bundle (generated environment, a host program copied in,
bind mounts) with the phases of each start. The known answers: +1,000 ``newfstatat`` and
nothing else beyond the runs' spread; exponents near 1 and near 0, said to differ; the container
sees its 3 generated variables through the copied ``env``; ``mount`` grows by 2 per bind."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from patchbench import results
from patchbench.runs import export
from tests import support

pytestmark = pytest.mark.integration

# the candidate ("greet") stats this file 1,000 times more than the baseline; with n, the
# baseline sleeps n × 100 ms and the candidate 100 ms whatever n is (python3 -S: a short start)
PROGRAM = """\
import os, sys, time
variant, n = sys.argv[1], int(sys.argv[2])
for _ in range(1000 if variant != "baseline" else 0):
    os.stat(sys.argv[0])
time.sleep(0.1 * (n if variant == "baseline" else 1))
"""


def scenario(prog: Path, **more: Any) -> dict[str, Any]:
    return {"name": "why", "command": [sys.executable, "-S", str(prog), "{variant}", "{n}"],
            "scan": {"name": "n", "values": [1, 2, 4]}, "profile": ["syscalls"],
            "profile_runs": 2, "warmup": 1, "runs": 5, "rounds": 5, "timeout": 20, **more}


def run_compare(project: support.Project, scenarios: list[dict[str, Any]]
                ) -> tuple[dict[str, Any], Path]:
    data = support.matrix_data(project.upstream, project.go_version, scenarios=scenarios)
    support.write_matrix(project.root, data)
    res, run_dir = support.compare(project.load(), project.options(), "fx")
    assert run_dir is not None
    return res, run_dir


def check_profile(run_dir: Path, tracer: str) -> None:
    loaded = results.load(run_dir)
    (sc,) = loaded.scenarios
    prof = getattr(sc, "profile", None)
    assert prof is not None and prof.tracer.startswith(tracer)
    assert len(prof.runs) == 2 * 2 * 3 and {r.exit_code for r in prof.runs} == {0}
    base = [r for r in prof.runs if r.cell == "baseline n=4"]
    cand = [r for r in prof.runs if r.cell == "greet n=4"]
    stat = [c.calls.get("newfstatat", 0) - b.calls.get("newfstatat", 0)
            for b in base for c in cand]
    assert all(990 <= d <= 1010 for d in stat), stat
    report = (run_dir / "report.md").read_text()
    table = report[report.index("| syscall "):].split("\n\n")[0]
    rows = table.splitlines()[3:]  # after the header, its rule and "all"
    assert rows[0].startswith("| newfstatat ") and "| yes " in rows[0]
    # nothing else is beyond the runs' spread by more than a few calls
    for row in rows[1:]:
        cells = [c.strip() for c in row.split("|")]
        delta = float(cells[4].replace("−", "-").replace("+", "").replace(",", "") or 0)
        assert abs(delta) < 50 or cells[5] == "no", row


def test_syscall_diff_and_scan_under_strace(project: support.Project, tmp_path: Path) -> None:
    if shutil.which("strace") is None:
        pytest.fail("this test needs strace: apt-get install -y strace")
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    res, run_dir = run_compare(project, [scenario(prog)])
    check_profile(run_dir, "strace")
    sc = results.load(run_dir).scenarios[0]
    scan = getattr(sc, "scan", None)
    assert scan is not None and scan.values == [1, 2, 4]
    fits = {f.variant: f for f in scan.fits}
    # the interpreter's start is a constant part: below 1 under load
    assert 0.5 < fits["baseline"].exponent < 1.05 and abs(fits["greet"].exponent) < 0.25
    report = (run_dir / "report.md").read_text()
    assert "baseline grows as n^" in report and "the exponents differ" in report
    assert "![time against n](why-scan.svg)" in report and (run_dir / "why-scan.svg").is_file()
    assert [c["label"] for c in res["scenarios"][0]["cells"]] == [
        "baseline n=1", "baseline n=2", "baseline n=4", "greet n=1", "greet n=2", "greet n=4"]
    files = export.export(results.load(run_dir), "syscalls")
    rows = [line.split(",") for line in files["syscalls.csv"].splitlines()[1:]]
    assert any(r[2] == "greet" and r[5] == "newfstatat" and int(r[6]) >= 1000 for r in rows)
    assert "scans.csv" in files and "phases.csv" not in files  # no OCI runtime: no phases
    html = (run_dir / "report.html").read_text()
    assert 'class="syscalls"' in html and 'class="scan"' in html


@pytest.mark.skipif(os.geteuid() != 0, reason="bpftrace counts syscalls only as root")
def test_syscall_diff_under_bpftrace(project: support.Project, tmp_path: Path) -> None:
    if shutil.which("bpftrace") is None:
        pytest.fail("this test needs bpftrace: apt-get install -y bpftrace")
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    _, run_dir = run_compare(project, [scenario(prog, profile_tracer="bpftrace")])
    check_profile(run_dir, "bpftrace")


def _runc() -> Path:
    found = shutil.which("runc")
    if found is None:
        pytest.fail("this test needs Debian's runc: apt-get install -y runc")
    return Path(found).resolve()


@pytest.mark.skipif(os.geteuid() != 0, reason="runc starts containers only as root")
def test_a_bundle_of_its_own_on_a_real_runc(project: support.Project) -> None:
    runc = _runc()
    data = support.matrix_data(project.upstream, project.go_version,
                               commands=[["cp", str(runc), "runc"]])
    target = data["targets"][support.TARGET]
    target["build"]["artifacts"] = ["runc"]
    target.update({"requires": ["linux", "root"], "runtime": "runc"})
    data["comparisons"]["fx"]["scenarios"] = [{
        "name": "binds", "command": ["{runtime}", "--root", "{root}", "run", "-b", "{bundle}",
                                     "{id}-b"],
        "bundle": {"args": ["env"], "env": 3, "binaries": ["env"], "bind_mounts": "{binds}"},
        "scan": {"name": "binds", "values": [0, 8]}, "profile": ["syscalls"],
        "profile_runs": 1, "warmup": 1, "runs": 4, "rounds": 2, "timeout": 30,
        "verify": ["sh", "-c", "{runtime} --root {root} run -b {bundle} {id}-v | grep -c PB_ENV_"],
    }]
    support.write_matrix(project.root, data)
    res, run_dir = support.compare(project.load(), project.options(), "fx")
    assert run_dir is not None
    sc = results.load(run_dir).scenarios[0]
    verify = getattr(sc, "verify", None)
    assert verify is not None and {v.output for v in verify.values()} == {"3"}, verify
    prof = getattr(sc, "profile", None)
    assert prof is not None and {r.exit_code for r in prof.runs} == {0}
    mounts = {r.cell: r.calls["mount"] for r in prof.runs}
    assert mounts["baseline binds=8"] - mounts["baseline binds=0"] == 16  # a bind, a remount
    assert all(r.phases is not None and r.phases["create"] > 0 for r in prof.runs)
    report = (run_dir / "report.md").read_text()
    assert "`greet binds=8` against `baseline binds=8`" in report
    assert "| cell " in report and "| baseline binds=0 " in report  # the phases
    assert res["teardown"] == {v: {"removed_at_teardown": [], "left_after_teardown": []}
                               for v in ("baseline", "greet")}


def test_a_traced_run_that_hangs_or_fails_is_kept(tmp_path: Path) -> None:
    from patchbench.measure import syscalls

    if shutil.which("strace") is None:
        pytest.fail("this test needs strace: apt-get install -y strace")
    hung = syscalls.trace(["sh", "-c", "sleep 30"], tmp_path / "hung", timeout=1)
    assert hung.exit_code is None and hung.by_syscall(["execve"])["execve"] >= 1
    failed = syscalls.trace(["sh", "-c", "exit 3"], tmp_path / "failed", timeout=20)
    assert failed.exit_code == 3 and failed.total() > 0
