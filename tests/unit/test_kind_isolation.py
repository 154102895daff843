"""A scenario kind is one module: no other module of patchbench names a kind (a string equal to a
registered kind's name) or one of its classes (its config model, its result model and the records
they are made of: an import, an ``isinstance`` or any other mention). The config loader, the report
formatters, the job summary, merge and results.json's loader reach a kind through the registry
(``patchbench.scenarios``, which registers each kind's config model with
``patchbench.config.scenarios`` and its result model with ``patchbench.results``) instead. A kind
defined elsewhere (here, in this test) plugs in the same way."""

from __future__ import annotations

import ast
import copy
import inspect
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar, Literal

import pytest
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from patchbench import config, errors, gate, results, scenarios
from patchbench.config import scenarios as config_scenarios
from patchbench.config.scenarios import AnyScenario, ScenarioConfig, config_models
from patchbench.errors import ReportError
from patchbench.report.blocks import Block, View, text
from patchbench.runs import document
from patchbench.scenarios.base import ScenarioContext
from patchbench.scenarios.steps import ByCount, StepRule
from tests.support import REPO_ROOT, page_charts

PACKAGE = REPO_ROOT / "patchbench"
REGISTRY = "patchbench/scenarios/__init__.py"
# Where a kind's name may appear for another reason, each with why (never in bisect/: a kind's
# step rule says how a bisect or history step judges and draws its results).
ALLOWED = {
    ("patchbench/config/scenarios.py", "command"): "DEFAULT_KIND, a scenario without `kind`",
    ("patchbench/docker/images.py", "layers"): "the OCI image config's rootfs type",
    ("patchbench/measure/oci_image.py", "layers"): "the OCI image layout's words",
    ("patchbench/measure/launcher/__init__.py", "burst"): "the launcher binary's file name",
    ("patchbench/measure/hyperfine2.py", "command"): "hyperfine's JSON key of a call's command",
    ("patchbench/scenarios/ctrstress.py", "mounts"): "a census counts leftover mounts",
}


def own_modules() -> dict[str, str]:
    """kind name -> the path of the module that defines it."""
    out = {}
    for name, kind in scenarios.KINDS.items():
        path = Path(inspect.getfile(type(kind))).resolve().relative_to(REPO_ROOT)
        out[name] = path.as_posix()
    return out


def owns(module: str, path: str) -> bool:
    """Whether ``path`` is the kind module ``module`` or one of its helpers (``stress.py`` owns
    ``stress_signals.py``)."""
    return path == module or path.startswith(module.removesuffix(".py") + "_")


def own_files() -> dict[str, str]:
    """The file of every loaded module of this repository -> its path in the repository."""
    out = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file not in out and (real := Path(file).resolve()).is_relative_to(REPO_ROOT):
            out[file] = real.relative_to(REPO_ROOT).as_posix()
    return out


def result_classes() -> dict[str, str]:
    """A kind's class name -> its kind: its registered config and result models and every pydantic
    model its own modules define (the records they are made of)."""
    kinds = own_modules()
    out = {}
    ours = own_files()
    for name, model in results.result_models().items():
        out[model.__name__] = name
        out[scenarios.KINDS[name].config.__name__] = name
        for module in list(sys.modules.values()):
            path = ours.get(getattr(module, "__file__", None) or "")
            if path is None or not owns(kinds[name], path):
                continue
            for obj in vars(module).values():
                if (isinstance(obj, type) and issubclass(obj, BaseModel)
                        and obj.__module__ == module.__name__):
                    out[obj.__name__] = name
    return out


