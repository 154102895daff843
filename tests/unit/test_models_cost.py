"""A model's empty default is made by a Python function, never by a builtin (issue 21: the
tool's own cost): pydantic reads each default factory's signature when it builds a model, and a
builtin's is parsed from its text with the tokenizer, whose pattern alone takes 13 ms to compile."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from pydantic import BaseModel

import patchbench
from patchbench.util.models import new_dict, new_list


def _every_model() -> list[type[BaseModel]]:
    for mod in pkgutil.walk_packages(patchbench.__path__, "patchbench."):
        if not mod.name.endswith(".__main__"):  # that one runs the command line
            importlib.import_module(mod.name)
    seen: list[type[BaseModel]] = []
    todo = list(BaseModel.__subclasses__())
    while todo:
        model = todo.pop()
        if model not in seen:
            seen.append(model)
            todo.extend(model.__subclasses__())
    return [m for m in seen if m.__module__.startswith("patchbench")]


def test_no_model_field_takes_a_builtin_as_its_default_factory() -> None:
    models = _every_model()
    assert len(models) > 50  # every kind's config, the matrix, the results, the bisect records
    builtin = [f"{m.__module__}.{m.__qualname__}.{name}: {field.default_factory!r}"
               for m in models for name, field in m.model_fields.items()
               if field.default_factory is not None
               and (inspect.isbuiltin(field.default_factory)
                    or isinstance(field.default_factory, type))]
    assert builtin == []


def test_the_factories_make_a_new_value_each_time() -> None:
    a, b = new_list(), new_list()
    a.append(1)
    assert b == [] and a is not b
    c, d = new_dict(), new_dict()
    c["k"] = 1
    assert d == {} and c is not d
    assert inspect.signature(new_list).parameters == {}  # what pydantic asks of a factory
