"""The versioned results file of a bisect or history run (``bisect.json`` / ``history.json``):
the commits, every step or point, the builds' manifests and every measurement whole (the scenario
kind's own result, as results.json holds it), so the classification can be checked again."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SerializeAsAny

from patchbench import scenarios
from patchbench.results import ScenarioResult
from patchbench.scenarios.steps import StepRule

SCHEMA_VERSION = 1  # the schema_version of both files


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


class Bisect(_Rec):
    schema_version: Literal[1] = 1
    kind: Literal["bisect"] = "bisect"
    tool: str
    target: str
    comparison: str
    scenario: str
    scenario_kind: str
    alpha: float
    min_effect: float
    budget: int  # the largest runs/rounds multiplier an undecided step may reach
    seed: int
    started_at: str
    finished_at: str = ""
    good: CommitRec
    bad: CommitRec
    chain: int  # commits on the first-parent chain, both ends included
    expected_steps: int
    outcome: Literal["found", "range", "no-difference"]
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


class History(_Rec):
    schema_version: Literal[1] = 1
    kind: Literal["history"] = "history"
    tool: str
    target: str
    comparison: str
    scenario: str
    scenario_kind: str
    alpha: float
    min_effect: float
    seed: int
    started_at: str
    finished_at: str = ""
    points: list[PointRec]
    builds: dict[str, dict[str, Any]] = Field(default_factory=dict)
    machine: dict[str, Any] = Field(default_factory=dict)
    measurements: list[MeasurementRec] = Field(default_factory=list)


def parse_bisect(data: Any) -> Bisect:
    return Bisect.model_validate(data)


def parse_history(data: Any) -> History:
    return History.model_validate(data)
