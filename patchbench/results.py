"""results.json: the typed, versioned record of one run, and its loader. Data only: every table,
chart and summary is rendered from it by patchbench.report, so a saved run can be re-rendered,
diffed and recomputed later. What every kind shares lives here; each kind's result model lives in
its module in patchbench/scenarios/ and is registered here. Older versions are upgraded on load;
the format history is in docs/reports.md ("Format history")."""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ValidationError,
    model_validator,
)
from pydantic_core import core_schema

from patchbench.errors import ReportError
from patchbench.util import limits
from patchbench.util.files import is_sha256
from patchbench.util.models import NAME_RE

SCHEMA_VERSION = 8
SCHEMA_HISTORY = {
    1: "first version: per scenario, cells with raw samples (times, exit codes, rounds, "
    "hyperfine JSON) and baseline/candidate comparisons",
    2: "typed per scenario kind; data only (no rendered markdown); median_ci always present; "
    "stress scenarios without empty cells/comparisons",
    3: "comparisons judged by the round-paired rule (per-round ratios, drift check, withheld "
    "below min_rounds); the pooled figures kept under pooled, descriptive only",
    4: "per-run deadlines in command, burst and layers: hung runs counted per cell (hangs), kept apart "
    "from the timing (hung_times, hung_rounds) and tested against the baseline; conditions",
    5: "verdicts by per-round mean log times, min_effect on the log scale, faster/slower, "
    "equivalent (TOST) or inconclusive with the minimum detectable effect; the effect in seconds",
    6: "every metric of hyperfine 2 per run (CPU, user and system time, peak memory, counters) and "
    "each judged by the round-paired rule; the gate's metrics; --budget",
    7: "short blocks: the runs that begin every block (block_warmup) recorded apart from the "
    "timed ones (warmup_times, warmup_metrics, warmup_rounds); --budget's candidates decided "
    "before the end (dropped)",
    8: "one live rule (PAIRED7_METHOD): runs past 5x the median counted as stalls (stalls), "
    "judged apart by the gate; the widened standard error's degrees of freedom cut; the other "
    "metrics called only when the gated ones changed; older records re-judged by it at load; "
    "the machine's fingerprint fields (microcode, numa_nodes, instance_type)",
}

# What a saved run may hold (docs/security.md) is util/limits.py's MAX_*: a file past them is
# refused (exit 18), never loaded; the file size is checked before a byte is parsed, so a file of
# 10 million samples is refused at once, not read into a gigabyte of memory. A run that would make
# more is refused before it starts (patchbench.config, patchbench.cli.spec).
MAX_FILE_BYTES = limits.MAX_FILE_BYTES
MAX_SAMPLES = limits.MAX_SAMPLES
MAX_CELLS = limits.MAX_CELLS
MAX_SCENARIOS = limits.MAX_SCENARIOS
MAX_RUNS = limits.MAX_RUNS
MAX_DEPTH = limits.MAX_DEPTH

POOLED_METHOD = "pooled: Mann-Whitney U and a bootstrap CI, every run taken as independent"
PAIRED5_METHOD = ("round-paired t on per-round mean log times (ratio of geometric means); "
                  "beyond min_effect by a one-sided test, equivalent by TOST")
PAIRED5_SKEW_METHOD = ("round-paired t on per-round mean log times (ratio of geometric means), "
                       "skewness-corrected (t and Hall's transformation must both reject); "
                       "beyond min_effect by a one-sided test, equivalent by TOST")
PAIRED5_JACK_METHOD = ("round-paired t on per-round mean log times (ratio of geometric means), "
                       "skewness-corrected with a jackknifed skewness (t and Hall's transformation "
                       "must both reject); beyond min_effect by a one-sided test, equivalent by "
                       "TOST")
