"""Entry points of the commands on saved runs (``invoke export``, ``diff``, ``merge``): find the
runs, call the module that does the work, write and print. Errors are PatchbenchErrors, turned into
one line and an exit code by ``cli.guarded``."""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from patchbench.errors import ReportError
from patchbench.results import MAX_RUNS, Results
from patchbench.util.escape import terminal
from patchbench.util.files import write_json_atomic, write_text_atomic
from patchbench.util.ownership import check_output

T = TypeVar("T")

GATE_FAILED_EXIT_CODE = 4


def load(path: Path) -> Results:
    """The one place that reads a saved run: any results version, as the typed results, every
    comparison judged by the live rule (an older one's judged again from its raw samples:
    patchbench.analysis.rejudge)."""
    from patchbench import results, scenarios  # noqa: F401  (the registry of the kinds' results)
    from patchbench.analysis.rejudge import rejudge

    return rejudge(results.load(path))


def resolve_run(arg: str, reports: Path) -> Path:
    """A run folder given as a path, or as COMPARISON/STAMP under the reports directory."""
    for cand in (Path(arg), reports / arg):
        if (cand / "results.json").is_file() or (cand.is_file() and cand.name == "results.json"):
            return cand if cand.is_dir() else cand.parent
    raise ReportError(f"{arg}: no results.json there (nor under {reports})",
                      hint="give a run folder such as reports/demo/20261129T225457Z")


def _walk(path: Path) -> Iterator[Path]:
    """Every file below ``path``, never through a link: a linked folder is not entered and a
    linked ``results.json`` or ``exit-code-*`` file is refused (an artifact from a pull request
    may hold links to files of this machine)."""
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        dirnames.sort()
        for name in [*sorted(filenames), *dirnames]:
            if name == "results.json" or name.startswith("exit-code-"):
                f = Path(dirpath) / name
                if f.is_symlink():
                    raise ReportError(f"{f} is a symbolic link; saved runs and artifacts are "
                                      "read only from regular files, never through a link")
                if name in filenames:
                    yield f


def find_runs(arg: str, reports: Path) -> list[tuple[str, Path]]:
    """``[LABEL=]PATH``: a run folder, or a folder holding runs. A run is labelled LABEL, else by
    the subfolder of PATH it is in (the CI artifact's name, for ``runs/patchbench-hosted/...``),
    else by its place below PATH."""
    label, _, path_text = arg.rpartition("=") if "=" in arg else ("", "", arg)
    path = Path(path_text)
    if not path.exists() and (reports / path_text).exists():
        path = reports / path_text
    if (path / "results.json").is_symlink():
        raise ReportError(f"{path / 'results.json'} is a symbolic link; saved runs are read "
                          "only from regular files, never through a link")
    if (path / "results.json").is_file():
        return [(label or path.name, path)]
    found = sorted(f.parent for f in _walk(path) if f.name == "results.json") \
        if path.is_dir() else []
    if not found:
        raise ReportError(f"{path_text}: no saved run (results.json) there or below")
    if len(found) > MAX_RUNS:
        raise ReportError(f"{path_text}: {len(found)} saved runs; a merge takes at most "
                          f"{MAX_RUNS} (docs/security.md: limits)")
    if label and len(found) == 1:
        return [(label, found[0])]
    base = label or path.resolve().name
    rel = [p.relative_to(path) for p in found]
    tops = [r.parts[0] for r in rel]
    if len(set(tops)) == len(tops):  # one run per subfolder (per CI artifact): name it so
        return [(f"{label}/{t}" if label else t, p) for t, p in zip(tops, found, strict=True)]
    return [(f"{base}/{r}", p) for r, p in zip(rel, found, strict=True)]


def _read_code(f: Path) -> str:
    """An ``exit-code-*`` file's content: a few bytes, never through a link."""
    try:
        fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "unreadable (not a regular file)"
        raw = os.read(fd, 32)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    finally:
        os.close(fd)
    code = raw.decode("ascii", errors="replace").strip()
    return code if code.isdigit() and len(code) <= 3 else "unreadable (not an exit code)"


def failed_machines(args: list[str], reports: Path) -> list[str]:
    """Machines whose ``invoke compare`` ended in an error (not 0, not 4 = gate failed), from the
    ``exit-code-MACHINE`` files the CI workflow leaves beside its runs."""
    out = []
    for arg in args:
        path = Path(arg.rpartition("=")[2])
        path = path if path.exists() else reports / path
        for f in [f for f in _walk(path) if f.name.startswith("exit-code-")] \
                if path.is_dir() else []:
            code = _read_code(f)
            if code not in ("0", "4"):
                out.append(f"{f.name.removeprefix('exit-code-')}: invoke compare exited {code} "
                           "(an error, not a gate verdict; see that job's log)")
    return out


