"""What a command runs against: the workspace (the matrix, the project root, builds/ and reports/,
source overrides) and, for ``compare``, its switches."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from patchbench.util.layout import Layout


@dataclass(frozen=True)
class Workspace:
    root: Path  # the project root (matrix.yaml, patches/, overlays/)
    matrix: Path
    builds: Path
    reports: Path
    sources: dict[str, str] = field(default_factory=dict)  # --source TARGET=PATH_OR_URL
    backend: str | None = None  # --backend: build every Go, C and Rust target with this one
    source_flags: frozenset[str] = frozenset()  # the targets named by --source (not the env)
    verbose: bool = False  # --verbose (or PATCHBENCH_VERBOSE): every external command is shown

    @property
    def layout(self) -> Layout:
        return Layout(self.builds, self.reports)


@dataclass(frozen=True)
class Switches:
    """``invoke compare``'s options."""

    seed: int | None = None
    aa: bool = False  # compare the baseline with itself (the noise floor)
    aa_layout: bool = False  # ... with a second build of it differing in code layout only
    dry_run: bool = False
    runs: int | None = None  # override every scenario's runs (quick looks, integration tests)
    rounds: int | None = None
    warmup: int | None = None
    block_warmup: int | None = None  # --block-warmup: every timed scenario's block_warmup
    only: tuple[str, ...] = ()  # scenario names
    gate: bool = False  # exit non-zero when a candidate is slower or not correct
    # with gate: a withheld or inconclusive verdict passes (by default it fails the gate)
    gate_allow_inconclusive: bool = False
    # --until-ci PCT (as a fraction) and its budget --max-rounds (None: 4x a scenario's rounds)
    until_ci: float | None = None
    max_rounds: int | None = None
    profile: tuple[str, ...] = ()  # --profile: added to every scenario that has the key
    budget: float | None = None  # --budget, in seconds
    gate_metrics: tuple[str, ...] = ()  # --gate-metric (empty: the comparison's `gate`)