PAIRED6_METHOD = ("round-paired t on per-round mean log times (ratio of geometric means), "
                  "skewness-corrected with a jackknifed skewness (t and Hall's transformation "
                  "must both reject), the standard error widened for noise shared by "
                  "neighbouring rounds; the effect in time from the ratio and the baseline's "
                  "geometric mean; beyond min_effect by a one-sided test, equivalent by TOST")
PAIRED7_METHOD = ("round-paired t on per-round mean log times (ratio of geometric means), "
                  "skewness-corrected with a jackknifed skewness (t "
                  "and Hall's transformation must both reject), the standard error widened for "
                  "noise shared by neighbouring rounds and its degrees of freedom cut by the "
                  "widening; the effect in time from the ratio and the baseline's geometric mean; "
                  "beyond min_effect by a one-sided test, equivalent by TOST; the other metrics "
                  "called only when the gated ones changed (Holm among them)")
# the rules of results versions 1 to 7, which records made before version 8 name (``method``):
# such a record is judged again by the live rule when read (patchbench.analysis.rejudge)
EARLIER_METHODS = (POOLED_METHOD, PAIRED5_METHOD, PAIRED5_SKEW_METHOD, PAIRED5_JACK_METHOD,
                   PAIRED6_METHOD)


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


MetricName = Annotated[str, Field(pattern=r"^[a-z][a-z-]{0,31}$")]
MAX_METRICS = 16  # metrics per cell (hyperfine 2 has 10)


def legacy_cpu(samples: dict[str, Any]) -> dict[str, Any]:
    """Samples as results version 5 (and a bisect record) hold them, with per-run ``user`` and
    ``system`` arrays (empty unless a hyperfine gave them), as version 6 holds them: those arrays
    as the metrics ``user`` and ``system`` and their sum as ``cpu`` where they have a value for
    every timed run; no peak memory (version 5 never had it)."""
    if "user" not in samples and "system" not in samples:
        return samples
    out = {k: v for k, v in samples.items() if k not in ("user", "system")}
    n = len(out.get("times") or [])
    got = {k: samples[k] for k in ("user", "system")
           if isinstance(samples.get(k), list) and samples[k] and len(samples[k]) == n}
    metrics = dict(out.get("metrics") or {})
    metrics.update(got)
    if len(got) == 2:
        metrics["cpu"] = [u + s for u, s in zip(got["user"], got["system"], strict=True)]
    if metrics:
        out["metrics"] = metrics
    return out


class Samples(_Rec):
    times: Times
    # results version 6: metric name -> one value per timed run (aligned with ``times``), in the
    # metric's base unit (patchbench.analysis.metrics); wall time is ``times``
    metrics: Annotated[dict[MetricName, Floats], Field(max_length=MAX_METRICS)] = Field(
        default_factory=dict)
    exit_codes: Ints = Field(default_factory=list)
    rounds: Ints = Field(default_factory=list)
    hyperfine: Annotated[list[dict[str, Any]], Field(max_length=MAX_SAMPLES)] = Field(
        default_factory=list)  # hyperfine's own JSON (version 6: without per-run measurements)
    seconds: float = 0.0  # wall time spent measuring this cell
    # runs that passed their deadline (version 4): their time (about the deadline) and round;
    # never in ``times``, so never in the timing statistics
    hung_times: Floats = Field(default_factory=list)
    hung_rounds: Ints = Field(default_factory=list)
    # version 7: the runs that began each block (``block_warmup``), never timed: their wall
    # time, other metrics (aligned with it) and round
    warmup_times: Floats = Field(default_factory=list)
    warmup_metrics: Annotated[dict[MetricName, Floats], Field(max_length=MAX_METRICS)] = Field(
        default_factory=dict)
    warmup_rounds: Ints = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        # version 5's user/system arrays (a bisect record embeds samples without a results
        # version of its own)
        return legacy_cpu(data) if isinstance(data, dict) else data


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