def field_names(tree: ast.AST) -> set[int]:
    """ids of the string constants that are field names: dict keys, subscripts, ``.get(KEY)``."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            out |= {id(k) for k in node.keys if k is not None}
        elif isinstance(node, ast.Subscript):
            out.add(id(node.slice))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and node.args):
            out.add(id(node.args[0]))
    return out


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def leaks(source: str, path: str, kinds: dict[str, str], classes: dict[str, str]) -> list[str]:
    """Where ``source`` (the file at ``path``) names or checks for a kind not its own."""
    if path == REGISTRY:
        return []
    own = {k for k, p in kinds.items() if owns(p, path)}
    foreign = {c for c, k in classes.items() if k not in own}
    if not (any(c in source for c in foreign)
            or any(f"'{k}'" in source or f'"{k}"' in source for k in kinds if k not in own)):
        return []  # it spells no foreign class and quotes no foreign kind: nothing to parse
    tree = ast.parse(source)
    fields = field_names(tree)
    out = []
    checked: set[int] = set()  # names already reported as part of an isinstance
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value in kinds and node.value not in own and id(node) not in fields
                and (path, node.value) not in ALLOWED):
            out.append(f"{path}:{node.lineno}: the kind name {node.value!r}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2):
            for name in sorted(names_in(node.args[1]) & foreign):
                out.append(f"{path}:{node.lineno}: isinstance against {name}")
            checked |= {id(n) for n in ast.walk(node.args[1])}
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in foreign:
                    out.append(f"{path}:{node.lineno}: imports {alias.name}")
        elif id(node) not in checked and (
                (isinstance(node, ast.Name) and node.id in foreign)
                or (isinstance(node, ast.Attribute) and node.attr in foreign)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            out.append(f"{path}:{node.lineno}: names {name}")
    return out


def test_no_kind_leaks_out_of_its_module() -> None:
    kinds, classes = own_modules(), result_classes()
    assert set(classes.values()) == set(kinds)  # every kind's result class was found
    found = []
    for file in sorted(PACKAGE.rglob("*.py")):
        path = file.relative_to(REPO_ROOT).as_posix()
        found += leaks(file.read_text(), path, kinds, classes)
    assert found == []


def test_the_check_finds_a_leak() -> None:
    kinds, classes = own_modules(), result_classes()
    stress_class = results.result_models()["stress"].__name__
    (record,) = [c for c, k in classes.items() if k == "stress" and c.endswith("Round")]
    source = (f"from patchbench.scenarios.stress import {stress_class}\n"
              "def f(sc, row):\n"
              "    if sc.kind == 'stress' or isinstance(sc, (int, stress.%s)):\n"
              "        return row['stress'], {'stress': 1}, row.get('stress')\n"
              "def g(sc: %s) -> list[stress.%s]:\n"
              "    return []\n") % (stress_class, stress_class, record)
    assert sorted(leaks(source, "patchbench/report/html.py", kinds, classes)) == [
        f"patchbench/report/html.py:1: imports {stress_class}",
        f"patchbench/report/html.py:3: isinstance against {stress_class}",
        "patchbench/report/html.py:3: the kind name 'stress'",
        *sorted([f"patchbench/report/html.py:5: names {record}",
                 f"patchbench/report/html.py:5: names {stress_class}"]),
    ]
    assert leaks(source, kinds["stress"], kinds, classes) == []  # in its own module
    assert leaks(source, "patchbench/scenarios/stress_signals.py", kinds, classes) == []  # helper
    # the records of every kind are found, also those of a kind's helper module
    assert {"SignalCount", record, "PhaseCell", "SoakCondition"} <= set(classes)


def test_a_kind_named_in_bisect_is_a_leak() -> None:
    """bisect/ reaches a kind through its step rule only: no file there is allowed a kind's name."""
    kinds, classes = own_modules(), result_classes()
    soak_class = results.result_models()["soak"].__name__
    source = (f"from patchbench.scenarios.soak import {soak_class}\n"
              "KINDS = ('command', 'soak')\n"
              "def axis(rec, res):\n"
              "    return 'hang rate' if isinstance(res, %s) else 'median (ms)'\n") % soak_class
    assert sorted(leaks(source, "patchbench/bisect/render.py", kinds, classes)) == [
        f"patchbench/bisect/render.py:1: imports {soak_class}",
        "patchbench/bisect/render.py:2: the kind name 'command'",
        "patchbench/bisect/render.py:2: the kind name 'soak'",
        f"patchbench/bisect/render.py:4: isinstance against {soak_class}",
    ]
    assert not [path for path, _ in ALLOWED if path.startswith("patchbench/bisect/")]


def test_a_config_model_outside_its_module_is_a_leak() -> None:
    kinds, classes = own_modules(), result_classes()
    assert {"StressConfig", "SignalCheck", "Phase", "CommandConfig"} <= set(classes)
    source = ("from patchbench.scenarios.stress import StressConfig\n"
              "class Other(ScenarioConfig):\n"
              "    kind: Literal['stress'] = Field(default='stress')\n"
              "    def f(self, sc):\n"
              "        return isinstance(sc, StressConfig)\n")
    assert sorted(leaks(source, "patchbench/config/scenarios.py", kinds, classes)) == [
        "patchbench/config/scenarios.py:1: imports StressConfig",
        "patchbench/config/scenarios.py:3: the kind name 'stress'",  # no allowance for kind fields
        "patchbench/config/scenarios.py:5: isinstance against StressConfig",
    ]
    assert leaks(source, kinds["stress"], kinds, classes) == []  # in its own module


