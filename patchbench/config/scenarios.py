"""What every scenario kind's config model shares, and ``AnyScenario``: the tagged union a
comparison's ``scenarios:`` list is validated against, built on first use from the config models
the kinds register. A kind's config model (the keys matrix.yaml gives it, and the records only it
uses) lives in its module in patchbench/scenarios/ with its plan, run, gate rule, result and
report; ``patchbench.scenarios.register`` registers it here (``register_config``). This module
imports no kind, so that the config stays below the kinds, the runtimes and the builds (the kinds
use both; both read the config): whoever loads a matrix imports patchbench.scenarios first (cli,
pipeline, bisect, plan; the tests through tests/conftest.py), and loading one with no kind
registered is a bug (exit 3)."""

from __future__ import annotations

import shlex
import signal
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, GetCoreSchemaHandler, field_validator, model_validator
from pydantic_core import core_schema

from patchbench.analysis import metrics as mx
from patchbench.measure.conditions import DEFAULT, Condition
from patchbench.util.limits import MAX_SAMPLES, MAX_TIMEOUT_S
from patchbench.util.models import NAME_RE, StrictModel

# the kind of a scenario without ``kind`` (its kind module registers it like any other)
DEFAULT_KIND = "command"


class ScenarioConfig(StrictModel):
    """Keys every kind has. ``runs`` must be a multiple of ``rounds`` so that every round runs each
    variant equally often."""

    kind: str = Field(description="The scenario kind; see its section.")
    name: str = Field(pattern=NAME_RE, description=(
        "The scenario's name, unique in its comparison (`--scenario NAME` runs only it)."))
    description: str = Field(default="", description="Free text shown in the report.")
    setup: list[list[str]] = Field(default_factory=list, description=(
        "Commands (argv lists, placeholders filled) run before a variant's runs (in the timed "
        "kinds: before each cell's runs in every round); a failing one stops the scenario."))
    teardown: list[list[str]] = Field(default_factory=list, description=(
        "Commands run after them, also after a failure."))
    warmup: int = Field(default=3, ge=0, le=MAX_SAMPLES, description=(
        "Timed kinds: unrecorded runs of a cell before its first round (none before its later "
        "rounds: see `block_warmup`)."))
    runs: int = Field(default=30, ge=1, le=MAX_SAMPLES, description=(
        "Measured runs per variant in all, a multiple of `rounds` (`--runs` overrides it); at "
        f"most {MAX_SAMPLES:,}, the samples a cell of a saved run may hold."))
    rounds: int = Field(default=5, ge=1, le=MAX_SAMPLES, description=(
        "Interleaved rounds, in a seeded random order of the variants; fewer than 5 give no "
        "verdict (`--rounds` overrides it)."))
    timeout: float = Field(default=60.0, gt=0, le=MAX_TIMEOUT_S, description=(
        "Seconds one run (and each command around it) may take; a run past it is a hang; at "
        f"most {MAX_TIMEOUT_S:,.0f} (a day)."))

    @model_validator(mode="after")
    def _bounded(self) -> ScenarioConfig:
        """The limits (util/limits.py) of every kind, also where a kind declares these keys
        anew: a run that a saved run could not hold is refused before anything is built."""
        for key, limit in (("runs", MAX_SAMPLES), ("rounds", MAX_SAMPLES),
                           ("warmup", MAX_SAMPLES), ("timeout", MAX_TIMEOUT_S)):
            value = getattr(self, key)
            if value > limit:
                raise ValueError(f"{key} ({value:g}) is more than {limit:,g}, "
                                 + ("the longest patchbench waits (a day)" if key == "timeout"
                                    else "the samples a cell of a saved run may hold"))
        return self

    def cells_per_variant(self) -> int:
        """How many cells one variant has in this scenario (its conditions times a kind's
        parameters), for the cell limit of a saved run (``MAX_CELLS``)."""
        return len(getattr(self, "conditions", None) or [None])

    @model_validator(mode="after")
    def _balanced(self) -> ScenarioConfig:
        if self.runs % self.rounds:
            raise ValueError(
                f"runs ({self.runs}) must be a multiple of rounds ({self.rounds}) so that every "
                "round runs each variant equally often"
            )
        return self

    def shown_command(self) -> str:
        """The measured command as the report shows it (a kind's ``command``, if it has one)."""
        argv = getattr(self, "command", None)
        return shlex.join(argv) if isinstance(argv, list) else ""

    def plan_detail(self) -> str:
        """What ``--dry-run`` adds to the scenario's line (", k = [1, 8]", ...)."""
        return ""