class Also(_Rec):
    """patchbench.analysis.paired.Also: when the variants' shapes differ, the ratios of means and
    of 90th percentiles beside the geometric means', and whether they disagree."""

    sd_ratio: float
    shape_p: float
    mean_ratio: float
    mean_ci_low: float | None
    mean_ci_high: float | None
    p90_ratio: float
    p90_ci_low: float | None
    p90_ci_high: float | None
    disagree: str


class Stalls(_Rec):
    """patchbench.analysis.stalls.Stalls (version 8): runs of a comparison at least ``factor``
    times the median of both variants' runs, counted; the gate judges them apart (its call on
    ``speedup``, ``low`` and ``high``, the runs that did not stall)."""

    baseline: int
    baseline_runs: int
    candidate: int
    candidate_runs: int
    threshold_s: float
    p_more: float | None
    factor: float
    speedup: float | None = None
    low: float | None = None
    high: float | None = None


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


class MetricVerdict(_Rec):
    """One metric other than wall time of a candidate against the baseline (results version 6):
    the round-paired verdict of patchbench.analysis.metrics.judge, its fields named as the
    comparison's own; ``effect`` (candidate minus baseline) in the metric's ``unit`` (s, B,
    count); ``baseline`` and ``candidate`` each variant's mean per run; ``estimand`` what a round
    pairs (geometric means per run, or a round's arithmetic means when a run may be 0)."""

    metric: MetricName
    unit: str
    estimand: str
    baseline: float | None
    candidate: float | None
    speedup: Figure  # baseline / candidate: above 1, the candidate has less of it
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: str  # faster | slower | equivalent | inconclusive | withheld (faster: less of it)
    alpha: float
    min_effect: float
    p_slower: float | None
    p_faster: float | None
    p_equivalent: float | None
    equivalence_low: float | None
    equivalence_high: float | None
    mde: float | None
    effect: float
    effect_ci_low: float | None
    effect_ci_high: float | None
    resolution: float | None
    rounds: int
    min_rounds: int
    round_ids: list[int] = Field(default_factory=list)
    round_ratios: list[float] = Field(default_factory=list)
    note: str = ""
    method: str


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
    also: Also | None = None  # PAIRED6_METHOD, when the variants' shapes differ
    stalls: Stalls | None = None  # version 8: runs counted apart as stalls (None: none)
    # version 6: every metric other than wall time, judged alike; None: wall time only
    metrics: dict[MetricName, MetricVerdict] | None = None

    @property
    def paired(self) -> bool:
        return self.rounds is not None


class Rate(_Rec):
    count: int
    unit: str


class Check(_Rec):
    """A scenario's ``verify`` command, run once per variant after measuring."""

    command: str
    exit_code: int | None
    passed: bool
    output: str


# A kind's step of reading an older results version: its scenario entry of that version (a
# dict, as the file holds it) as the next version has it.
ScenarioUpgrade = Callable[[dict[str, Any]], dict[str, Any]]


class _Scenario(_Rec):
    """The fields every kind's result has. A kind's model (in its module in patchbench/scenarios/,
    registered with :func:`register`) adds its own and ``kind: Literal[NAME] = NAME`` (declared by
    each kind after these fields, where results.json has it)."""

    name: PlainName
    description: str = ""
    command: str
    runs: int
    rounds: int
    warmup: int
    # version 7: the runs that began every block, recorded apart (Samples.warmup_*); None in a
    # run made before them (no block warm-ups), which is dumped as it was saved: without it
    block_warmup: int | None = Field(default=None, exclude_if=lambda v: v is None)
    rate: Rate | None = None
    order: list[list[str]] = Field(default_factory=list)

    if TYPE_CHECKING:  # for the type checker only: a field here would move it in results.json
        kind: str
    # the kind's own steps of reading older versions (results version -> step), run after the
    # file's step of that version (upgrade_v1, ...)
    upgrades: ClassVar[Mapping[int, ScenarioUpgrade]] = {}


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
    metrics: list[MetricName] | None = None  # version 6: the metrics measured; None: wall only


