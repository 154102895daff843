"""A scenario kind is one module: no other module of patchbench names a kind (a string equal to a
registered kind's name) or checks for one (``isinstance`` against a kind's result class, or an
import of one). The report formatters, the job summary and merge reach a kind through the
registry (``patchbench.scenarios.KINDS``) instead."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from patchbench import results, scenarios
from patchbench.config.scenarios import CONFIGS, AnyScenario, ScenarioConfig
from tests.support import REPO_ROOT

PACKAGE = REPO_ROOT / "patchbench"
REGISTRY = "patchbench/scenarios/__init__.py"
# Where a kind's name may appear for another reason, each with why.
ALLOWED_FILES = {
    # the result models (and the upgrades of older results versions) still live here; moving
    # each into its kind's module needs a registry-built union (issue 17, a later step)
    "patchbench/results.py": "the result models",
    # a bisect or history step is measured with one of the two kinds that give a time (command)
    # or a hang count (soak): it reads those two results by design
    "patchbench/bisect/judge.py": "bisect judges command and soak results",
    "patchbench/bisect/session.py": "bisect runs command and soak scenarios",
    "patchbench/bisect/record.py": "bisect records command and soak results",
    "patchbench/bisect/render.py": "bisect renders command and soak results",
}
# Every kind's config model lives in the config package (below the builds and runtimes a kind
# uses, which read the config): there a kind's name may appear only as the value of a model's
# ``kind`` field (its ``Literal[...]`` and default), which is what the union discriminates on.
# Any other mention there (a branch on a kind, an import or isinstance of a result) is a leak.
CONFIG_MODELS = "patchbench/config/scenarios.py"
ALLOWED = {
    ("patchbench/docker/images.py", "layers"): "the OCI image config's rootfs type",
    ("patchbench/measure/oci_image.py", "layers"): "the OCI image layout's words",
    ("patchbench/measure/launcher/__init__.py", "burst"): "the launcher binary's file name",
    ("patchbench/scenarios/ctrstress.py", "mounts"): "a census counts leftover mounts",
}


def own_modules() -> dict[str, str]:
    """kind name -> the path of the module that defines it."""
    out = {}
    for name, kind in scenarios.KINDS.items():
        path = Path(inspect.getfile(type(kind))).resolve().relative_to(REPO_ROOT)
        out[name] = path.as_posix()
    return out


def result_classes() -> dict[str, str]:
    """A kind's result class name -> its kind (the models whose ``kind`` defaults to it)."""
    out = {}
    for obj in vars(results).values():
        if isinstance(obj, type) and issubclass(obj, BaseModel) and "kind" in obj.model_fields:
            default = obj.model_fields["kind"].default
            if default in scenarios.KINDS:
                out[obj.__name__] = default
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


def kind_fields(tree: ast.AST) -> set[int]:
    """ids of the string constants in a class's ``kind: Literal[...] = Field(default=...)``."""
    out: set[int] = set()
    for cls in ast.walk(tree):
        if isinstance(cls, ast.ClassDef):
            for node in cls.body:
                if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                        and node.target.id == "kind"):
                    out |= {id(c) for c in ast.walk(node) if isinstance(c, ast.Constant)}
    return out


def leaks(source: str, path: str, kinds: dict[str, str], classes: dict[str, str]) -> list[str]:
    """Where ``source`` (the file at ``path``) names or checks for a kind not its own."""
    if path == REGISTRY or path in ALLOWED_FILES:
        return []
    own = {k for k, p in kinds.items() if p == path}
    tree = ast.parse(source)
    fields = field_names(tree)
    if path == CONFIG_MODELS:
        fields |= kind_fields(tree)
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value in kinds and node.value not in own and id(node) not in fields
                and (path, node.value) not in ALLOWED):
            out.append(f"{path}:{node.lineno}: the kind name {node.value!r}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2):
            for name in sorted(names_in(node.args[1]) & set(classes)):
                if classes[name] not in own:
                    out.append(f"{path}:{node.lineno}: isinstance against {name}")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in classes and classes[alias.name] not in own:
                    out.append(f"{path}:{node.lineno}: imports {alias.name}")
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
    (stress_class,) = [c for c, k in classes.items() if k == "stress"]
    source = (f"from patchbench.results import {stress_class}\n"
              "def f(sc, row):\n"
              "    if sc.kind == 'stress' or isinstance(sc, (int, results.%s)):\n"
              "        return row['stress'], {'stress': 1}, row.get('stress')\n") % stress_class
    assert sorted(leaks(source, "patchbench/report/html.py", kinds, classes)) == [
        f"patchbench/report/html.py:1: imports {stress_class}",
        f"patchbench/report/html.py:3: isinstance against {stress_class}",
        "patchbench/report/html.py:3: the kind name 'stress'",
    ]
    assert leaks(source, kinds["stress"], kinds, classes) == []  # in its own module


def test_the_config_models_name_a_kind_only_in_its_kind_field() -> None:
    kinds, classes = own_modules(), result_classes()
    source = ("class StressConfig(ScenarioConfig):\n"
              "    kind: Literal['stress'] = Field(default='stress')\n"
              "    def f(self, sc):\n"
              "        return sc.kind == 'stress'\n")
    assert leaks(source, CONFIG_MODELS, kinds, classes) == [
        f"{CONFIG_MODELS}:4: the kind name 'stress'"]
    assert leaks(source, "patchbench/config/other.py", kinds, classes) == [
        "patchbench/config/other.py:2: the kind name 'stress'",  # the default
        "patchbench/config/other.py:4: the kind name 'stress'",
    ]


def test_every_config_kind_has_a_registered_kind_and_back() -> None:
    assert list(CONFIGS) == list(scenarios.KINDS)  # same kinds, same order (the error lists them)
    for name, kind in scenarios.KINDS.items():
        assert kind.name == name
        assert kind.config is CONFIGS[name]
        assert CONFIGS[name].model_fields["kind"].default == name


def test_the_union_is_built_from_the_config_models() -> None:
    adapter: TypeAdapter[ScenarioConfig] = TypeAdapter(AnyScenario)
    members = typing.get_args(typing.get_args(AnyScenario)[0])  # Annotated[Model, Tag(kind)]
    assert [typing.get_args(m)[0] for m in members] == list(CONFIGS.values())
    assert [typing.get_args(m)[1].tag for m in members] == list(CONFIGS)
    sc = adapter.validate_python({"name": "x", "command": ["true"]})  # no kind: a command
    assert type(sc) is CONFIGS["command"]
    with pytest.raises(ValidationError, match="unknown scenario kind \\(known: "
                       + ", ".join(scenarios.KINDS) + "\\)"):
        adapter.validate_python({"kind": "nope", "name": "x"})
