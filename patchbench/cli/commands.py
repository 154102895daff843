"""Entry points behind tasks.py: build the workspace, call the pipeline, print results on stdout,
and the one place where errors are caught and turned into one line and an exit code."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from patchbench import config
from patchbench.config import Project
from patchbench.errors import BUG_EXIT_CODE, INTERRUPTED_EXIT_CODE, PatchbenchError
from patchbench.util import cmd
from patchbench.util.escape import terminal
from patchbench.util.workspace import Switches, Workspace

if TYPE_CHECKING:
    from patchbench import build

GATE_FAILED_EXIT_CODE = 4


def load_project(ws: Workspace, *, pending_series: frozenset[str] = frozenset()) -> Project:
    """``pipeline.load``: the matrix validated, the ownership checked, what killed runs left
    swept."""
    from patchbench import pipeline

    return pipeline.load(ws, pending_series=pending_series)


def workspace(*, sources: Iterable[str] = (), project: str | None = None, matrix: str | None = None,
              builds: str | None = None, reports: str | None = None,
              verbose: bool = False, backend: str | None = None) -> Workspace:
    """Paths from the options, else PATCHBENCH_MATRIX / _BUILDS / _REPORTS, else beside the
    matrix; the matrix is PROJECT/matrix.yaml, the project --project, else PATCHBENCH_PROJECT, else
    the current directory; --source over PATCHBENCH_SOURCE_<TARGET>."""
    env = os.environ
    verbose = verbose or env.get("PATCHBENCH_VERBOSE", "") not in ("", "0")
    cmd.show_commands(verbose)
    project_dir = Path(project or env.get("PATCHBENCH_PROJECT") or Path.cwd())
    matrix_path = Path(matrix or env.get("PATCHBENCH_MATRIX") or project_dir / "matrix.yaml").resolve()
    root = matrix_path.parent
    return Workspace(
        root=root, matrix=matrix_path,
        builds=Path(builds or env.get("PATCHBENCH_BUILDS") or root / "builds").resolve(),
        reports=Path(reports or env.get("PATCHBENCH_REPORTS") or root / "reports").resolve(),
        sources=config.parse_source_overrides(list(sources), dict(env)),
        backend=backend or env.get("PATCHBENCH_BACKEND") or None,
        source_flags=frozenset(p.partition("=")[0] for p in sources), verbose=verbose,
    )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def guarded(fn: Callable[[], int | None]) -> None:
    """Run ``fn``; the only place errors are caught. Exit codes: see patchbench.errors.
    SIGTERM and SIGHUP (a cancelled CI job, a closed terminal) unwind like Ctrl-C, so every
    ``finally`` runs: child process groups are killed and nothing half-written is kept."""
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


def do_compare(ws: Workspace, name: str, sw: Switches, summary_file: str | None = None) -> int:
    project = load_project(ws)
    from patchbench import pipeline

    results, plan_lines, run_dir = pipeline.compare(project, ws, name, sw)
    if results is None or run_dir is None:
        print("\n".join(plan_lines))
        return 0
    from patchbench import gate
    from patchbench.analysis import gating
    from patchbench.runs import document, summary

    print()
    shown = document.printed(results)
    if shown:
        print(shown)
    print(f"\nsaved: {run_dir}")
    failed = gate.failures(results, allow_inconclusive=sw.gate_allow_inconclusive)
    target = summary.summary_path(summary_file, os.environ)
    if target is not None:  # a CI job page ($GITHUB_STEP_SUMMARY) or --summary FILE
        summary.append_summary(results, failed if sw.gate else None, target)
    if sw.gate:
        if failed:
            print("gate: FAILED\n" + "\n".join(f"  {f}" for f in failed))
            return GATE_FAILED_EXIT_CODE
        print(f"gate: passed ({gating.passed_text(results)})")
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
            built += pipeline.build_variants(project, ws, project.named_target(name),
                                             [Variant("baseline", ())], [])
    from patchbench.report.markdown import md_table

    rows = [[b.manifest["target"], b.variant.name, b.manifest["built_commit"][:12],
             "cached" if b.cached else f"built in {b.manifest['duration_s']:.1f} s",
             ", ".join(f"{k} {v['sha256'][:12]}" for k, v in b.manifest["artifacts"].items()),
             str(b.path)] for b in built]
    print(md_table(["target", "variant", "commit", "build", "artifacts", "path"], rows, "simple",
                   numparse=True))
    return 0


def do_patch_check(ws: Workspace, series: list[str]) -> int:
    project = load_project(ws)
    from patchbench import upstream
    from patchbench.report.markdown import md_table

    rows = upstream.patch_check(project, ws, series)
    print(md_table(["series", "target", "result"], rows, "simple", numparse=True))
    return 0


def do_fetch(ws: Workspace, target: str) -> int:
    project = load_project(ws)
    from patchbench import upstream

    checkout = upstream.fetch(project, ws, project.named_target(target))
    print(f"{target} {checkout.ref} {checkout.commit} "
          f"({'cached' if checkout.from_cache else 'fetched'})")
    return 0


def do_list(ws: Workspace) -> int:
    from patchbench import scenarios  # noqa: F401  (a matrix is read with the kinds)
    from patchbench.report.markdown import md_table

    m = config.load(ws.matrix).matrix
    # at most about 100 columns: long cells wrap inside their column
    print(md_table(["target", "url", "ref", "commit", "toolchain", "requires"],
                   [[n, t.url, t.ref, t.commit[:12], f"{t.toolchain.kind} {t.toolchain.version}",
                     ", ".join(t.requires) or "-"] for n, t in m.targets.items()], "simple",
                   numparse=True, widths=[16, 30, 12, 12, 14, 12]))
    print()
    print(md_table(["comparison", "target", "candidates", "scenarios", "description"],
                   [[n, c.target, ", ".join(c.candidates), ", ".join(s.name for s in c.scenarios),
                     " ".join(c.description.split())] for n, c in m.comparisons.items()],
                   "simple", numparse=True, widths=[22, 14, 22, 16, 34]))
    return 0


def do_report(ws: Workspace, run_dir: str | None, comparison: str | None,
              from_run: str | None = None) -> int:
    from patchbench.runs import document
    from patchbench.runs import store as runstore

    if from_run:  # the report folder from a run's complete results (after a failed write)
        print(terminal(
            f"saved: {runstore.publish(runstore.find_run(ws.layout.runs, from_run), ws.reports)}"))
        return 0
    path = Path(run_dir) if run_dir else runstore.latest_run(ws.reports, comparison)
    from patchbench.gate import failures

    print(terminal(runstore.render_checked(
        lambda r: document.markdown(r, gate=r.gate_reasons(failures) if r.gate else None),
        runstore.load_run(path), path)))
    return 0