TimedResult = _Timed  # a kind with cells and comparisons (the summary table's rows)
ScenarioResult = _Scenario  # what every kind's result model extends (directly or as TimedResult)
Record = _Rec  # a record of results.json: an unknown key is refused


# --- the kinds' result models: a registry below the kinds -----------------------------------
#
# Each kind's result model (and its records) lives in its module in patchbench/scenarios/, which
# registers it through patchbench.scenarios.register; results.json is read by dispatching every
# scenario entry on its ``kind`` through this registry. This module imports nothing above it, so
# whoever reads results imports patchbench.scenarios first (the layers that load do: runs,
# report, bisect, cli; the tests through tests/conftest.py).


@dataclass
class _Registry:
    models: dict[str, type[ScenarioResult]] = field(default_factory=dict)
    default: str | None = None  # the kind of an entry without ``kind`` (version 1 files)


_REGISTRY = _Registry()


def register(kind: str, model: type[ScenarioResult], *, default: bool = False) -> None:
    """Read scenario entries whose ``kind`` is ``kind`` as ``model`` (which must say so: its
    ``kind`` field defaults to ``kind``); ``default``: also entries without ``kind``. A wrong
    registration is a bug (exit 3), not a user's error."""
    declared = model.model_fields.get("kind")
    if declared is None or declared.default != kind:
        raise RuntimeError(f"bug: the result model {model.__name__} is registered for the kind "
                           f"{kind!r}, but its kind field does not default to it")
    if _REGISTRY.models.get(kind, model) is not model:
        raise RuntimeError(f"bug: two result models for the kind {kind!r}: "
                           f"{_REGISTRY.models[kind].__name__} and {model.__name__}")
    _REGISTRY.models[kind] = model
    if default:
        _REGISTRY.default = kind
    _kinds_changed()


def unregister(kind: str) -> None:
    """Forget a kind (a test's own kind, registered for that test)."""
    _REGISTRY.models.pop(kind, None)
    if _REGISTRY.default == kind:
        _REGISTRY.default = None
    _kinds_changed()


def result_models() -> dict[str, type[ScenarioResult]]:
    """Every registered kind's result model, in the order the kinds were registered."""
    return dict(_REGISTRY.models)


def _kinds_changed() -> None:
    """Results' schema is built on its first use (defer_build), when every kind has
    registered; a kind registered later (a test's) needs it built again."""
    if Results.__pydantic_complete__:
        Results.model_rebuild(force=True)


def _kind_of(value: Any) -> str:
    default = _REGISTRY.default or ""
    if isinstance(value, dict):
        return str(value.get("kind", default))
    return str(getattr(value, "kind", default))


