"""Every scenario kind's config model and ``AnyScenario``, the discriminated union a comparison's
``scenarios:`` list is validated against. A kind's plan, run, gate rule, result and report live in
its module in patchbench/scenarios/ (registered in ``patchbench.scenarios.KINDS``); only the keys
it reads from matrix.yaml live here, so that the config sits below the kinds, the runtimes and the
builds (the kinds use both; both read the config)."""

from __future__ import annotations

import shlex
import signal
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from patchbench.measure import mounttrace
from patchbench.measure.conditions import DEFAULT, Condition
from patchbench.util.models import Name, StrictModel


class ScenarioConfig(StrictModel):
    """Keys every kind has. ``runs`` must be a multiple of ``rounds`` so that every round runs each
    variant equally often."""

    kind: str = Field(description="The scenario kind; see its section.")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description=(
        "The scenario's name, unique in its comparison (`--scenario NAME` runs only it)."))
    description: str = Field(default="", description="Free text shown in the report.")
    setup: list[list[str]] = Field(default_factory=list, description=(
        "Commands (argv lists, placeholders filled) run before a variant's runs (in the timed "
        "kinds: before each cell's runs in every round); a failing one stops the scenario."))
    teardown: list[list[str]] = Field(default_factory=list, description=(
        "Commands run after them, also after a failure."))
    warmup: int = Field(default=3, ge=0, description=(
        "Timed kinds: unmeasured runs of a cell before its first round (at most 1 in its later "
        "rounds)."))
    runs: int = Field(default=30, ge=1, description=(
        "Measured runs per variant in all, a multiple of `rounds` (`--runs` overrides it)."))
    rounds: int = Field(default=5, ge=1, description=(
        "Interleaved rounds, in a seeded random order of the variants; fewer than 5 give no "
        "verdict (`--rounds` overrides it)."))
    timeout: float = Field(default=60.0, gt=0, description=(
        "Seconds one run (and each command around it) may take; a run past it is a hang."))

    @model_validator(mode="after")
    def _balanced(self) -> ScenarioConfig:
        if self.runs % self.rounds:
            raise ValueError(
                f"runs ({self.runs}) must be a multiple of rounds ({self.rounds}) so that every "
                "round runs each variant equally often"
            )
        return self

    def shown_command(self) -> str:
        """The measured command as the report shows it."""
        return ""

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


class SignalCheck(StrictModel):
    """``signals:`` of a stress scenario."""

    send: list[str] = Field(min_length=1, description=(
        "Signals sent to each ready instance (e.g. `SIGUSR1`); each counts as forwarded or lost."))
    ready: str = Field(default="ready", min_length=1, description=(
        "The line the process writes when its signal traps are set."))
    not_forwarded: list[str] = Field(default_factory=list, description=(
        "Signals the runtime does not forward by design: a missing one is \"by design\", never lost."))
    ready_timeout: float | None = Field(default=None, gt=0, description=(
        "Seconds to wait for an instance's readiness line; default: the scenario's timeout."))

    @field_validator("send", "not_forwarded")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        out = [canonical(n) for n in names]
        dups = sorted({n for n in out if out.count(n) > 1})
        if dups:
            raise ValueError(f"{', '.join(dups)} listed more than once")
        return out

    @field_validator("ready")
    @classmethod
    def _one_line(cls, ready: str) -> str:
        if ready.strip() != ready or "\n" in ready:
            raise ValueError("must be one line without surrounding spaces")
        return ready

    @model_validator(mode="after")
    def _subset(self) -> SignalCheck:
        extra = [n for n in self.not_forwarded if n not in self.send]
        if extra:
            raise ValueError(f"not_forwarded {extra} must also be listed under 'send'")
        if self.ready in {n.removeprefix("SIG") for n in self.send} | set(self.send):
            raise ValueError(f"ready line {self.ready!r} is also a signal name")
        return self


