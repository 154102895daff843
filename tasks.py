"""patchbench's command line (invoke). Thin: parse arguments, call patchbench.cli.

    invoke compare demo            # the bundled offline demo
    invoke build --patch NAME      # baseline and one patch series from the pinned commit
    invoke compare NAME            # any comparison in matrix.yaml
    invoke patch --check           # every series against its pinned commit
    invoke fetch TARGET | invoke list | invoke report [RUN_DIR]

Every task takes --source TARGET=PATH_OR_URL (repeatable; or PATCHBENCH_SOURCE_<TARGET>),
--matrix, --builds, --reports and --verbose.
"""

from __future__ import annotations

from invoke import Context, task

from patchbench import cli, cli_runs
from patchbench.errors import ConfigError
from patchbench.pipeline import Options

COMMON = {
    "source": "TARGET=PATH_OR_URL: use a local git directory or another URL (repeatable)",
    "matrix": "the matrix file (default: matrix.yaml beside tasks.py)",
    "builds": "the build cache and scratch directory (default: builds/)",
    "reports": "where run folders are saved (default: reports/)",
    "verbose": "print every external command",
}
COMPARE_HELP = {
    **COMMON,
    "aa": "compare the baseline with itself (the noise floor)",
    "dry_run": "print every command the comparison would run, and stop",
    "seed": "seed of the interleaving order (default: matrix.yaml's, else random; recorded)",
    "runs": "override the runs per cell of every scenario",
    "rounds": "override the number of interleaved rounds",
    "warmup": "override the warmup runs",
    "scenario": "run only this scenario (repeatable)",
    "gate": "exit 4 if a candidate is significantly slower, fails its verify check, or hangs or "
            "leaves something behind in stress rounds (an A/B gate for CI)",
}


def _opts(source: list[str] | None, matrix: str | None, builds: str | None,
          reports: str | None, verbose: bool, **kw: object) -> Options:
    return cli.options(sources=source or [], matrix=matrix, builds=builds, reports=reports,
                       verbose=verbose, **kw)


def _int(value: str | None, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)  # type: ignore[arg-type]
    except ValueError:
        raise ConfigError(f"--{name} {value!r}: expected a whole number") from None


@task(positional=["name"], iterable=["source", "scenario"], help=COMPARE_HELP)
def compare(c: Context, name: str, source: list[str] | None = None, aa: bool = False,
            dry_run: bool = False, seed: str | None = None, runs: str | None = None,
            rounds: str | None = None, warmup: str | None = None,
            scenario: list[str] | None = None, gate: bool = False, matrix: str | None = None,
            builds: str | None = None, reports: str | None = None, verbose: bool = False) -> None:
    """Fetch, patch, build baseline and candidates, measure interleaved, print and save."""
    cli.guarded(lambda: cli.do_compare(_opts(
        source, matrix, builds, reports, verbose, aa=aa, dry_run=dry_run, seed=_int(seed, "seed"),
        runs=_int(runs, "runs"), rounds=_int(rounds, "rounds"), warmup=_int(warmup, "warmup"),
        only=scenario or [], gate=gate), name))


@task(iterable=["source"], help={**COMMON, "patch": "build the baseline and this patch series",
                                 "target": "build only this target's baseline"})
def build(c: Context, patch: str | None = None, target: str | None = None,
          source: list[str] | None = None, matrix: str | None = None, builds: str | None = None,
          reports: str | None = None, verbose: bool = False) -> None:
    """Build the baseline and a patch series from one pinned commit (cached)."""
    cli.guarded(lambda: cli.do_build(_opts(source, matrix, builds, reports, verbose), patch, target))


@task(iterable=["source", "series"],
      help={**COMMON, "check": "apply every series to its pinned commit (the default action)",
            "series": "only this series (repeatable)"})
