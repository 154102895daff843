"""Exports of the committed reference runs: hyperfine JSON per cell, CSV per run, Go benchmark
text per variant, Bencher Metric Format; each checked against the run's own raw samples."""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from patchbench import results as results_mod
from patchbench.errors import ReportError
from patchbench.runs import export
from patchbench.runs.export import benchstat, hyperfine
from patchbench.runs.export import csv as csv_format
from patchbench.runs.export.exporter import safe_name
from tests.support import REPO_ROOT, committed_reports

RUNS = {p.parent.parent.name + "/" + p.parent.name: p
        for p in committed_reports("*/*/results.json")}
TIMED = [k for k, p in RUNS.items()
         if any(sc.get("cells") for sc in json.loads(p.read_text())["scenarios"])]
BURST = next(k for k in RUNS if k.startswith("runc-burst/"))
DEMO = "demo/20261129T225457Z"


def load(key: str) -> dict[str, Any]:
    # as every command reads a saved run: through the loader (schema 1 files upgraded)
    return results_mod.load(RUNS[key]).dump()


def cells(results: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(sc, c) for sc in results["scenarios"] for c in sc.get("cells", [])]


@pytest.mark.parametrize("key", TIMED)
def test_hyperfine_export_has_every_cell_with_every_run(key: str) -> None:
    results = load(key)
    files = export.export(results, "hyperfine")
    assert len(files) == len(cells(results))
    for sc, cell in cells(results):
        doc = json.loads(files[f"hyperfine/{safe_name(sc['name'])}--"
                               f"{safe_name(cell['label'])}.json"])
        (entry,) = doc["results"]
        times = cell["samples"]["times"]
        assert entry["times"] == times
        assert entry["exit_codes"] == cell["samples"]["exit_codes"]
        # the one statistics module's figures: the run's own summary, bit for bit
        assert entry["median"] == cell["summary"]["median"]
        assert entry["mean"] == cell["summary"]["mean"]
        assert entry["stddev"] == cell["summary"]["stdev"]
        assert entry["stddev"] == pytest.approx(statistics.stdev(times), rel=1e-9)
        assert (entry["min"], entry["max"]) == (min(times), max(times))
        # user/system: the per-run values (results version 6), else hyperfine's per-round means,
        # weighted by the runs of each round
        per_run = cell["samples"].get("metrics", {})
        if "user" in per_run:
            assert entry["user"] == pytest.approx(statistics.mean(per_run["user"]))
            assert entry["system"] == pytest.approx(statistics.mean(per_run["system"]))
        else:
            rounds = cell["samples"]["hyperfine"]
            n = sum(len(h["times"]) for h in rounds)
            assert entry["user"] == pytest.approx(sum(h["user"] * len(h["times"]) for h in rounds)
                                                  / n)
        assert entry["system"] > 0
        assert entry["parameters"] == {"variant": cell["variant"], **cell["params"]}
        assert entry["command"] == sc["command"]  # the command line, not "NAME CELL"


def test_hyperfine_export_weights_rounds_by_their_runs() -> None:
    run = results_mod.load(RUNS[DEMO])
    sc = run.scenarios[0]
    assert isinstance(sc, results_mod.TimedResult)
    cell = sc.cells[0].model_copy(update={"samples": results_mod.Samples(
        times=[1.0, 2.0, 3.0], exit_codes=[0, 0, 0], user=[], system=[],
        hyperfine=[{"times": [1.0], "user": 0.1, "system": 0.3},
                   {"times": [2.0, 3.0], "user": 0.4, "system": 0.6}])})
    (entry,) = hyperfine.hyperfine_cell(sc, cell)["results"]
    assert entry["user"] == pytest.approx((0.1 + 2 * 0.4) / 3)
    assert entry["system"] == pytest.approx((0.3 + 2 * 0.6) / 3)
    assert entry["median"] == 2.0 and entry["stddev"] == pytest.approx(1.0)


@pytest.mark.parametrize("key", TIMED)
def test_csv_has_one_row_per_run(key: str) -> None:
    results = load(key)
    rows = list(csv.DictReader(io.StringIO(export.export(results, "csv")["results.csv"])))
    metrics = sorted({n for _, c in cells(results) for n in c["samples"].get("metrics", {})})
    assert list(rows[0])[:len(csv_format.COLUMNS)] == csv_format.COLUMNS
    assert len(list(rows[0])) == len(csv_format.COLUMNS) + len(metrics)  # one per metric
    assert len(rows) == sum(len(c["samples"]["times"]) for _, c in cells(results))
    for sc, cell in cells(results):
        mine = [r for r in rows if r["scenario"] == sc["name"] and r["cell"] == cell["label"]]
        assert [float(r["time_s"]) for r in mine] == cell["samples"]["times"]
        if "cpu" in cell["samples"].get("metrics", {}):
            assert [float(r["cpu_s"]) for r in mine] == cell["samples"]["metrics"]["cpu"]
        assert [int(r["round"]) for r in mine] == cell["samples"]["rounds"]
        assert {r["variant"] for r in mine} == {cell["variant"]}


def test_csv_params_column_of_a_burst_scan() -> None:
    rows = list(csv.DictReader(io.StringIO(export.export(load(BURST), "csv")["results.csv"])))
    assert {r["params"] for r in rows} == {f"k={k}" for k in (1, 2, 4, 8, 16, 32)}


