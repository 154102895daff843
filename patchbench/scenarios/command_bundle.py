"""A ``command`` scenario's own OCI bundle (``bundle:``): the container process's args, its
environment (a count of generated variables or a list), host binaries copied into the rootfs
and bind mounts; ``{bundle}`` in that scenario names it. Any setting may be a scan's placeholder
(``"{envs}"``), so each value of a scan gets its bundle. The bundles are made by the OCI CLI
runtime (patchbench.runtimes.runc) before measuring."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, cast

from pydantic import Field, field_validator

from patchbench.config.scenarios import ScenarioConfig
from patchbench.errors import ConfigError
from patchbench.measure import bench
from patchbench.measure.bench import Cell
from patchbench.scenarios.base import ScenarioContext, needs_runtime
from patchbench.util.models import StrictModel

if TYPE_CHECKING:  # types only: `invoke list` does not import the runtimes
    from patchbench.runtimes.runc import BundleSpec, RuncRuntime

PLACEHOLDER = re.compile(r"^\{[a-z][a-z0-9_]{0,31}\}$")
MAX_ENV = 1_000_000
MAX_MOUNTS = 10_000
Count = int | Annotated[str, Field(pattern=PLACEHOLDER.pattern)]


class BundleConfig(StrictModel):
    """The container process of a scenario's own bundle (runtime `runc`: runc, crun, youki)."""

    args: list[str] | None = Field(default=None, description=(
        "The process's args (default: `true`); placeholders filled per cell."))
    env: Count | list[str] | None = Field(default=None, description=(
        "Environment variables added to the process's (`runc spec`'s `PATH` and `TERM`): a "
        "count of generated ones (`PB_ENV_0=00000000`, ...), a scan's placeholder for a count "
        "(`\"{envs}\"`), or a list of `NAME=value`."))
    binaries: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9._+-]+$")]] = Field(
        default_factory=list, description=(
            "Host programs copied into a copy of the rootfs (found with `PATH`, at the same "
            "path; a dynamically linked one with the shared libraries `ldd` names, refused when "
            "one cannot be found), e.g. `env`."))
    bind_mounts: Count | None = Field(default=None, description=(
        "Bind mounts added to the bundle (read-only, of one directory of the run, at "
        "`/mnt/pb/N`): a count or a scan's placeholder for one."))

    @field_validator("env")
    @classmethod
    def _env(cls, v: int | str | list[str] | None) -> int | str | list[str] | None:
        if isinstance(v, int) and not 0 <= v <= MAX_ENV:
            raise ValueError(f"a count of 0 to {MAX_ENV}")
        if isinstance(v, list) and any("=" not in e or e.startswith("=") for e in v):
            raise ValueError("each variable is NAME=value")
        return v

    @field_validator("bind_mounts")
    @classmethod
    def _binds(cls, v: int | str | None) -> int | str | None:
        if isinstance(v, int) and not 0 <= v <= MAX_MOUNTS:
            raise ValueError(f"a count of 0 to {MAX_MOUNTS}")
        return v

    def summary(self) -> str:
        parts = []
        if self.args is not None:
            parts.append("args " + " ".join(self.args))
        if isinstance(self.env, list):
            parts.append(f"env {len(self.env)} variables")
        elif self.env is not None:
            parts.append(f"env {self.env} generated variables")
        if self.binaries:
            parts.append("binaries " + ", ".join(self.binaries))
        if self.bind_mounts is not None:
            parts.append(f"{self.bind_mounts} bind mounts")
        return "; ".join(parts) or "the default bundle's process"


def _count(value: int | str | None, values: Mapping[str, str], where: str, limit: int) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    filled = bench.fill(value, values, where)
    try:
        n = int(filled)
    except ValueError:
        raise ConfigError(f"{where}: {value} is {filled!r}, not a count") from None
    if not 0 <= n <= limit:
        raise ConfigError(f"{where}: {value} is {n}, not a count of 0 to {limit}")
    return n


def spec(settings: BundleConfig, values: Mapping[str, str], where: str) -> BundleSpec:
    """The settings with the cell's placeholders filled."""
    from patchbench.runtimes.runc import BundleSpec

    if isinstance(settings.env, list):
        env = tuple(bench.fill_argv(settings.env, values, where))
    else:
        n = _count(settings.env, values, f"{where}: bundle.env", MAX_ENV)
        env = tuple(f"PB_ENV_{i}={i:08d}" for i in range(n))
    args = tuple(bench.fill_argv(settings.args, values, where)) if settings.args else None
    return BundleSpec(args=args, env=env, binaries=tuple(settings.binaries),
                      mounts=_count(settings.bind_mounts, values, f"{where}: bundle.bind_mounts",
                                    MAX_MOUNTS))


def runtime(ctx: ScenarioContext[ScenarioConfig]) -> RuncRuntime:
    """The OCI runtime CLI's (runc, crun, youki) a scenario's own bundle needs."""
    return cast("RuncRuntime", needs_runtime(ctx, "runc", "'bundle'",
                                             hint="an OCI runtime CLI: runc, crun, youki"))


def placeholders(ctx: ScenarioContext[ScenarioConfig], settings: BundleConfig,
                 cells: Sequence[Cell]) -> Callable[[Cell], dict[str, str]]:
    """Make the bundle of every cell (one per distinct filled settings) and return the
    placeholders that name it (``{bundle}``) for a cell (a condition's parameter aside)."""
    rt = runtime(ctx)
    made: dict[BundleSpec, str] = {}
    by_cell: dict[Cell, str] = {}
    where = f"scenario {ctx.scenario.name}"
    for cell in cells:
        vals = ctx.values(ctx.build_of(cell.variant), cell)
        s = spec(settings, vals, where)
        if s not in made:
            made[s] = str(rt.custom_bundle(f"{ctx.scenario.name}-{len(made)}", s))
        by_cell[cell] = made[s]

    def of(cell: Cell) -> dict[str, str]:
        key = Cell(cell.variant, tuple(p for p in cell.params if p[0] != "condition"))
        return {"bundle": by_cell[key]} if key in by_cell else {}

    return of
