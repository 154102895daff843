"""``compare --aa-layout``: per toolchain kind, the second build that differs from the baseline only
in code layout (or why there is none), its own cache key, the dry-run plan, the refusal of --gate,
and what the reports say about which A/A a run did."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

import patchbench
from patchbench import config, pipeline
from patchbench import results as results_mod
from patchbench.build import BuildPlan, toolchains
from patchbench.config import CToolchain, GoToolchain, RustToolchain, Target
from patchbench.errors import ConfigError
from patchbench.runs import document
from patchbench.source import cache as source
from patchbench.util.layout import Layout
from patchbench.util.workspace import Switches, Workspace

ROOT = Path(next(iter(patchbench.__path__))).resolve().parent


@pytest.fixture(scope="module")
def project() -> config.Project:
    return config.load(ROOT / "matrix.yaml")


def with_toolchain(target: Target, **update: Any) -> Target:
    return target.model_copy(update={"toolchain": target.toolchain.model_copy(update=update)})


def test_go_shuffles_the_functions_with_the_linker(project: config.Project) -> None:
    change = toolchains.layout_change(project.target("demo"))
    assert isinstance(change, toolchains.LayoutChange)
    env = change.apply({"GOFLAGS": "-trimpath", "CGO_ENABLED": "0"})
    assert env == {"GOFLAGS": "-trimpath -ldflags=-randlayout=1", "CGO_ENABLED": "0",
                   "EXTRA_LDFLAGS": "-randlayout=1"}  # a Makefile's own -ldflags (runc's) too
    assert change.record()["appended"] == dict(change.append)


def test_go_without_a_layout_option_says_why(project: config.Project) -> None:
    old = with_toolchain(project.target("demo"), version="1.21.5")
    assert "older than 1.23" in str(toolchains.layout_change(old))
    demo = project.target("demo")
    own = demo.model_copy(update={"build": demo.build.model_copy(
        update={"env": {"GOFLAGS": "-ldflags=-s"}})})
    assert "already has -ldflags" in str(toolchains.layout_change(own))


def test_c_puts_functions_in_sections_sorted_by_name(project: config.Project) -> None:
    crun = project.target("crun")
    assert isinstance(crun.toolchain, CToolchain)
    change = toolchains.layout_change(crun)
    assert isinstance(change, toolchains.LayoutChange)
    assert dict(change.append) == {"CFLAGS": "-ffunction-sections",
                                   "LDFLAGS": "-Wl,--sort-section=name"}
    lld = with_toolchain(crun, ldflags="-fuse-ld=lld")
    assert "lld or mold" in str(toolchains.layout_change(lld))


def test_rust_shuffles_with_lld_or_sorts_with_gnu_ld(project: config.Project) -> None:
    youki = project.target("youki")
    assert isinstance(youki.toolchain, RustToolchain)
    new = toolchains.layout_change(youki, machine="x86_64")
    assert isinstance(new, toolchains.LayoutChange)
    assert dict(new.append) == {"RUSTFLAGS": "-C link-arg=-Wl,--shuffle-sections=.text*=1"}
    for tc, machine in ((with_toolchain(youki, version="1.85.0"), "x86_64"), (youki, "aarch64")):
        old = toolchains.layout_change(tc, machine=machine)
        assert isinstance(old, toolchains.LayoutChange)
        assert dict(old.append) == {"RUSTFLAGS": "-C link-arg=-Wl,--sort-section=name"}
    linker = with_toolchain(youki, rustflags="-C linker=clang")
    assert "choose a linker" in str(toolchains.layout_change(linker, machine="x86_64"))


def test_swift_has_none_and_the_run_falls_back(project: config.Project) -> None:
    swift = project.target("apple-container")
    assert not isinstance(swift.toolchain, GoToolchain | CToolchain | RustToolchain)
    assert "Swift" in str(toolchains.layout_change(swift))


def test_the_layout_build_has_its_own_cache_key(project: config.Project, tmp_path: Path) -> None:
    demo = project.target("demo")
    checkout = cast(source.Checkout, type("C", (), {"commit": demo.commit})())
    plan = BuildPlan(project, "demo", demo, checkout, Layout(tmp_path, tmp_path),
                     fingerprint={"kind": "go", "version": "go1.26.8"})
    change = toolchains.layout_change(demo)
    assert isinstance(change, toolchains.LayoutChange)
    assert plan.key([]) == plan.key([], None)  # a build without a layout keeps its key
    assert plan.key([], change) != plan.key([])
    reworded = toolchains.LayoutChange(change.method, "other words", change.append)
    assert plan.key([], reworded) == plan.key([], change)  # the flags decide, not the text


def ws(tmp_path: Path) -> Workspace:
    return Workspace(root=ROOT, matrix=ROOT / "matrix.yaml", builds=tmp_path / "builds",
                     reports=tmp_path / "reports")


def test_the_dry_run_plans_the_baseline_and_its_layout_build_only(
        project: config.Project, tmp_path: Path) -> None:
    _, lines, _ = pipeline.compare(project, ws(tmp_path), "demo",
                                   Switches(aa_layout=True, dry_run=True))
    variants = [line.split(":")[0] for line in lines if line.startswith("variant ")]
    assert variants == ["variant baseline", "variant baseline-layout"]  # no candidate
    (layout,) = [line for line in lines if "A/A layout build" in line]
    assert "-randlayout=1" in layout and "never gated" in layout


def test_an_aa_run_refuses_the_gate(project: config.Project, tmp_path: Path) -> None:
    for sw in (Switches(aa=True, gate=True), Switches(aa_layout=True, gate=True, dry_run=True)):
        with pytest.raises(ConfigError, match="--gate judges candidates"):
            pipeline.compare(project, ws(tmp_path), "demo", sw)


def doc(aa_build: dict[str, Any] | None) -> dict[str, Any]:
    man = {"built_commit": "a" * 40, "series": [], "fingerprint": {"version": "go1.26.8"},
           "artifacts": {"x": {"path": "x", "sha256": "b" * 64, "bytes": 1}}}
    return {"schema_version": 5, "tool": "t", "comparison": "fx", "target": "demo", "url": "u",
            "ref": "r", "commit": "c", "seed": 1, "aa": True,
            "settings": {"alpha": 0.05, "min_effect": 0.02}, "started_at": "s",
            "machine": {"cpu_model": "cpu", "cpu_count": 2, "kernel": "k", "load_avg": [0.1] * 3},
            "builds": {"baseline": man, "baseline-layout": {**man, "artifacts": {
                "x": {"path": "x", "sha256": "c" * 64, "bytes": 1}}}},
            **({"aa_build": aa_build} if aa_build is not None else {})}


LAYOUT = {"kind": "layout", "twin": "baseline-layout", "method": "go linker -randlayout=1",
          "why": "shuffled", "sha256_equal": False, "note": "sha256 differ: laid out differently"}


def test_the_reports_say_which_aa_a_run_did() -> None:
    res = results_mod.parse(doc(LAYOUT), "test")
    md, page = document.markdown(res), document.html(res)
    assert ("— **A/A run, layout** (the baseline against baseline-layout, a second build of it "
            "that differs only in code layout (go linker -randlayout=1: shuffled); sha256 differ: "
            "laid out differently)") in md
    assert "<b>A/A run, layout</b>" in page and "(baseline against itself" not in md
    old = results_mod.parse(doc(None), "test")  # a run before the record: as it always was
    assert "— **A/A run** (baseline against itself: the noise floor)" in document.markdown(old)
    assert "aa_build" not in old.dump() and res.dump()["aa_build"]["kind"] == "layout"
    assert results_mod.problems(res) == []
    stray = results_mod.parse({**doc({**LAYOUT, "twin": "nope"})}, "test")
    assert any(p.startswith("aa_build:") for p in results_mod.problems(stray))


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("nm") is None,
                    reason="needs gcc and nm")
def test_the_c_flags_reorder_the_code_and_keep_the_behaviour(project: config.Project,
                                                             tmp_path: Path) -> None:
    change = toolchains.layout_change(project.target("crun"))
    assert isinstance(change, toolchains.LayoutChange)
    src = tmp_path / "t.c"
    src.write_text("#include <stdio.h>\nint zeta(int x){return x*3;}\nint alpha(int x)"
                   "{return x+1;}\nint main(void){printf(\"%d\\n\", alpha(zeta(2)));return 0;}\n")
    env = change.apply({"CFLAGS": "-O2", "LDFLAGS": ""})
    order = {}
    for name, flags in (("a", ["-O2"]), ("b", [*env["CFLAGS"].split(), *env["LDFLAGS"].split()])):
        out = tmp_path / name
        subprocess.run(["gcc", *flags, "-o", str(out), str(src)], check=True)
        assert subprocess.run([str(out)], capture_output=True, text=True).stdout == "7\n"
        syms = subprocess.run(["nm", "-n", str(out)], capture_output=True, text=True).stdout
        order[name] = [s.split()[-1] for s in syms.splitlines() if s.split()[-1] in
                       ("alpha", "zeta")]
    assert order == {"a": ["zeta", "alpha"], "b": ["alpha", "zeta"]}
