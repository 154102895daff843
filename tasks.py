"""patchbench's command line (invoke). Thin: parse arguments, call patchbench.cli.commands. patchbench is
imported inside each task, so `invoke --list` stays instant.

    invoke compare demo            # the bundled offline demo
    invoke build --patch NAME      # baseline and one patch series from the pinned commit
    invoke compare NAME            # any comparison in matrix.yaml
    invoke patch --check           # every series against its pinned commit
    invoke fetch TARGET | invoke list | invoke report [RUN_DIR]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from invoke import Context, task

PROJECT = Path(__file__).resolve().parent  # this repository is the project of its own tasks

NOT_GIVEN = -1  # the default of the numeric options: "use matrix.yaml's value"
COMMON = {
    "source": "TARGET=PATH_OR_URL: build TARGET from a local git directory or another URL "
              "(repeatable; or PATCHBENCH_SOURCE_<TARGET>)",
    "matrix": "the matrix file (default: matrix.yaml beside tasks.py)",
    "builds": "the build cache and scratch directory (default: builds/)",
    "reports": "where run folders are saved (default: reports/)",
    "verbose": "print every external command",
}
BACKEND_HELP = ("build every Go target with this backend: host or docker (default: matrix.yaml's; "
                "docker uses the target's image, else a recipe image: debian-runc for cgo/make "
                "builds, go-busybox otherwise; or PATCHBENCH_BACKEND)")
COMPARE_HELP = {
    **COMMON,
    "backend": BACKEND_HELP,
    "name": "the comparison to run, as named in matrix.yaml (`invoke list` shows them)",
    "aa": "compare the baseline with itself (the noise floor)",
    "dry_run": "print every command the comparison would run, and stop",
    "seed": "a whole number >= 0: the seed of the interleaving order (default: matrix.yaml's, "
            "else random; always recorded)",
    "runs": "a whole number: runs per cell of every scenario (default: matrix.yaml's)",
    "rounds": "a whole number: interleaved rounds of every scenario (default: matrix.yaml's)",
    "warmup": "a whole number: warmup runs of every scenario (default: matrix.yaml's)",
    "scenario": "run only this scenario (repeatable)",
    "gate": "exit 4 if a candidate is significantly slower, fails its verify check, or hangs or "
            "leaves something behind in stress rounds (an A/B gate for CI)",
    "summary": "append the summary table and the gate's reasons, as markdown, to this file "
               "(default: $GITHUB_STEP_SUMMARY when set)",
}


def _ws(source: list[str] | None, matrix: str | None, builds: str | None, reports: str | None,
        verbose: bool, backend: str | None = None) -> Any:
    from patchbench.cli import commands as cli

    return cli.workspace(sources=source or [], project=str(PROJECT), matrix=matrix, builds=builds,
                         reports=reports, verbose=verbose, backend=backend)


def _num(value: int, name: str) -> int | None:
    from patchbench.errors import ConfigError

    if value == NOT_GIVEN:
        return None
    if value < 0:
        raise ConfigError(f"--{name} {value}: expected a whole number >= 0")
    return value


def _guarded(fn: Any) -> None:
    from patchbench.cli import commands as cli

    cli.guarded(fn, fast_exit=True)  # ends the process, without the interpreter's teardown


@task(positional=["name"], iterable=["source", "scenario"], help=COMPARE_HELP)
def compare(c: Context, name: str, source: list[str] | None = None, aa: bool = False,
            dry_run: bool = False, seed: int = NOT_GIVEN, runs: int = NOT_GIVEN,
            rounds: int = NOT_GIVEN, warmup: int = NOT_GIVEN,
            scenario: list[str] | None = None, gate: bool = False, summary: str | None = None,
            matrix: str | None = None, builds: str | None = None, reports: str | None = None,
            verbose: bool = False, backend: str | None = None) -> None:
    """Fetch, patch, build baseline and candidates, measure interleaved, print and save.

    Examples:
      invoke compare demo --gate
      invoke compare runc-signal --source runc=/src/runc.git --runs 40 --rounds 10

    Exit codes: 0 done; 4 the gate failed; 10 config; 11 source; 12 patch; 13 toolchain;
    14 build; 15 benchmark; 16 a requirement of this machine is not met; 17 a command failed;
    18 report; 130 interrupted; 3 internal error (a bug).
    """
    def run() -> int:
        from patchbench.cli import commands as cli
        from patchbench.util.workspace import Switches

        sw = Switches(seed=_num(seed, "seed"), aa=aa, dry_run=dry_run, runs=_num(runs, "runs"),
                      rounds=_num(rounds, "rounds"), warmup=_num(warmup, "warmup"),
                      only=tuple(scenario or ()), gate=gate)
        return cli.do_compare(_ws(source, matrix, builds, reports, verbose, backend), name, sw,
                              summary)

    _guarded(run)


@task(iterable=["source"], help={**COMMON, "backend": BACKEND_HELP,
                                 "patch": "build the baseline and this patch series",
                                 "target": "build only this target's baseline"})
def build(c: Context, patch: str | None = None, target: str | None = None,
          source: list[str] | None = None, matrix: str | None = None, builds: str | None = None,
          reports: str | None = None, verbose: bool = False, backend: str | None = None) -> None:
    """Build the baseline and a patch series from one pinned commit (cached)."""
    from patchbench.cli import commands as cli

    _guarded(lambda: cli.do_build(_ws(source, matrix, builds, reports, verbose, backend), patch,
                                  target))


@task(iterable=["source", "series"],
      help={**COMMON, "check": "apply every series to its pinned commit (the default action)",
            "series": "only this series (repeatable)"})
def patch(c: Context, check: bool = True, series: list[str] | None = None,
          source: list[str] | None = None, matrix: str | None = None, builds: str | None = None,
          reports: str | None = None, verbose: bool = False) -> None:
    """Check that patch series apply (all or nothing) to their pinned commits."""
    from patchbench.cli import commands as cli

    _guarded(lambda: cli.do_patch_check(_ws(source, matrix, builds, reports, verbose),
                                        series or []))


@task(positional=["target"], iterable=["source"],
      help={**COMMON, "target": "the target to fetch, as named in matrix.yaml"})
def fetch(c: Context, target: str, source: list[str] | None = None, matrix: str | None = None,
          builds: str | None = None, reports: str | None = None, verbose: bool = False) -> None:
    """Fetch a target's pinned commit into the cache (refusing a moved ref)."""
    from patchbench.cli import commands as cli

    _guarded(lambda: cli.do_fetch(_ws(source, matrix, builds, reports, verbose), target))