class Rate(StrictModel):
    """Report count/time as a rate as well (e.g. 2000 records per run -> lines/s)."""

    count: int = Field(gt=0, description="How many units one run handles (e.g. 2000 records).")
    unit: str = Field(description="The unit's name, shown as `UNIT/s` (e.g. `lines`).")


class CommandConfig(ScenarioConfig):
    """One command per variant, timed by hyperfine in interleaved rounds."""

    kind: Literal["command"] = Field(default="command", description=(
        "`command` (the default when `kind` is left out)."))
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

    @model_validator(mode="after")
    def _conditions(self) -> CommandConfig:
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ValueError("condition names must be unique")
        return self

    def shown_command(self) -> str:
        return shlex.join(self.command)

    def plan_detail(self) -> str:
        if self.conditioned:
            return ", conditions " + ", ".join(c.name for c in self.conditions)
        return ""

    @property
    def conditioned(self) -> bool:
        """Whether cells are named by condition (anything but the default alone)."""
        return len(self.conditions) > 1 or not self.conditions[0].is_default


class Phase(StrictModel):
    """One step of an instance's start, timed on its own."""

    name: Name = Field(description="The phase's name in the phase table.")
    command: list[str] = Field(min_length=1, description=(
        "The phase's command (argv, placeholders filled; `{i}` is the instance, `{k}` the count)."))


class BurstConfig(CommandConfig):
    """k instances of `command` launched at one moment, for each k; the time until the last
    exits is measured. Takes no `conditions`."""

    kind: Literal["burst"] = Field(default="burst", description="`burst`.")  # type: ignore[assignment]
    k: list[Annotated[int, Field(ge=1)]] = Field(min_length=1, description=(
        "The instance counts to scan; each k is its own cell (`{k}`; `{i}` is the instance)."))
    phases: list[Phase] = Field(default_factory=list, description=(
        "After timing, launch k instances whose start is split into these phases, run one after "
        "the other, and report each phase's median (for targets whose logs cannot time phases)."))
    phase_k: list[Annotated[int, Field(ge=1)]] = Field(default_factory=list, description=(
        "The instance counts the phases are timed at (needed with `phases`)."))
    phase_runs: int = Field(default=3, ge=1, description="Phase launches per variant and k.")


    @model_validator(mode="after")
    def _phases(self) -> BurstConfig:
        if self.phases and not self.phase_k:
            raise ValueError("'phases' need 'phase_k', the instance counts to time them at")
        if self.conditioned:
            raise ValueError("a burst scan takes no 'conditions' (its table is per k); use a "
                             "command or soak scenario for conditions")
        return self


    def plan_detail(self) -> str:
        return f", k = {self.k}"


Argv = Annotated[list[str], Field(min_length=1)]


