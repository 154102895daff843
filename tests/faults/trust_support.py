"""Helpers of the tests of saved runs and artifacts as untrusted input: a saved run to tamper with,
and the commands on saved runs run in-process through ``cli.guarded``, returning their exit code
and output."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from patchbench.cli import runs as cli_runs
from patchbench.cli.commands import guarded
from tests.support import DEMO_RUN

DEMO = DEMO_RUN / "results.json"
_DEMO_DATA: dict[str, Any] = json.loads(DEMO.read_text())


def demo() -> dict[str, Any]:
    """A fresh copy of a committed demo run (two cells, one comparison)."""
    return copy.deepcopy(_DEMO_DATA)


def save(folder: Path, data: Any) -> Path:
    """``data`` as ``folder/results.json`` (any JSON, valid or not)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(data if isinstance(data, str) else json.dumps(data))
    return folder


@contextlib.contextmanager
def _signals_kept() -> Iterator[None]:
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run(fn: Callable[[], int | None]) -> tuple[int, str, str]:
    """``fn`` through ``guarded`` (the one place errors become exit codes): (code, out, err)."""
    out, err = io.StringIO(), io.StringIO()
    with _signals_kept(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            guarded(fn)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:
            code = 0
    return code, out.getvalue(), err.getvalue()


def merge(args: list[str], reports: Path, *, out: str | None = None,
          summary: str | None = None) -> tuple[int, str, str]:
    return run(lambda: cli_runs.do_merge(args, reports=reports, out=out, summary=summary,
                                         gate=False, allow_differing_builds=True))


def diff(a: Path, b: Path, reports: Path) -> tuple[int, str, str]:
    return run(lambda: cli_runs.do_diff(str(a), str(b), reports))


def export(run_dir: Path, fmt: str, out: Path | None, reports: Path) -> tuple[int, str, str]:
    return run(lambda: cli_runs.do_export(str(run_dir), fmt, str(out) if out else None, reports))


def files_under(root: Path) -> set[Path]:
    """Every path under ``root`` (links not followed)."""
    return {p for p in root.rglob("*")} if root.exists() else set()