def test_every_config_kind_has_a_registered_kind_and_back() -> None:
    configs = config_models()
    assert list(configs) == list(scenarios.KINDS)  # same kinds, same order (the error lists them)
    assert list(results.result_models()) == list(scenarios.KINDS)
    for name, kind in scenarios.KINDS.items():
        assert kind.name == name
        assert kind.config is configs[name]
        assert configs[name].model_fields["kind"].default == name
        # a kind's config model lives in its own module too
        assert kind.config.__module__ == type(kind).__module__
        assert results.result_models()[name] is kind.result
        assert kind.result.model_fields["kind"].default == name
        # a kind's result model lives in its own module
        assert kind.result.__module__ == type(kind).__module__


def test_the_union_is_built_from_the_config_models() -> None:
    adapter: TypeAdapter[ScenarioConfig] = TypeAdapter(AnyScenario)
    configs = config_models()
    sc = adapter.validate_python({"name": "x", "command": ["true"]})  # no kind: a command
    assert type(sc) is configs[config_scenarios.DEFAULT_KIND]
    for name, model in configs.items():  # each kind's scenarios are validated as its model
        with pytest.raises(ValidationError) as exc:
            adapter.validate_python({"kind": name, "name": "x", "nope": 1})
        assert any(e["loc"][:1] == (name,) for e in exc.value.errors())
        assert model.model_fields["kind"].default == name
    with pytest.raises(ValidationError, match="unknown scenario kind \\(known: "
                       + ", ".join(scenarios.KINDS) + "\\)"):
        adapter.validate_python({"kind": "nope", "name": "x"})