class _ByKind:
    """A scenario entry of results.json, validated and dumped as the result model its ``kind``
    names in the registry (a tagged union of the registered models, so an error's location is
    the same as a hand-written union's: ``scenarios.0.KIND.field``)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler
                                     ) -> core_schema.CoreSchema:
        models = _REGISTRY.models
        if not models:
            raise RuntimeError("bug: no scenario kind is registered, so no results can be read; "
                               "import patchbench.scenarios (the registry) before reading results")
        return core_schema.tagged_union_schema(
            {kind: handler.generate_schema(model) for kind, model in models.items()},
            discriminator=_kind_of, custom_error_type="unknown_kind",
            custom_error_message="kind: not a scenario kind this patchbench knows (known: "
            + ", ".join(models) + ")")


AnyScenarioResult = Annotated[ScenarioResult, _ByKind()]


class Settings(_Rec):
    alpha: Annotated[float, Field(gt=0, lt=1)]
    min_effect: Annotated[float, Field(ge=0)]
    # the gate's margin (a fraction; version 6, PAIRED6_METHOD comparisons); None: min_effect
    gate_margin: Annotated[float, Field(gt=0, lt=1)] | None = None


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


class AABuild(_Rec):
    """Which A/A a run did (``compare --aa`` or ``--aa-layout``) and how its two builds differ."""

    kind: Literal["same-binary", "layout"]  # layout: a second build differing in layout only
    twin: PlainName  # the variant measured against the baseline
    method: str = ""  # layout: the flags of the second build
    why: str = ""  # layout: what they change, and why the behaviour is the same
    sha256_equal: bool  # every artifact of the two builds
    note: str = ""  # why the sha256 are equal or differ; a fallback's reason


class Look(_Rec):
    """One look of ``--until-ci`` or ``--budget``: the rounds measured so far and the widest CI
    half-width of the scenario's comparisons then (a fraction; None: no interval yet); with
    ``--budget``, the widest per gated metric too."""

    rounds: int
    half_width: float | None
    widths: dict[MetricName, float | None] = Field(default_factory=dict)


class Stopping(_Rec):
    """How ``--until-ci`` or ``--budget`` ended one scenario (one set of interleaved rounds: per
    condition)."""

    scenario: str
    condition: str = ""
    target: float | None  # --until-ci: the CI half-width asked for (a fraction); --budget: None
    max_rounds: int
    alpha: float  # the nominal level, spent over the looks
    alpha_per_look: float
    planned_looks: list[int]  # the rounds at which a look may be taken
    looks: list[Look]
    stopped_at: int
    # "target" or "budget" (--until-ci); "decided", "budget" or "time" (--budget)
    reason: str
    rule: str
    # --budget (results version 6): the seconds given, the gated metrics that must be decided,
    # the seconds the scenario's rounds took, and the widest MDE per metric at the stop
    budget_s: float | None = None
    metrics: list[MetricName] = Field(default_factory=list)
    seconds: float | None = None
    mde: dict[MetricName, float | None] = Field(default_factory=dict)
    margin: float | None = None  # --gate: the margin its calls were made against
    # --budget/--gate (results version 7): candidates whose comparison was done before the set
    # stopped, by label, with the round after which they were no longer measured
    dropped: dict[str, int] = Field(default_factory=dict)


class Results(_Rec):
    # the scenario entries' schema is built at first use, from the kinds registered by then
    model_config = ConfigDict(extra="forbid", defer_build=True)

    schema_version: Literal[8] = 8
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
    aa_build: AABuild | None = None  # which A/A (None: a run before --aa-layout)
    seed: int
    settings: Settings
    started_at: str
    finished_at: str = ""
    machine: dict[str, Any]
    # build manifests, as written beside the build; the key names manifest-<variant>.json
    builds: dict[PlainName, dict[str, Any]]
    scenarios: Annotated[list[AnyScenarioResult], Field(max_length=MAX_SCENARIOS)] = Field(
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
    # timing-statistics line in a run without timed comparisons (soak, stress only); 3: the
    # builds table names the upstream commits and pull requests of each series
    report_format: Literal[1, 2, 3] = 1
    stopping: list[Stopping] | None = None  # --until-ci and --budget only
    # the metrics whose "slower" fails the gate (version 6: the comparison's ``gate`` or
    # --gate-metric); None: wall time (older files)
    gate_metrics: list[MetricName] | None = None

    def dump(self) -> dict[str, Any]:
        out = self.model_dump(mode="json", exclude_none=False)
        if out.get("gate") is None:  # files made before the field stay as they were
            out.pop("gate", None)
            out.pop("gate_allow_inconclusive", None)
        if out.get("aa_build") is None:  # files made before the field stay as they were
            out.pop("aa_build", None)
        if out.get("report_format") == 1:
            out.pop("report_format", None)
        if out.get("stopping") is None:
            out.pop("stopping", None)
        if out.get("gate_metrics") is None:
            out.pop("gate_metrics", None)
        return out

    def gate_reasons(self, failures: Callable[..., list[str]]) -> list[str] | None:
        """The gate's reasons for the reports (``failures`` is ``patchbench.gate.failures``), or
        None when the run was made without --gate."""
        if self.gate is False:
            return None
        return failures(self, allow_inconclusive=self.gate_allow_inconclusive)


# A saved run as the readers (diff, merge, export, the job summary, report.html) take it: the
# typed results, or a document as results.json holds it (a script's or a test's, perhaps altered),
# which :func:`as_results` validates on the way in; inside, they read only the typed one.
RunInput = Results | Mapping[str, Any]


def as_results(run: RunInput, where: str = "results") -> Results:
    """The typed results of ``run`` (validated by :func:`parse` when it is a document)."""
    return run if isinstance(run, Results) else parse(dict(run), where)


# --- reading older versions ---------------------------------------------------------------


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version 1 file as version 2: drop rendered markdown, fill ``median_ci`` (each kind's
    own step follows: ``upgrades`` of its result model)."""
    out = dict(data)
    out["schema_version"] = 2
    out["schema_history"] = {str(k): v for k, v in SCHEMA_HISTORY.items()}
    scenarios = []
    for sc in data.get("scenarios", []):
        sc = {k: v for k, v in sc.items() if k != "markdown"}
        for cell in sc.get("cells", []):
            cell["summary"].setdefault("median_ci", None)
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


