"""Per-run deadlines in the timed kinds (command, burst) with the real launcher, hyperfine and
go: a run past its deadline is killed after its evidence is saved, counted as a hang, left out of
the timing, and the scenario goes on; a candidate's hang fails the gate, the baseline's does not;
conditions run as their own sets of cells."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from patchbench import gate, results
from patchbench.runs import store
from tests import support
from tests.support import Project, assert_nothing_left

# the candidate (greet) hangs on every third of its runs; the baseline never. Deadlines are 1 s
# (each hang costs one): a run of the fixture takes milliseconds (54-83 ms at its slowest under
# contention), but with 0.5 s a stall of the shared machine in a fresh-clone CI run (2026-12-01
# 22:40 UTC) made a run that does not hang pass its deadline, and caught another hang before its
# sleep had started
DEADLINE = 1.0
EVERY_THIRD = ("n=$(cat {work}/count-{variant} 2>/dev/null || echo 0); n=$((n+1)); "
               "echo $n > {work}/count-{variant}; "
               "if [ {variant} = %s ] && [ $((n %% 3)) = 0 ]; then sleep 30.%s; fi; exec {hello}")


@pytest.fixture
def project(prebuilt_project: Project) -> Project:
    """The fixture project, its builds found cached after the first test (tests/conftest.py):
    these tests measure the builds and assert nothing about building them."""
    return prebuilt_project


def scenario(who: str, marker: str, **kw: Any) -> dict[str, Any]:
    # no block warm-ups: "every third run" counts the timed runs only
    data: dict[str, Any] = {"name": "hangs", "command": ["sh", "-c", EVERY_THIRD % (who, marker)],
                            "warmup": 0, "block_warmup": 0, "runs": 6, "rounds": 2,
                            "timeout": DEADLINE}
    data.update(kw)
    return data


def test_a_candidate_that_hangs_is_counted_and_fails_the_gate(project: Project) -> None:
    project.write(scenarios=[scenario("greet", "4271")])
    res, run_dir = support.compare(project.load(), project.options(), "fx", seed=2)
    assert run_dir is not None
    (sc,) = res["scenarios"]
    cells = {c["variant"]: c for c in sc["cells"]}
    base, cand = cells["baseline"], cells["greet"]
    assert (base["hangs"]["hangs"], base["hangs"]["runs"]) == (0, 6)
    assert (cand["hangs"]["hangs"], cand["hangs"]["runs"]) == (2, 6)
    # hung runs are out of the timing, kept apart with their rounds
    assert len(cand["samples"]["times"]) == 4 and cand["summary"]["n"] == 4
    assert len(cand["samples"]["hung_times"]) == 2
    assert all(DEADLINE <= t < 20 for t in cand["samples"]["hung_times"])
    assert sorted(cand["samples"]["hung_rounds"]) == [1, 2]
    assert max(cand["samples"]["times"]) < DEADLINE
    (comp,) = sc["comparisons"]
    h = comp["hangs"]
    assert (h["hangs"], h["runs"], h["baseline_hangs"], h["baseline_runs"]) == (2, 6, 0, 6)
    assert math.isclose(h["p_value"], 0.4545, abs_tol=1e-3)  # Fisher, 2/6 against 0/6
    # the evidence, saved before each kill, is in the report folder and named there
    assert len(cand["hangs"]["evidence"]) == 2
    for name in cand["hangs"]["evidence"]:
        ev = json.loads((run_dir / name).read_text())
        assert "sleep" in {p["comm"] for p in ev["processes"]}
        assert str(project.builds) not in (run_dir / name).read_text()
    assert (run_dir / sc["evidence_summary"]).is_file()
    md = (run_dir / "report.md").read_text()
    assert "| greet" in md and "2 of 6" in md and "What was seen:" in md
    assert f"Each run had a {DEADLINE:g} s deadline" in md
    # the gate: a candidate's hang fails it, named with the baseline's count and Fisher's p
    # few rounds: the verdict is withheld, which the gate fails too (closed) unless allowed
    reasons = gate.failures(store.load_run(run_dir), allow_inconclusive=True)
    assert reasons == ["hangs greet: hangs: 2 of 6 (baseline 0 of 6; Fisher p 0.45)"]
    assert_nothing_left(project.builds, project.cache)


def test_a_baseline_that_hangs_is_shown_and_fails_nothing(project: Project) -> None:
    project.write(scenarios=[scenario("baseline", "4272")])
    res, run_dir = support.compare(project.load(), project.options(), "fx", seed=2)
    assert run_dir is not None
    (sc,) = res["scenarios"]
    cells = {c["variant"]: c for c in sc["cells"]}
    assert cells["baseline"]["hangs"]["hangs"] == 2 and cells["greet"]["hangs"]["hangs"] == 0
    assert gate.failures(store.load_run(run_dir), allow_inconclusive=True) == []
    assert any("baseline: hangs: 2 of 6" in w for w in res["warnings"])


def test_a_burst_cell_whose_every_run_hangs(project: Project) -> None:
    # greet's instance 1 hangs in every run, so its k=2 cell has no timing at all
    project.write(scenarios=[{
        "name": "b", "kind": "burst", "k": [1, 2], "warmup": 0, "runs": 4, "rounds": 2,
        "timeout": DEADLINE,
        # and its instance 0 fails in those runs: hidden by the hang, so said in a warning
        "command": ["sh", "-c", "if [ {variant} = greet ] && [ {i} = 1 ]; then sleep 30.4273; "
                                "fi; if [ {variant}{k} = greet2 ]; then exit 3; fi; "
                                "exec {hello}"]}])
    res, run_dir = support.compare(project.load(), project.options(), "fx", seed=4)
    assert run_dir is not None
    (sc,) = res["scenarios"]
    cells = {c["label"]: c for c in sc["cells"]}
    assert cells["greet k=2"]["hangs"]["hangs"] == 4 and cells["greet k=2"]["samples"]["times"] == []
    assert cells["greet k=1"]["hangs"]["hangs"] == 0
    comps = {c["candidate"]: c for c in sc["comparisons"]}
    assert comps["greet k=2"]["verdict"] == "withheld"
    assert math.isnan(comps["greet k=2"]["speedup"]) and comps["greet k=2"]["rounds"] == 0
    assert comps["greet k=1"]["speedup"] > 0 and comps["greet k=1"]["rounds"] == 2
    # on disk, "no value" is null: strict JSON (no NaN), read back as NaN
    def refuse(name: str) -> None:
        raise AssertionError(f"results.json holds {name}")

    on_disk = json.loads((run_dir / "results.json").read_text(), parse_constant=refuse)
    hung = next(c for c in on_disk["scenarios"][0]["cells"] if c["label"] == "greet k=2")
    assert hung["summary"]["median"] is None and hung["summary"]["n"] == 0
    loaded = store.load_run(run_dir)
    assert math.isnan(next(c for c in loaded.scenarios[0].comparisons
                           if c.candidate == "greet k=2").speedup)
    assert gate.failures(loaded, allow_inconclusive=True) == [
        "b greet k=2: hangs: 4 of 4 (baseline 0 of 4; Fisher p 0.029)"]
    md = (run_dir / "report.md").read_text()
    assert "4 of 4" in md
    assert ("b greet k=2: instances failed (exit codes [3]) in runs counted as hangs (or in "
            "warmup runs)") in res["warnings"]


def test_conditions_run_as_their_own_cells(project: Project, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    project.write(scenarios=[{
        "name": "c", "warmup": 0, "runs": 4, "rounds": 2, "timeout": 5,
        "command": ["sh", "-c", f"echo {{variant}} {{condition}} $PB_TEST_FLAG >> {seen}; "
                                "exec {hello}"],
        "conditions": [{"name": "default"},
                       {"name": "flagged", "env": {"PB_TEST_FLAG": "on"}},
                       {"name": "one-core", "cpus": [0]}]}])
    res, run_dir = support.compare(project.load(), project.options(), "fx", seed=5)
    assert run_dir is not None
    (sc,) = res["scenarios"]
    labels = [c["label"] for c in sc["cells"]]
    assert labels == [f"{v} condition={c}" for c in ("default", "flagged", "one-core")
                      for v in ("baseline", "greet")]
    assert [(c["baseline"], c["candidate"]) for c in sc["comparisons"]] == [
        (f"baseline condition={c}", f"greet condition={c}")
        for c in ("default", "flagged", "one-core")]
    assert [c["name"] for c in sc["conditions"]] == ["default", "flagged", "one-core"]
    assert sc["conditions"][2]["applied"]["prefix"] == "taskset -c 0"
    lines = seen.read_text().splitlines()
    assert sorted(set(lines)) == ["baseline default", "baseline flagged on", "baseline one-core",
                                  "greet default", "greet flagged on", "greet one-core"]
    # every cell's 4 timed runs and the warm-up run that began each of its 2 blocks
    assert len(lines) == (4 + 2) * 6
    loaded = results.load(run_dir)
    assert loaded.schema_version == 8
    md = (run_dir / "report.md").read_text()
    assert "Conditions (each its own set of interleaved cells)" in md
    assert "c condition=flagged" in md
