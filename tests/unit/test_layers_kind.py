"""The ``layers`` scenario kind without containerd: its config, the line fit, its dry-run plan
against the containerd runtime, its typed result (through the scenario-result union), the report
blocks rendered from it, and its gate rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from patchbench import build, results, scenarios
from patchbench.config.scenarios import AnyScenario
from patchbench.errors import ConfigError
from patchbench.report import markdown
from patchbench.report.blocks import View
from patchbench.runs import document
from patchbench.runtimes.containerd import ContainerdRuntime
from patchbench.scenarios.layers import KIND, LayersConfig, LayersResult, MountTable, fit
from patchbench.util.layout import Layout
from tests.support import scenario_md


def config(**kw: Any) -> LayersConfig:
    base: dict[str, Any] = {"name": "scan", "layers": [1, 16], "k": [1, 8], "runs": 4,
                            "rounds": 2}
    return LayersConfig(**{**base, **kw})


def test_config_and_registry() -> None:
    sc = TypeAdapter(AnyScenario).validate_python(
        {"kind": "layers", "name": "scan", "layers": [1, 64], "k": [1], "runs": 2, "rounds": 2})
    assert isinstance(sc, LayersConfig) and sc.args == ["true"] and sc.count_mounts
    assert scenarios.get("layers") is KIND
    assert config().plan_detail() == ", L = [1, 16], k = [1, 8]"
    assert "--uidmap 0:100000:65536" in config().shown_command()
    for bad in ({"layers": []}, {"k": [0]}, {"runs": 3}, {"layers": [0]}, {"extra": 1}):
        with pytest.raises(ValidationError):
            config(**bad)


def test_fit() -> None:
    assert fit([1, 16, 64], [3, 33, 129]) == pytest.approx((2.0, 1.0))
    assert fit([1, 16, 64], [2, 2, 2]) == pytest.approx((0.0, 2.0))
    assert fit([16, 16], [1, 2]) is None


def fake_built(tmp_path: Path) -> list[build.Built]:
    arts = {"artifacts": {n: {} for n in ("containerd", "ctr", "containerd-shim-runc-v2")}}
    return [build.Built(build.Variant(v, ()), tmp_path / v, arts, True)
            for v in ("baseline", "idmap-once-per-overlay")]


def context(tmp_path: Path, runtime: Any) -> scenarios.ScenarioContext:
    return scenarios.ScenarioContext(
        scenario=config(), built=fake_built(tmp_path), runtime=runtime, workdir=tmp_path / "run",
        seed=1, layout=Layout(tmp_path / "b", tmp_path / "r"), project_root=tmp_path,
        alpha=0.05, min_effect=0.02)


def test_plan_names_each_variants_daemon_and_command(tmp_path: Path) -> None:
    rt = ContainerdRuntime()
    rt.prepare(tmp_path / "run", None, None, dry_run=True)
    lines = KIND.plan(context(tmp_path, rt))
    text = "\n".join(lines)
    for v in ("baseline", "idmap-once-per-overlay"):
        assert f"[{v}] daemon:  {tmp_path / v / 'bin' / 'containerd'} --config " \
               f"{tmp_path / 'run' / 'containerd' / v / 'config.toml'}" in text
        assert f"--namespace pb-{rt.token}-{v} run --rm" in text
    assert "patchbench.invalid/layers:16" in text and "-k16-" not in text and "-k8-{i}" in text
    assert "--remap-labels" in text and "bpftrace" in text


def test_needs_the_containerd_runtime(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="runtime: containerd"):
        KIND.plan(context(tmp_path, None))


def summary(median: float) -> results.Summary:
    return results.Summary(n=2, median=median, mean=median, stdev=0.0, min=median, max=median,
                           cv=0.0, noisy=False, median_ci=[median, median])


def layers_result(fix_passed: bool = True, fix_left: int = 0) -> LayersResult:
    cells, comps, table, left = [], [], {}, {}
    for v, t in (("baseline", 0.5), ("fix", 0.25)):
        for n in (1, 16):
            label = f"{v} L={n} k=8"
            cells.append(results.Cell(variant=v, params={"L": str(n), "k": "8"}, label=label,
                                      summary=summary(t * n),
                                      samples=results.Samples(times=[t * n] * 2)))
            table[label] = MountTable(peak_mounts=40 + n, slowest_read_s=0.001 * n)
            left[label] = fix_left if v == "fix" else 0
    for n in (1, 16):
        comps.append(results.Verdict(
            baseline=f"baseline L={n} k=8", candidate=f"fix L={n} k=8", candidate_variant="fix",
            params=f"L={n} k=8", speedup=2.0, ci_low=1.9, ci_high=2.1, p_value=0.01,
            verdict="faster", alpha=0.05, min_effect=0.02))
    check = results.Check(command="ctr run ...", exit_code=0, passed=True, output="ok")
    return LayersResult(
        name="scan", command="ctr run ...", runs=2, rounds=1, warmup=0, cells=cells,
        comparisons=comps, layers=[1, 16], k=[8],
        images={"1": "sha256:aa", "16": "sha256:bb"},
        mount_counts={"baseline": {"1": {"open_tree": 3, "mount": 42},
                                   "16": {"open_tree": 33, "mount": 42}},
                      "fix": {"1": {"open_tree": 2, "mount": 42},
                              "16": {"open_tree": 2, "mount": 42}}},
        mount_counts_by_comm={}, mount_fit={"baseline": {"open_tree": [2.0, 1.0],
                                                         "mount": [0.0, 42.0]},
                                            "fix": {"open_tree": [0.0, 2.0],
                                                    "mount": [0.0, 42.0]}},
        seed_formula="2 × (1 + L + L)", mount_table=table, mounts_left=left,
        active_snapshots={}, verify={"baseline": check, "fix": check.model_copy(
            update={"passed": fix_passed, "exit_code": 0 if fix_passed else 1})},
        runc={"version": "runc version 1.1.5\ncommit: x", "sha256": "ab" * 32},
        charts=["scan-time.png", "scan-mounts.png"])


def test_result_round_trips_through_the_union() -> None:
    res = layers_result()
    back = TypeAdapter(results.AnyScenarioResult).validate_python(res.model_dump(mode="json"))
    assert isinstance(back, LayersResult) and back == res


def test_report_blocks() -> None:
    text = "\n\n".join(scenario_md(layers_result(fix_left=3)))
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| 16 ")]
    assert [c.strip() for c in rows[0]] == ["16", "33 / 42", "2 / 42"]
    assert "| 16  | 8   | 8.000 s    | 4.000 s " in text
    assert "2.00L+1.0 / 0.00L+42.0" in text and "0.00L+2.0 / 0.00L+42.0" in text
    assert "2 × (1 + L + L)" in text
    assert "0, 3" in text  # mounts left: baseline 0, fix 3
    assert "56, 56" in text  # mount table peaks per variant at L=16
    assert "2.00× [1.90, 2.10]" in text
    assert "L=16 `sha256:bb`" in text and "runc version 1.1.5 (sha256 abababababab)" in text
    assert text.count("![") == 2 and "- fix: passed" in text
    assert markdown.table(document.detail_table(layers_result(), View.REPORT)).count("k=8") == 4


def test_gate_judges_the_candidate_only() -> None:
    assert KIND.gate(layers_result()) == []
    reasons = KIND.gate(layers_result(fix_passed=False, fix_left=2))
    assert reasons == ["scan fix: verify failed", "scan fix L=1 k=8: 2 mount(s) left behind",
                       "scan fix L=16 k=8: 2 mount(s) left behind"]
    base_bad = layers_result()
    base_bad.verify["baseline"] = base_bad.verify["baseline"].model_copy(update={"passed": False})
    base_bad.mounts_left["baseline L=1 k=8"] = 5
    assert KIND.gate(base_bad) == []


def test_html_report_shows_the_data() -> None:
    from patchbench.report import html

    page = html.block(document.scenario_section(layers_result(), View.PAGE))
    assert "Scenario <code>scan</code> (layers)" in page and "layers data" in page
    assert "mount_counts" in page and "fix L=16 k=8" in page


def test_the_containerd_kinds_need_the_containerd_runtime(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from patchbench.scenarios.base import containerd_runtime

    for runtime in (None, SimpleNamespace(name="docker-run")):
        with pytest.raises(ConfigError, match="the layers kind needs a target with 'runtime: "
                                              "containerd'"):
            containerd_runtime(context(tmp_path, runtime))
    rt = ContainerdRuntime()
    assert containerd_runtime(context(tmp_path, rt)) is rt
