"""Every command's arguments, declared once: the ``patchbench`` console script and the invoke front
end (``tasks.py``) both parse with this, so help, types, ranges and "did you mean" are the same in
both. Imports nothing heavy: ``--help`` and ``invoke --list`` read only this module."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Literal

from patchbench.errors import ConfigError
from patchbench.util.limits import MAX_SAMPLES
from patchbench.util.suggest import suggest

Kind = Literal["str", "int", "flag", "list", "choice"]
WIDTH = 100  # help text is wrapped to this many columns


@dataclass(frozen=True)
class Opt:
    """One ``--option``. ``name`` is the Python name (``dry_run`` is ``--dry-run``)."""

    name: str
    help: str
    kind: Kind = "str"
    metavar: str = "VALUE"
    minimum: int | None = None  # for "int"
    maximum: int | None = None  # for "int": a bound of util/limits.py, checked before any work
    choices: tuple[str, ...] = ()  # for "choice"
    default: str = ""  # shown in the help: what applies when the option is not given

    @property
    def flag(self) -> str:
        return "--" + self.name.rstrip("_").replace("_", "-")


@dataclass(frozen=True)
class Pos:
    """A positional argument; ``many`` takes the rest of the line."""

    name: str
    help: str
    required: bool = True
    many: bool = False

    @property
    def metavar(self) -> str:
        return self.name.upper()


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    positionals: tuple[Pos, ...] = ()
    options: tuple[Opt, ...] = ()
    shared: tuple[str, ...] = ()  # names of SHARED options this command takes
    examples: tuple[str, ...] = ()
    details: str = ""

    def all_options(self) -> tuple[Opt, ...]:
        return (*self.options, *(SHARED[n] for n in self.shared))


EXIT_CODES = ("exit codes: 0 done; 4 the gate failed (track: a regression confirmed); "
              "10 config or usage; 11 source; 12 patch; 13 toolchain; 14 build; 15 benchmark; "
              "16 a requirement of this machine is not met; "
              "17 a command failed; 18 report or saved run; 19 bisect inconclusive (the ends do not "
              "differ, or the answer is a range); 130 interrupted; 3 internal error (a bug)")

SHARED: dict[str, Opt] = {o.name: o for o in (
    Opt("project", "the project folder holding matrix.yaml, patches/, overlays/, builds/, reports/ "
        "(or PATCHBENCH_PROJECT)", metavar="DIR", default="the current directory"),
    Opt("source", "build TARGET from a local git directory or another URL (or "
        "PATCHBENCH_SOURCE_<TARGET>; '__' in TARGET stands for '.')", kind="list",
        metavar="TARGET=PATH_OR_URL"),
    Opt("matrix", "the matrix file (or PATCHBENCH_MATRIX)", metavar="FILE",
        default="PROJECT/matrix.yaml"),
    Opt("builds", "the build cache and scratch folder (or PATCHBENCH_BUILDS)", metavar="DIR",
        default="beside the matrix: builds/"),
    Opt("reports", "where run folders are saved (or PATCHBENCH_REPORTS)", metavar="DIR",
        default="beside the matrix: reports/"),
    Opt("verbose", "print every external command", kind="flag"),
    Opt("backend", "build every Go, C and Rust target with this backend (or PATCHBENCH_BACKEND); docker uses "
        "the target's image, else a recipe image", kind="choice", choices=("host", "docker"),
        default="matrix.yaml's"),
)}
BUILD_SHARED = ("project", "source", "matrix", "builds", "reports", "verbose")
# the templates shipped in the package (patchbench/templates/<name>.yaml), for init --runtime
RUNTIMES = ("runc", "crun", "youki", "containerd", "lima", "go", "c", "rust")
_TEMPLATE_OPTS = (
    Opt("runtime", "the template of the target: its build recipe, artifacts, requirements, "
        "tools and runtime (`patchbench templates` shows each)", kind="choice", choices=RUNTIMES),
    Opt("source", "where the target's source comes from: a local git clone or a URL; "
        "SUBMODULE=PATH_OR_URL (as compare takes it) gives a submodule's, written as its url so "
        "that no later command needs the flag", kind="list", metavar="[NAME=]PATH_OR_URL"),
    Opt("ref", "the tag, branch or commit to pin: a tag stays the ref; a branch, a SHA (short "
        "or full) or an expression such as v1.2.3~4 is pinned by its full SHA", metavar="REF",
        default="the source's HEAD, pinned by its commit"),
    Opt("toolchain", "pin this toolchain version instead of the one the source asks for",
        metavar="VERSION", default="go.mod's toolchain (else the installed Go if it meets the go "
        "line), rust-toolchain.toml's release, the C compiler found"))
RUNS_SHARED = ("project", "matrix", "reports")
# what comparison new and scenario set/add change in a scenario (cli/scenario_edit.py)
_SCENARIO_OPTS = (
    Opt("env", "the environment of the scenario's own OCI bundle (runtime runc: runc, crun, "
        "youki): a count of generated variables (5000), a scan's placeholder ('{envs}'), "
        "NAME=value (repeatable), or none to remove it", kind="list", metavar="N|{NAME}|VAR=VALUE"),
    Opt("bind_mounts", "read-only bind mounts in the scenario's own OCI bundle: a count or a "
        "scan's placeholder ('{binds}'); none removes them", metavar="N|{NAME}"),
    Opt("scan", "scan a placeholder the scenario uses over whole numbers, each value its own "
        "cells, a fit per variant (none removes the scan)", metavar="NAME=V1,V2,..."),
    Opt("runs", "the scenario's runs per variant (a multiple of its rounds)", kind="int",
        metavar="N", minimum=1, maximum=MAX_SAMPLES),
    Opt("rounds", "the scenario's interleaved rounds (runs are raised to a multiple of them)",
        kind="int", metavar="N", minimum=1, maximum=MAX_SAMPLES),
    Opt("warmup", "the scenario's warmup runs", kind="int", metavar="N", minimum=0,
        maximum=MAX_SAMPLES),
)

# every measuring command's seed
SEED = Opt("seed", "the seed of the interleaving order (always recorded)", kind="int",
           metavar="N", minimum=0, default="matrix.yaml's, else random")
# bisect's and history's runs and rounds per commit
COMMIT_RUNS = (
    Opt("runs", "runs per commit of the scenario (a multiple of --rounds)", kind="int",
        metavar="N", minimum=1, maximum=MAX_SAMPLES, default="matrix.yaml's"),
    Opt("rounds", "interleaved rounds of the scenario", kind="int", metavar="N", minimum=1,
        maximum=MAX_SAMPLES, default="matrix.yaml's"))

COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command(
        "compare", "Fetch, patch, build baseline and candidates, measure interleaved, print and save.",
        (Pos("name", "the comparison to run, as named in matrix.yaml (`list` shows them)"),),
        (Opt("aa", "compare the baseline with itself (the noise floor)", kind="flag"),
         Opt("aa_layout", "A/A against a second build of the baseline that differs only in code "
             "layout (Go: linker -randlayout; C: functions sorted by name; Rust: sections "
             "shuffled): the noise floor including build-to-build layout effects; falls back to "
             "--aa, with a warning, where the toolchain has no such build", kind="flag"),
         Opt("dry_run", "print every step the comparison would take, and stop", kind="flag"),
         SEED,
         Opt("runs", "runs per cell of every scenario (a multiple of --rounds)", kind="int",
             metavar="N", minimum=1, maximum=MAX_SAMPLES, default="matrix.yaml's"),
         Opt("rounds", "interleaved rounds of every scenario", kind="int", metavar="N", minimum=1,
             maximum=MAX_SAMPLES, default="matrix.yaml's"),
         Opt("warmup", "warmup runs of every scenario", kind="int", metavar="N", minimum=0,
             maximum=MAX_SAMPLES, default="matrix.yaml's"),
         Opt("block_warmup", "runs that begin every block of a timed scenario (each cell in "
             "each round), recorded apart and never timed", kind="int", metavar="N", minimum=0,
             maximum=100, default="matrix.yaml's, else 1"),
         Opt("scenario", "run only this scenario", kind="list", metavar="NAME"),
         Opt("gate", "exit 4 if a candidate is significantly slower, its verdict is inconclusive "
             "or withheld, it fails its verify check, hangs, or leaves something behind (an A/B "
             "gate for CI)", kind="flag"),
         Opt("gate_allow_inconclusive", "with --gate: let an inconclusive or withheld verdict "
             "pass (the gate fails closed without it; the output says what it let pass)",
             kind="flag"),
         Opt("summary", "append the summary table and the gate's reasons, as markdown, to FILE",
             metavar="FILE", default="$GITHUB_STEP_SUMMARY when set"),
         Opt("until_ci", "after the configured rounds, add rounds (whole blocks of the balanced "
             "order, at planned looks) until the CI half-width of every comparison of a "
             "scenario is at most PCT %, or --max-rounds is spent; alpha is spent over the "
             "looks (docs/statistics.md)", metavar="PCT"),
         Opt("max_rounds", "with --until-ci or --gate: the most rounds a scenario may reach",
             kind="int", metavar="N", minimum=1, maximum=MAX_SAMPLES,
             default="--until-ci: 4x the scenario's rounds; --gate: 20x"),
         Opt("profile", "after measuring, traced runs of every command scenario's cells: "
             "syscalls (every syscall, the diff, an OCI start's phases) or cpu (perf samples, a "
             "differential flame graph); added to the scenario's own `profile`", kind="list",
             metavar="KIND"),
         Opt("budget", "after the configured rounds, add rounds (at looks planned from their "
             "pace, alpha spent over them) until every gated metric of every comparison is "
             "decided (faster, slower or equivalent) or DURATION (30s, 5m, 1h) of measuring is "
             "spent; prints the verdicts, the MDE reached and the rounds run",
             metavar="DURATION"),
         Opt("gate_metric", "the metrics whose \"slower\" fails --gate (and that --budget "
             "waits for), instead of the comparison's `gate`", kind="list", metavar="METRIC",
             default="the comparison's gate, else wall")),
        (*BUILD_SHARED, "backend"),
        ("compare demo --gate", "compare demo --aa-layout",
         "compare demo --until-ci 3 --max-rounds 20", "compare demo --profile syscalls",
         "compare demo-metrics --budget 30s --gate-metric wall --gate-metric cpu",
         "compare runc-signal --source runc=$HOME/src/runc --runs 40 --rounds 10")),
    Command(
        "build", "Build the baseline and a patch series from one pinned commit (cached).", (),
        (Opt("patch", "build the baseline and this patch series", metavar="SERIES"),
         Opt("target", "build only this target's baseline", metavar="TARGET")),
        (*BUILD_SHARED, "backend"),
        ("build --patch per-vm-lock", "build --target runc --source runc=$HOME/src/runc")),
    Command(
        "patch", "Check that patch series apply (all or nothing) to their pinned commits, and that "
        "every patch carries its DEP-3 fields (all missing fields are listed at once).", (),
        (Opt("check", "apply every series to its pinned commit (the default action)", kind="flag"),
         Opt("series", "only this series", kind="list", metavar="NAME"),
         Opt("target", "check against this target's pinned commit", metavar="TARGET",
             default="the target of the comparisons using the series, else the one its series "
             "file names, else the project's only target")),
        BUILD_SHARED, ("patch --check", "patch --series runc-signal-v2",
                       "patch --check --series my-fix --target runc")),
    Command(
        "fetch", "Fetch a target's pinned commit into the cache (refusing a moved ref).",
        (Pos("target", "the target to fetch, as named in matrix.yaml"),), (), BUILD_SHARED,
        ("fetch runc", "fetch runc --source runc=$HOME/src/runc")),
    Command("list", "List targets and comparisons.", (), (), BUILD_SHARED, ("list",)),
    Command(
        "report", "Print a saved run's report (default: the newest run).",
        (Pos("run_dir", "a saved run folder or its results.json", required=False),),
        (Opt("comparison", "the newest run of this comparison", metavar="NAME"),
         Opt("from_", "write the report folder from a run's complete results in builds/runs/ "
             "(after a failed report write)", metavar="RUN")),
        BUILD_SHARED, ("report", "report reports/demo/20261129T225457Z", "report --comparison demo")),
    Command(
        "export", "Export a saved run for other tools (hyperfine JSON, CSV, benchstat, Bencher BMF, "
        "HTML).",
        (Pos("run", "a saved run folder, or COMPARISON/TIME under the reports folder"),),
        (Opt("format", "the export format", kind="choice",
             choices=("hyperfine", "csv", "benchstat", "bmf", "html", "syscalls"), default="csv"),
         Opt("out", "the output folder", metavar="DIR", default="RUN/export")),
        RUNS_SHARED,
        ("export demo/20261129T225457Z --format benchstat",
         "export reports/demo/20261129T225457Z --format hyperfine --out /tmp/hf")),
    Command(
        "diff", "Compare two saved runs of one comparison cell by cell (like pyperf compare_to).",
        (Pos("run_a", "the first saved run (A)"), Pos("run_b", "the second saved run (B)")), (),
        RUNS_SHARED, ("diff demo/20261129T225457Z demo/20261130T023700Z",)),
    Command(
        "merge", "Merge runs of one comparison from several machines into one report (md + html).",
        (Pos("path", "[LABEL=]PATH: a run, or a folder of runs (CI artifacts side by side)"),),
        (Opt("run", "[LABEL=]PATH of one more run or folder of runs", kind="list",
             metavar="[LABEL=]PATH"),
         Opt("out", "the output folder", metavar="DIR", default="REPORTS/COMPARISON/merged-TIME"),
         Opt("summary", "append the merged summary to FILE", metavar="FILE",
             default="$GITHUB_STEP_SUMMARY when set"),
         Opt("gate", "exit 4 if the gate failed on any machine (or a machine's run ended in an "
             "error)", kind="flag"),
         Opt("allow_differing_builds", "merge even when identical build inputs gave different "
             "artifacts", kind="flag"),
         Opt("class_", "NAME=LABEL,LABEL,...: a class of machines, by the runs' labels (every "
             "run in one); one verdict across the hosts of each class", kind="list",
             metavar="NAME=LABELS", default="by machine fingerprint")),
        RUNS_SHARED,
        ("merge runs/ --gate --summary \"$GITHUB_STEP_SUMMARY\"",
         "merge m7i=reports/demo/20261129T225457Z --run m7a=/tmp/other/demo/20261130T0237Z",
         "merge a=runs/a --run b=runs/b --run c=runs/c --class quiet=a,b --class busy=c")),
    Command(
        "series", "Make or extend a patch series. `series new` copies your own commits from a local "
        "clone as patches (git format-patch, DEP-3 fields filled from each commit); `series add` "
        "names upstream commits by reference (SHA plus patch hash).",
        (Pos("action", "new: your commits as patches; add: upstream commits by reference"),
         Pos("name", "the series (patches/NAME/series)"),
         Pos("revs", "new: a revision range of the clone given with --from (such as v1.2.3..my-fix);"
             " add: full upstream commit SHAs", many=True)),
        (Opt("target", "the target the series is for", metavar="TARGET"),
         Opt("from_", "new: the local git clone holding your commits", metavar="DIR"),
         Opt("forwarded", "new: the DEP-3 Forwarded field of every patch of yours", metavar="TEXT",
             default="no; not-needed for a commit upstream has"),
         Opt("pr", "add: the upstream pull request the commits come with (its number or URL); "
             "without SHAs, its commits between the pinned commit and its head", metavar="N")),
        BUILD_SHARED,
        ("series new my-fix --target runc --from $HOME/src/runc v1.2.3..my-fix",
         "series add crun-mounts --target crun 4b66d8f0... 38e17199...",
         "series add crun-mounts --target crun --pr 2054")),
    Command(
        "comparison", "Write a new comparison into matrix.yaml (comments and layout kept), with "
        "the scenarios of the comparison it is like (all, or those --scenario names, changed by "
        "the scenario options), then check the matrix.",
        (Pos("action", "new: add a comparison"), Pos("name", "the new comparison's name")),
        (Opt("target", "the target it builds", metavar="TARGET"),
         Opt("candidate", "a candidate series", kind="list", metavar="SERIES"),
         Opt("like", "copy the scenarios of this comparison of the project, or of this "
             "template (`patchbench templates`)", metavar="COMPARISON_OR_TEMPLATE",
             default="the first comparison of the target, else the template it was made from"),
         Opt("scenario", "take only this scenario of --like's", kind="list", metavar="NAME",
             default="all of them"),
         Opt("description", "one line saying what it compares", metavar="TEXT"),
         *_SCENARIO_OPTS),
        ("project", "matrix", "builds"),
        ("comparison new my-fix --target runc --candidate my-fix --like runc-signal",
         "comparison new my-fix --target runc --candidate my-fix --scenario run",
         "comparison new env --target runc --candidate env --scenario run --env '{n}' "
         "--scan n=0,99")),
    Command(
        "scenario", "Change a scenario of a comparison in matrix.yaml (set), or copy one in from "
        "another comparison or a template (add): its bundle's environment and bind mounts, a "
        "scan, its runs, rounds and warmup; the matrix is checked before it is replaced.",
        (Pos("action", "set: change a scenario; add: copy one in (--like)"),
         Pos("comparison", "the comparison"),
         Pos("name", "the scenario (add: its name in --like)")),
        (Opt("like", "add: the comparison or template to copy the scenario from",
             metavar="COMPARISON_OR_TEMPLATE"),
         Opt("as_", "add: the name it gets in the comparison", metavar="NAME",
             default="its name in --like"),
         *_SCENARIO_OPTS),
        ("project", "matrix", "builds"),
        ("scenario set env-fix run --env 5000",
         "scenario set env-fix run --env '{envs}' --scan envs=0,1000,5000,20000",
         "scenario set my-fix run --runs 400 --rounds 40",
         "scenario add my-fix exec --like runc")),
    Command(
        "init", "Make a project in the current folder (or --project DIR): matrix.yaml with "
        "comments, patches/, overlays/ and a .gitignore for builds/; with --runtime and --source "
        "also a target pinned at --ref and a starter comparison with that runtime's standard "
        "scenarios (the unchanged build against itself). Never overwrites a project.", (),
        (*_TEMPLATE_OPTS,
         Opt("target", "the target's name", metavar="NAME",
             default="the runtime's name; for go, c and rust the source's folder name")),
        ("project", "builds", "verbose"),
        ("init --runtime runc --source $HOME/src/runc --ref v1.2.5",
         "--project my-bench init --runtime go --source https://example.com/app.git --ref v1.0.0",
         "init")),
    Command(
        "target", "Add a target to matrix.yaml: the ref resolved to its commit and pinned, the "
        "toolchain the source asks for, the recipe, artifacts, requirements, tools, submodules "
        "and runtime from a template.",
        (Pos("action", "new: add a target"), Pos("name", "the new target's name")),
        (*_TEMPLATE_OPTS,
         Opt("description", "one line saying what it is", metavar="TEXT",
             default="the template's")),
        ("project", "matrix", "builds", "verbose"),
        ("target new runc --runtime runc --source $HOME/src/runc --ref v1.2.5",
         "target new crun --runtime crun --source https://github.com/containers/crun --ref 1.21")),
    Command(
        "templates", "List the templates shipped with patchbench (per runtime: a target's recipe "
        "and its standard scenarios), or print one.",
        (Pos("name", "print this template (a valid matrix.yaml)", required=False),), (), (),
        ("templates", "templates runc")),
    Command(
        "bisect", "Find the first commit of a target between a good and a bad ref that changed a "
        "scenario's time (a command scenario) or brought its hangs (a soak scenario): the ends "
        "are measured first, then each step's commit interleaved with both (docs/bisect.md).",
        (Pos("target", "the target whose history is bisected (its comparison's, which is "
             "checked; may be left out)", required=False),),
        (Opt("good", "the older ref (tag, branch or SHA): the behaviour before", metavar="REF"),
         Opt("bad", "the newer ref: the behaviour after", metavar="REF"),
         Opt("scenario", "COMPARISON:SCENARIO that measures it", kind="list",
             metavar="COMPARISON:SCENARIO"),
         *COMMIT_RUNS,
         Opt("budget", "an undecided step is measured again with twice the runs and rounds, up "
             "to N times the scenario's", kind="int", metavar="N", minimum=1,
             maximum=MAX_SAMPLES, default="4"),
         SEED,
         Opt("dry_run", "fetch the history and print the steps, builds and runs expected",
             kind="flag")),
        (*BUILD_SHARED, "backend"),
        ("bisect demo --good v1.0.0 --bad v1.1.0 --scenario demo:start-8",
         "bisect demo --good v1.0.0 --bad main --scenario demo-soak:start-4 --dry-run")),
    Command(
        "history", "Measure several commits of a target interleaved in one run, each against the "
        "first (round-paired): a table and a timeline chart in report.html (docs/bisect.md).",
        (Pos("target", "the target"),
         Pos("refs", "the commits (tags, branches or SHAs), the first is the reference",
             many=True)),
        (Opt("range_", "the first-parent commits from A to B instead of REF...", metavar="A..B"),
         Opt("every", "with --range: every Nth commit (the first and last always)", kind="int",
             metavar="N", minimum=1, default="1"),
         Opt("tags", "the tags matching this glob instead of REF..., oldest version first",
             metavar="PATTERN"),
         Opt("scenario", "COMPARISON:SCENARIO that measures them", kind="list",
             metavar="COMPARISON:SCENARIO"),
         *COMMIT_RUNS,
         Opt("budget", "a commit undecided against the first is measured again with it, at "
             "twice the runs and rounds, up to N times the scenario's", kind="int", metavar="N",
             minimum=1, maximum=MAX_SAMPLES, default="4"),
         SEED),
        (*BUILD_SHARED, "backend"),
        ("history demo v1.0.0 v1.1.0 v1.2.0 --scenario demo:start-8",
         "history demo --range v1.0.0..main --every 5 --scenario demo:start-8",
         "history runc --tags 'v1.2.*' --scenario runc-signal:run")),
    Command(
        "track", "Continuous mode: measure a comparison's scenarios at each new commit of its "
        "target's branch (or the commits of --range), each interleaved with the pinned reference "
        "build; store every point in a database; find change points, confirm each by an A/B of "
        "the commits either side and bisect it; write reports/track/NAME/ (docs/track.md). "
        "Exit 4 when this run confirmed a regression.",
        (Pos("name", "the comparison to track, as named in matrix.yaml"),),
        (Opt("range_", "measure the first-parent commits from FIRST to LAST instead of the "
             "branch's new commits", metavar="FIRST..LAST",
             default="the branch's commits after the newest one tracked (on a first run: its "
             "head)"),
         Opt("every", "every Nth of those commits (the first and last always)", kind="int",
             metavar="N", minimum=1, maximum=MAX_SAMPLES, default="1"),
         Opt("db", "the database: sqlite:///FILE or postgresql://USER@HOST/DB (psycopg 3; "
             "the password from PGPASSWORD or ~/.pgpass, never printed)", metavar="URL",
             default="sqlite under REPORTS/track/track.db"),
         Opt("branch", "the branch whose new commits are tracked", metavar="BRANCH",
             default="the target's ref when it is a branch, else main, else master"),
         Opt("scenario", "track only this scenario", kind="list", metavar="NAME",
             default="every scenario judged by time or hangs"),
         Opt("runs", "runs per commit of every scenario (a multiple of --rounds)", kind="int",
             metavar="N", minimum=1, maximum=MAX_SAMPLES, default="matrix.yaml's"),
         Opt("rounds", "interleaved rounds of every scenario", kind="int", metavar="N",
             minimum=1, maximum=MAX_SAMPLES, default="matrix.yaml's"),
         Opt("budget", "a candidate's A/B and its bisect measure again with twice the runs and "
             "rounds while undecided, up to N times the scenario's", kind="int", metavar="N",
             minimum=1, maximum=MAX_SAMPLES, default="4"),
         SEED),
        (*BUILD_SHARED, "backend"),
        ("track demo", "track demo --range v1.0.0..main --every 2",
         "track runc-signal --db postgresql://bench@db.example/patchbench")),
)}


def command_of(name: str) -> Command:
    cmd = COMMANDS.get(name)
    if cmd is None:
        raise ConfigError(f"no command {name!r}{suggest(name, COMMANDS, show=str)}",
                          hint="commands: " + ", ".join(COMMANDS) + "; `patchbench --help`")
    return cmd


def _convert(cmd: Command, opt: Opt, text: str) -> int | str:
    if opt.kind == "int":
        try:
            value = int(text, 10)
        except ValueError:
            raise ConfigError(f"{cmd.name} {opt.flag} {text!r}: expected a whole number",
                              hint=f"`{cmd.name} --help` lists every option") from None
        if opt.minimum is not None and value < opt.minimum:
            raise ConfigError(f"{cmd.name} {opt.flag} {value}: expected a whole number "
                              f">= {opt.minimum}")
        if opt.maximum is not None and value > opt.maximum:
            raise ConfigError(f"{cmd.name} {opt.flag} {value}: at most {opt.maximum:,}, the "
                              "samples a cell of a saved run may hold",
                              hint="docs/security.md lists every limit")
        return value
    if opt.kind == "choice" and text not in opt.choices:
        raise ConfigError(f"{cmd.name} {opt.flag} {text!r}: expected one of "
                          f"{', '.join(opt.choices)}{suggest(text, opt.choices, show=str)}")
    return text


@dataclass
class Parsed:
    command: Command
    values: dict[str, object] = field(default_factory=dict)
    help: bool = False


def parse(cmd: Command, argv: list[str]) -> Parsed:
    """``argv`` after the command name -> typed values, or a ConfigError (exit 10) naming the
    option, with "did you mean". ``--opt VALUE`` and ``--opt=VALUE``; ``--`` ends options."""
    opts = {o.flag: o for o in cmd.all_options()}
    out = Parsed(cmd, {o.name: ([] if o.kind == "list" else (False if o.kind == "flag" else None))
                       for o in opts.values()})
    positionals: list[str] = []
    i, only_positional = 0, False
    while i < len(argv):
        arg = argv[i]
        i += 1
        if only_positional or not arg.startswith("-") or arg == "-":
            positionals.append(arg)
            continue
        if arg == "--":
            only_positional = True
            continue
        if arg in ("-h", "--help"):
            out.help = True
            continue
        flag, eq, inline = arg.partition("=")
        opt = opts.get(flag)
        if opt is None:
            raise ConfigError(f"{cmd.name}: no option {flag}{suggest(flag, opts, show=str)}",
                              hint=f"`{cmd.name} --help` lists every option")
        if opt.kind == "flag":
            if eq:
                raise ConfigError(f"{cmd.name} {flag} takes no value")
            out.values[opt.name] = True
            continue
        if eq:
            text = inline
        elif i < len(argv):
            text = argv[i]
            i += 1
        else:
            raise ConfigError(f"{cmd.name} {flag} needs a value ({opt.metavar})")
        value = _convert(cmd, opt, text)
        if opt.kind == "list":
            current = out.values[opt.name]
            assert isinstance(current, list)
            current.append(value)
        else:
            out.values[opt.name] = value
    if out.help:
        return out
    _positionals(cmd, positionals, out)
    return out


def _positionals(cmd: Command, given: list[str], out: Parsed) -> None:
    rest = list(given)
    for pos in cmd.positionals:
        if pos.many:
            out.values[pos.name] = rest
            rest = []
        elif rest:
            out.values[pos.name] = rest.pop(0)
        elif pos.required:
            raise ConfigError(f"{cmd.name}: missing {pos.metavar} ({pos.help})",
                              hint=f"usage: {usage(cmd)}")
        else:
            out.values[pos.name] = None
    if rest:
        raise ConfigError(f"{cmd.name}: unexpected argument {rest[0]!r}",
                          hint=f"usage: {usage(cmd)}")


def usage(cmd: Command, prog: str = "patchbench") -> str:
    parts = [prog, cmd.name]
    for pos in cmd.positionals:
        text = pos.metavar + ("..." if pos.many else "")
        parts.append(text if pos.required and not pos.many else f"[{text}]")
    return " ".join(parts) + " [options]"


def _opt_line(opt: Opt) -> tuple[str, str]:
    left = opt.flag + ("" if opt.kind == "flag" else " " + (
        "{" + ",".join(opt.choices) + "}" if opt.kind == "choice" else opt.metavar))
    notes = []
    if opt.kind == "int":
        notes.append(f"a whole number from {opt.minimum} to {opt.maximum}"
                     if opt.minimum is not None and opt.maximum is not None
                     else f"a whole number >= {opt.minimum}" if opt.minimum is not None
                     else "a whole number")
    if opt.kind == "list":
        notes.append("repeatable")
    if opt.default:
        notes.append(f"default: {opt.default}")
    return left, opt.help + (f" ({'; '.join(notes)})" if notes else "")


def help_text(cmd: Command, prog: str = "patchbench") -> str:
    lines = [f"usage: {usage(cmd, prog)}", "", *textwrap.wrap(cmd.summary, WIDTH)]
    if cmd.details:
        lines += ["", cmd.details]
    if cmd.positionals:
        lines += ["", "arguments:"]
        for p in cmd.positionals:
            body = textwrap.wrap(p.help, WIDTH - 27) or [""]
            lines += [f"  {p.metavar:<24} {body[0]}", *(f"{'':<27}{more}" for more in body[1:])]
    lines += ["", "options:"]
    for opt in cmd.all_options():
        left, right = _opt_line(opt)
        body = textwrap.wrap(right, WIDTH - 27) or [""]
        first = [f"  {left:<24} {body[0]}"] if len(left) <= 24 else [f"  {left}", f"{'':<27}{body[0]}"]
        lines += first + [f"{'':<27}{more}" for more in body[1:]]
    lines.append(f"  {'-h, --help':<24} show this help")
    lines += ["", "examples:", *(f"  {prog} {e}" for e in cmd.examples), "",
              *textwrap.wrap(EXIT_CODES, WIDTH)]
    return "\n".join(lines)


def overview(prog: str = "patchbench") -> str:
    width = max(len(n) for n in COMMANDS)
    return "\n".join([
        f"usage: {prog} COMMAND [ARGS] [options]   ({prog} COMMAND --help for one command)", "",
        "Prove, with reproducible numbers, that a patch makes a container runtime faster without "
        "making it wrong.", "", "commands:",
        *(f"  {n:<{width}}  {c.summary.split('. ')[0].rstrip('.')}" for n, c in COMMANDS.items()),
        "", *textwrap.wrap(EXIT_CODES, WIDTH)])