def upgrade_v5(data: dict[str, Any]) -> dict[str, Any]:
    """A version 5 file as version 6: each cell's per-run ``user``/``system`` arrays become the
    metrics ``user``, ``system`` and ``cpu`` where present (:func:`legacy_cpu`); no peak memory,
    no metric verdicts (the comparisons keep their wall-time verdicts)."""
    out = dict(data)
    out["schema_version"] = 6
    out["schema_history"] = {str(k): v for k, v in SCHEMA_HISTORY.items()}
    scenarios = []
    for sc in data.get("scenarios", []):
        if isinstance(sc, dict) and isinstance(sc.get("cells"), list):
            sc = {**sc, "cells": [{**c, "samples": legacy_cpu(c["samples"])}
                                  if isinstance(c, dict) and isinstance(c.get("samples"), dict)
                                  else c for c in sc["cells"]]}
        scenarios.append(sc)
    out["scenarios"] = scenarios
    return out


def upgrade_v6(data: dict[str, Any]) -> dict[str, Any]:
    """A version 6 file as version 7: blocks without their own warm-ups (the defaults say so:
    ``block_warmup`` 0, no ``warmup_*`` samples, nothing dropped)."""
    out = dict(data)
    out["schema_version"] = 7
    out["schema_history"] = {str(k): v for k, v in SCHEMA_HISTORY.items()}
    return out


def upgrade_v7(data: dict[str, Any]) -> dict[str, Any]:
    """A version 7 file as version 8: no stalls counted (``stalls`` null) and no machine
    fingerprint beyond what ``machine`` holds; its verdicts keep the rule they were judged by
    (``method``) until re-judged (patchbench.analysis.rejudge, at load)."""
    out = dict(data)
    out["schema_version"] = 8
    out["schema_history"] = {str(k): v for k, v in SCHEMA_HISTORY.items()}
    return out


UPGRADES = {1: upgrade_v1, 2: upgrade_v2, 3: upgrade_v3, 4: upgrade_v4, 5: upgrade_v5,
            6: upgrade_v6, 7: upgrade_v7}


