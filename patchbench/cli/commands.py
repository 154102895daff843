"""Entry points behind tasks.py: build the workspace, call the pipeline, print results on stdout,
and the one place where errors are caught and turned into one line and an exit code."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from patchbench.errors import BUG_EXIT_CODE, INTERRUPTED_EXIT_CODE, PatchbenchError
from patchbench.util import command, gcpause
from patchbench.util.escape import terminal
from patchbench.util.workspace import Switches, Workspace

if TYPE_CHECKING:
    from patchbench import build
    from patchbench.config import Project

# The pipeline (numpy, GitPython, the build and scenario modules) is imported by the commands
# that need it, so `invoke list` and `invoke --help` start fast.

GATE_FAILED_EXIT_CODE = 4


def load_project(ws: Workspace, *, only: str | None = None,
                 pending_series: frozenset[str] = frozenset()) -> Project:
    """``pipeline.load`` (the matrix validated) with the pipeline's imports, the garbage
    collector held off meanwhile (util/gcpause.py)."""
    with gcpause.starting():
        from patchbench import pipeline

        return pipeline.load(ws, only=only, pending_series=pending_series)


def _source_overrides(pairs: list[str], environ: dict[str, str]) -> dict[str, str]:
    if not pairs and not any(k.startswith("PATCHBENCH_SOURCE_") for k in environ):
        return {}  # without pydantic (patchbench.config): `list` and `--help` start fast
    from patchbench import config

    return config.parse_source_overrides(pairs, environ)


def workspace(*, sources: Iterable[str] = (), project: str | None = None, matrix: str | None = None,
              builds: str | None = None, reports: str | None = None,
              verbose: bool = False, backend: str | None = None) -> Workspace:
    """Paths from the options, else PATCHBENCH_MATRIX / _BUILDS / _REPORTS, else beside the
    matrix; the matrix is PROJECT/matrix.yaml, the project --project, else PATCHBENCH_PROJECT, else
    the current directory; --source over PATCHBENCH_SOURCE_<TARGET>."""
    env = os.environ
    verbose = verbose or env.get("PATCHBENCH_VERBOSE", "") not in ("", "0")
    command.show_commands(verbose)
    project_dir = Path(project or env.get("PATCHBENCH_PROJECT") or Path.cwd())
    matrix_path = Path(matrix or env.get("PATCHBENCH_MATRIX") or project_dir / "matrix.yaml").resolve()
    root = matrix_path.parent
    return Workspace(
        root=root, matrix=matrix_path,
        builds=Path(builds or env.get("PATCHBENCH_BUILDS") or root / "builds").resolve(),
        reports=Path(reports or env.get("PATCHBENCH_REPORTS") or root / "reports").resolve(),
        sources=_source_overrides(list(sources), dict(env)),
        backend=backend or env.get("PATCHBENCH_BACKEND") or None,
        source_flags=frozenset(p.partition("=")[0] for p in sources), verbose=verbose,
    )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def guarded(fn: Callable[[], int | None], *, fast_exit: bool = False) -> None:
    """Run ``fn``; the only place errors are caught. Exit codes: see patchbench.errors.
    SIGTERM and SIGHUP (a cancelled CI job, a closed terminal) unwind like Ctrl-C, so every
    ``finally`` runs: child process groups are killed and nothing half-written is kept.
    ``fast_exit`` (the command line's): end the process as soon as the exit handlers have run and
    the output is flushed (``end_process``), not through SystemExit."""
    try:
        _guarded(fn)
    except SystemExit as exc:
        if not fast_exit:
            raise
        end_process(exc.code)


def _guarded(fn: Callable[[], int | None]) -> None:
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    try:
        code = fn() or 0
    except PatchbenchError as exc:  # names from files in the message: no escape sequence
        print(terminal(exc.render()), file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("patchbench: interrupted; nothing half-written was kept", file=sys.stderr)
        sys.exit(INTERRUPTED_EXIT_CODE)
    except BrokenPipeError:  # `invoke report | head`: the reader left; end quietly
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), sys.stdout.fileno())
        sys.exit(0)
    except Exception:  # a bug: show it in full
        traceback.print_exc()
        print("patchbench: internal error (a bug); please report it with the trace above",
              file=sys.stderr)
        sys.exit(BUG_EXIT_CODE)
    sys.exit(code)


def end_process(code: object) -> None:
    """Exit with ``code`` (as SystemExit's) without the interpreter's teardown (freeing every
    module and object: about half a second after a comparison): the exit handlers run first
    (a build engine's close, temporary directories), then stdout and stderr are flushed. With
    another non-daemon thread still running, the usual exit (which waits for it) instead."""
    import atexit
    import threading

    status = 0 if code is None else code if isinstance(code, int) else 1
    if isinstance(code, str):
        print(code, file=sys.stderr)
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader that left, a closed stream
            stream.flush()
    os._exit(status)


def _after_compare() -> None:
    """What do_compare prints the results with, imported during the warmups (util/idle.py)."""
    from patchbench import gate, report  # noqa: F401
    from patchbench.runs import summary  # noqa: F401


def do_compare(ws: Workspace, name: str, sw: Switches, summary_file: str | None = None) -> int:
    from patchbench.util import idle

    project = load_project(ws, only=name)
    from patchbench import pipeline

    if not sw.dry_run:
        idle.later(_after_compare)
    try:
        results, plan_lines, run_dir = pipeline.compare(project, ws, name, sw)
    finally:
        idle.clear()  # taken by a window or done by the pipeline; else (an error) not needed
    if results is None or run_dir is None:
        print("\n".join(plan_lines))
        return 0
    from patchbench import gate, report
    from patchbench.report import markdown
    from patchbench.report.blocks import Image
    from patchbench.runs import summary
    from patchbench.scenarios import KINDS

    print()
    if results.aa_build is not None:  # which A/A, and how its two builds differ
        from patchbench.report.numbers import fmt_aa

        label, why = fmt_aa(results.aa_build)
        print(f"A/A run, {label}: {why}\n")
    if report.summary_rows(results):
        print(report.summary_table(results))
    for line in markdown.stopping_text(results):  # --until-ci, --budget: rounds, MDE reached
        print(line)
    for sc in results.scenarios:  # each kind's own sections of report.md (no chart files)
        shown = markdown.blocks([b for b in KINDS[sc.kind].report(sc, details=False)
                                 if not isinstance(b, Image)])
        if shown:
            print(f"\n{sc.name}:\n" + "\n\n".join(shown))
    for w in results.warnings:
        print(f"warning: {w}")
    print(f"\nsaved: {run_dir}")
    failed = gate.failures(results, allow_inconclusive=sw.gate_allow_inconclusive)
    target = summary.summary_path(summary_file, os.environ)
    if target is not None:  # a CI job page ($GITHUB_STEP_SUMMARY) or --summary FILE
        summary.append_summary(results, failed if sw.gate else None, target)
    if sw.gate:
        if failed:
            print("gate: FAILED\n" + "\n".join(f"  {f}" for f in failed))
            return GATE_FAILED_EXIT_CODE
        print("gate: passed (no candidate slower" + ("" if sw.gate_allow_inconclusive else
              ", inconclusive or withheld") + "; every check passed)")
        if sw.gate_allow_inconclusive:
            for w in gate.let_through(results):
                print(f"  allowed (--gate-allow-inconclusive): {w}")
    return 0


def do_build(ws: Workspace, patch: str | None, target: str | None) -> int:
    project = load_project(ws)
    from patchbench import pipeline
    from patchbench.build import Variant

    built: list[build.Built] = []
    if patch:
        built = pipeline.build_for_patch(project, ws, patch)
    else:
        for name in [target] if target else list(project.matrix.targets):
            built += pipeline.build_variants(project, ws, name, [Variant("baseline", ())], [])
    from patchbench.util.tables import tabulate

    rows = [[b.manifest["target"], b.variant.name, b.manifest["built_commit"][:12],
             "cached" if b.cached else f"built in {b.manifest['duration_s']:.1f} s",
             ", ".join(f"{k} {v['sha256'][:12]}" for k, v in b.manifest["artifacts"].items()),
             str(b.path)] for b in built]
    print(tabulate(rows, headers=["target", "variant", "commit", "build", "artifacts", "path"]))
    return 0


def do_patch_check(ws: Workspace, series: list[str]) -> int:
    project = load_project(ws)
    from patchbench import upstream
    from patchbench.util.tables import tabulate

    rows = upstream.patch_check(project, ws, series)
    print(tabulate(rows, headers=["series", "target", "result"]))
    return 0


def do_fetch(ws: Workspace, target: str) -> int:
    project = load_project(ws)
    from patchbench import upstream

    checkout = upstream.fetch(project, ws, target)
    print(f"{target} {checkout.ref} {checkout.commit} "
          f"({'cached' if checkout.from_cache else 'fetched'})")
    return 0


def list_rows(ws: Workspace) -> tuple[list[list[str]], list[list[str]]]:
    """``list``'s rows: those kept by the last validation of these bytes with this code
    (util/validated.py), else of the matrix validated whole (and kept)."""
    from patchbench.util import validated

    raw, want = validated.matrix_key(ws.matrix)
    kept = validated.cached(ws.layout.listing_cache, want)
    if kept is None:
        with gcpause.starting():
            from patchbench import config, scenarios  # noqa: F401  (a matrix is read with the kinds)

            project = config.load(ws.matrix, raw=raw)
        kept = validated.keep(ws.layout.listing_cache, want, project)
    return kept.targets, kept.comparisons


def do_list(ws: Workspace) -> int:
    from patchbench.util import validated
    from patchbench.util.tables import tabulate

    targets, comparisons = list_rows(ws)
    # at most about 100 columns: long cells wrap inside their column
    print(tabulate(targets, headers=validated.TARGET_HEADERS,
                   maxcolwidths=[16, 30, 12, 12, 14, 12]))
    print()
    print(tabulate(comparisons, headers=validated.COMPARISON_HEADERS,
                   maxcolwidths=[22, 14, 22, 16, 34]))
    return 0


def do_report(ws: Workspace, run_dir: str | None, comparison: str | None,
              from_run: str | None = None) -> int:
    from patchbench import report
    from patchbench.runs import store as runstore

    if from_run:  # the report folder from a run's complete results (after a failed write)
        print(terminal(
            f"saved: {runstore.publish(runstore.find_run(ws.layout.runs, from_run), ws.reports)}"))
        return 0
    path = Path(run_dir) if run_dir else report.latest_run(ws.reports, comparison)
    from patchbench.gate import failures

    print(terminal(runstore.render_checked(
        lambda r: report.render(r, gate=r.gate_reasons(failures) if r.gate else None),
        report.load_run(path), path)))
    return 0
