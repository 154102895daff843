"""results.json: the typed, versioned record of one run. Data only: every table, chart and
summary is rendered from it by patchbench.report, so a saved run can be re-rendered, diffed and
recomputed later.

Format history (every change gets a new version and a line here; ``load`` upgrades old files):

- 1: per scenario, cells with raw samples (times, exit codes, rounds, hyperfine JSON) and
  baseline/candidate comparisons; scenarios carried rendered markdown; stress scenarios carried
  empty ``cells`` and ``comparisons``; ``median_ci`` was added later without a version change.
- 2: typed per scenario kind (``kind`` is the discriminator: command, burst, stress); no rendered
  text (``markdown`` is gone; burst charts are named by ``chart``); ``median_ci`` always present
  (null when too few samples); stress scenarios have no ``cells``/``comparisons``; a scenario's
  ``warnings`` stay at the top level as before.
- 3: a comparison is judged by the round-paired rule (issue 9: per-round log ratios of medians,
  a t interval with R-1 degrees of freedom; "withheld" below ``min_rounds`` rounds) and records
  ``method``, ``rounds``, ``min_rounds``, ``round_ids``, ``round_ratios``, ``wilcoxon_p``,
  ``drift`` and ``note``; the pooled Mann-Whitney p and bootstrap CI stay under ``pooled`` as
  descriptive figures. Older files keep their pooled verdicts (``method`` says so). Added later
  without a version change: an optional top-level ``runtime`` (what a runtime set up for the
  whole run; docker-run: engine, image ID, registered runtimes with their sha256), null or absent
  otherwise. Kinds added since, without a version change (files without them read as before):
  ``soak``, ``layers``.
- 4: every measured run of the ``command``, ``burst`` and ``layers`` kinds has its own deadline
  (issue 11):
  a run past it is a hang, killed after its evidence is saved, left out of ``times`` and kept in
  the samples' ``hung_times``/``hung_rounds``; a cell records ``hangs`` ("N of M", the deadline,
  its evidence files) and a comparison records ``hangs`` (Fisher's exact test against the
  baseline); a warmup run that hung is counted apart (``warmup_hangs``). A ``command`` scenario
  may list ``conditions``: a cell's ``params`` then name its ``condition``, and the scenario
  records each condition as applied. Version 3 files read as
  runs without deadlines (``hangs`` null). A stress round names the evidence of its hung
  instances (``evidence``). Added in version 4: the kind ``ctrstress``
  (containerd containers killed mid-start, the daemon restarted mid-burst; leftovers counted).
- 5: a new comparison is judged by the rule of issue 22 (patchbench.analysis.paired: per-round
  mean log times, min_effect on the log scale, three answers "faster"/"slower", "equivalent",
  "inconclusive", plus "withheld") and records ``p_slower``, ``p_faster``, ``p_equivalent``,
  ``equivalence_low``/``equivalence_high`` (the 1 - 2 alpha interval), ``mde`` (the minimum
  detectable effect), ``effect_s`` with ``effect_ci_low_s``/``effect_ci_high_s`` (candidate minus
  baseline, seconds) and ``resolution_s`` (zero spread). Version 3 and 4 comparisons keep the
  verdicts of their rule (``method`` says which; the new fields are null). Added in version 5
  without a version change: the kind ``mounts`` (the mount syscalls of each traced start of an
  OCI runtime CLI, per build).
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
)

from patchbench.errors import ReportError
from patchbench.util.models import NAME_RE

SCHEMA_VERSION = 5
SCHEMA_HISTORY = {
    1: "first version: per scenario, cells with raw samples (times, exit codes, rounds, "
    "hyperfine JSON) and baseline/candidate comparisons",
    2: "typed per scenario kind; data only (no rendered markdown); median_ci always present; "
    "stress scenarios without empty cells/comparisons",
    3: "comparisons judged by the round-paired rule (per-round ratios, drift check, withheld "
    "below min_rounds); the pooled figures kept under pooled, descriptive only",
    4: "per-run deadlines in command, burst and layers: hung runs counted per cell (hangs), kept apart "
    "from the timing (hung_times, hung_rounds) and tested against the baseline; conditions",
    5: "verdicts of issue 22: per-round mean log times, min_effect on the log scale, faster/slower, "
    "equivalent (TOST) or inconclusive with the minimum detectable effect; the effect in seconds",
}

# What a saved run may hold (docs/security.md): a file past these is refused (exit 18), never
# loaded; the file size is checked before a byte is parsed, so a file of 10 million samples is
# refused at once, not read into a gigabyte of memory.
MAX_FILE_BYTES = 16 * 2**20  # the largest committed run is 1.8 MB
MAX_SAMPLES = 100_000  # per cell (times, and each other per-run list)
MAX_CELLS = 10_000  # per scenario
MAX_SCENARIOS = 1_000  # per run
MAX_RUNS = 256  # runs in one merge
MAX_DEPTH = 32  # nesting of objects and lists (a committed run nests at most 9 deep)

POOLED_METHOD = "pooled: Mann-Whitney U and a bootstrap CI, every run taken as independent"
PAIRED5_METHOD = ("round-paired t on per-round mean log times (ratio of geometric means); "
                  "beyond min_effect by a one-sided test, equivalent by TOST")


class _Rec(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _nan_if_null(value: Any) -> Any:
    return float("nan") if value is None else value


# A figure that may have no value: a cell whose every run hung has no median, a comparison with
# no round of both variants no speedup. NaN in memory (the renderers print "-"), null on disk
# (files.write_json_atomic: strict JSON has no NaN), NaN again when read.
Figure = Annotated[float, BeforeValidator(_nan_if_null)]


class Summary(_Rec):
    n: int
    median: Figure
    mean: Figure
    stdev: Figure
    min: Figure
    max: Figure
    cv: Figure
    noisy: bool
    median_ci: list[float] | None = None


Seconds = Annotated[float, Field(ge=0)]
Times = Annotated[list[Seconds], Field(max_length=MAX_SAMPLES)]
Floats = Annotated[list[float], Field(max_length=MAX_SAMPLES)]
Ints = Annotated[list[int], Field(max_length=MAX_SAMPLES)]
PlainName = Annotated[str, Field(pattern=NAME_RE)]  # may become part of a path: no '/', no '..'


class Samples(_Rec):
    times: Times
    user: Floats = Field(default_factory=list)
    system: Floats = Field(default_factory=list)
    exit_codes: Ints = Field(default_factory=list)
    rounds: Ints = Field(default_factory=list)
    hyperfine: Annotated[list[dict[str, Any]], Field(max_length=MAX_SAMPLES)] = Field(
        default_factory=list)  # hyperfine's own JSON
    seconds: float = 0.0  # wall time spent measuring this cell
    # runs that passed their deadline (version 4): their time (about the deadline) and round;
    # never in ``times``, so never in the timing statistics
    hung_times: Floats = Field(default_factory=list)
    hung_rounds: Ints = Field(default_factory=list)


class Hangs(_Rec):
    """A cell's runs that passed their deadline: "hangs: N of M" (M counts every measured run,
    hung or not), with the evidence the launcher saved before each kill (files in the run
    folder) and how many of those show a zombie child under a sleeping parent."""

    hangs: int
    runs: int
    deadline_s: float
    evidence: list[str] = Field(default_factory=list)
    lost_sigchld: int = 0
    warmup_hangs: int = 0  # warmup runs that hung (not in runs: hyperfine keeps no warmup codes)

    @property
    def text(self) -> str:
        warm = f" (+{self.warmup_hangs} in warmup)" if self.warmup_hangs else ""
        return f"{self.hangs} of {self.runs}{warm}"


class HangTest(_Rec):
    """A candidate's hangs against the baseline's (Fisher's exact test)."""

    hangs: int
    runs: int
    baseline_hangs: int
    baseline_runs: int
    p_value: float  # two-sided: do the hang rates differ?
    p_more: float  # one-sided: does the candidate hang more often?


class Instances(_Rec):
    """Per-instance latencies a burst launcher recorded for one cell."""

    latencies: list[float] = Field(default_factory=list)
    exit_codes: list[int] = Field(default_factory=list)
    median: float | None = None


class Cell(_Rec):
    variant: PlainName
    params: dict[str, str] = Field(default_factory=dict)
    label: str
    summary: Summary
    samples: Samples
    instances: Instances | None = None
    hangs: Hangs | None = None  # null: measured without per-run deadlines (version 3 and older)


class Drift(_Rec):
    """patchbench.analysis.stats.DriftCheck: do the per-round ratios vary more than the noise explains?"""

    flagged: bool
    ratio: float
    p_value: float
    observed_sd: float
    expected_sd: float
    drift_sd: float
    df_between: int
    df_within: int
    threshold: float
    meaning: str


class Pooled(_Rec):
    """The pooled rule's figures (patchbench.analysis.stats.compare), descriptive only since version 3."""

    speedup: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: str
    alpha: float
    min_effect: float
    assumes: str


class Verdict(_Rec):
    """One candidate cell against the baseline cell with the same parameters. Since version 3 the
    verdict is round-paired (patchbench.analysis.verdict.record); older files carry the pooled one, and
    ``method`` says which."""

    baseline: str
    candidate: str
    candidate_variant: str
    params: str = ""
    speedup: Figure
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    # schema 5: "faster" | "slower" | "equivalent" | "inconclusive" | "withheld";
    # schema 3-4 records keep "no significant difference" (and pooled ones, before 3)
    verdict: str
    alpha: float
    min_effect: float
    method: str = POOLED_METHOD
    rounds: int | None = None  # rounds paired (both variants ran)
    min_rounds: int | None = None
    round_ids: list[int] = Field(default_factory=list)
    round_ratios: list[float] = Field(default_factory=list)
    wilcoxon_p: float | None = None
    drift: Drift | None = None
    note: str = ""
    pooled: Pooled | None = None
    hangs: HangTest | None = None
    # schema 5 (patchbench.analysis.paired); null in records judged by an older rule
    p_slower: float | None = None
    p_faster: float | None = None
    p_equivalent: float | None = None
    equivalence_low: float | None = None
    equivalence_high: float | None = None
    mde: float | None = None
    effect_s: float | None = None
    effect_ci_low_s: float | None = None
    effect_ci_high_s: float | None = None
    resolution_s: float | None = None

    @property
    def paired(self) -> bool:
        return self.rounds is not None

    @property
    def rule5(self) -> bool:
        """Judged by the rule of schema 5 (issue 22), not by an older one."""
        return self.method == PAIRED5_METHOD


class Rate(_Rec):
    count: int
    unit: str


class Check(_Rec):
    """A scenario's ``verify`` command, run once per variant after measuring."""

    command: str
    exit_code: int | None
    passed: bool
    output: str


class _Scenario(_Rec):
    name: PlainName
    description: str = ""
    command: str
    runs: int
    rounds: int
    warmup: int
    rate: Rate | None = None
    order: list[list[str]] = Field(default_factory=list)


class AppliedCondition(_Rec):
    """A condition a timed scenario's cells ran under (patchbench.measure.conditions), as applied."""

    name: str
    summary: str
    applied: dict[str, Any] = Field(default_factory=dict)


class _Timed(_Scenario):
    cells: Annotated[list[Cell], Field(max_length=MAX_CELLS)]
    comparisons: Annotated[list[Verdict], Field(max_length=MAX_CELLS)]
    deadline_s: float | None = None  # each run's deadline (version 4); null: none
    conditions: list[AppliedCondition] = Field(default_factory=list)  # empty: the default only
    evidence_summary: str | None = None  # a readable account of every hang, in the run folder


TimedResult = _Timed  # a kind with cells and comparisons (the summary table's rows)


class CommandResult(_Timed):
    kind: Literal["command"] = "command"
    verify: dict[str, Check] | None = None


class PhaseCell(_Rec):
    median: dict[str, float]
    total_median: float
    durations: list[list[float]]


class BurstResult(_Timed):
    kind: Literal["burst"] = "burst"
    k: list[int]
    slope_s_per_instance: dict[str, Figure]  # NaN (null): a k whose every run hung
    launcher_overhead: dict[str, float]
    chart: str | None = None
    phases: dict[str, dict[str, PhaseCell]] | None = None
    phase_names: list[str] = Field(default_factory=list)


class MountTable(_Rec):
    """The host's mount table during one cell's bursts: its largest size, and the longest time
    reading /proc/self/mountinfo took."""

    peak_mounts: int
    slowest_read_s: float


class LayersResult(_Timed):
    """A layers × concurrency scan on containerd (cells are per variant, L and k)."""

    kind: Literal["layers"] = "layers"
    layers: list[int]
    k: list[int]
    images: dict[str, str]  # L -> manifest digest, the same for every variant
    mount_counts: dict[str, dict[str, dict[str, int]]]  # variant -> L -> syscall -> count
    mount_counts_by_comm: dict[str, dict[str, dict[str, int]]]  # variant -> L -> process -> count
    mount_fit: dict[str, dict[str, list[float]]]  # variant -> syscall -> [slope, intercept]
    seed_formula: str
    mount_table: dict[str, MountTable]  # cell label -> peak
    mounts_left: dict[str, int]  # cell label -> mounts of the run left after its rounds
    active_snapshots: dict[str, int]  # cell label -> most active snapshots after a round
    verify: dict[str, Check]
    runc: dict[str, str]
    charts: list[str] = Field(default_factory=list)


class SignalCount(_Rec):
    """What became of one signal sent to a build's launched processes (the stress signal check):
    ``forwarded`` = the process recorded it; ``lost`` = it did not; ``by_design`` = it did not, and
    the runtime is known not to forward this signal (never counted as lost)."""

    sent: int = 0
    forwarded: int = 0
    lost: int = 0
    by_design: int = 0


class StressRound(_Rec):
    round: int
    variant: str
    action: str
    delay_s: float
    exit_codes: list[int | None]
    outcomes: dict[str, int]
    kill_errors: int
    hangs: int
    leftovers: list[str]
    list_latency_s: float
    fresh_ok: bool
    # added later (optional; older files read as before): the exec mode's host container, the
    # signal check per signal name, launched processes that never said they were ready
    host: str | None = None
    signals: dict[str, SignalCount] = Field(default_factory=dict)
    not_ready: int = 0
    evidence: list[str] = Field(default_factory=list)  # hang evidence files (version 4)


class StressBuild(_Rec):
    rounds: int
    instances_killed: int
    kill_errors: int
    hangs: int
    leftovers: int
    fresh_failures: int
    list_latency_median_s: float
    list_latency_max_s: float
    outcomes: dict[str, int]
    signals: dict[str, SignalCount] = Field(default_factory=dict)  # added later, optional
    not_ready: int = 0  # added later, optional


class StressResult(_Scenario):
    kind: Literal["stress"] = "stress"
    rounds_detail: list[StressRound]
    per_build: dict[str, StressBuild]
    instances: int
    delay: list[float]
    actions: list[str]
    mode: Literal["run", "exec"] = "run"  # added later, optional
    not_forwarded: list[str] = Field(default_factory=list)  # added later: by design, never gated
    evidence_summary: str | None = None  # a readable account of every hang (version 4)


class CtrStressCensus(_Rec):
    """What one variant had left after a ctrstress round (or after its fresh start)."""

    mounts: int  # mounts of the run in /proc/self/mountinfo
    idmapped_mounts: int  # of which idmapped
    snapshots: int  # active snapshots listed
    snapshot_dirs: int  # snapshot directories the snapshotter does not list
    shims: int
    tasks: int
    containers: int
    errors: list[str] = Field(default_factory=list)  # listings that failed


class CtrStressRound(_Rec):
    round: int
    variant: str
    layers: int
    k: int
    action: str  # kill, delete or restart
    delay_s: float
    exit_codes: list[int | None]  # of the k ctr run clients; None: hung
    kill_errors: int  # kill/delete attempts still refused at the timeout
    hangs: int
    # kill/delete per container: hit (took effect), missed (it had finished), refused (its
    # start failed anyway), hang, failed (still refused at the timeout); restart: 1
    action_outcomes: dict[str, int] = Field(default_factory=dict)
    restart_s: float | None = None  # stopping and starting the daemon again
    settle_s: float
    left: CtrStressCensus
    left_detail: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    fresh_ok: bool
    fresh_output: str = ""
    fresh_left: CtrStressCensus
    evidence: list[str] = Field(default_factory=list)  # evidence of hung `ctr run` clients


class CtrStressVariant(_Rec):
    """One variant's ctrstress rounds summed (leftovers after the rounds and their fresh starts)."""

    rounds: int
    actions: dict[str, int]
    hangs: int = 0
    kill_errors: int = 0
    fresh_failures: int = 0
    mounts: int = 0
    idmapped_mounts: int = 0
    snapshots: int = 0
    snapshot_dirs: int = 0
    shims: int = 0
    tasks: int = 0
    containers: int = 0
    rounds_with_leftovers: int = 0
    action_outcomes: dict[str, int] = Field(default_factory=dict)  # summed over the rounds


class CtrStressResult(_Scenario):
    """containerd containers killed mid-start, the daemon restarted mid-burst (issue 13)."""

    kind: Literal["ctrstress"] = "ctrstress"
    layers: list[int]
    instances: int  # k: containers started per round
    actions: list[str]
    delay: list[float]
    settle: float
    images: dict[str, str]  # L -> manifest digest
    rounds_detail: list[CtrStressRound]
    per_variant: dict[str, CtrStressVariant]
    runc: dict[str, str] = Field(default_factory=dict)
    evidence_summary: str | None = None  # a readable account of every hang


class SoakVariant(_Rec):
    """One variant under one soak condition."""

    runs: int
    hangs: int
    failures: int
    failure_codes: dict[str, int]  # exit code -> runs (hangs not included)
    leftovers: list[str]
    escaped: list[str]
    evidence: list[str]  # hang evidence files in the run folder
    lost_sigchld: int  # hangs whose evidence shows a zombie child under a sleeping parent
    median_s: float | None  # of the runs that exited 0 (incidental)
    times: list[float]
    exit_codes: list[int]  # per run, in order; 124 = hang


class SoakTest(_Rec):
    """Fisher's exact test of a candidate's counts against the baseline's."""

    candidate: str
    hang_p: float  # two-sided
    hang_p_more: float  # one-sided: the candidate hangs more often
    failure_p: float
    failure_p_more: float


class SoakCondition(_Rec):
    name: str
    summary: str
    applied: dict[str, Any]
    blocks: int
    wall_s: float
    stopped_by: str  # "runs" or "budget"
    per_variant: dict[str, SoakVariant]
    tests: list[SoakTest]


class SoakResult(_Scenario):
    kind: Literal["soak"] = "soak"
    deadline_s: float
    block: int
    budget_s: float | None = None
    conditions: list[SoakCondition]
    evidence_summary: str | None = None  # a readable account of every hang, in the run folder


class MountStart(_Rec):
    """One traced start of a ``mounts`` scenario: its calls and failed calls per syscall."""

    variant: str
    round: int
    index: int  # the start's number ({i}), over all rounds
    exit_code: int
    calls: dict[str, int]  # syscall -> calls, every traced syscall listed
    errors: dict[str, int]  # syscall -> calls that returned an error
    by_comm: dict[str, int] = Field(default_factory=dict)  # process name -> calls


class MountsResult(_Scenario):
    """The mount syscalls of each traced start, per build (data only: the report derives the
    counts per build and their spread from ``starts``)."""

    kind: Literal["mounts"] = "mounts"
    tracer: Literal["bpftrace", "strace"]
    syscalls: list[str]
    variants: list[str]  # the builds, the baseline first
    starts: Annotated[list[MountStart], Field(max_length=MAX_CELLS)]


def _kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("kind", "command"))
    return str(getattr(value, "kind", "command"))