class StressConfig(ScenarioConfig):
    """Each round launches `instances` copies of `launch`, waits a random delay, applies one of
    `actions` to all of them, then checks with `list` and `fresh`."""

    kind: Literal["stress"] = Field(default="stress", description="`stress`.")
    warmup: int = Field(default=3, ge=0, description="Not used by this kind.")
    runs: int = Field(default=30, ge=1, description=(
        "Not used by this kind; keep it equal to `rounds` (it must be a multiple of it)."))
    rounds: int = Field(default=5, ge=1, description=(
        "Rounds; each runs every variant once, in a seeded random order."))
    instances: int = Field(default=8, ge=1, description="Instances launched at once per round.")
    delay: tuple[float, float] = Field(default=(0.0, 1.2), description=(
        "[low, high] seconds: the seeded random delay before the action, drawn once per round "
        "for every variant."))
    actions: list[Literal["delete", "stop", "sigterm", "sigint", "none"]] = Field(
        min_length=1, description=(
            "What a round does to its instances: a command from `kill` per instance "
            "(`delete`, `stop`), a signal to the launched process (`sigterm`, `sigint`), or "
            "nothing (`none`)."))
    launch: list[str] = Field(min_length=1, description=(
        "The launched command (`{i}` is the instance, `{round}` the round)."))
    kill: dict[Literal["delete", "stop"], list[str]] = Field(default_factory=dict, description=(
        "The command per instance for the `delete` and `stop` actions."))
    list_cmd: list[str] = Field(min_length=1, alias="list", description=(
        "Lists what is left after the action; it must answer within the timeout."))
    fresh: list[str] = Field(min_length=1, description=(
        "A fresh instance that must run after every round."))
    exit_labels: dict[int, str] = Field(default_factory=dict, description=(
        "Names for exit codes of the launched command, shown in the report."))
    mode: Literal["run", "exec"] = Field(default="run", description=(
        "`exec`: every round first starts a host container (`host`, named `{host}`) into which "
        "the instances are launched."))
    host: list[Argv] = Field(default_factory=list, description=(
        "mode `exec`: commands that start the round's host container `{host}`."))
    host_teardown: list[Argv] = Field(default_factory=list, description=(
        "mode `exec`: commands that remove the host container, on every path."))
    signals: SignalCheck | None = Field(default=None, description=(
        "The signal check: signals sent once each instance is ready; only with "
        "`actions: [none]`."))

    @model_validator(mode="after")
    def _shape(self) -> StressConfig:
        missing = [a for a in self.actions if a in ("delete", "stop") and a not in self.kill]
        if missing:
            raise ValueError(f"actions {missing} need a command under 'kill'")
        if self.delay[0] < 0 or self.delay[1] < self.delay[0]:
            raise ValueError("'delay' must be [low, high] seconds with 0 <= low <= high")
        if self.mode == "exec" and not (self.host and self.host_teardown):
            raise ValueError("mode 'exec' needs 'host' (start the round's host container, "
                             "{host}) and 'host_teardown' (remove it)")
        if self.mode == "run" and (self.host or self.host_teardown):
            raise ValueError("'host' and 'host_teardown' are for mode 'exec' only")
        if self.signals is not None and self.actions != ["none"]:
            raise ValueError("'signals' needs actions: [none] (an instance that is killed "
                             "cannot report the signals it got)")
        return self

    def shown_command(self) -> str:
        return shlex.join(self.launch)

    def plan_detail(self) -> str:
        return f", {self.instances} instances x actions {self.actions}"


class SoakConfig(ScenarioConfig):
    """Thousands of short runs per variant and condition, each with its own deadline; hangs
    (with evidence), failures, leftovers and escaped processes are counted."""

    kind: Literal["soak"] = Field(default="soak", description="`soak`.")
    command: list[str] = Field(min_length=1, description=(
        "The command run again and again (argv, placeholders filled)."))
    warmup: int = Field(default=0, ge=0, le=0, description=(
        "Always 0: nothing to warm, the timing is incidental."))
    rounds: int = Field(default=1, description="Unused: a soak interleaves in blocks.")
    timeout: float = Field(default=5.0, gt=0, description=(
        "Each run's deadline in seconds; a run past it is a hang, its evidence saved."))
    block: int = Field(default=20, ge=1, description=(
        "Runs of one variant in a row; `runs` must be a multiple of it."))
    budget_s: float | None = Field(default=None, gt=0, description=(
        "Wall time per condition (all variants), seconds; the soak stops at `runs` or here."))
    list_cmd: list[str] | None = Field(default=None, alias="list", description=(
        "Without a runtime: a command listing leftovers, one per line; lines holding the "
        "run's `{id}` prefix count."))
    conditions: list[Condition] = Field(default_factory=lambda: [DEFAULT], min_length=1,
                                        description=(
        "Machine states, each its own set of blocks; names must be unique."))
    escapes: bool = Field(default=True, description=(
        "Count and kill processes that outlive their run; `false` for commands whose children "
        "are meant to live on (`runc exec -d`)."))

    @model_validator(mode="after")
    def _blocks(self) -> SoakConfig:
        if self.runs % self.block:
            raise ValueError(f"runs ({self.runs}) must be a multiple of block ({self.block})")
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ValueError("condition names must be unique")
        return self

    def shown_command(self) -> str:
        return shlex.join(self.command)

    def plan_detail(self) -> str:
        budget = f", at most {self.budget_s:g} s per condition" if self.budget_s else ""
        return (f"; soak: blocks of {self.block}, deadline {self.timeout:g} s per run{budget}, "
                f"conditions {', '.join(c.name for c in self.conditions)}")


