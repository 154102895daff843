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

from patchbench import cli
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
      help={**COMMON, "comparison": "the newest run of this comparison",
            "from": "write the report folder from a run's complete results in builds/runs/"})
def report(c: Context, run_dir: str = "", comparison: str | None = None, from_: str = "",
           source: list[str] | None = None, matrix: str | None = None,
           builds: str | None = None, reports: str | None = None, verbose: bool = False) -> None:
    """Print a saved run's report (default: the newest run)."""
    # run_dir defaults to "" (not None): invoke treats a None positional as required
    cli.guarded(lambda: cli.do_report(_opts(source, matrix, builds, reports, verbose),
                                      run_dir or None, comparison, from_ or None))


@task
def test(c: Context) -> None:
    """Run the test suite (the same as: python -m pytest)."""
    c.run("python -m pytest -q", pty=False)
