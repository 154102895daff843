"""A measurement is never lost: the complete results of a run are written under
``builds/runs/<run>/`` (beside its raw hyperfine output) before anything goes to ``reports/``;
the report folder is rendered from them, now or later (``invoke report --from <run>``).

- ``new_run_dir`` gives every run its own directory (comparison, UTC time, pid and a random
  suffix; created exclusively, so two runs in the same second never share one).
- ``save_complete`` writes ``results.json`` and the list of attached files into the run
  directory; if even that fails, into the temporary directory, and says where.
- ``publish`` renders ``reports/<comparison>/<UTC time>[-n]/`` from the run directory: assembled
  aside, then renamed onto a name reserved with an exclusive mkdir (two runs finishing in the
  same second get distinct folders). Any failure is a ReportError (exit 18) naming where the
  complete results are and the command that renders them later.
- ``read_results`` reads a results.json as data from disk: not UTF-8, not JSON or the wrong
  shape is a ReportError, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from patchbench.errors import ReportError
from patchbench.files import write_json_atomic, write_text_atomic

RESULTS = "results.json"
ATTACHED = "attached.json"  # name in the report folder -> file relative to the run directory
Renderer = Callable[[dict[str, Any]], str]


def new_run_dir(runs: Path, comparison: str) -> Path:
    """A fresh, exclusively created run directory under ``runs``."""
    runs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    while True:
        path = runs / f"{comparison}-{stamp}-{os.getpid()}-{secrets.token_hex(2)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path


def save_complete(run_dir: Path, results: dict[str, Any], extra_files: dict[str, Path]) -> Path:
    """Write the complete results into ``run_dir``; return the results file. Extra files (charts,
    bundles) are copied in when they live elsewhere. When the run directory cannot be written, the
    results go to the temporary directory and ReportError names that file."""
    attached: dict[str, str] = {}
    try:
        for name, path in extra_files.items():
            src = Path(path)
            try:
                attached[name] = src.resolve().relative_to(run_dir.resolve()).as_posix()
            except ValueError:
                dest = run_dir / "attached" / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
                attached[name] = dest.relative_to(run_dir).as_posix()
        write_json_atomic(run_dir / ATTACHED, attached)
        write_json_atomic(run_dir / RESULTS, results)
        return run_dir / RESULTS
    except OSError as exc:
        fd, fallback = tempfile.mkstemp(prefix=f"patchbench-{run_dir.name}-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(results, f, indent=2)
        raise ReportError(
            f"could not write the results into {run_dir}: {exc.strerror or exc}; the complete "
            f"results were saved to {fallback}",
            hint=f"free space or fix {run_dir.parent}, then: invoke report --from {fallback}",
        ) from None


def _reserve(parent: Path, stamp: str) -> Path:
    """An empty directory ``parent/stamp[-n]`` made with an exclusive mkdir."""
    n = 1
    while True:
        final = parent / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            final.mkdir()
        except FileExistsError:
            n += 1
            continue
        return final


def publish(results_file: Path, reports: Path, render: Renderer,
            stamp: str | None = None) -> Path:
    """Render the report folder of the run whose complete results are ``results_file``."""
    run_dir = results_file.parent
    results = read_results(results_file)
    comparison = str(results["comparison"])
    later = f"invoke report --from {run_dir.name}"
    tmp: Path | None = None
    final: Path | None = None
    text = render_checked(render, results, results_file)
    try:
        parent = reports / comparison
        parent.mkdir(parents=True, exist_ok=True)
        final = _reserve(parent, stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=parent))
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700; reports are meant to be shared
        out = dict(results, run_dir=f"{comparison}/{final.name}")
        write_json_atomic(tmp / RESULTS, out)
        write_text_atomic(tmp / "report.md", text)
        write_json_atomic(tmp / "machine.json", results.get("machine", {}))
        for variant, man in (results.get("builds") or {}).items():
            write_json_atomic(tmp / f"manifest-{variant}.json", man)
        for name, rel in _attached(run_dir).items():
            shutil.copy2(run_dir / rel, tmp / name)
        os.replace(tmp, final)  # onto the empty reserved directory
        return final
    except OSError as exc:
        for junk in (tmp, final):
            if junk is not None:
                with contextlib.suppress(OSError):
                    shutil.rmtree(junk) if junk == tmp else junk.rmdir()
        full = " (the disk is full)" if exc.errno == errno.ENOSPC else ""
        raise ReportError(
            f"could not write the report folder under {reports}: {exc.strerror or exc}{full}; "
            f"the complete results are in {results_file}",
            hint=f"free space or fix the permissions of {reports}, then: {later}",
        ) from None


def _attached(run_dir: Path) -> dict[str, str]:
    path = run_dir / ATTACHED
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: not a mapping of file names")
    out: dict[str, str] = {}
    for name, rel in data.items():
        if (not isinstance(name, str) or not isinstance(rel, str) or "/" in name
                or name in ("", ".", "..") or rel.startswith("/") or ".." in rel.split("/")):
            raise ReportError(f"{path}: {name!r} -> {rel!r} is not a file of this run")
        out[name] = rel
    return out


def find_run(runs: Path, value: str) -> Path:
    """``--from``: a run directory name under builds/runs/, a run directory, or a results file."""
    candidates = [Path(value)]
    if "/" not in value and value not in ("", ".", ".."):
        candidates.insert(0, runs / value)
    for path in candidates:
        if path.is_dir() and (path / RESULTS).is_file():
            return path / RESULTS
        if path.is_file():
            return path
    names = sorted(p.parent.name for p in runs.glob(f"*/{RESULTS}")) if runs.is_dir() else []
    raise ReportError(
        f"--from {value}: no complete results there (looked for {RESULTS} in {candidates[0]})",
        hint=("runs with complete results: " + ", ".join(names[-5:])) if names else None,
    )


def read_results(path: Path, schema: int | None = None) -> dict[str, Any]:
    """A results.json as data from disk; ReportError for anything that is not one (or not of
    ``schema``, when given)."""
    target = path / RESULTS if path.is_dir() else path
    try:
        raw = target.read_bytes()
    except OSError as exc:
        raise ReportError(f"cannot read {target}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ReportError(f"{target}: not UTF-8 text (byte {exc.start})",
                          hint="the file is damaged or was not written by patchbench") from None
    except (ValueError, RecursionError) as exc:
        raise ReportError(f"{target}: not valid JSON ({exc})",
                          hint="the file is damaged or was not written by patchbench") from None
    if not isinstance(data, dict):
        raise ReportError(f"{target}: not a results document (the top level is not an object)")
    if not isinstance(data.get("comparison"), str) or "/" in data["comparison"] \
            or data["comparison"] in ("", ".", ".."):
        raise ReportError(f"{target}: 'comparison' is missing or not a plain name")
    if schema is not None and data.get("schema_version") != schema:
        raise ReportError(f"{target}: results schema {data.get('schema_version')!r} is not {schema}")
    return data


def render_checked(render: Renderer, results: dict[str, Any], where: Path) -> str:
    """Render data read from disk: a document of the wrong shape is a ReportError naming the
    file and the missing or mistyped key, not a traceback."""
    try:
        return render(results)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as exc:
        what = f"missing key {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise ReportError(f"{where}: not a results document this patchbench can render ({what})",
                          hint="the file is damaged or was not written by patchbench") from None
