"""What tells why a start changed, from data: the fits of a scan (per round, t intervals over
the rounds; the exponents differ only when their intervals separate), the scan's config and its
cells, the syscall diff and phases of a profile, a bundle's settings, and the command kind's
result with them round-tripping through results.json and rendering in both reports."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from patchbench import errors, results
from patchbench.analysis import scaling
from patchbench.config.scenarios import AnyScenario
from patchbench.errors import ConfigError
from patchbench.measure.bench import Cell
from patchbench.report import markdown
from patchbench.report.blocks import Across, View
from patchbench.runs import document
from patchbench.runtimes import runc
from patchbench.scenarios import command_bundle, profile, scans
from patchbench.scenarios.command import KIND, CommandConfig, CommandResult
from patchbench.scenarios.profile import Profile, TracedRun
from patchbench.scenarios.scans import ScanConfig, ScanResult

# --- fits ------------------------------------------------------------------------------------


def test_line_is_least_squares() -> None:
    assert scaling.line([1, 2, 3], [3, 5, 7]) == pytest.approx((2.0, 1.0))
    assert scaling.line([4, 4], [1, 2]) is None


def rounds_of(f: Any, values: list[float], rounds: int, noise: float, seed: int = 1
              ) -> dict[int, dict[float, float]]:
    rng = random.Random(seed)
    return {r: {x: f(x) * math.exp(rng.gauss(0, noise)) for x in values}
            for r in range(1, rounds + 1)}


def test_a_linear_and_a_flat_variant_have_exponents_near_1_and_0_that_separate() -> None:
    ns = [1.0, 2.0, 4.0, 8.0, 16.0]
    lin = scaling.by_rounds(rounds_of(lambda n: 0.015 * n, ns, 10, 0.05))
    flat = scaling.by_rounds(rounds_of(lambda n: 0.02, ns, 10, 0.05, seed=2))
    assert lin is not None and flat is not None
    assert lin.exponent is not None and flat.exponent is not None
    assert lin.exponent.value == pytest.approx(1.0, abs=0.05)
    assert flat.exponent.value == pytest.approx(0.0, abs=0.05)
    assert lin.exponent.low < lin.exponent.value < lin.exponent.high  # type: ignore[operator]
    assert lin.slope.value == pytest.approx(0.015, rel=0.1) and lin.slope.rounds == 10
    assert scaling.separate(lin.exponent, flat.exponent)
    same = scaling.by_rounds(rounds_of(lambda n: 0.015 * n, ns, 10, 0.05, seed=3))
    assert same is not None and not scaling.separate(lin.exponent, same.exponent)


def test_the_interval_is_over_rounds_and_zero_values_are_left_out_of_the_power_law() -> None:
    # every point exact: no spread between rounds, a zero-width interval
    exact = scaling.by_rounds({r: {0.0: 2.0, 10.0: 5.0, 20.0: 8.0} for r in (1, 2, 3)})
    assert exact is not None and exact.slope.value == pytest.approx(0.3)
    assert exact.slope.low == pytest.approx(0.3) and exact.intercept.value == pytest.approx(2.0)
    assert exact.exponent is not None
    assert exact.exponent.value == pytest.approx(math.log(8 / 5) / math.log(2))  # 10 and 20 only
    one = scaling.by_rounds({1: {1.0: 1.0, 2.0: 2.0}})
    assert one is not None and one.slope.low is None and not scaling.separate(one.slope,
                                                                                one.slope)
    assert scaling.by_rounds({1: {1.0: 1.0}}) is None
    assert scaling.interval([1.0, 2.0, 3.0]).low == pytest.approx(
        2.0 - 4.302652729911275 * 1.0 / math.sqrt(3))  # t(0.975, 2)


# --- the scan's config and result --------------------------------------------------------------


def test_scan_config() -> None:
    assert ScanConfig(name="envs", values=[0, 1000, 5000]).scanned == [0, 1000, 5000]
    assert ScanConfig(name="n", range=[1, 9, 4]).scanned == [1, 5, 9]
    assert ScanConfig(name="n", values=[1, 2]).cells(["b", "c"]) == [
        Cell("b", (("n", "1"),)), Cell("b", (("n", "2"),)), Cell("c", (("n", "1"),)),
        Cell("c", (("n", "2"),))]
    for bad in ({"name": "k", "values": [1, 2]}, {"name": "n", "values": [1]},
                {"name": "n", "values": [1, 1]}, {"name": "n", "values": [1, 2], "range": [1, 2, 1]},
                {"name": "n"}, {"name": "n", "range": [5, 1, 1]}, {"name": "N", "values": [1, 2]},
                {"name": "n", "values": [-1, 2]}, {"name": "n", "range": [0, 1000, 1]}):
        with pytest.raises(ValidationError):
            ScanConfig(**bad)
    sc = TypeAdapter(AnyScenario).validate_python(
        {"name": "s", "command": ["x", "{envs}"], "scan": {"name": "envs", "values": [0, 10]},
         "profile": ["syscalls"], "bundle": {"env": "{envs}", "binaries": ["env"]}})
    assert isinstance(sc, CommandConfig) and sc.scan is not None and sc.profile == ["syscalls"]
    assert sc.profile_runs == 5 and sc.profile_tracer == "strace"
    with pytest.raises(ValidationError):
        TypeAdapter(AnyScenario).validate_python({"name": "s", "command": ["x"],
                                                  "profile": ["perf"]})


def cell(variant: str, n: int, times: list[float], rounds: list[int]) -> results.Cell:
    s = sorted(times)
    med = s[len(s) // 2]
    return results.Cell(
        variant=variant, params={"n": str(n)}, label=f"{variant} n={n}",
        summary=results.Summary(n=len(times), median=med, mean=sum(times) / len(times), stdev=0.0,
                                min=s[0], max=s[-1], cv=0.0, noisy=False,
                                median_ci=[med * 0.95, med * 1.05]),
        samples=results.Samples(times=times, rounds=rounds))


def scan_cells() -> list[results.Cell]:
    rng = random.Random(5)
    out = []
    for v, f in (("baseline", lambda n: 0.002 + 0.015 * n), ("fix", lambda n: 0.02)):
        for n in (1, 2, 4, 8, 16):
            ts = [f(n) * math.exp(rng.gauss(0, 0.03)) for _ in range(10)]
            out.append(cell(v, n, ts, [1 + i // 2 for i in range(10)]))
    return out


def test_fits_come_from_the_cells_samples_and_say_the_exponents_differ() -> None:
    cells = scan_cells()
    fits = scans.fits("n", cells)
    assert [f.variant for f in fits] == ["baseline", "fix"] and fits[0].rounds == 5
    assert 0.8 < fits[0].exponent < 1.0 and abs(fits[1].exponent) < 0.05  # type: ignore[operator]
    res = ScanResult(name="n", values=[1, 2, 4, 8, 16], fits=fits)
    (line,) = scans.differ_lines(res, "baseline")
    assert line.startswith("baseline grows as n^0.9") and "fix as n^" in line
    assert line.endswith("the exponents differ (their 95% intervals do not overlap).")
    same = ScanResult(name="n", values=[1, 2], fits=[fits[0], fits[0].model_copy(
        update={"variant": "fix"})])
    assert scans.differ_lines(same, "baseline")[0].endswith(
        "the exponents do not differ beyond their 95% intervals.")
    svg = scans.chart(res, "scan", cells)
    assert svg is not None and svg.count(b'class="band"') == 2 and b"n (log)" in svg


# --- the profile -------------------------------------------------------------------------------


def run(variant: str, i: int, cell: str = "", code: int | None = 0, **calls: int) -> TracedRun:
    base = {"read": 10, "futex": 5 + i % 2}
    return TracedRun(variant=variant, cell=cell or variant, index=i, exit_code=code, wall_s=0.1,
                     calls=base | calls, errors={"futex": 1}, seconds={"read": 0.3, "futex": 0.1},
                     phases={"cli": 0.01, "create": 0.05, "process": 0.001, "exit": 0.002})


def a_profile(code: int | None = 0, n: int = 3) -> Profile:
    return Profile(tracer="strace -f", runs=[
        *[run("baseline", i) for i in range(n)],
        *[run("stat", i, newfstatat=1000, code=code if i == 2 else 0) for i in range(n)]])


def test_the_syscall_diff_biggest_change_first() -> None:
    rows = profile.diff_rows(*next(r for _, _, *r in profile.pairs(a_profile(), "baseline")))
    assert rows[0][:5] == ["all", "15.3", "1,015.3", "+1,000", "yes"]
    assert rows[1][:5] == ["newfstatat", "0", "1,000", "+1,000", "yes"]
    assert rows[2][:5] == ["futex", "5.3", "5.3", "0", "no"]
    assert rows[2][5:] == ["1 → 1", "25.0 %", "25.0 %"]


def test_profile_blocks_show_failed_runs_and_phases() -> None:
    prof = a_profile(code=None)
    text = "\n".join(str(b) for b in profile.blocks(prof, "baseline"))
    assert "stat run 2: hung under the tracer (killed)" in text
    # three traced runs say nothing about a phase's spread: left out, and said so
    assert profile.phase_medians(prof) == {}
    assert "left out for baseline (3), stat (3): fewer than 5 traced runs" in text
    five = a_profile(n=5)
    five.runs[0].phases = {"cli": 0.01, "create": 0.09, "process": 0.001, "exit": 0.002}
    assert profile.phase_medians(five)["stat"]["create"] == pytest.approx(0.05)
    shown = "\n".join(str(b) for b in profile.blocks(five, "baseline"))
    assert "50.00 ms (50.00 ms–90.00 ms)" in shown and "left out" not in shown
    assert profile.summary_text(prof, "baseline")[1] == (
        "stat", "1,015.3 syscalls per start; biggest change newfstatat +1,000")


def test_a_scan_profile_pairs_cells_of_the_same_value() -> None:
    prof = Profile(tracer="t", runs=[run("baseline", 0, "baseline n=4"), run("fix", 0, "fix n=4"),
                                     run("baseline", 0, "baseline n=8"), run("fix", 0, "fix n=8")])
    assert [(b, c) for b, c, _, _ in profile.pairs(prof, "baseline")] == [
        ("baseline n=4", "fix n=4"), ("baseline n=8", "fix n=8")]


# --- the bundle ----------------------------------------------------------------------------------


def test_bundle_settings_filled_per_cell() -> None:
    b = command_bundle.BundleConfig(env="{envs}", bind_mounts="{binds}", args=["env"],
                                    binaries=["env"])
    s = command_bundle.spec(b, {"envs": "3", "binds": "2"}, "scenario x")
    assert s.env == ("PB_ENV_0=00000000", "PB_ENV_1=00000001", "PB_ENV_2=00000002")
    assert (s.mounts, s.args, s.binaries) == (2, ("env",), ("env",))
    assert command_bundle.spec(command_bundle.BundleConfig(env=["A=1"]), {}, "x").env == ("A=1",)
    with pytest.raises(ConfigError, match="not a count"):
        command_bundle.spec(b, {"envs": "many", "binds": "1"}, "scenario x")
    for bad in ({"env": -1}, {"env": "{a} {b}"}, {"env": ["NOVALUE"]}, {"bind_mounts": 10**6},
                {"binaries": ["../x"]}):
        with pytest.raises(ValidationError):
            command_bundle.BundleConfig(**bad)


def test_a_custom_bundle_config(tmp_path: Path) -> None:
    base = tmp_path / "config.json"
    base.write_text(json.dumps({"process": {"args": ["true"], "env": ["PATH=/bin"]},
                                "root": {"path": "rootfs"}, "mounts": [{"destination": "/proc"}]}))
    spec = runc.BundleSpec(args=("env",), env=("A=1",), mounts=2)
    runc.write_custom(base, tmp_path / "b", spec, tmp_path / "rootfs", tmp_path / "src")
    data = json.loads((tmp_path / "b" / "config.json").read_text())
    assert data["process"]["args"] == ["env"] and data["process"]["env"] == ["PATH=/bin", "A=1"]
    assert data["root"] == {"path": str((tmp_path / "rootfs").resolve()), "readonly": True}
    assert [m["destination"] for m in data["mounts"]] == ["/proc", "/mnt/pb/0", "/mnt/pb/1"]
    assert data["mounts"][1]["options"] == ["rbind", "ro"]
    assert set(runc.BUSYBOX_APPLETS) == {"busybox", "cat", "echo", "false", "ls", "sh", "sleep",
                                         "true"} - {"busybox"}


# --- the result --------------------------------------------------------------------------------


def a_result() -> CommandResult:
    cells = scan_cells()
    comps: list[results.Verdict] = []
    prof = Profile(tracer="strace -f", runs=[
        *[run("baseline", i, "baseline n=16") for i in range(5)],
        *[run("fix", i, "fix n=16", newfstatat=1000) for i in range(5)],
        *[run(v, 0, f"{v} n=1") for v in ("baseline", "fix")]])
    res = CommandResult(name="scan", command="x", runs=10, rounds=5, warmup=0, cells=cells,
                        comparisons=comps, profile=prof,
                        scan=ScanResult(name="n", values=[1, 2, 4, 8, 16],
                                        fits=scans.fits("n", cells)))
    return res


def test_the_result_round_trips_and_renders() -> None:
    res = a_result()
    back = TypeAdapter(results.AnyScenarioResult).validate_python(res.model_dump(mode="json"))
    assert back == res
    old = {k: v for k, v in res.model_dump(mode="json").items() if k not in ("profile", "scan")}
    assert TypeAdapter(results.AnyScenarioResult).validate_python(old).profile is None  # type: ignore[attr-defined]
    run_ = results.Results(tool="t", comparison="c", target="demo", url="u", ref="r",
                           commit="c" * 40, seed=1,
                           settings=results.Settings(alpha=0.05, min_effect=0.02),
                           started_at="now", machine={"cpu_model": "cpu", "cpu_count": 2,
                                                     "kernel": "6.18", "load_avg": [1, 1, 1]},
                           builds={}, scenarios=[res])
    assert results.parse(run_.dump(), "test", untrusted=True) == run_
    md = document.markdown(run_)
    assert "Scan of `{n}` over 1, 2, 4, 8, 16" in md and "the exponents differ" in md
    assert "`fix n=16` against `baseline n=16`" in md and "| newfstatat " in md
    assert "`fix n=1` against" not in md  # report.md: the scan's largest value; the page: all
    page = document.html(run_)
    assert 'class="scan"' in page and 'class="syscalls"' in page and 'class="phases"' in page
    (across,) = KIND.blocks(res, View.MERGE)
    assert isinstance(across, Across) and (("scan", "baseline exponent"), scans.fmt_exponent(
        res.scan.fits[0])) in across.cells  # type: ignore[union-attr]


def test_the_cpu_profile_table_and_its_differential_flame_graph() -> None:
    cpu = profile.CpuProfile(
        command="perf", event="cpu-clock", frequency=4999, runs={"baseline": 2, "stat": 2},
        stacks={"baseline": {"ss;main;run": 8, "ss;main;init": 2},
                "stat": {"ss;main;run": 8, "ss;main;os.Stat;fstatat": 10, "ss;main;init": 2}},
        failed=["stat run 1: exited 2"])
    rows = profile.cpu_rows(cpu.stacks["baseline"], cpu.stacks["stat"])
    assert rows[0] == ["fstatat", "0.0 %", "50.0 %", "+50.0", "50.0 %"]
    assert rows[1][0] == "os.Stat" and rows[2] == ["run", "80.0 %", "40.0 %", "-40.0", "40.0 %"]
    prof = Profile(tracer="", runs=[], cpu=cpu)
    text = "\n".join(str(b) for b in profile.blocks(prof, "baseline"))
    assert "Code(text='stat'), ' (20 samples) against ', Code(text='baseline')" in text
    assert "stat run 1: exited 2" in text
    (chart,) = [b for b in profile.page(prof, "baseline") if getattr(b, "name", "") == "flame"]
    svg = chart.draw()  # type: ignore[union-attr]
    assert svg is not None and svg.count(b'class="frame"') == 7  # all ss main run os.Stat fstatat init
    assert b"#ff" in svg and b"ff\"" in svg  # red (grew) and blue (shrank) frames


def test_a_perf_symbol_cannot_split_the_profile_table_or_open_a_tag() -> None:
    """Function names come from the measured program's symbols: escaped in report.md."""
    cpu = profile.CpuProfile(
        command="perf", event="cpu-clock", frequency=99, runs={"baseline": 1, "x": 1},
        stacks={"baseline": {"main;operator|<int>": 4},
                "x": {"main;<script>a&b": 3, "main;[x](https://e.invalid)": 1}})
    md = markdown.block(next(b for b in profile.cpu_blocks(cpu, "baseline")
                             if getattr(b, "name", "") == "cpu"))
    assert md is not None
    assert "operator\\|&lt;int&gt;" in md and "&lt;script&gt;a&amp;b" in md
    assert "<script>" not in md and all(line.count("|") - line.count("\\|") == 6
                                        for line in md.splitlines())
    assert "\\[x\\]\\(https://e.invalid\\)" in md  # never a link