@task(name="list", iterable=["source"], help=COMMON)
def list_(c: Context, source: list[str] | None = None, matrix: str | None = None,
          builds: str | None = None, reports: str | None = None, verbose: bool = False) -> None:
    """List targets and comparisons."""
    from patchbench.cli import commands as cli

    _guarded(lambda: cli.do_list(_ws(source, matrix, builds, reports, verbose)))


@task(positional=[], iterable=["source"],
      help={**COMMON, "run_dir": "a saved run folder or its results.json (default: the newest run)",
            "comparison": "the newest run of this comparison",
            "from": "write the report folder from a run's complete results in builds/runs/ "
                    "(after a failed report write)"})
def report(c: Context, run_dir: str | None = None, comparison: str | None = None, from_: str = "",
           source: list[str] | None = None, matrix: str | None = None,
           builds: str | None = None, reports: str | None = None, verbose: bool = False) -> None:
    """Print a saved run's report (default: the newest run)."""
    from patchbench.cli import commands as cli

    _guarded(lambda: cli.do_report(_ws(source, matrix, builds, reports, verbose), run_dir,
                                   comparison, from_ or None))


RUNS_HELP = {"reports": COMMON["reports"], "matrix": COMMON["matrix"]}


def _reports(matrix: str | None, reports: str | None) -> Any:
    return _ws(None, matrix, None, reports, False).reports