class LayersConfig(ScenarioConfig):
    """containerd: image layers × concurrency, with exact mount-syscall counts."""

    kind: Literal["layers"] = Field(default="layers", description="`layers`.")
    layers: list[Annotated[int, Field(ge=1, le=500)]] = Field(min_length=1, description=(
        "Layer counts L of the generated images; each is its own set of cells."))
    k: list[Annotated[int, Field(ge=1)]] = Field(min_length=1, description=(
        "Containers started at once (`ctr run --rm`), per L."))
    args: list[str] = Field(default_factory=lambda: ["true"], min_length=1, description=(
        "The container's command."))
    count_mounts: bool = Field(default=True, description=(
        "Count the mount syscalls of one start per (variant, L) with bpftrace."))

    def shown_command(self) -> str:
        return ("ctr run --rm --null-io --snapshotter overlayfs --uidmap 0:100000:65536 "
                "--gidmap 0:100000:65536 --remap-labels IMAGE(L) ID " + shlex.join(self.args)
                + ", k at once")

    def plan_detail(self) -> str:
        return f", L = {self.layers}, k = {self.k}"


class MountsConfig(ScenarioConfig):
    """Traced starts of `command` (an OCI runtime CLI's `run`), each counted exactly: the calls of
    every mount syscall per start, per build, and whether every start made the same."""

    kind: Literal["mounts"] = Field(default="mounts", description="`mounts`.")
    command: list[str] = Field(min_length=1, description=(
        "One start (argv, placeholders filled; `{i}` is the start's number, `{round}` its "
        "round), traced with its descendants."))
    after: list[Argv] = Field(default_factory=list, description=(
        "Commands run after every start, traced or not (e.g. `{runtime} --root {root} delete "
        "-f {id}-m{i}`); one that fails is a warning."))
    tracer: Literal["bpftrace", "strace"] = Field(default="bpftrace", description=(
        "`bpftrace` (exact kernel counts, needs root; patchbench.measure.mounttrace) or `strace` "
        "(`strace -f`: no root or tracefs needed, but ptrace slows the start)."))
    syscalls: list[str] = Field(default_factory=lambda: [
        "mount", "umount2", "open_tree", "move_mount", "mount_setattr"], min_length=1,
                                description=(
        "The syscalls counted: of " + ", ".join(f"`{s}`" for s in mounttrace.TRACEPOINTS) + "."))
    warmup: int = Field(default=1, ge=0, description=(
        "Untraced starts per build before the first round (their counts are not kept)."))
    runs: int = Field(default=5, ge=1, description=(
        "Traced starts per build in all, a multiple of `rounds`."))
    rounds: int = Field(default=5, ge=1, description=(
        "Rounds; each traces runs/rounds starts of every build, the builds in a seeded random "
        "order."))

    @field_validator("syscalls")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in mounttrace.TRACEPOINTS]
        if unknown:
            raise ValueError(f"{unknown} are not syscalls patchbench can count (known: "
                             f"{', '.join(mounttrace.TRACEPOINTS)})")
        if len(set(names)) != len(names):
            raise ValueError("a syscall is listed twice")
        return names

    def shown_command(self) -> str:
        return shlex.join(self.command)

    def plan_detail(self) -> str:
        return f", {self.runs} traced starts per build ({self.tracer}), {', '.join(self.syscalls)}"


Action = Literal["kill", "delete", "restart"]