UNTRAPPABLE = ("SIGKILL", "SIGSTOP")


def canonical(name: str) -> str:
    """``usr1``, ``USR1`` or ``SIGUSR1`` -> ``SIGUSR1``; a ValueError for anything else."""
    up = name.strip().upper()
    full = up if up.startswith("SIG") else "SIG" + up
    if full not in signal.Signals.__members__ or full.startswith("SIG_"):
        raise ValueError(f"{name!r} is not a signal name (e.g. SIGUSR1)")
    if full in UNTRAPPABLE:
        raise ValueError(f"{full} cannot be trapped, so its arrival cannot be recorded")
    return full


class Rate(StrictModel):
    """Report count/time as a rate as well (e.g. 2000 records per run -> lines/s)."""

    count: int = Field(gt=0, description="How many units one run handles (e.g. 2000 records).")
    unit: str = Field(description="The unit's name, shown as `UNIT/s` (e.g. `lines`).")


def _named(value: Any) -> Any:
    """``cpu`` as ``{name: cpu}``: a metric is named alone or with its own min_effect."""
    return {"name": value} if isinstance(value, str) else value


class MetricSpec(StrictModel):
    """A metric a timed scenario records and judges, by name, optionally with its own
    min_effect."""

    name: str = Field(description="The metric (see `metrics`).")
    min_effect: float | None = Field(default=None, ge=0, lt=1, description=(
        "The smallest change of this metric (a fraction) that counts as faster or slower, "
        "smaller or larger; default: the comparison's `min_effect`."))

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in mx.METRICS:
            from difflib import get_close_matches

            close = get_close_matches(name, list(mx.METRICS), n=1)
            raise ValueError(f"unknown metric {name!r}" + (
                f" (did you mean {close[0]!r}?)" if close else "")
                + "; known: " + ", ".join(mx.METRICS))
        return name


Metrics = Annotated[list[Annotated[MetricSpec, BeforeValidator(_named)]], Field(min_length=1)]



class RoundsConfig(ScenarioConfig):
    """The keys of a kind whose rounds each run every variant once (stress, ctrstress)."""

    warmup: int = Field(default=3, ge=0, le=MAX_SAMPLES, description="Not used by this kind.")
    runs: int = Field(default=30, ge=1, le=MAX_SAMPLES, description=(
        "Not used by this kind; keep it equal to `rounds` (it must be a multiple of it)."))
    rounds: int = Field(default=5, ge=1, le=MAX_SAMPLES, description=(
        "Rounds; each runs every variant once, in a seeded random order."))


class TimedConfig(ScenarioConfig):
    """Keys of the kinds timed by hyperfine in interleaved rounds (the command kind and those
    built on it): the measured command and what runs around it."""

    block_warmup: int = Field(default=1, ge=0, le=100, description=(
        "Runs that begin every block (each cell in each round) and are recorded apart, never "
        "timed: the first run after another variant pays for following it, by a different "
        "amount per variant, so without them short blocks change what is measured; with them a "
        "block of any length measures the same warm runs (`--block-warmup` overrides it; "
        "docs/statistics.md, \"The schedule\")."))

    command: list[str] = Field(min_length=1, description=(
        "The measured command (argv, placeholders filled), run under the launcher's deadline."))
    prepare: str | None = Field(default=None, description=(
        "hyperfine `--prepare`: a shell command before every run."))
    cleanup: str | None = Field(default=None, description=(
        "hyperfine `--cleanup`: a shell command after each round's runs."))
    rate: Rate | None = Field(default=None, description=(
        "Also report count/time as a rate (e.g. lines/s)."))
    verify: list[str] = Field(default_factory=list, description=(
        "A check command run once per variant after measuring (exit 0 = pass; `--gate` fails "
        "a candidate that fails it); its stdout is kept."))
    conditions: list[Condition] = Field(default_factory=lambda: [DEFAULT], min_length=1,
                                        description=(
        "Machine states the cells run under, each its own set of cells; names must be unique."))
    metrics: Metrics = Field(
        default_factory=lambda: [MetricSpec(name=n) for n in mx.DEFAULT], description=(
            "What hyperfine records per run and each comparison judges, each by the round-paired "
            "rule: `wall` (wall-clock time, always recorded and judged first), `cpu` (user + "
            "system), `user`, `system`, `peak-rss` (peak resident memory), and the hardware "
            "counters `instructions`, `cycles`, `cache-references`, `cache-misses`, "
            "`branch-misses` (they need a PMU: a machine without one refuses them, exit 16). "
            "Each item a name or `{name: cpu, min_effect: 0.1}`; default: the first five."))

    @model_validator(mode="after")
    def _conditions(self) -> TimedConfig:
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ValueError("condition names must be unique")
        metric_names = [m.name for m in self.metrics]
        if len(set(metric_names)) != len(metric_names):
            raise ValueError("metrics: each metric once")
        if any(m.name == mx.WALL and m.min_effect is not None for m in self.metrics):
            raise ValueError("metrics: wall time's min_effect is the comparison's `min_effect`")
        return self

    @property
    def metric_names(self) -> list[str]:
        """The metrics recorded and judged, wall time first (always, listed or not)."""
        return mx.ordered([mx.WALL, *(m.name for m in self.metrics)])

    def metric_min_effect(self, name: str, default: float) -> float:
        """Metric ``name``'s min_effect: its own, else ``default`` (the comparison's)."""
        own = next((m.min_effect for m in self.metrics if m.name == name), None)
        return default if own is None else own

    def plan_detail(self) -> str:
        if self.conditioned:
            return ", conditions " + ", ".join(c.name for c in self.conditions)
        return ""

    @property
    def conditioned(self) -> bool:
        """Whether cells are named by condition (anything but the default alone)."""
        return len(self.conditions) > 1 or not self.conditions[0].is_default


