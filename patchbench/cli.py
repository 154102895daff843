"""Entry points behind tasks.py: build Options, call the pipeline, print, and the one place where
errors are caught and turned into one line and an exit code."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tabulate import tabulate

from patchbench import command, config, pipeline, report, runstore
from patchbench.build import Variant
from patchbench.errors import BUG_EXIT_CODE, INTERRUPTED_EXIT_CODE, PatchbenchError

ROOT = Path(__file__).resolve().parent.parent
GATE_FAILED_EXIT_CODE = 4
BROKEN_PIPE_EXIT_CODE = 141  # 128 + SIGPIPE, as a shell reports a command killed by it


def options(
    *, sources: Iterable[str] = (), matrix: str | None = None, builds: str | None = None,
    reports: str | None = None, verbose: bool = False, **kw: Any,
) -> pipeline.Options:
    command.set_verbose(verbose or command.VERBOSE)
    env = os.environ
    matrix_path = Path(matrix or env.get("PATCHBENCH_MATRIX") or ROOT / "matrix.yaml").resolve()
    root = matrix_path.parent
    return pipeline.Options(
        root=root,
        matrix=matrix_path,
        builds=Path(builds or env.get("PATCHBENCH_BUILDS") or root / "builds").resolve(),
        reports=Path(reports or env.get("PATCHBENCH_REPORTS") or root / "reports").resolve(),
        sources=config.parse_source_overrides(list(sources), dict(env)),
        **kw,
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
    except PatchbenchError as exc:
        print(exc.render(), file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("patchbench: interrupted; nothing half-written was kept", file=sys.stderr)
        sys.exit(INTERRUPTED_EXIT_CODE)
    except BrokenPipeError:  # `invoke report | head`: the reader left; end quietly
        _quiet_stdout()
        sys.exit(BROKEN_PIPE_EXIT_CODE)
    except Exception:  # a bug: show it in full
        traceback.print_exc()
        print("patchbench: internal error (a bug); please report it with the trace above",
              file=sys.stderr)
        sys.exit(BUG_EXIT_CODE)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(BROKEN_PIPE_EXIT_CODE)
    sys.exit(code)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not complain either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def do_compare(opts: pipeline.Options, name: str) -> int:
    project = pipeline.load(opts)
    results, run_dir = pipeline.compare(project, opts, name)
    if run_dir is None:
        return 0
    print()
    if any(sc.get("comparisons") for sc in results["scenarios"]):
        print(report.summary_table(results))
    for sc in results["scenarios"]:
        for extra in sc.get("markdown", []):
            if not extra.startswith("!["):
                print(f"\n{sc['name']}:\n{extra}")
    for w in results["warnings"]:
        print(f"warning: {w}")
    print(f"\nsaved: {run_dir}")
    if opts.gate:
        failed = pipeline.gate_failures(results)
        if failed:
            print("gate: FAILED\n" + "\n".join(f"  {f}" for f in failed))
            return GATE_FAILED_EXIT_CODE
        print("gate: passed (no candidate slower, every check passed)")
    return 0


def do_build(opts: pipeline.Options, patch: str | None, target: str | None) -> int:
    project = pipeline.load(opts)
    if patch:
        built = pipeline.build_for_patch(project, opts, patch)
    else:
        names = [target] if target else list(project.matrix.targets)
        built = []
        for name in names:
            built += pipeline.build_variants(project, opts, name, [Variant("baseline", ())], [])
    rows = [[b.manifest["target"], b.variant.name, b.manifest["built_commit"][:12],
             "cached" if b.cached else f"built in {b.manifest['duration_s']:.1f} s",
             ", ".join(f"{k} {v['sha256'][:12]}" for k, v in b.manifest["artifacts"].items()),
             str(b.path)] for b in built]
    print(tabulate(rows, headers=["target", "variant", "commit", "build", "artifacts", "path"]))
    return 0


def do_patch_check(opts: pipeline.Options, series: list[str]) -> int:
    project = pipeline.load(opts)
    rows = pipeline.patch_check(project, opts, series)
    print(tabulate(rows, headers=["series", "target", "result"]))
    return 0


def do_fetch(opts: pipeline.Options, target: str) -> int:
    project = pipeline.load(opts)
    checkout = pipeline.fetch(project, opts, target)
    print(f"{target} {checkout.ref} {checkout.commit} ({'cached' if checkout.from_cache else 'fetched'})")
    return 0


def do_list(opts: pipeline.Options) -> int:
    project = pipeline.load(opts)
    m = project.matrix
    print(tabulate([[n, t.url, t.ref, t.commit[:12], f"{t.toolchain.kind} {t.toolchain.version}",
                     ", ".join(t.requires) or "-"] for n, t in m.targets.items()],
                   headers=["target", "url", "ref", "commit", "toolchain", "requires"]))
    print()
    print(tabulate([[n, c.target, ", ".join(c.candidates), ", ".join(s.name for s in c.scenarios),
                     c.description] for n, c in m.comparisons.items()],
                   headers=["comparison", "target", "candidates", "scenarios", "description"]))
    return 0


def do_report(opts: pipeline.Options, run_dir: str | None, comparison: str | None,
              from_run: str | None = None) -> int:
    if from_run:  # render the report folder from a run's complete results (issue 10, class 5)
        final = runstore.publish(runstore.find_run(opts.builds / "runs", from_run), opts.reports,
                                 report.render_markdown)
        print(f"saved: {final}")
        return 0
    path = Path(run_dir) if run_dir else report.latest_run(opts.reports, comparison)
    results = runstore.read_results(path, report.RESULTS_SCHEMA)
    print(runstore.render_checked(report.render_markdown, results, path))
    return 0
