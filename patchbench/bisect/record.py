"""The versioned results file of a bisect or history run (``bisect.json`` / ``history.json``):
the commits, every step or point, the builds' manifests and every measurement whole (the scenario
kind's own result, as results.json holds it), so the classification can be checked again.
Details: docs/internals.md."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SerializeAsAny, model_validator

from patchbench import scenarios
from patchbench.results import ScenarioResult
from patchbench.scenarios.steps import StepRule

SCHEMA_VERSION: Literal[2] = 2  # the schema_version of new bisect.json files (history.json: 1)
BISECT1_METHOD = "bisect1-each-look-at-alpha"
BISECT2_METHOD = "bisect2-alpha-spent"


class _Rec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CommitRec(_Rec):
    sha: str
    subject: str
    author_date: str


def step_rule(kind: object) -> StepRule:
    """How a bisect or history step judges and draws the results of the scenario kind ``kind``:
    the kind's own rule, through the registry (patchbench/scenarios/steps.py); a ValueError for
    a kind that has none."""
    if isinstance(kind, str) and kind in scenarios.KINDS:
        step = scenarios.KINDS[kind].step
        if step is not None:
            return step
    raise ValueError(f"kind {kind!r}: not a scenario kind a bisect step judges")


def _judged(value: Any) -> Any:
    """A measurement's result, read as the result model of the kind it names."""
    if isinstance(value, ScenarioResult):
        step_rule(value.kind)
        return value
    if not isinstance(value, dict):
        return value  # not a result: refused as one
    step_rule(value.get("kind"))
    return scenarios.KINDS[value["kind"]].result.model_validate(value)


class MeasurementRec(_Rec):
    label: str
    commits: list[str]  # full SHAs; variants are named by the first 12 hex digits
    factor: int  # the scenario's runs (and rounds) times this
    seed: int
    warnings: list[str] = Field(default_factory=list)
    # the kind's own result model, dumped as that model (not as the fields every kind shares)
    result: Annotated[SerializeAsAny[ScenarioResult], BeforeValidator(_judged)]


class StepRec(_Rec):
    step: int
    index: int  # in the first-parent chain, 0 = good (or in ``branch``'s chain)
    commit: CommitRec
    # on a merged branch the bisect descended into: "merged by <sha>"; None: the main chain
    branch: str | None = None
    classification: Literal["good", "bad", "undecided", "skipped"]
    value: str  # the commit's median [CI] or its hangs
    vs_good: str = ""
    vs_bad: str = ""
    factors: list[int] = Field(default_factory=list)  # runs/rounds multipliers tried
    measurements: list[int] = Field(default_factory=list)  # indices into ``measurements``
    skipped_reason: str = ""
    # schema 2: the level each comparison of the step's looks was judged at, and the evidence
    level: float | None = None
    reason: str | None = None


class Spending(_Rec):
    """How a schema-2 bisect spent alpha (patchbench/bisect/levels.py)."""

    ends_looks: list[int]  # the planned multipliers of the ends' runs (and rounds)
    ends_level: float  # each look of the ends, two-sided
    direction: Literal["more", "less"] | None = None  # how bad differs from good, when it does
    planned_steps: int = 0  # the steps planned; one more share is held back for any beyond
    step_looks: list[int] = Field(default_factory=list)  # a step's planned multipliers
    comparisons: int = 0  # per look that can put a commit on the wrong side
    step_level: float | None = None  # each comparison of a planned step's look
    power: str = ""  # the power of a step's first look, as estimated from the ends


class _Run(_Rec):
    """What a bisect and a history record first: what ran, on what, judged how."""

    schema_version: int
    kind: str
    tool: str
    target: str
    comparison: str
    scenario: str
    scenario_kind: str
    alpha: float
    min_effect: float


class Bisect(_Run):
    schema_version: Literal[1, 2] = SCHEMA_VERSION
    kind: Literal["bisect"] = "bisect"
    budget: int  # the largest runs/rounds multiplier an undecided step may reach
    seed: int
    started_at: str
    finished_at: str = ""
    good: CommitRec
    bad: CommitRec
    chain: int  # commits on the first-parent chain, both ends included
    expected_steps: int
    # "underpowered" (schema 2): the ends differ, but no step could tell them apart with the
    # runs the budget allows (refused before the first step, exit 10)
    outcome: Literal["found", "range", "no-difference", "underpowered"]
    first_bad: CommitRec | None = None
    # the merge commits the search descended through, outermost first (None: none)
    descended: list[CommitRec] | None = None
    range: list[CommitRec] = Field(default_factory=list)  # the candidates when not found
    ends: str = ""  # bad against good, as measured first
    why: str = ""
    steps: list[StepRec] = Field(default_factory=list)
    skipped: list[CommitRec] = Field(default_factory=list)
    builds: dict[str, dict[str, Any]] = Field(default_factory=dict)  # sha -> manifest
    built_fresh: int = 0
    build_failures: dict[str, str] = Field(default_factory=dict)
    machine: dict[str, Any] = Field(default_factory=dict)
    measurements: list[MeasurementRec] = Field(default_factory=list)
    method: str | None = None  # schema 2: BISECT2_METHOD (schema 1: unset, BISECT1_METHOD)
    spending: Spending | None = None  # schema 2

    @property
    def rule(self) -> str:
        """The rule this bisect was judged by."""
        return self.method or BISECT1_METHOD

    @model_validator(mode="after")
    def _one_rule(self) -> Bisect:
        if self.schema_version == 1:
            if self.method is not None or self.spending is not None:
                raise ValueError("schema 1 has no `method` or `spending` (its rule is "
                                 f"{BISECT1_METHOD})")
            if self.outcome == "underpowered":
                raise ValueError("outcome 'underpowered' is of schema 2")
        elif self.method is None:
            self.method = BISECT2_METHOD
        return self


class PointRec(_Rec):
    commit: CommitRec
    tag: str | None = None  # a release tag at the commit: the chart's label (None: none known)
    value: str
    median: float | None = None
    ci: list[float] | None = None
    hangs: int | None = None
    runs: int | None = None
    vs_first: str = ""
    differs: bool | None = None
    skipped_reason: str = ""


class History(_Run):
    schema_version: Literal[1] = 1
    kind: Literal["history"] = "history"
    seed: int
    started_at: str
    finished_at: str = ""
    points: list[PointRec]
    builds: dict[str, dict[str, Any]] = Field(default_factory=dict)
    machine: dict[str, Any] = Field(default_factory=dict)
    measurements: list[MeasurementRec] = Field(default_factory=list)


def parse_bisect(data: Any) -> Bisect:
    """A bisect.json of any schema: schema 1 read as written (judged by ``BISECT1_METHOD``, its
    schema-2 fields unset, so it renders as it did), schema 2 as it is."""
    return Bisect.model_validate(data)


def parse_history(data: Any) -> History:
    return History.model_validate(data)
