"""A measurement is never lost: the complete results of a run are written under
``builds/runs/<run>/`` before anything goes to ``reports/``, and the report folder is rendered
from them, now or later (``invoke report --from <run>``). ``publish`` assembles the folder aside
and renames it onto a name reserved exclusively, so two runs finishing in the same second get
two folders; any failure is exit 18 naming where the complete results are. docs/safety.md,
class 5."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from patchbench import results as results_mod
from patchbench.errors import ReportError
from patchbench.results import Results
from patchbench.util.files import write_json_atomic, write_text_atomic
from patchbench.util.ownership import check_output

RESULTS = "results.json"
ATTACHED = "attached.json"  # name in the report folder -> file relative to the run directory


def save_complete(run_dir: Path, results: Results, extra_files: dict[str, Path]) -> Path:
    """Write the complete results into ``run_dir``; return the results file. Extra files (charts,
    bundles) are copied in when they live elsewhere. When the run directory cannot be written, the
    results go to the temporary directory and ReportError names that file."""
    data = results.dump()
    attached: dict[str, str] = {}
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
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
        write_json_atomic(run_dir / RESULTS, data)
        return run_dir / RESULTS
    except OSError as exc:
        fd, fallback = tempfile.mkstemp(prefix=f"patchbench-{run_dir.name}-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2)
        raise ReportError(
            f"could not write the results into {run_dir}: {exc.strerror or exc}; the complete "
            f"results were saved to {fallback}",
            hint=f"free space or fix {run_dir.parent}, then: invoke report --from {fallback}",
        ) from None


def load_run(path: Path) -> Results:
    """A saved run (its folder or its results.json), of any results version patchbench knows,
    every comparison judged by the live rule (patchbench.analysis.rejudge)."""
    from patchbench.analysis.rejudge import rejudge

    return rejudge(results_mod.load(path))


def latest_run(reports: Path, comparison: str | None) -> Path:
    dirs = [p.parent for p in reports.glob(("*" if comparison is None else comparison)
                                              + "/*/results.json")]
    if not dirs:
        raise ReportError(f"no saved runs under {reports}" +
                          (f"/{comparison}" if comparison else ""))
    return max(dirs, key=lambda p: p.name)


def reserve(parent: Path, stamp: str) -> Path:
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


def publish(results_file: Path, reports: Path, stamp: str | None = None) -> Path:
    """Render the report folder of the run whose complete results are ``results_file``."""
    from patchbench.gate import failures
    from patchbench.runs import document

    run_dir = results_file.parent
    # not UTF-8, not JSON, wrong shape: ReportError; an earlier rule's run: judged by the live one
    res = load_run(results_file)
    comparison = res.comparison
    later = f"invoke report --from {run_dir.name}"
    text = render_checked(lambda r: document.markdown(
        r, gate=r.gate_reasons(failures) if r.gate else None), res, results_file)
    html = render_checked(lambda r: document.html(r, gate=r.gate_reasons(failures)), res,
                          results_file)
    tmp: Path | None = None
    final: Path | None = None
    try:
        parent = reports / comparison
        check_output(parent, base=reports)  # no link planted below reports/, no foreign folder
        parent.mkdir(parents=True, exist_ok=True)
        final = reserve(parent, stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=parent))
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700; reports are meant to be shared
        res.run_dir = f"{comparison}/{final.name}"
        write_json_atomic(tmp / RESULTS, res.dump())
        write_text_atomic(tmp / "report.md", text)
        write_text_atomic(tmp / "report.html", html)
        write_json_atomic(tmp / "machine.json", res.machine)
        for variant, man in res.builds.items():
            write_json_atomic(tmp / f"manifest-{variant}.json", man)
        for name, rel in _attached(run_dir).items():
            src = run_dir / rel
            if src.is_symlink() or run_dir.resolve() not in src.resolve().parents:
                raise ReportError(f"{run_dir / ATTACHED}: {name} -> {rel} is a link or leads "
                                  "out of the run folder; not copied")
            shutil.copy2(src, tmp / name, follow_symlinks=False)
        os.replace(tmp, final)  # onto the empty reserved directory
        return final
    except BaseException as exc:  # Ctrl-C too: no partial folder, no empty reserved name
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if final is not None:
            with contextlib.suppress(OSError):
                final.rmdir()
        if not isinstance(exc, OSError):
            raise
        full = " (the disk is full)" if exc.errno == errno.ENOSPC else ""
        raise ReportError(
            f"could not write the report folder under {reports}: {exc.strerror or exc}{full}; "
            f"the complete results are in {results_file}",
            hint=f"free space or fix the permissions of {reports}, then: {later}",
        ) from None


def _attached(run_dir: Path) -> dict[str, str]:
    path = run_dir / ATTACHED
    if not path.is_file() and not path.is_symlink():
        return {}
    data = results_mod.read_json(path, limit=1 << 20)  # never through a link, bounded
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


def render_checked(render: Callable[[Results], str], res: Results, where: Path) -> str:
    """Render data read from disk: a document whose values cannot be rendered (a zero median,
    a comparison naming a cell that is not there) is a ReportError naming the file."""
    try:
        return render(res)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError,
            StopIteration, RecursionError) as exc:
        what = f"missing {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise ReportError(f"{where}: not a results document this patchbench can render ({what})",
                          hint="the file is damaged or was not written by patchbench") from None