if TYPE_CHECKING:
    ScenarioResult = (CommandResult | BurstResult | StressResult | LayersResult | SoakResult
                      | CtrStressResult | MountsResult)
else:
    ScenarioResult = Annotated[
        Annotated[CommandResult, Tag("command")]
        | Annotated[BurstResult, Tag("burst")]
        | Annotated[StressResult, Tag("stress")]
        | Annotated[LayersResult, Tag("layers")]
        | Annotated[SoakResult, Tag("soak")]
        | Annotated[CtrStressResult, Tag("ctrstress")]
        | Annotated[MountsResult, Tag("mounts")],
        Discriminator(_kind_of),
    ]


class Settings(_Rec):
    alpha: Annotated[float, Field(gt=0, lt=1)]
    min_effect: Annotated[float, Field(ge=0)]


class Teardown(_Rec):
    removed_at_teardown: list[str]
    left_after_teardown: list[str]


class RegisteredRuntime(_Rec):
    variant: str
    path: str
    sha256: str  # checked against the variant's build manifest before measuring


class RuntimeRecord(_Rec):
    """What a runtime set up for the whole run (docker-run: the engine, image, runtimes)."""

    name: str
    engine: dict[str, str] = Field(default_factory=dict)
    image: dict[str, str] = Field(default_factory=dict)  # ref, id, packages
    registered: dict[str, RegisteredRuntime] = Field(default_factory=dict)