# a run's line: its wall time, then (results version 6) a value and unit per other metric
LINE = re.compile(r"^(Benchmark\S+)\s+1\s+(\d+) ns/op((?:\t\d+ [A-Za-z-]+(?:/op)?)*)$")


@pytest.mark.parametrize("key", TIMED)
def test_benchstat_files_one_per_variant_in_go_format(key: str) -> None:
    results = load(key)
    files = export.export(results, "benchstat")
    variants = {c["variant"] for _, c in cells(results)}
    assert set(files) == {f"benchstat/{v}.txt" for v in variants}
    for v in variants:
        lines = files[f"benchstat/{v}.txt"].splitlines()
        assert lines[:4] == ["goos: linux", "goarch: amd64", f"pkg: patchbench/{results['comparison']}",
                             f"cpu: {results['machine']['cpu_model']}"]
        parsed = [LINE.match(line) for line in lines[4:]]
        assert all(parsed), lines[4:]
        times = [t for _, c in cells(results) if c["variant"] == v for t in c["samples"]["times"]]
        assert [int(m.group(2)) for m in parsed if m] == [round(t * 1e9) for t in times]
        assert all(m.group(1).endswith(f"-{results['machine']['cpu_count']}") for m in parsed if m)


def test_benchstat_names_parameters_as_sub_benchmarks() -> None:
    assert benchstat.benchstat_name("start-8", {}, 2) == "BenchmarkStart8-2"
    assert benchstat.benchstat_name("exec-detached", {"k": "8"}, 4) == "BenchmarkExecDetached/k=8-4"
    text = export.export(load(BURST), "benchstat")["benchstat/baseline.txt"]
    assert "BenchmarkBurst/k=32-2 " in text


def test_benchstat_refuses_two_scenarios_with_one_go_name() -> None:
    results = load(DEMO)
    twin = copy.deepcopy(results["scenarios"][0])
    twin["name"] = "start_8"  # spelled differently, same Go name
    results["scenarios"].append(twin)
    with pytest.raises(ReportError, match="same Go benchmark name"):
        export.export(results, "benchstat")


@pytest.mark.parametrize("key", TIMED)
def test_bmf_is_the_median_and_its_ci_in_nanoseconds(key: str) -> None:
    results = load(key)
    doc = json.loads(export.export(results, "bmf")["bmf.json"])
    assert len(doc) == len(cells(results))
    for sc, cell in cells(results):
        params = "".join(f"/{k}={v}" for k, v in cell["params"].items())
        lat = doc[f"{sc['name']}{params}/{cell['variant']}"]["latency"]
        s = cell["summary"]
        # runs saved before median_ci existed give the range of the runs instead
        low, high = s.get("median_ci") or (s["min"], s["max"])
        assert lat["value"] == pytest.approx(s["median"] * 1e9)
        assert lat["lower_value"] == pytest.approx(low * 1e9)
        assert lat["upper_value"] == pytest.approx(high * 1e9)
        assert lat["lower_value"] <= lat["value"] <= lat["upper_value"]
        for v in lat.values():
            assert v == round(v, 3)  # no float noise such as 48728657.00000001


def test_unknown_format_and_a_run_without_timings_are_refused() -> None:
    with pytest.raises(ReportError, match="unknown export format"):
        export.export(load(DEMO), "xml")
    stress = next(k for k in RUNS if k.startswith("runc-stress/"))
    with pytest.raises(ReportError, match="no measured cells"):
        export.export(load(stress), "csv")


def test_write_export_writes_the_files(tmp_path: Path) -> None:
    paths = export.write_export(load(DEMO), "benchstat", tmp_path)
    assert sorted(p.name for p in paths) == ["baseline.txt", "per-sandbox-lock.txt"]
    assert all(p.read_text().startswith("goos: linux\n") for p in paths)


def test_every_format_is_an_exporter_the_command_line_accepts_and_the_docs_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from patchbench.cli import main, spec

    (option,) = [o for o in spec.COMMANDS["export"].options if o.name == "format"]
    assert option.choices == tuple(export.FORMATS)  # the same names, in the same order
    readme = (REPO_ROOT / "README.md").read_text()
    (row,) = [line for line in readme.splitlines() if line.startswith("| `invoke export")]
    reports_doc = (REPO_ROOT / "docs/reports.md").read_text()
    for name, exporter in export.FORMATS.items():
        assert f"`{name}`" in row and f"`{name}`" in reports_doc, name
        assert isinstance(exporter.timed, bool) and callable(exporter.files)
        # a run that has what the format exports (syscalls: traced runs)
        run = DEMO if name != "syscalls" else next(k for k in RUNS if k.startswith("demo-stat/"))
        with pytest.raises(SystemExit) as exc:
            main.run(["export", str(RUNS[run].parent), "--format", name, "--out",
                      str(tmp_path / name)])
        assert exc.value.code == 0, capsys.readouterr().err
        written = sorted(p.relative_to(tmp_path / name).as_posix()
                         for p in (tmp_path / name).rglob("*") if p.is_file())
        assert written == sorted(export.export(load(run), name)), name