def _checked(what: str, fn: Callable[[], T]) -> T:
    """Work on runs read back from files: a value the renderers cannot use is a ReportError
    naming the runs, never an internal error (the loader refuses what it can name first)."""
    try:
        return fn()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError,
            StopIteration, RecursionError) as exc:
        detail = f"missing {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else exc
        raise ReportError(f"{what}: not runs this patchbench can render ({detail!s:.200})",
                          hint="a file is damaged or was not written by patchbench") from None


def do_export(run: str, fmt: str, out: str | None, reports: Path) -> int:
    from patchbench.runs.export import write_export

    run_dir = resolve_run(run, reports)
    results = load(run_dir)
    out_dir = Path(out) if out else run_dir / "export"
    check_output(out_dir, base=out_dir if out else run_dir)
    for path in _checked(f"export {run_dir}", lambda: write_export(results, fmt, out_dir)):
        print(terminal(path))
    return 0


def do_diff(run_a: str, run_b: str, reports: Path) -> int:
    from patchbench.runs.diff import diff_runs, render_diff

    a_dir, b_dir = resolve_run(run_a, reports), resolve_run(run_b, reports)
    a, b = load(a_dir), load(b_dir)
    text = _checked(f"diff {a_dir} {b_dir}",
                    lambda: render_diff(diff_runs(a, b, name_a=run_a, name_b=run_b)))
    print(terminal(text), end="")
    return 0


def parse_classes(given: Sequence[str]) -> dict[str, list[str]] | None:
    """``--class NAME=LABEL,LABEL`` values as class -> labels (None without any)."""
    out: dict[str, list[str]] = {}
    for item in given:
        name, sep, labels = item.partition("=")
        members = [x for x in labels.split(",") if x]
        if not sep or not name or not members or name in out:
            raise ReportError(f"--class {item!r}: not NAME=LABEL,LABEL,... of a new class",
                              hint="e.g. --class quiet=a,b --class busy=c")
        out[name] = members
    return out or None


def do_merge(args: list[str], *, reports: Path, out: str | None, summary: str | None,
             gate: bool, allow_differing_builds: bool, classes: Sequence[str] = ()) -> int:
    from patchbench.runs import merge
    from patchbench.runs.store import reserve
    from patchbench.runs.summary import append_text, summary_path

    if not args:
        raise ReportError("nothing to merge", hint="invoke merge DIR [--run PATH ...]")
    errors = failed_machines(args, reports)
    found = [run for arg in args for run in find_runs(arg, reports)]
    if len(found) > MAX_RUNS:
        raise ReportError(f"{len(found)} saved runs; a merge takes at most {MAX_RUNS} "
                          "(docs/security.md: limits)")
    loaded = [(label, load(path)) for label, path in found]
    where = "merge " + " ".join(args)
    named = parse_classes(classes)
    merged = _checked(where, lambda: merge.merge_runs(
        loaded, allow_differing_builds=allow_differing_builds, classes=named))
    merged.errors.extend(errors)
    text = _checked(where, lambda: merge.render_markdown(merged))
    html = _checked(where, lambda: merge.render_html(merged))
    data = _checked(where, lambda: merge.to_json(merged))
    summary_text = _checked(where, lambda: merge.summary_markdown(merged))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        if out:
            out_dir = Path(out)
            check_output(out_dir, base=out_dir)
            out_dir.mkdir(parents=True, exist_ok=True)
        else:  # the comparison is a plain name (the loader refuses any other)
            parent = reports / merged.comparison
            check_output(parent, base=reports)
            parent.mkdir(parents=True, exist_ok=True)
            out_dir = reserve(parent, f"merged-{stamp}")
        write_text_atomic(out_dir / "report.md", text)
        write_text_atomic(out_dir / "report.html", html)
        write_json_atomic(out_dir / "merged.json", data)
        # the job summary's text, also kept for a pull-request comment (the workflow posts it)
        write_text_atomic(out_dir / "summary.md", summary_text)
    except OSError as exc:
        full = " (the disk is full)" if exc.errno == errno.ENOSPC else ""
        raise ReportError(f"cannot write the merged report under {out or reports}: "
                          f"{exc.strerror or exc}{full}") from None
    print(terminal(text))
    print(terminal(f"saved: {out_dir}"))
    target = summary_path(summary, os.environ)
    if target is not None:
        append_text(target, summary_text)
        print(terminal(f"summary appended to {target}"), file=sys.stderr)
    if gate and (merged.gate_failed or merged.errors):
        print(terminal("gate: FAILED: " + "; ".join(
            [*(f"{r.label}: gate failed" for r in merged.runs if r.gate), *merged.errors])))
        return GATE_FAILED_EXIT_CODE
    return 0