@task(positional=["run"], help={
    **RUNS_HELP, "run": "a saved run folder, or COMPARISON/TIME under the reports folder",
    "format": "hyperfine, csv, benchstat, bmf or html", "out": "output folder (default: RUN/export)"})
def export(c: Context, run: str, format: str = "csv", out: str | None = None,
           matrix: str | None = None, reports: str | None = None) -> None:
    """Export a saved run for other tools (hyperfine JSON, CSV, benchstat, Bencher BMF, HTML).

    Examples:
      invoke export demo/20261129T225457Z --format benchstat
      invoke export reports/demo/20261129T225457Z --format hyperfine --out /tmp/hf
    """
    from patchbench.cli import runs as cli_runs

    _guarded(lambda: cli_runs.do_export(run, format, out, _reports(matrix, reports)))


@task(positional=["run_a", "run_b"], help={
    **RUNS_HELP, "run_a": "the first saved run (A)", "run_b": "the second saved run (B)"})
def diff(c: Context, run_a: str, run_b: str, matrix: str | None = None,
         reports: str | None = None) -> None:
    """Compare two saved runs of one comparison cell by cell (like pyperf compare_to)."""
    from patchbench.cli import runs as cli_runs

    _guarded(lambda: cli_runs.do_diff(run_a, run_b, _reports(matrix, reports)))


@task(positional=["path"], iterable=["run"], help={
    **RUNS_HELP, "path": "[LABEL=]PATH: a run, or a folder of runs (CI artifacts side by side)",
    "run": "[LABEL=]PATH of one more run or folder of runs (repeatable)",
    "out": "output folder (default: REPORTS/COMPARISON/merged-TIME)",
    "summary": "append the merged summary to this file (default: $GITHUB_STEP_SUMMARY if set)",
    "gate": "exit 4 if the gate failed on any machine (or a machine's run ended in an error)",
    "allow_differing_builds": "merge even when identical build inputs gave different artifacts"})
def merge(c: Context, path: str, run: list[str] | None = None,
          out: str | None = None, summary: str | None = None, gate: bool = False,
          allow_differing_builds: bool = False, matrix: str | None = None,
          reports: str | None = None) -> None:
    """Merge runs of one comparison from several machines into one report (md + html).

    Examples:
      invoke merge runs/ --gate --summary "$GITHUB_STEP_SUMMARY"
      invoke merge m7i=reports/demo/20261129T225457Z --run m7a=/tmp/other/demo/20261130T0237Z
    """
    from patchbench.cli import runs as cli_runs

    _guarded(lambda: cli_runs.do_merge(
        [path, *(run or [])], out=out, summary=summary, gate=gate,
        allow_differing_builds=allow_differing_builds, reports=_reports(matrix, reports)))


@task
def test(c: Context) -> None:
    """Run the test suite (the same as: python -m pytest)."""
    c.run("python -m pytest -q", pty=False)


@task(positional=["action", "name", "commits"], iterable=["source"],
      help={**COMMON, "action": "add: append upstream commits to the series NAME (made if new)",
            "name": "the series (patches/NAME/series)",
            "commits": "full upstream commit SHAs, comma-separated",
            "target": "the target whose upstream has the commits"})
def series(c: Context, action: str, name: str, commits: str, target: str,
           source: list[str] | None = None, matrix: str | None = None, builds: str | None = None,
           reports: str | None = None, verbose: bool = False) -> None:
    """Name upstream commits in a series by reference: invoke series add NAME --target T SHA[,SHA]."""
    from patchbench import pipeline
    from patchbench.errors import ConfigError
    from patchbench.source import series_ref

    def run() -> None:
        if action != "add":
            raise ConfigError(f"series {action!r}: the only action is 'add'")
        ws = _ws(source, matrix, builds, reports, verbose)
        project = pipeline.load(ws)
        checkout = pipeline.fetch(project, ws, target)
        shas = [s for s in commits.replace(",", " ").split() if s]
        for line in series_ref.add(project.root, checkout, name, shas, ws.builds):
            print(line)

    _guarded(run)