def upgrade(data: dict[str, Any], version: int) -> dict[str, Any]:
    """A file of ``version`` as the next version: the file's step, then each scenario's kind's
    own step of that version (a kind without one, or not registered, is left as it is)."""
    out = UPGRADES[version](data)
    if isinstance(out.get("scenarios"), list):
        steps = [_REGISTRY.models[k].upgrades.get(version) if k in _REGISTRY.models else None
                 for k in map(_kind_of, out["scenarios"])]
        out["scenarios"] = [step(sc) if step else sc
                            for sc, step in zip(out["scenarios"], steps, strict=True)]
    return out


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
    if "numa_nodes" in m and m["numa_nodes"] is not None and not _number(
            m["numa_nodes"], integer=True, low=1):
        out.append("machine.numa_nodes: not a whole number of 1 or more")
    for key in ("microcode", "instance_type", "class"):
        if m.get(key) is not None and not (isinstance(m[key], str) and len(m[key]) <= 64):
            out.append(f"machine.{key}: not a text of at most 64 characters")
    for variant, man in res.builds.items():
        arts = man.get("artifacts", {})
        if not isinstance(arts, dict):
            out.append(f"builds.{variant}.artifacts: not a mapping of artifacts")
            continue
        for name, art in arts.items():
            if not isinstance(art, dict) or not isinstance(art.get("sha256"), str) \
                    or not is_sha256(art["sha256"]):
                out.append(f"builds.{variant}.artifacts.{name}.sha256: missing or not a sha256")
    if res.aa_build is not None and (not res.aa or res.aa_build.twin not in res.builds):
        out.append("aa_build: an A/A record in a run that is not an A/A, or whose twin "
                   f"{res.aa_build.twin!r} is not one of its builds")
    for i, sc in enumerate(res.scenarios):
        if not isinstance(sc, TimedResult):
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
        try:  # an old file of the wrong shape is a damaged file, not a bug (exit 18)
            data = upgrade(data, version)
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
        text = raw.decode("utf-8")
        data = json.loads(text, parse_constant=_no_constant)
        depth = _depth(data)  # and a number too large for a float (1e999) is refused here
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ReportError(f"cannot read {path}: not UTF-8 text (byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise ReportError(f"cannot read {path}: not strict JSON with finite numbers "
                          f"({exc!s:.200})") from None
    finally:
        os.close(fd)
    if depth > MAX_DEPTH:
        raise ReportError(f"{path}: nested more than {MAX_DEPTH} levels deep "
                          "(docs/security.md: limits)")
    if _SURROGATE_ESCAPE.search(text):  # a \ud800 without its pair is no character: U+FFFD
        data = _no_lone_surrogates(data)
    return data


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_lone_surrogates(data: Any) -> Any:
    """``data`` with every lone surrogate in its strings and keys (json.loads keeps the ones a
    ``\\ud800`` escape names without its pair) as U+FFFD, as a UTF-8 decoder with
    errors="replace" would give it: such a string cannot be printed or written (exit 3 before)."""
    if isinstance(data, str):
        return _LONE_SURROGATE.sub("\ufffd", data)
    if isinstance(data, list):
        return [_no_lone_surrogates(v) for v in data]
    if isinstance(data, dict):
        return {_no_lone_surrogates(k): _no_lone_surrogates(v) for k, v in data.items()}
    return data


def _depth(data: Any) -> int:
    """How deeply objects and lists nest in ``data`` as json.loads gives it (plain dicts and
    lists; iteratively: no recursion limit); a ValueError when a number is not finite (json
    reads 1e999 as inf). A container's children are typed and checked in C-level passes, so a
    run's long lists of numbers are never walked element by element in Python."""
    if type(data) not in (dict, list):
        _finite([data], {type(data)})
        return 0
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        deepest = max(deepest, level)
        children = list(value.values()) if type(value) is dict else value
        kinds = set(map(type, children))
        _finite(children, kinds)
        if dict in kinds or list in kinds:
            stack += [(v, level + 1) for v in children if type(v) in (dict, list)]
    return deepest


def _finite(values: list[Any], kinds: set[type]) -> None:
    if float not in kinds:
        return
    floats = values if kinds == {float} else [v for v in values if type(v) is float]
    if not all(map(math.isfinite, floats)):
        raise ValueError("a number too large to be finite")


def load(path: Path) -> Results:
    """Read a run's results.json (a run folder or the file itself), any known version."""
    target = path / "results.json" if path.is_dir() and not path.is_symlink() else path
    return parse(read_json(target), str(target), untrusted=True)