class CtrStressConfig(ScenarioConfig):
    """``rounds`` rounds, each running every variant once; ``runs`` is not used (keep it equal
    to ``rounds``)."""

    kind: Literal["ctrstress"] = Field(default="ctrstress", description="`ctrstress`.")
    warmup: int = Field(default=3, ge=0, description="Not used by this kind.")
    runs: int = Field(default=30, ge=1, description=(
        "Not used by this kind; keep it equal to `rounds` (it must be a multiple of it)."))
    rounds: int = Field(default=5, ge=1, description=(
        "Rounds; each runs every variant once, in a seeded random order."))
    layers: list[Annotated[int, Field(ge=1, le=500)]] = Field(min_length=1, description=(
        "Layer counts of the images; each round draws one."))
    k: int = Field(default=8, ge=1, le=256, description="Containers started at once per round.")
    actions: list[Action] = Field(min_length=1, description=(
        "What a round does mid-start, drawn once per round for every variant: `kill` "
        "(`ctr task kill`), `delete` (`ctr container delete`, then `ctr task delete --force`) "
        "or `restart` (the variant's daemon)."))
    delay: tuple[float, float] = Field(default=(0.0, 1.0), description=(
        "[low, high] seconds: the seeded random delay before the action."))
    args: list[str] = Field(default_factory=lambda: ["true"], min_length=1, description=(
        "The container's command."))
    settle: float = Field(default=5.0, ge=0, description=(
        "Seconds to wait for the shims to go before counting leftovers."))

    @model_validator(mode="after")
    def _shape(self) -> CtrStressConfig:
        if self.delay[0] < 0 or self.delay[1] < self.delay[0]:
            raise ValueError("'delay' must be [low, high] seconds with 0 <= low <= high")
        if len(set(self.actions)) != len(self.actions):
            raise ValueError(f"'actions' lists an action twice: {self.actions}")
        if len(set(self.layers)) != len(self.layers):
            raise ValueError(f"'layers' lists a layer count twice: {self.layers}")
        return self

    def shown_command(self) -> str:
        return ("ctr run --rm --null-io --snapshotter overlayfs --uidmap 0:100000:65536 "
                "--gidmap 0:100000:65536 --remap-labels IMAGE(L) ID " + shlex.join(self.args)
                + f", {self.k} at once, then {'/'.join(self.actions)} mid-start")

    def plan_detail(self) -> str:
        return f", L = {self.layers}, k = {self.k}, actions {self.actions}"


# every kind's config model, in the order the registry lists the kinds (the "unknown scenario
# kind" message and docs/matrix.md list them so)
CONFIGS: dict[str, type[ScenarioConfig]] = {
    cls.model_fields["kind"].default: cls
    for cls in (CommandConfig, BurstConfig, StressConfig, LayersConfig, SoakConfig,
                CtrStressConfig, MountsConfig)
}
DEFAULT_KIND: str = CommandConfig.model_fields["kind"].default  # a scenario without ``kind``


def kind_of(value: Any) -> str:
    """The discriminator: a scenario without ``kind`` is a command scenario."""
    if isinstance(value, dict):
        return str(value.get("kind", DEFAULT_KIND))
    return str(getattr(value, "kind", DEFAULT_KIND))


def _tag(cls: type[ScenarioConfig]) -> Tag:
    return Tag(str(cls.model_fields["kind"].default))


AnyScenario = Annotated[
    Annotated[CommandConfig, _tag(CommandConfig)]
    | Annotated[BurstConfig, _tag(BurstConfig)]
    | Annotated[StressConfig, _tag(StressConfig)]
    | Annotated[LayersConfig, _tag(LayersConfig)]
    | Annotated[SoakConfig, _tag(SoakConfig)]
    | Annotated[CtrStressConfig, _tag(CtrStressConfig)]
    | Annotated[MountsConfig, _tag(MountsConfig)],
    Discriminator(kind_of, custom_error_type="unknown_kind",
                  custom_error_message="unknown scenario kind (known: " + ", ".join(CONFIGS) + ")"),
]