Argv = Annotated[list[str], Field(min_length=1)]  # a command: an argv list, never empty



# --- the kinds' config models: a registry below the kinds ------------------------------------

_MODELS: dict[str, type[ScenarioConfig]] = {}  # in the order the kinds registered
_REBUILD: list[Callable[[], None]] = []  # rebuilds of the models whose schema holds AnyScenario


def register_config(kind: str, model: type[ScenarioConfig]) -> None:
    """Validate scenarios whose ``kind`` is ``kind`` (or, for DEFAULT_KIND, that give none) as
    ``model``, whose ``kind`` field must default to ``kind``. A wrong registration is a bug
    (exit 3), not a user's error."""
    declared = model.model_fields.get("kind")
    if declared is None or declared.default != kind:
        raise RuntimeError(f"bug: the config model {model.__name__} is registered for the kind "
                           f"{kind!r}, but its kind field does not default to it")
    if _MODELS.get(kind, model) is not model:
        raise RuntimeError(f"bug: two config models for the kind {kind!r}: "
                           f"{_MODELS[kind].__name__} and {model.__name__}")
    _MODELS[kind] = model
    _kinds_changed()


def unregister_config(kind: str) -> None:
    """Forget a kind's config model (a test's own kind, registered for that test)."""
    if _MODELS.pop(kind, None) is not None:
        _kinds_changed()


def config_models() -> dict[str, type[ScenarioConfig]]:
    """Every registered kind's config model, in the order the kinds were registered (the
    "unknown scenario kind" message and docs/matrix.md list them so)."""
    return dict(_MODELS)


def rebuild_on_registration(rebuild: Callable[[], None]) -> None:
    """Call ``rebuild`` whenever a kind (un)registers: a model holding ``AnyScenario`` builds its
    schema on first use (``defer_build``), and a kind registered later (a test's) needs it built
    again."""
    _REBUILD.append(rebuild)


def _kinds_changed() -> None:
    """Rebuild the models whose schema holds the union."""
    for rebuild in _REBUILD:
        rebuild()


def no_kind_registered() -> RuntimeError:
    return RuntimeError("bug: no scenario kind is registered, so no matrix can be read; import "
                        "patchbench.scenarios (the registry) before loading a matrix")


def kind_of(value: Any) -> str:
    """The discriminator: a scenario without ``kind`` is of the default kind."""
    if isinstance(value, dict):
        return str(value.get("kind", DEFAULT_KIND))
    return str(getattr(value, "kind", DEFAULT_KIND))


class ByKind:
    """A scenario of matrix.yaml, validated as the config model its ``kind`` names in the
    registry (a tagged union of the registered models, so an error's location is that of a
    hand-written union's: ``scenarios.0.KIND.field``)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler
                                     ) -> core_schema.CoreSchema:
        if not _MODELS:
            raise no_kind_registered()
        return core_schema.tagged_union_schema(
            {kind: handler.generate_schema(model) for kind, model in _MODELS.items()},
            discriminator=kind_of, custom_error_type="unknown_kind",
            custom_error_message="unknown scenario kind (known: " + ", ".join(_MODELS) + ")")


AnyScenario = Annotated[ScenarioConfig, ByKind()]
