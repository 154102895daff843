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

from invoke import task

from patchbench import cli

COMMON = {
    "source": "TARGET=PATH_OR_URL: use a local git directory or another URL (repeatable)",
    "matrix": "the matrix file (default: matrix.yaml beside tasks.py)",
    "builds": "the build cache and scratch directory (default: builds/)",
    "reports": "where run folders are saved (default: reports/)",
    "verbose": "print every external command",
}


def _opts(source, matrix, builds, reports, verbose, **kw):  # type: ignore[no-untyped-def]
    return cli.options(sources=source or [], matrix=matrix, builds=builds, reports=reports,
                       verbose=verbose, **kw)


@task(positional=["name"], iterable=["source", "scenario"], help={
    **COMMON,
    "aa": "compare the baseline with itself (the noise floor)",
    "dry_run": "print every command the comparison would run, and stop",
    "seed": "seed of the interleaving order (default: from matrix.yaml, else random; recorded)",
    "runs": "override the runs per cell of every scenario",
    "rounds": "override the number of interleaved rounds",
    "warmup": "override the warmup runs",
    "scenario": "run only this scenario (repeatable)",
})
def compare(c, name, source=None, aa=False, dry_run=False, seed=None, runs=None,  # type: ignore[no-untyped-def]
            rounds=None, warmup=None, scenario=None, matrix=None, builds=None, reports=None,
            verbose=False):
    """Fetch, patch, build baseline and candidates, measure interleaved, print and save."""
    cli.guarded(lambda: cli.do_compare(_opts(
        source, matrix, builds, reports, verbose, aa=aa, dry_run=dry_run,
        seed=int(seed) if seed is not None else None, runs=int(runs) if runs else None,
        rounds=int(rounds) if rounds else None,
        warmup=int(warmup) if warmup is not None else None, only=scenario or []), name))


@task(iterable=["source"], help={**COMMON, "patch": "build the baseline and this patch series",
                                 "target": "build only this target's baseline"})
def build(c, patch=None, target=None, source=None, matrix=None, builds=None, reports=None,  # type: ignore[no-untyped-def]
          verbose=False):
    """Build the baseline and a patch series from one pinned commit (cached)."""
    cli.guarded(lambda: cli.do_build(_opts(source, matrix, builds, reports, verbose), patch, target))


@task(iterable=["source", "series"], help={**COMMON, "check": "apply every series to its pinned commit",
                                           "series": "only this series (repeatable)"})
def patch(c, check=False, series=None, source=None, matrix=None, builds=None, reports=None,  # type: ignore[no-untyped-def]
          verbose=False):
    """Check that patch series apply (all or nothing) to their pinned commits."""
    cli.guarded(lambda: cli.do_patch_check(_opts(source, matrix, builds, reports, verbose),
                                           series or []))


@task(iterable=["source"], help=COMMON)
def fetch(c, target, source=None, matrix=None, builds=None, reports=None, verbose=False):  # type: ignore[no-untyped-def]
    """Fetch a target's pinned commit into the cache (refusing a moved ref)."""
    cli.guarded(lambda: cli.do_fetch(_opts(source, matrix, builds, reports, verbose), target))


@task(name="list", iterable=["source"], help=COMMON)
def list_(c, source=None, matrix=None, builds=None, reports=None, verbose=False):  # type: ignore[no-untyped-def]
    """List targets and comparisons."""
    cli.guarded(lambda: cli.do_list(_opts(source, matrix, builds, reports, verbose)))


@task(positional=["run_dir"], iterable=["source"], help={**COMMON, "comparison": "the newest run of this comparison"})
def report(c, run_dir=None, comparison=None, source=None, matrix=None, builds=None, reports=None,  # type: ignore[no-untyped-def]
           verbose=False):
    """Print a saved run's report (default: the newest run)."""
    cli.guarded(lambda: cli.do_report(_opts(source, matrix, builds, reports, verbose), run_dir,
                                      comparison))


@task
def test(c):  # type: ignore[no-untyped-def]
    """Run the test suite (same as: python -m pytest)."""
    c.run("python -m pytest -q", pty=False)