def test_diff_merge_and_export_carry_the_profile_and_the_scan() -> None:
    from patchbench.runs import diff, merge
    from patchbench.runs import export as exports
    from tests.support import REPO_ROOT

    stat = results.load(next((REPO_ROOT / "reports/demo-stat").glob("*")))
    d = diff.diff_runs(stat, stat)
    assert any(w.startswith("start-8 demo-stat-1000: 1,313") for w in d.why), d.why
    assert "why (traced runs and scans in both runs):" in diff.render_diff(d)
    m = merge.merge_runs([("a", stat), ("b", stat)])
    (sec,) = [s for s in merge.kind_sections(m) if s.title.startswith("Why")]
    assert sec.rows[1][:2] == ["start-8", "demo-stat-1000"] and "newfstatat +1,000" in sec.rows[1][2]
    files = exports.export(stat, "syscalls")
    assert set(files) == {"syscalls.csv"}  # no OCI runtime: no phases; no scan
    scan = results.load(next((REPO_ROOT / "reports/demo-scan").glob("*")))
    d2 = diff.diff_runs(scan, scan)
    assert "scan-n baseline: exponent of n 0.90 [0.83, 0.96] in A, 0.90 [0.83, 0.96] in B" in d2.why
    assert "scans.csv" in exports.export(scan, "syscalls")
    with pytest.raises(errors.ReportError, match="no traced runs or scans"):
        exports.export(results.load(REPO_ROOT / "reports/demo/20261129T225457Z"), "syscalls")


def test_compare_profile_adds_to_the_scenarios_own() -> None:
    from patchbench import scenarios
    from patchbench.cli import main

    sc = CommandConfig(name="s", command=["x"], profile=["cpu"])
    assert scenarios.override(sc, None, None, None, profile=("syscalls", "cpu")).profile == [
        "cpu", "syscalls"]
    assert scenarios.override(sc, None, None, None) is sc
    kinds = CommandConfig.model_fields["profile"].annotation.__args__[0].__args__  # type: ignore[union-attr]
    assert kinds == main.PROFILES
