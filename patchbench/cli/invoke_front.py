"""invoke as a front door to patchbench's own parser (``cli.spec``).

invoke parses a task's options itself: ``invoke compare --help`` became the comparison
``'--help'``, ``--runz 5`` was invoke's exit 1, ``--rounds five`` a traceback (pyinvoke/invoke#982).
So the tasks here exist for ``invoke --list`` and ``invoke --help TASK``, and ``route`` makes
invoke hand any command line that starts with a patchbench command to ``cli.main.run``: the
same help, checks and exit codes as the ``patchbench`` console script."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from invoke.context import Context
from invoke.program import Program
from invoke.tasks import Task

from patchbench.cli import spec


def tasks(project: Path) -> dict[str, Task[Any]]:
    """One invoke task per command (their bodies run only if ``route`` was bypassed)."""
    out: dict[str, Task[Any]] = {}
    for cmd in spec.COMMANDS.values():
        def body(c: Context, *args: Any, _name: str = cmd.name, **kwargs: Any) -> None:
            from patchbench.cli import main

            main.run([_name, "--help"], project=str(project), prog="invoke")
        body.__doc__ = cmd.summary
        body.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter("c", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
        key = f"{cmd.name}_" if cmd.name in ("list",) else cmd.name.replace("-", "_")
        out[key] = Task(body, name=cmd.name)
    return out


def route(project: Path) -> None:
    """Make this process's invoke hand patchbench's commands to ``cli.main.run``."""
    original = Program.parse_tasks

    def parse_tasks(self: Program) -> None:
        argv = list(self.core.unparsed)
        if argv and argv[0] in spec.COMMANDS:
            from patchbench.cli import main

            main.run(argv, project=str(project), prog="invoke")  # exits
        help_on = self.args["help"].value if "help" in self.args else None
        if isinstance(help_on, str) and help_on in spec.COMMANDS:  # invoke --help compare
            from patchbench.cli import main

            main.run([help_on, "--help"], project=str(project), prog="invoke")  # exits
        original(self)

    Program.parse_tasks = parse_tasks  # type: ignore[method-assign]
