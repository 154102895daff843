"""Burst scans with the real go (the launcher and a fixture target) and the real hyperfine: k
copies of ``sleep 0.2`` released at once take about 0.2 s, not k x 0.2 s; every instance's
latency is kept; the launcher's own overhead, the slope and a chart are reported."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from patchbench.measure import bench
from patchbench.measure.bench import Cell
from patchbench.runs import store
from tests import support
from tests.support import Project, assert_nothing_left

SLEEP = 0.2
KS = [1, 4, 8]
RUNS, ROUNDS = 2, 2


@pytest.fixture
def project(prebuilt_project: Project) -> Project:
    """The fixture project, its builds found cached after the first test (tests/conftest.py):
    these tests measure the builds and assert nothing about building them."""
    return prebuilt_project


def test_the_schedule_of_burst_cells() -> None:
    cells = [Cell(v, (("k", str(k)),)) for v in ("baseline", "fix") for k in KS]
    one = bench.schedule(cells, 5, seed=42)
    assert one == bench.schedule(cells, 5, seed=42)
    assert one != bench.schedule(cells, 5, seed=43)
    assert len(one) == 5
    for r in one:
        assert Counter(r) == Counter(cells)
    # not the same order every round
    assert len({tuple(r) for r in one}) > 1


@pytest.fixture
def burst_run(project: Project) -> tuple[dict[str, Any], Path]:
    project.write(scenarios=[{
        "name": "burst", "kind": "burst", "description": "k sleeps at once",
        "command": ["sleep", str(SLEEP)], "k": KS, "runs": RUNS, "rounds": ROUNDS, "warmup": 0,
        "timeout": 10,
    }])
    results, run_dir = support.compare(project.load(), project.options(), "fx", seed=9)
    assert run_dir is not None
    return results, run_dir


@pytest.mark.integration
def test_a_burst_scan(burst_run: tuple[dict[str, Any], Path], project: Project) -> None:
    results, run_dir = burst_run
    (sc,) = results["scenarios"]
    assert sc["kind"] == "burst" and sc["k"] == KS
    cells = {c["label"]: c for c in sc["cells"]}
    assert sorted(cells) == sorted(f"{v} k={k}" for v in ("baseline", "greet") for k in KS)
    for v in ("baseline", "greet"):
        for k in KS:
            cell = cells[f"{v} k={k}"]
            assert cell["params"] == {"k": str(k)}
            assert len(cell["samples"]["times"]) == RUNS
            assert cell["samples"]["exit_codes"] == [0] * RUNS
            med = cell["summary"]["median"]
            # all k released together: about one sleep, far below k sleeps one after another
            assert SLEEP * 0.95 < med < 0.6, (v, k, med)
            # every instance's own latency, for every run (no warmup here)
            inst = cell["instances"]
            assert len(inst["latencies"]) == k * RUNS
            assert inst["exit_codes"] == [0] * (k * RUNS)
            assert all(SLEEP * 0.95 < x < 0.6 for x in inst["latencies"])
            assert inst["median"] == pytest.approx(sorted(inst["latencies"])[len(
                inst["latencies"]) // 2], abs=0.1)
        assert cells[f"{v} k=8"]["summary"]["median"] < 8 * SLEEP / 2
    comps = {c["candidate"]: c for c in sc["comparisons"]}
    assert sorted(comps) == [f"greet k={k}" for k in KS]
    for k in KS:
        assert comps[f"greet k={k}"]["baseline"] == f"baseline k={k}"
        assert comps[f"greet k={k}"]["params"] == f"k={k}"
        assert comps[f"greet k={k}"]["speedup"] > 0
    # the interleaved order: each round runs each cell once
    assert len(sc["order"]) == ROUNDS
    for r in sc["order"]:
        assert sorted(r) == sorted(cells)
    assert set(sc["launcher_overhead"]) == {str(k) for k in KS}
    for k, t in sc["launcher_overhead"].items():
        assert 0 < t < SLEEP, (k, t)  # k copies of `true`: far less than one sleep
    slopes = sc["slope_s_per_instance"]
    assert set(slopes) == {"baseline", "greet"}
    for s in slopes.values():
        assert isinstance(s, float) and abs(s) < SLEEP / 4  # not ~0.2 s per extra instance

    # the saved run folder: the chart, and report.md linking it with the seed-shaped table
    assert sc["chart"] == "burst.svg"
    chart = run_dir / "burst.svg"
    assert chart.is_file() and chart.stat().st_size > 1000
    root = ElementTree.fromstring(chart.read_bytes())  # well-formed SVG
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    md = (run_dir / "report.md").read_text()
    assert "![time against k](burst.svg)" in md
    header = next(line for line in md.splitlines() if line.startswith("| k at once"))
    assert [h.strip() for h in header.strip("|").split("|")] == [
        "k at once", "baseline", "greet", "speedup greet [95% CI]", "launcher overhead"]
    assert "Slope (seconds per extra instance" in md
    saved = store.load_run(run_dir).dump()
    saved_sc = saved["scenarios"][0]
    assert sorted(saved_sc["launcher_overhead"]) == sorted(str(k) for k in KS)
    assert saved_sc["cells"] == json.loads(json.dumps(sc["cells"]))
    assert saved["warnings"] == results["warnings"]
    assert_nothing_left(project.builds, project.cache)
    # the launcher was built once into builds/tools, beside the stamp of its sha256
    tools = sorted((project.builds / "tools").glob("burst-*"))
    assert len(tools) == 2 and tools[0].is_file() and tools[1].name == tools[0].name + ".sha256"


@pytest.mark.integration
def test_phases_are_timed_one_after_the_other_per_instance(project: Project) -> None:
    project.write(scenarios=[{
        "name": "burst", "kind": "burst", "command": ["true"], "k": [1, 2], "runs": 2,
        "rounds": 2, "warmup": 0, "timeout": 10,
        "phases": [
            {"name": "boot", "command": ["sleep", "0.05"]},
            {"name": "run", "command": ["sh", "-c", "sleep 0.15; test -n '{i}{k}{round}'"]},
        ],
        "phase_k": [1, 4], "phase_runs": 2,
    }])
    results, run_dir = support.compare(project.load(), project.options(), "fx", seed=3)
    assert run_dir is not None
    (sc,) = results["scenarios"]
    for variant in ("baseline", "greet"):
        for k in ("1", "4"):
            res = sc["phases"][variant][k]
            # every instance of every run, each with both phases
            assert len(res["durations"]) == int(k) * 2
            assert all(len(row) == 2 for row in res["durations"])
            assert 0.045 < res["median"]["boot"] < 0.15
            assert 0.145 < res["median"]["run"] < 0.3
            assert res["total_median"] == pytest.approx(
                res["median"]["boot"] + res["median"]["run"], abs=0.05)
    text = (run_dir / "report.md").read_text()
    assert "| build" in text and "| boot" in text and "Median phase times" in text


def test_phases_belong_to_a_burst_scenario(project: Project) -> None:
    from patchbench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"scenarios\.0\.phases: unknown key"):
        project.write(scenarios=[{
            "name": "run", "command": ["true"], "runs": 2, "rounds": 2,
            "phases": [{"name": "boot", "command": ["true"]}], "phase_k": [1],
        }])
        project.load()