class Results(_Rec):
    schema_version: Literal[5] = 5
    schema_history: dict[str, str] = Field(
        default_factory=lambda: {str(k): v for k, v in SCHEMA_HISTORY.items()})
    tool: str
    comparison: PlainName  # reports/<comparison>/ and merge's default folder
    description: str = ""
    target: str
    url: str
    ref: str
    commit: str
    aa: bool = False
    seed: int
    settings: Settings
    started_at: str
    finished_at: str = ""
    machine: dict[str, Any]
    # build manifests, as written beside the build; the key names manifest-<variant>.json
    builds: dict[PlainName, dict[str, Any]]
    scenarios: Annotated[list[ScenarioResult], Field(max_length=MAX_SCENARIOS)] = Field(
        default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    teardown: dict[str, Teardown] | None = None
    runtime: RuntimeRecord | None = None
    run_dir: str | None = None
    # whether the run was made with --gate (and --gate-allow-inconclusive): the reports show the
    # gate only then; None: not recorded (runs before 2026-12-01), shown as they always were
    gate: bool | None = None
    gate_allow_inconclusive: bool = False
    # how report.md is laid out: 1 for runs saved before 2026-12-01 (re-rendered byte for byte
    # as they were); 2: free text from the run (its description, warnings) escaped, and no
    # timing-statistics line in a run without timed comparisons (soak, stress only)
    report_format: Literal[1, 2] = 1

    def dump(self) -> dict[str, Any]:
        out = self.model_dump(mode="json", exclude_none=False)
        if out.get("gate") is None:  # files made before the field stay as they were
            out.pop("gate", None)
            out.pop("gate_allow_inconclusive", None)
        if out.get("report_format") == 1:
            out.pop("report_format", None)
        return out

    def gate_reasons(self, failures: Callable[..., list[str]]) -> list[str] | None:
        """The gate's reasons for the reports (``failures`` is ``patchbench.gate.failures``), or
        None when the run was made without --gate."""
        if self.gate is False:
            return None
        return failures(self, allow_inconclusive=self.gate_allow_inconclusive)


# --- reading older versions ---------------------------------------------------------------


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version 1 file as version 2: drop rendered markdown, fill ``median_ci``, type stress."""
    out = dict(data)
    out["schema_version"] = 2
    out["schema_history"] = {str(k): v for k, v in SCHEMA_HISTORY.items()}
    scenarios = []
    for sc in data.get("scenarios", []):
        sc = {k: v for k, v in sc.items() if k != "markdown"}
        for cell in sc.get("cells", []):
            cell["summary"].setdefault("median_ci", None)
        if sc.get("kind") == "stress":
            sc.pop("cells", None)
            sc.pop("comparisons", None)
            sc.pop("k", None)
        if sc.get("kind") == "burst" and sc.get("phases"):
            first = next(iter(sc["phases"].values()))
            cell = next(iter(first.values()))
            sc["phase_names"] = list(cell["median"])
        scenarios.append(sc)
    out["scenarios"] = scenarios
    return out


def upgrade_v2(data: dict[str, Any]) -> dict[str, Any]:
    """A version 2 file as version 3: its comparisons keep their pooled verdicts (the defaults of
    the new fields say so)."""
    out = dict(data)
    out["schema_version"] = 3
    out["schema_history"] = {str(k): v for k, v in SCHEMA_HISTORY.items()}
    return out


def upgrade_v3(data: dict[str, Any]) -> dict[str, Any]:
    """A version 3 file as version 4: runs without per-run deadlines (the defaults say so)."""
    out = dict(data)
    out["schema_version"] = 4
    out["schema_history"] = {str(k): v for k, v in SCHEMA_HISTORY.items()}
    return out


def upgrade_v4(data: dict[str, Any]) -> dict[str, Any]:
    """A version 4 file as version 5: its comparisons keep the verdicts of their rule (the new
    fields are null, ``method`` names the rule)."""
    out = dict(data)
    out["schema_version"] = 5
    out["schema_history"] = {str(k): v for k, v in SCHEMA_HISTORY.items()}
    return out


UPGRADES = {1: upgrade_v1, 2: upgrade_v2, 3: upgrade_v3, 4: upgrade_v4}


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _number(value: Any, *, integer: bool = False, low: float = 0.0) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if integer and not isinstance(value, int):
        return False
    return math.isfinite(value) and value >= low


def problems(res: Results) -> list[str]:
    """What a validated document still gets wrong: the fields the renderers, ``diff`` and
    ``merge`` read from the free-form machine info and build manifests, and comparisons that name
    a cell the scenario does not have. Each as ``field: what``."""
    out: list[str] = []
    m = res.machine
    if "load_avg" in m and not (isinstance(m["load_avg"], list) and len(m["load_avg"]) <= 16
                                and all(_number(x) for x in m["load_avg"])):
        out.append("machine.load_avg: not a list of finite numbers of 0 or more")
    if "memory_bytes" in m and m["memory_bytes"] is not None and not _number(
            m["memory_bytes"], integer=True):
        out.append("machine.memory_bytes: not a whole number of 0 or more")
    if "cpu_count" in m and m["cpu_count"] is not None and not _number(
            m["cpu_count"], integer=True, low=1):
        out.append("machine.cpu_count: not a whole number of 1 or more")
    for variant, man in res.builds.items():
        arts = man.get("artifacts", {})
        if not isinstance(arts, dict):
            out.append(f"builds.{variant}.artifacts: not a mapping of artifacts")
            continue
        for name, art in arts.items():
            if not isinstance(art, dict) or not isinstance(art.get("sha256"), str) \
                    or not _SHA256.match(art["sha256"]):
                out.append(f"builds.{variant}.artifacts.{name}.sha256: missing or not a sha256")
    for i, sc in enumerate(res.scenarios):
        if not isinstance(sc, CommandResult | BurstResult | LayersResult):
            continue
        labels = {c.label for c in sc.cells}
        for j, comp in enumerate(sc.comparisons):
            for role in ("baseline", "candidate"):
                if getattr(comp, role) not in labels:
                    out.append(f"scenarios.{i}.comparisons.{j}.{role}: names the cell "
                               f"{getattr(comp, role)!r}, which scenario {sc.name!r} lacks")
    return out


def parse(data: Any, where: str, *, untrusted: bool = False) -> Results:
    """Validate a results document of any known version, upgrading older ones. ``untrusted``
    (a file read back: ``load``): strictly (no string taken for a number) and with
    :func:`problems` refused too."""
    if not isinstance(data, dict):
        raise ReportError(f"{where}: not a results document (the top level is not an object)")
    version = data.get("schema_version")
    while isinstance(version, int) and version in UPGRADES:
        try:  # an old file of the wrong shape is a damaged file, not a bug (issue 10, class 6)
            data = UPGRADES[version](data)
        except (KeyError, TypeError, AttributeError, IndexError, StopIteration, ValueError) as exc:
            raise ReportError(f"{where}: not a results document of version {version} ({exc!r})",
                              hint="the file is damaged or was not written by patchbench") from None
        version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ReportError(f"{where}: results schema {version!r} is not one this patchbench reads "
                          f"(1 to {SCHEMA_VERSION})")
    try:  # strict: a string where a number belongs is refused, not converted
        res = Results.model_validate(data, strict=untrusted)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ReportError(f"{where}: {loc}: {first['msg']}",
                          hint="the file is damaged or was not written by patchbench") from None
    wrong = problems(res) if untrusted else []
    if wrong:
        raise ReportError(f"{where}: {wrong[0]}" + (f" (and {len(wrong) - 1} more)"
                                                    if len(wrong) > 1 else ""),
                          hint="the file is damaged or was not written by patchbench")
    return res


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number strict JSON has")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is too large to be a finite number")
    return value


def read_json(path: Path, *, limit: int = MAX_FILE_BYTES) -> Any:
    """A JSON file read back from a saved run or an artifact: never through a link (the last
    component is opened with O_NOFOLLOW), a regular file of at most ``limit`` bytes (checked
    before it is read), UTF-8, strict JSON with finite numbers only. Anything else is a
    ReportError naming the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ReportError(f"{path} is a symbolic link; saved runs and artifacts are read "
                              "only from regular files, never through a link") from None
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReportError(f"{path} is not a regular file")
        if st.st_size > limit:
            raise ReportError(f"{path} is {st.st_size} bytes; a saved run may have at most "
                              f"{limit} (docs/security.md: limits)")
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(limit + 1)
        if len(raw) > limit:
            raise ReportError(f"{path} is over {limit} bytes (docs/security.md: limits)")
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant,
                          parse_float=_finite_float)
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ReportError(f"cannot read {path}: not UTF-8 text (byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise ReportError(f"cannot read {path}: not strict JSON with finite numbers "
                          f"({exc!s:.200})") from None
    finally:
        os.close(fd)
    if _depth(data) > MAX_DEPTH:
        raise ReportError(f"{path}: nested more than {MAX_DEPTH} levels deep "
                          "(docs/security.md: limits)")
    return data


def _depth(data: Any) -> int:
    """How deeply objects and lists nest in ``data`` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            stack += [(v, level + 1) for v in (value.values() if isinstance(value, dict)
                                               else value)]
    return deepest


def load(path: Path) -> Results:
    """Read a run's results.json (a run folder or the file itself), any known version."""
    target = path / "results.json" if path.is_dir() and not path.is_symlink() else path
    return parse(read_json(target), str(target), untrusted=True)