def test_no_registered_config_is_a_bug(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """config/ imports no kind: loading a matrix before patchbench.scenarios is imported is a bug
    (exit 3: not a PatchbenchError) naming what to import, not a user's error."""
    (tmp_path / "matrix.yaml").write_text("version: 1\ntargets: {}\ncomparisons: {}\n")
    monkeypatch.setattr(config_scenarios, "_MODELS", {})
    with pytest.raises(RuntimeError, match=r"no scenario kind is registered.*import "
                       r"patchbench\.scenarios") as exc:
        config.load(tmp_path / "matrix.yaml")
    assert not isinstance(exc.value, errors.PatchbenchError)
    with pytest.raises(RuntimeError, match="no scenario kind is registered"):
        # the union is built on first use (the models defer their schemas: util/models.py)
        TypeAdapter(AnyScenario).validate_python({"name": "x"})


# --- a kind defined outside patchbench plugs in through the registry ------------------------


class ToyConfig(ScenarioConfig):
    kind: Literal["toy"] = Field(default="toy")
    size: int = 3


class ToyRecord(results.Record):
    size: int
    left: list[str] = Field(default_factory=list)


class ToyResult(results.ScenarioResult):
    kind: Literal["toy"] = "toy"
    record: ToyRecord
    sizes: list[int] = Field(default_factory=list)

    # results version 4 had ``size`` at the top; version 5 keeps it in ``record``
    upgrades: ClassVar[dict[int, results.ScenarioUpgrade]] = {
        4: lambda sc: {**{k: v for k, v in sc.items() if k != "size"},
                       "record": {"size": sc["size"]}}}


class ToyKind:
    name = "toy"
    config: ClassVar[type[ScenarioConfig]] = ToyConfig
    result: ClassVar[type[results.ScenarioResult]] = ToyResult
    step: ClassVar[StepRule | None] = None  # bisect and history do not judge it (unless a test says)

    def plan(self, ctx: ScenarioContext[ToyConfig]) -> list[str]:
        return [f"  toy of {ctx.scenario.size}"]

    def run(self, ctx: ScenarioContext[ToyConfig]) -> tuple[ToyResult, list[str]]:
        raise AssertionError("not run here")

    def gate(self, result: ToyResult) -> list[str]:
        return [f"{result.name}: left {', '.join(result.record.left)}"] if result.record.left else []

    def blocks(self, result: ToyResult, view: View) -> list[Block]:
        return [text(f"The toy was of size {result.record.size}.")] if view in (
            View.REPORT, View.BRIEF, View.PAGE) else []


@pytest.fixture
def toy() -> Iterator[ToyKind]:
    kind = ToyKind()
    scenarios.register(kind)
    try:
        yield kind
    finally:
        scenarios.unregister(kind.name)
    assert "toy" not in results.result_models() and "toy" not in config_models()


def a_run(*extra: dict[str, object], version: int = results.SCHEMA_VERSION) -> dict[str, object]:
    """A committed run (through the loader) with more scenario entries, as results.json holds it."""
    data = results.load(REPO_ROOT / "reports/demo/20261129T225457Z").dump()
    data["scenarios"] = [*data["scenarios"], *copy.deepcopy(list(extra))]
    data["schema_version"] = version
    return data


TOY = {"name": "toy-1", "description": "", "command": "toy", "runs": 1, "rounds": 1,
       "warmup": 0, "rate": None, "order": [], "kind": "toy",
       "record": {"size": 3, "left": ["a mount"]}, "sizes": [1, 2]}


def test_a_kind_defined_in_a_test_registers_and_round_trips(toy: ToyKind) -> None:
    assert results.result_models()["toy"] is ToyResult and scenarios.KINDS["toy"] is toy
    data = a_run(TOY)
    res = results.parse(json.loads(json.dumps(data)), "toy run", untrusted=True)
    sc = res.scenarios[-1]
    assert isinstance(sc, ToyResult) and sc.record == ToyRecord(size=3, left=["a mount"])
    assert res.dump() == data  # dumped exactly as given, key order too
    assert json.dumps(res.dump()) == json.dumps(data)
    # the rest of patchbench reaches it through the registry: its gate rule, its report
    assert "toy-1: left a mount" in gate.failures(res)
    assert "The toy was of size 3." in document.markdown(res)
    # its own step of reading an older results version
    old = {**{k: v for k, v in TOY.items() if k != "record"}, "size": 5}
    back = results.parse(a_run(old, version=4), "toy v4").scenarios[-1]
    assert isinstance(back, ToyResult) and back.record.size == 5
    # its config model, defined here too, is in the union a comparison's scenarios are read with
    toy_sc = TypeAdapter(AnyScenario).validate_python({"kind": "toy", "name": "t", "size": 4})
    assert isinstance(toy_sc, ToyConfig) and toy_sc.size == 4
    comp = config.Comparison.model_validate({"target": "t", "candidates": {"c": ["p"]},
                                             "scenarios": [{"kind": "toy", "name": "t"}]})
    assert isinstance(comp.scenarios[0], ToyConfig)
    with pytest.raises(ValidationError, match=r"scenarios\.0\.toy\.size"):
        config.Comparison.model_validate({"target": "t", "candidates": {"c": ["p"]},
                                          "scenarios": [{"kind": "toy", "name": "t", "size": "x"}]})


def test_a_damaged_entry_of_a_registered_kind_names_the_field(toy: ToyKind) -> None:
    bad = {**TOY, "record": {"size": "3"}}  # a string where a number belongs
    with pytest.raises(ReportError, match=r"scenarios\.1\.toy\.record\.size: Input should be"):
        results.parse(a_run(bad), "toy run", untrusted=True)


def test_an_unknown_kind_is_refused_naming_the_entry() -> None:
    assert "toy" not in results.result_models()
    with pytest.raises(ReportError, match=r"toy run: scenarios\.1: kind: not a scenario kind "
                       r"this patchbench knows \(known: " + ", ".join(scenarios.KINDS) + r"\)"):
        results.parse(a_run(TOY), "toy run", untrusted=True)


def test_no_registered_kind_is_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """results.py imports no kind: reading results before patchbench.scenarios is imported is a
    bug (exit 3: not a PatchbenchError), not a damaged file."""
    monkeypatch.setattr(results, "_REGISTRY", results._Registry())
    try:
        with pytest.raises(RuntimeError, match="no scenario kind is registered") as exc:
            results.Results.model_rebuild(force=True)
        assert not isinstance(exc.value, ReportError)
    finally:
        monkeypatch.undo()
        results.Results.model_rebuild(force=True)
    assert results.parse(a_run(), "run").scenarios


def test_a_wrong_registration_is_a_bug(toy: ToyKind) -> None:
    class OtherToy(ToyResult):
        pass

    with pytest.raises(RuntimeError, match="two result models for the kind 'toy'"):
        results.register("toy", OtherToy)
    with pytest.raises(RuntimeError, match="does not default to it"):
        results.register("other", ToyResult)
    with pytest.raises(RuntimeError, match="two config models for the kind 'toy'"):
        config_scenarios.register_config("toy", type("OtherConfig", (ToyConfig,), {}))
    with pytest.raises(RuntimeError, match=r"config model ToyConfig .* does not default to it"):
        config_scenarios.register_config("other", ToyConfig)


# --- bisect and history reach a kind through its step rule ------------------------------------


GOOD, BAD = "a" * 40, "b" * 40


def toy_counts(result: results.ScenarioResult, variant: str) -> tuple[int, int]:
    """The toy's events of a variant: the entries of its record's ``left`` naming the variant, of
    ``size`` runs."""
    assert isinstance(result, ToyResult)
    return result.record.left.count(variant), result.record.size


def test_bisect_judges_and_draws_a_kind_by_its_step_rule(toy: ToyKind,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from patchbench.bisect import judge, record, render
    from patchbench.bisect.session import Measurement

    raw = {**TOY, "record": {"size": 10, "left": [BAD[:12]] * 9}}
    measured = {"label": "ends", "commits": [GOOD, BAD], "factor": 1, "seed": 0, "result": raw}
    with pytest.raises(ValidationError, match="kind 'toy': not a scenario kind a bisect step"):
        record.MeasurementRec.model_validate(measured)  # the toy has no step rule yet
    monkeypatch.setattr(ToyKind, "step", ByCount(toy_counts, measures="leftovers",
                                                 axis="leftover rate"))
    m = record.MeasurementRec.model_validate(measured)
    assert isinstance(m.result, ToyResult)  # read as the kind's own model, and dumped whole
    assert m.model_dump(mode="json")["result"] == raw
    ends = Measurement("ends", [GOOD, BAD], 1, 0, m.result, [])
    pair = judge.pair(ends, GOOD, BAD, 0.05, 0.02)
    assert pair.differs is True and pair.text.startswith("leftovers 9 of 10 vs 0 of 10, Fisher p")
    assert judge.pair(ends, GOOD, GOOD, 0.05, 0.02).differs is False
    assert judge.value(ends, BAD) == judge.Value("leftovers 9 of 10", hangs=9, runs=10)
    commit = {"sha": GOOD, "subject": "good", "author_date": "2026-11-01"}
    rec = record.Bisect(tool="t", target="t", comparison="c", scenario="toy-1",
                        scenario_kind="toy", alpha=0.05, min_effect=0.02, budget=1, seed=0,
                        started_at="", good=record.CommitRec(**commit),
                        bad=record.CommitRec(**{**commit, "sha": BAD, "subject": "bad"}),
                        chain=2, expected_steps=0, outcome="no-difference", measurements=[m])
    points, axis = render.bisect_points(rec)
    assert axis == "leftover rate"
    assert [(p.y, p.title) for p in points] == [
        (0.0, f"{GOOD[:12]} good: leftovers 0 of 10"), (0.9, f"{BAD[:12]} bad: leftovers 9 of 10")]
    assert "leftover rate" in page_charts(render.html(rec))


def test_bisect_refuses_a_kind_without_a_step_rule_naming_those_with_one(toy: ToyKind) -> None:
    from patchbench.bisect.session import scenario_of

    comp = config.Comparison.model_validate({"target": "t", "candidates": {"c": ["p"]},
                                             "scenarios": [{"kind": "toy", "name": "t"}]})

    class Project:
        def comparison(self, name: str) -> config.Comparison:
            return comp

        def target_of(self, comp: config.Comparison) -> config.NamedTarget:
            from types import SimpleNamespace

            return config.NamedTarget("t", SimpleNamespace(runtime=None))  # type: ignore[arg-type]

    with pytest.raises(errors.ConfigError, match="a toy scenario cannot be bisected") as exc:
        scenario_of(Project(), "c:t")  # type: ignore[arg-type]
    judged = [f"{name} ({kind.step.measures})" for name, kind in scenarios.KINDS.items()
              if kind.step is not None]
    assert judged and exc.value.hint == "the kinds a step judges: " + ", ".join(judged)
