"""Measuring with the real hyperfine: failing runs name their round and exit code, a hanging
command is stopped and leaves no process, and a failed comparison saves no report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from patchbench.errors import BenchmarkError
from patchbench.measure import bench
from patchbench.measure.bench import Cell, Invocation
from tests import support
from tests.support import Project, assert_nothing_left, processes_with

pytestmark = pytest.mark.integration


@pytest.fixture
def project(prebuilt_project: Project) -> Project:
    """The fixture project, its builds found cached after the first test (tests/conftest.py):
    these tests measure the builds and assert nothing about building them."""
    return prebuilt_project


def scenario(**kw: Any) -> dict[str, Any]:
    """bench.measure's keyword arguments for the scenario "s"."""
    data: dict[str, Any] = {"runs": 4, "rounds": 2, "warmup": 0, "timeout": 10}
    data.update(kw)
    return data


def counting_script(counter: Path, fail_on: int, code: int) -> list[str]:
    """A command that exits with ``code`` on its ``fail_on``-th run only."""
    return ["sh", "-c", f"n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); "
                        f"echo $n > {counter}; if [ $n -eq {fail_on} ]; then exit {code}; fi"]


def test_measure_keeps_every_run(tmp_path: Path) -> None:
    cells = [Cell("a"), Cell("b")]

    def expand(cell: Cell) -> Invocation:
        return Invocation(command=["true"] if cell.variant == "a" else ["sleep", "0.05"])

    samples, order = bench.measure("s", cells, expand, seed=5, workdir=tmp_path, **scenario())
    assert order == [[c.label for c in r] for r in bench.schedule(cells, 2, 5)]
    for c in cells:
        assert len(samples[c].times) == 4
        assert samples[c].exit_codes == [0, 0, 0, 0]
        assert samples[c].rounds == [1, 1, 2, 2]
    assert min(samples[Cell("b")].times) >= 0.049
    assert sorted(samples[Cell("a")].times)[1] < 0.03  # each cell's own command's results
    # one hyperfine call per round, both commands in it, named per cell
    assert sorted(p.name for p in tmp_path.glob("s*.json")) == ["s.r1.json", "s.r2.json"]
    for c in cells:  # hyperfine 2 keeps a command's name under "name" (1.x under "command")
        assert [h.get("name") or h["command"] for h in samples[c].hyperfine] == \
            [f"s {c.label} round {r}/2" for r in (1, 2)]


def test_a_failing_cell_in_a_shared_call_is_named(tmp_path: Path) -> None:
    counter = tmp_path / "count"

    def expand(cell: Cell) -> Invocation:
        return Invocation(command=counting_script(counter, fail_on=2, code=9)
                          if cell.variant == "fix" else ["true"])

    with pytest.raises(BenchmarkError) as info:
        bench.measure("s", [Cell("baseline"), Cell("fix")], expand, seed=1, workdir=tmp_path,
                      **scenario(warmup=1))
    # fix's warmup is its first run, so its second (the first timed one) fails in round 1
    assert info.value.message == "s fix round 1/2: 1 of 2 runs failed (exit codes [9])"
    assert counter.read_text().strip() == "3"  # a warmup and round 1's two runs, no round 2


def test_a_command_failing_on_some_runs(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    inv = Invocation(command=counting_script(counter, fail_on=3, code=7))
    with pytest.raises(BenchmarkError) as info:
        bench.measure("s", [Cell("baseline")], lambda c: inv, seed=1, workdir=tmp_path,
                      **scenario())
    err = info.value
    assert err.exit_code == 15
    assert err.message == "s baseline round 2/2: 1 of 2 runs failed (exit codes [7])"
    assert err.detail is not None and "hyperfine JSON: " in err.detail
    assert counter.read_text().strip() == "4"  # hyperfine ran the round to its end


def test_a_hanging_command_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "TIMEOUT_SLACK", 0.5)  # the hang waits out timeout + slack
    marker = "59.8765"
    torn_down = tmp_path / "torn-down"
    inv = Invocation(command=["sleep", marker], teardown=[["touch", str(torn_down)]])
    started = time.monotonic()
    with pytest.raises(BenchmarkError) as info:
        bench.measure("s", [Cell("baseline")], lambda c: inv, seed=1, workdir=tmp_path,
                      **scenario(runs=1, rounds=1, timeout=0.5))
    elapsed = time.monotonic() - started
    assert info.value.message.startswith(
        "s baseline round 1/1: the benchmark command hung (this command runs without a per-run "
        "deadline); stopped after 1 s. Seen: ")
    assert elapsed < 30
    assert torn_down.exists()  # teardown still ran
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(marker) == []


def test_a_failing_comparison_saves_no_report(project: Project) -> None:
    project.write(scenarios=[{"name": "fails", "command": ["sh", "-c", "exit 2"], "runs": 2,
                              "rounds": 1, "warmup": 0, "timeout": 5}])
    # the block's warm-up run fails too: 3 runs made
    with pytest.raises(BenchmarkError, match=r"round 1/1: 3 of 3 runs failed \(exit codes \[2\]\)"):
        support.compare(project.load(), project.options(), "fx", seed=1)
    assert not project.reports.exists()
    assert_nothing_left(project.builds, project.cache)


def test_a_fixture_comparison_end_to_end(project: Project) -> None:
    results, run_dir = support.compare(project.load(), project.options(), "fx", seed=3)
    assert run_dir is not None and run_dir.parent == project.reports / "fx"
    (sc,) = results["scenarios"]
    assert [c["variant"] for c in sc["cells"]] == ["baseline", "greet"]
    for c in sc["cells"]:
        assert len(c["samples"]["times"]) == 4
        assert c["samples"]["exit_codes"] == [0] * 4
    (comp,) = sc["comparisons"]
    assert comp["baseline"] == "baseline" and comp["candidate"] == "greet"
    assert 0 < comp["ci_low"] <= comp["ci_high"]
    assert comp["p_value"] is not None
    assert results["seed"] == 3
    assert [p.name for p in project.reports.rglob("*") if "partial" in p.name] == []
    assert_nothing_left(project.builds, project.cache)