def patch(c: Context, check: bool = True, series: list[str] | None = None,
          source: list[str] | None = None, matrix: str | None = None, builds: str | None = None,
          reports: str | None = None, verbose: bool = False) -> None:
    """Check that patch series apply (all or nothing) to their pinned commits."""
    cli.guarded(lambda: cli.do_patch_check(_opts(source, matrix, builds, reports, verbose), series or []))


@task(positional=["target"], iterable=["source"], help=COMMON)
def fetch(c: Context, target: str, source: list[str] | None = None, matrix: str | None = None,
          builds: str | None = None, reports: str | None = None, verbose: bool = False) -> None:
    """Fetch a target's pinned commit into the cache (refusing a moved ref)."""
    cli.guarded(lambda: cli.do_fetch(_opts(source, matrix, builds, reports, verbose), target))


@task(name="list", iterable=["source"], help=COMMON)
def list_(c: Context, source: list[str] | None = None, matrix: str | None = None,
          builds: str | None = None, reports: str | None = None, verbose: bool = False) -> None:
    """List targets and comparisons."""
    cli.guarded(lambda: cli.do_list(_opts(source, matrix, builds, reports, verbose)))


@task(positional=["run_dir"], iterable=["source"],
      help={**COMMON, "comparison": "the newest run of this comparison"})
def report(c: Context, run_dir: str | None = None, comparison: str | None = None,
           source: list[str] | None = None, matrix: str | None = None,
           builds: str | None = None, reports: str | None = None, verbose: bool = False) -> None:
    """Print a saved run's report (default: the newest run)."""
    cli.guarded(lambda: cli.do_report(_opts(source, matrix, builds, reports, verbose), run_dir, comparison))


RUNS_HELP = {"reports": COMMON["reports"], "matrix": COMMON["matrix"]}


@task(positional=["run"], help={**RUNS_HELP, "format": "hyperfine, csv, benchstat, bmf or html",
                                "out": "output folder (default: RUN/export)"})
def export(c: Context, run: str, format: str = "csv", out: str | None = None,
           matrix: str | None = None, reports: str | None = None) -> None:
    """Export a saved run for other tools (hyperfine JSON, CSV, benchstat, Bencher BMF, HTML)."""
    cli.guarded(lambda: cli_runs.do_export(run, format, out,
                                           _opts(None, matrix, None, reports, False).reports))


@task(positional=["run_a", "run_b"], help=RUNS_HELP)
def diff(c: Context, run_a: str, run_b: str, matrix: str | None = None,
         reports: str | None = None) -> None:
    """Compare two saved runs of one comparison cell by cell (like pyperf compare_to)."""
    cli.guarded(lambda: cli_runs.do_diff(run_a, run_b,
                                         _opts(None, matrix, None, reports, False).reports))


@task(positional=["path"], iterable=["run"], help={
    **RUNS_HELP, "run": "[LABEL=]PATH of one more run or folder of runs (repeatable)",
    "out": "output folder (default: REPORTS/COMPARISON/merged-TIME)",
    "summary": "append the merged summary to this file (default: $GITHUB_STEP_SUMMARY if set)",
    "gate": "exit 4 if the gate failed on any machine",
    "allow_differing_builds": "merge even when identical build inputs gave different artifacts"})
def merge(c: Context, path: str | None = None, run: list[str] | None = None,
          out: str | None = None, summary: str | None = None, gate: bool = False,
          allow_differing_builds: bool = False, matrix: str | None = None,
          reports: str | None = None) -> None:
    """Merge runs of one comparison from several machines into one report (md + html)."""
    cli.guarded(lambda: cli_runs.do_merge(
        [p for p in [path, *(run or [])] if p], out=out, summary=summary, gate=gate,
        allow_differing_builds=allow_differing_builds,
        reports=_opts(None, matrix, None, reports, False).reports))


@task
def test(c: Context) -> None:
    """Run the test suite (the same as: python -m pytest)."""
    c.run("python -m pytest -q", pty=False)
