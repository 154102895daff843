"""The templates shipped in the package (``patchbench/templates/<name>.yaml``): per runtime, a
target's recipe and that runtime's standard scenarios, each a valid matrix of one target and one
comparison taken from this repository's own matrix.yaml (a test keeps them in step). ``init``
and ``target new`` copy a template's target, ``comparison new --like NAME`` its scenarios;
``patchbench templates`` lists them and ``patchbench templates NAME`` prints one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from tabulate import tabulate

from patchbench import config
from patchbench.cli import editing, spec
from patchbench.errors import ConfigError
from patchbench.util.models import NAME_RE
from patchbench.util.suggest import suggest


@dataclass(frozen=True)
class Template:
    name: str
    text: str

    @property
    def summary(self) -> str:
        """The first sentence of its leading comment."""
        head = " ".join(line[1:].strip() for line in self.text.splitlines()
                        if line.startswith("#"))
        return head.split(". ")[0].split(";")[0].rstrip(".")

    def document(self) -> Any:
        """A fresh round-trip document (comments kept), to copy parts from."""
        return editing.yaml().load(self.text)

    def target(self) -> Any:
        doc = self.document()
        return next(iter(doc["targets"].values()))

    def comparison(self) -> Any:
        doc = self.document()
        return next(iter(doc["comparisons"].values()))

    def project(self) -> config.Project:
        """The template validated as a matrix (a bug of the package if it does not)."""
        return _validated(self.name)


def _folder() -> Any:
    return resources.files("patchbench") / "templates"


def names() -> list[str]:
    """The templates, in the order ``init --runtime`` lists them."""
    return list(spec.RUNTIMES)


@cache
def get(name: str) -> Template:
    if name not in spec.RUNTIMES:
        raise ConfigError(f"no template {name!r}" + suggest(name, list(spec.RUNTIMES)),
                          hint="the templates: " + ", ".join(spec.RUNTIMES)
                               + " (patchbench templates shows what each holds)")
    return Template(name, (_folder() / f"{name}.yaml").read_text(encoding="utf-8"))


@cache
def _validated(name: str) -> config.Project:
    with resources.as_file(_folder() / f"{name}.yaml") as path:
        return config.load(Path(path))


def _shape(t: config.Target) -> tuple[str, str | None, tuple[str, ...]]:
    return t.toolchain.kind, t.runtime, tuple(t.build.artifacts)


def of_target(target: config.Target) -> str | None:
    """The template a target was made from (the same toolchain kind, runtime and artifacts),
    or None."""
    for name in spec.RUNTIMES:
        t = next(iter(get(name).project().matrix.targets.values()))
        if _shape(t) == _shape(target):
            return name
    return None


def do_templates(name: str | None) -> int:
    """``patchbench templates [NAME]``."""
    if name:
        print(get(name).text, end="")
        return 0
    rows = []
    for n in names():
        project = get(n).project()
        t = next(iter(project.matrix.targets.values()))
        comp = next(iter(project.matrix.comparisons.values()))
        rows.append([n, t.toolchain.kind, t.runtime or "-", ", ".join(s.name for s in comp.scenarios),
                     get(n).summary])
    print(tabulate(rows, headers=["template", "toolchain", "runtime", "scenarios", "what"],
                   maxcolwidths=[10, 9, 10, 30, 40]))
    print("\nmake a project with one: patchbench init --runtime NAME --source DIR_OR_URL --ref REF"
          "\nprint one: patchbench templates NAME")
    return 0


def slug(text: str, fallback: str) -> str:
    """``text`` as a name of the matrix (a folder's name made one), else ``fallback``."""
    name = re.sub(r"[^a-z0-9._-]+", "-", text.lower().removesuffix(".git")).strip("-._")
    return name[:40] if name and re.fullmatch(NAME_RE, name[:40]) else fallback
