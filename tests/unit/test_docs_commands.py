"""Every command line shown in the README's and docs' shell blocks parses with the command spec,
so a renamed command or option breaks a test, not a newcomer's first try. (The tutorial's three
commands are also run for real, on a fixture, by tests/integration/test_own_patch.py.)"""

from __future__ import annotations

import re
import shlex

import pytest

from patchbench.cli import spec
from tests.support import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"```(?:sh|bash|console|shell)\n(.*?)```", re.S)
FRONTS = (("python3 -m invoke ", "invoke"), ("invoke ", "invoke"), ("sudo -E invoke ", "invoke"),
          ("patchbench ", "patchbench"))


def command_lines() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for block in BLOCK.findall(doc.read_text()):
            for raw in block.splitlines():
                line = raw.strip().removeprefix("$ ")
                for prefix, _front in FRONTS:
                    if line.startswith(prefix):
                        out.append((f"{doc.relative_to(REPO_ROOT)}: {line}",
                                    line[len(prefix):]))
                        break
    return out


LINES = command_lines()


def test_the_docs_show_commands() -> None:
    assert len(LINES) >= 10
    assert any("series new" in rest for _, rest in LINES)
    assert any("comparison new" in rest for _, rest in LINES)


@pytest.mark.parametrize(("where", "rest"), LINES, ids=[w for w, _ in LINES])
def test_a_documented_command_line_parses(where: str, rest: str) -> None:
    args = shlex.split(rest, comments=True)
    if args[:1] == ["--project"]:
        args = args[2:]
    if not args or args[0] in ("--list", "--help", "test") or args[0].startswith("-"):
        return
    parsed = spec.parse(spec.command_of(args[0]), args[1:])
    assert parsed.command.name == args[0]
