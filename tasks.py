"""patchbench's invoke front end for this repository: ``invoke COMMAND ...`` is
``patchbench --project <this folder> COMMAND ...``. The commands, their options and their help are
declared once, in patchbench/cli/spec.py, and parsed there, so ``invoke compare --help``, a
mistyped option or ``--rounds five`` get patchbench's help and errors (exit 10), not invoke's.

    invoke compare demo            # the bundled offline demo
    invoke build --patch NAME      # baseline and one patch series from the pinned commit
    invoke compare NAME            # any comparison in matrix.yaml
    invoke COMMAND --help          # one command's usage, options and examples
"""

from __future__ import annotations

from pathlib import Path

from invoke import Context, task

from patchbench.cli import invoke_front

PROJECT = Path(__file__).resolve().parent  # this repository is the project of its own tasks

globals().update(invoke_front.tasks(PROJECT))  # one invoke task per command, for `invoke --list`
invoke_front.route(PROJECT)  # invoke hands each command line to patchbench's parser


@task
def test(c: Context) -> None:
    """Run the test suite (the same as: python -m pytest -q)."""
    c.run("python -m pytest -q", pty=False)
