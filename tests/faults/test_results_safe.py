"""Safety class 5 (docs/safety.md): a measurement is never lost. The complete results are written
under builds/runs/<run>/ before the report folder; a failed report write exits 18 naming where they
are; ``invoke report --from <run>`` renders the folder later; two runs finishing in the same second
get distinct folders (``os.replace`` used to fail with ENOTEMPTY)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbench import results
from patchbench.errors import ReportError
from patchbench.runs import document
from patchbench.runs import store as runstore
from tests.support import DEMO_RUN, REPO_ROOT, Project, compare, invoke_argv

STAMP = "20260101T000000Z"


def demo_results() -> Path:
    return DEMO_RUN / "results.json"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run directory holding complete results (as a finished measurement leaves it)."""
    run = tmp_path / "builds" / "runs" / "demo-20260101T000000-1-abcd"
    run.mkdir(parents=True)
    (run / "chart.svg").write_text("<svg/>")
    runstore.save_complete(run, results.load(demo_results()), {"chart.svg": run / "chart.svg"})
    return run


def test_the_complete_results_are_in_the_run_directory(run_dir: Path) -> None:
    saved = results.load(run_dir / "results.json")
    assert saved.comparison == "demo" and saved.scenarios
    assert json.loads((run_dir / "attached.json").read_text()) == {"chart.svg": "chart.svg"}


def test_a_report_folder_from_the_run(run_dir: Path, tmp_path: Path) -> None:
    final = runstore.publish(run_dir / "results.json", tmp_path / "reports", stamp=STAMP)
    assert final == tmp_path / "reports" / "demo" / STAMP
    variants = list(results.load(demo_results()).builds)
    assert sorted(p.name for p in final.iterdir()) == sorted(
        ["chart.svg", "machine.json", "report.html", "report.md", "results.json"]
        + [f"manifest-{v}.json" for v in variants])
    assert runstore.load_run(final).run_dir == f"demo/{STAMP}"
    assert (final / "report.md").read_text() == document.markdown(runstore.load_run(final))


def test_same_second_runs_get_distinct_folders(run_dir: Path, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    first = runstore.publish(run_dir / "results.json", reports, stamp=STAMP)
    second = runstore.publish(run_dir / "results.json", reports, stamp=STAMP)
    assert (first.name, second.name) == (STAMP, f"{STAMP}-2")


# one interpreter imports patchbench (and publishes once elsewhere, for its lazy imports), then
# forks 12 publishers that wait at a barrier (a pipe closed at once) and publish together; 12
# interpreters that each imported everything first cost 20 s of CPU and started seconds apart
PUBLISH = """\
import os, sys
from pathlib import Path
from patchbench.runs import store as runstore
results, reports, stamp, n = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
runstore.publish(results, reports.with_name("warm-up"), stamp=stamp)  # what it imports lazily
go_r, go_w = os.pipe()
kids = []
for _ in range(n):
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(go_w)
        os.read(go_r, 1)  # returns when the parent closes its end: every child goes at once
        try:
            line, code = f"{runstore.publish(results, reports, stamp=stamp)}\\n", 0
        except BaseException as exc:
            line, code = f"error: {exc!r}\\n", 1
        os.write(out_w, line.encode())
        os._exit(code)
    os.close(out_w)
    kids.append((pid, out_r))
os.close(go_w)
failed = 0
for pid, out_r in kids:
    with os.fdopen(out_r) as f:
        sys.stdout.write(f.read())
    failed += os.waitpid(pid, 0)[1] != 0
sys.exit(1 if failed else 0)
"""


def test_concurrent_runs_in_the_same_second_never_collide(run_dir: Path, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    res = subprocess.run([sys.executable, "-c", PUBLISH, str(run_dir / "results.json"),
                          str(reports), STAMP, "12"], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout.split()
    assert len(out) == 12 and len(set(out)) == 12, res.stdout
    assert all((Path(p) / "results.json").is_file() for p in out)
    assert not [p for p in (reports / "demo").iterdir() if p.name.endswith(".partial")]


@contextlib.contextmanager
def full_disk(path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs at ``path``, filled up."""
    path.mkdir(parents=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {res.stderr.strip()}")
    try:
        with contextlib.suppress(OSError), open(path / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.parametrize("how", ["not a directory", "full"])
def test_a_failed_report_write_names_the_complete_results(run_dir: Path, tmp_path: Path,
                                                          how: str) -> None:
    with contextlib.ExitStack() as stack:
        if how == "full":
            if os.geteuid() != 0:
                pytest.skip("mounting a tmpfs needs root")
            reports = stack.enter_context(full_disk(tmp_path / "reports"))
        else:
            reports = tmp_path / "reports"
            reports.write_text("a file where the reports directory should be")
        with pytest.raises(ReportError) as info:
            runstore.publish(run_dir / "results.json", reports, stamp=STAMP)
        err = info.value
        assert err.exit_code == 18
        assert f"the complete results are in {run_dir / 'results.json'}" in err.message
        assert err.hint is not None and f"invoke report --from {run_dir.name}" in err.hint
        if how == "full":
            assert "disk is full" in err.message
    assert results.load(run_dir / "results.json").scenarios  # nothing lost


def test_results_that_cannot_be_written_anywhere_else_go_to_tmp(tmp_path: Path) -> None:
    run = tmp_path / "not-a-dir"
    run.write_text("x")
    with pytest.raises(ReportError) as info:
        runstore.save_complete(run, results.load(demo_results()), {})
    fallback = info.value.message.split("saved to ")[1].split()[0]
    try:
        assert results.load(Path(fallback)).comparison == "demo"
    finally:
        os.unlink(fallback)


@pytest.mark.integration
def test_a_whole_run_with_an_unwritable_reports_dir(project: Project, tmp_path: Path) -> None:
    """After the whole measurement the reports directory cannot be
    written. Exit 18 (not 3), the results are kept, and `invoke report --from` renders them."""
    project.reports.parent.mkdir(parents=True, exist_ok=True)
    project.reports.write_text("not a directory")
    with pytest.raises(ReportError) as info:
        compare(project.load(), project.options(), "fx", runs=2, rounds=1, warmup=0)
    assert info.value.exit_code == 18
    runs = [p for p in (project.builds / "runs").iterdir() if (p / "results.json").is_file()]
    assert len(runs) == 1
    assert results.load(runs[0] / "results.json").scenarios[0].name == "run"
    project.reports.unlink()
    res = subprocess.run(
        invoke_argv("report", "--from", runs[0].name, "--matrix", str(project.matrix),
                    "--builds", str(project.builds), "--reports", str(project.reports)),
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    saved = list((project.reports / "fx").iterdir())
    assert len(saved) == 1 and (saved[0] / "report.md").is_file()
    assert f"saved: {saved[0]}" in res.stdout
