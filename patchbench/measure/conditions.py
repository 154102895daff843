"""Conditions: the machine states under which a comparison's cells run, because rare races show
only under conditions no default benchmark creates. A condition sets environment variables,
CPU affinity (``taskset``), background CPU hogs, or a CPU quota in a cgroup made for the run (v1
``cpu.cfs_quota_us`` or v2 ``cpu.max``); each runs as its own set of cells. ``apply`` is a
context manager around those cells: its ``wrap(argv)`` and ``environ(base)`` say what to add to
the process that starts the measured runs. Keys and examples: docs/scenarios.md."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shlex
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from patchbench.errors import BenchmarkError, ConfigError, RequirementError
from patchbench.util import cleanup, cmd, procguard
from patchbench.util.cmd import Background

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "patchbench-cond-"
HOG_MARKER = "patchbench-hog"
# a busy loop in the shell: no tool beyond sh, and its own marker in the command line ($0)
HOG_SCRIPT = "while :; do :; done"
# enter a cgroup, then run the command: sh -c ENTER <cgroup.procs> argv...
ENTER_CGROUP = 'echo $$ > "$0" && exec "$@"'
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Condition(BaseModel):
    """One condition; every field but the name is optional (``default`` has none)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description=(
        "The condition's name, in the cells' names (`condition=NAME`); `default` has no settings."))
    description: str = Field(default="", description="Free text shown in the report.")
    env: dict[str, str] = Field(default_factory=dict, description=(
        "Environment variables for the measured command (e.g. `GOMAXPROCS: \"1\"`)."))
    cpus: list[int] | None = Field(default=None, description=(
        "CPU affinity: the cores the command may run on (e.g. `[0]`)."))
    hogs: int = Field(default=0, ge=0, le=64, description=(
        "Background CPU hogs (busy shell loops) running beside the command."))
    cpu_quota: float | None = Field(default=None, gt=0, le=1024, description=(
        "A CPU quota in CPUs, through a cgroup made for the run (v1 `cpu.cfs_quota_us` or v2 "
        "`cpu.max`) and removed after."))
    cpu_period_us: int = Field(default=100_000, ge=1_000, le=1_000_000, description=(
        "The quota's period in microseconds."))

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("a condition name is lower case letters, digits, '.', '_' or '-'")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [k for k in v if not _ENV_NAME.match(k)]
        if bad:
            raise ValueError(f"not an environment variable name: {', '.join(map(repr, bad))}")
        return v

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: list[int] | None) -> list[int] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("cpus lists at least one core (leave it out for no affinity)")
        if any(c < 0 for c in v) or len(set(v)) != len(v):
            raise ValueError("cpus are distinct core numbers, 0 or more")
        return sorted(v)

    @model_validator(mode="after")
    def _quota_fits(self) -> Condition:
        if self.cpu_quota is not None and int(self.cpu_quota * self.cpu_period_us) < 1000:
            raise ValueError("cpu_quota x cpu_period_us is below the kernel's minimum of 1000 us")
        return self

    @property
    def is_default(self) -> bool:
        return not (self.env or self.cpus or self.hogs or self.cpu_quota)

    def summary(self) -> str:
        """What the condition does, for plans and reports."""
        parts = [f"{k}={v}" for k, v in sorted(self.env.items())]
        if self.cpus is not None:
            parts.append(f"cpus {','.join(map(str, self.cpus))}")
        if self.hogs:
            parts.append(f"{self.hogs} CPU hog{'s' if self.hogs > 1 else ''}")
        if self.cpu_quota is not None:
            parts.append(f"CPU quota {self.cpu_quota:g} CPU per {self.cpu_period_us} us")
        return ", ".join(parts) or "as the machine is"


DEFAULT = Condition(name="default")


def parse_conditions(data: Sequence[Mapping[str, Any]] | None) -> list[Condition]:
    """Conditions from config data; none given means the one ``default`` condition."""
    if not data:
        return [DEFAULT]
    out = [Condition.model_validate(d) for d in data]
    names = [c.name for c in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"conditions: {', '.join(dup)} listed twice")
    return out


# --- cgroups ----------------------------------------------------------------------------------


def cgroup_version(root: Path = CGROUP_ROOT) -> int:
    """2 for the unified hierarchy, 1 for v1 controllers; RequirementError when neither."""
    if (root / "cgroup.controllers").is_file():
        return 2
    if (root / "cpu" / "cpu.cfs_quota_us").is_file() or (root / "cpu,cpuacct").is_dir():
        return 1
    raise RequirementError(f"no cgroup CPU controller under {root}",
                           hint="a cpu_quota condition needs cgroups mounted (v1 cpu or v2)")


@dataclass
class QuotaCgroup:
    path: Path
    version: int

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def members(self) -> list[int]:
        try:
            return [int(x) for x in self.procs.read_text().split()]
        except (OSError, ValueError):
            return []


def make_quota_cgroup(cond: Condition, token: str, root: Path = CGROUP_ROOT) -> QuotaCgroup:
    """A fresh cgroup limited to ``cond.cpu_quota`` CPUs."""
    assert cond.cpu_quota is not None
    quota_us = int(cond.cpu_quota * cond.cpu_period_us)
    version = cgroup_version(root)
    base = root if version == 2 else (root / "cpu" if (root / "cpu").is_dir()
                                      else root / "cpu,cpuacct")
    path = base / f"{CGROUP_PREFIX}{token}"
    try:
        path.mkdir()
    except OSError as exc:
        raise RequirementError(f"condition {cond.name!r}: cannot make the quota cgroup {path}: "
                               f"{exc.strerror or exc}") from None
    if version == 2:
        files = {"cpu.max": f"{quota_us} {cond.cpu_period_us}\n"}
    else:
        # the period first: a quota is checked against the current period
        files = {"cpu.cfs_period_us": f"{cond.cpu_period_us}\n",
                 "cpu.cfs_quota_us": f"{quota_us}\n"}
    try:
        for name, value in files.items():
            (path / name).write_text(value)
    except OSError as exc:
        remove_cgroup(QuotaCgroup(path, version))
        raise RequirementError(f"cannot set the CPU quota in {path}: {exc}",
                               hint="on cgroup v2, enable the cpu controller in the root's "
                               "cgroup.subtree_control") from None
    return QuotaCgroup(path, version)


def remove_cgroup(cg: QuotaCgroup, wait: float = 5.0) -> list[str]:
    """Kill what is left in the cgroup and remove it; return what had to be killed."""
    def rmdir(path: Path) -> None:
        try:
            path.rmdir()  # a cgroup without members goes, control files and all
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                raise
            shutil.rmtree(path)  # a plain directory standing in for one (tests)

    pids, why = cleanup.kill_and_remove(cg.path, wait=wait, remove=rmdir)
    left = [f"pid {p} in {cg.path.name}" for p in pids]
    if why is not None:
        left.append(f"cgroup {cg.path} could not be removed: {why}")
    return left


# --- applying a condition ---------------------------------------------------------------------


@dataclass
class Applied:
    """A condition in force: what to add to the measured commands, and what was done."""

    condition: Condition
    env: dict[str, str] = field(default_factory=dict)
    prefix: list[str] = field(default_factory=list)
    cgroup: QuotaCgroup | None = None
    hogs: list[Background] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)  # what teardown had to kill

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run under the condition (entering the cgroup, then the affinity)."""
        return [*self.prefix, *argv]

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with the condition's variables."""
        return {**(os.environ if base is None else base), **self.env}

    def record(self) -> dict[str, Any]:
        """What was applied, for results.json."""
        return {
            "name": self.condition.name,
            "summary": self.condition.summary(),
            "env": dict(self.condition.env),
            "cpus": self.condition.cpus,
            "hogs": len(self.hogs),
            "cpu_quota": self.condition.cpu_quota,
            "cpu_period_us": self.condition.cpu_period_us if self.condition.cpu_quota else None,
            "cgroup_version": self.cgroup.version if self.cgroup else None,
            "prefix": shlex.join(self.prefix),
            "leftovers": self.leftovers,
        }


def check(cond: Condition) -> None:
    """Refuse, before anything starts, a condition this machine cannot apply."""
    if cond.cpus is not None:
        have = os.sched_getaffinity(0)
        missing = [c for c in cond.cpus if c not in have]
        if missing:
            raise RequirementError(
                f"condition {cond.name!r}: no CPU {', '.join(map(str, missing))} here",
                hint=f"this process may run on CPUs {', '.join(map(str, sorted(have)))}")
        cmd.which("taskset")
    if cond.hogs:
        cmd.which("sh")
    if cond.cpu_quota is not None:
        if os.geteuid() != 0:
            raise RequirementError(f"condition {cond.name!r}: a CPU quota needs root (a cgroup)")
        version = cgroup_version(CGROUP_ROOT)
        cpu = CGROUP_ROOT if version == 2 else next(
            (CGROUP_ROOT / d for d in ("cpu", "cpu,cpuacct") if (CGROUP_ROOT / d).is_dir()), None)
        if cpu is None or not os.access(cpu, os.W_OK):
            raise RequirementError(f"condition {cond.name!r}: no writable cpu cgroup hierarchy "
                                   f"under {CGROUP_ROOT} for the CPU quota")


@contextlib.contextmanager
def apply(cond: Condition, *, log: Path | None = None, cgroup_root: Path = CGROUP_ROOT,
          settle: float = 0.2) -> Iterator[Applied]:
    """Put ``cond`` in force around a set of cells: start the hogs, make the quota's cgroup;
    on the way out stop every hog (its whole process group) and remove the cgroup, killing
    whatever was left in it (named in ``Applied.leftovers``)."""
    check(cond)
    token = f"{cleanup.cgroup_tag()}-{secrets.token_hex(4)}"  # swept by cleanup if killed
    applied = Applied(cond, env=dict(cond.env))
    affinity = ["taskset", "-c", ",".join(map(str, cond.cpus))] if cond.cpus is not None else []
    try:
        if cond.cpu_quota is not None:
            applied.cgroup = make_quota_cgroup(cond, token, cgroup_root)
            applied.prefix += ["sh", "-c", ENTER_CGROUP, str(applied.cgroup.procs)]
        applied.prefix += affinity
        for i in range(cond.hogs):
            argv = [*affinity, "sh", "-c", HOG_SCRIPT, f"{HOG_MARKER}-{token}-{i}"]
            hog = Background(argv, log=log)
            applied.hogs.append(hog)
            procguard.spare(hog.proc.pid)  # in the run's cgroup, but not an escape
        if applied.hogs:
            time.sleep(settle)  # let the hogs reach the scheduler before the first cell
            dead = [h for h in applied.hogs if h.proc.poll() is not None]
            if dead:
                raise BenchmarkError(f"condition {cond.name!r}: {len(dead)} CPU hogs exited at once",
                                     detail=f"exit codes {[h.proc.returncode for h in dead]}")
        yield applied
    finally:
        for hog in applied.hogs:
            hog.stop()
            procguard.unspare(hog.proc.pid)
        if applied.cgroup is not None:
            applied.leftovers += remove_cgroup(applied.cgroup)


__all__ = [
    "DEFAULT",
    "Applied",
    "Condition",
    "apply",
    "cgroup_version",
    "check",
    "parse_conditions",
]
