"""Scenarios measured in a run's cgroup, with the comparison's runtime around them: what
``compare`` and a bisect or history step share. The runtime prepares its state first; the
scenarios run one after the other in the run's cgroup (patchbench.util.procguard: what outlives a
step is found and killed); however they end, the guard stops and the runtime is torn down, each
step even when an earlier one failed, so that a failing teardown never loses the measurement.
Nothing here names a kind: each runs through the registry (``scenarios.get``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from patchbench import config, results, runtimes
from patchbench.config import Comparison, NamedTarget, Project
from patchbench.config.scenarios import ScenarioConfig
from patchbench.scenarios import get
from patchbench.scenarios.base import ScenarioContext
from patchbench.util import cleanup, procguard
from patchbench.util.layout import Layout
from patchbench.util.progress import say

if TYPE_CHECKING:
    from patchbench.analysis.sequential import Budget, UntilCI
    from patchbench.build import Built
    from patchbench.runtimes import Runtime


@dataclass(frozen=True)
class Setup:
    """A comparison resolved once and handed down, as cibuildwheel's platforms get one Options:
    its project, name and config, its target and its runtime (None: plain commands)."""

    project: Project
    name: str
    comp: Comparison
    target: NamedTarget
    runtime: Runtime | None

    @classmethod
    def of(cls, project: Project, name: str) -> Setup:
        comp = project.comparison(name)
        target = project.target_of(comp)
        return cls(project, name, comp, target, runtimes.get(config.runtime_of(comp, target.spec)))

    def again(self) -> Setup:
        """The same with a runtime of its own (each measurement of a bisect prepares one)."""
        return replace(self, runtime=runtimes.get(self.runtime.name) if self.runtime else None)


@dataclass
class Measured:
    """The scenarios' results in their order, every warning (the kinds', the escaped processes',
    the teardown's), how --until-ci stopped, and what the runtime's teardown found."""

    scenarios: list[results.ScenarioResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stopping: list[results.Stopping] = field(default_factory=list)
    teardown: dict[str, results.Teardown] | None = None
    runtime: results.RuntimeRecord | None = None


def measure(setup: Setup, chosen: Sequence[ScenarioConfig], built: list[Built], *,
            workdir: Path, layout: Layout, seed: int, extra_files: dict[str, Path],
            until: Callable[[ScenarioConfig], UntilCI | Budget | None] | None = None,
            announce: bool = True, gated: Sequence[str] = ()) -> Measured:
    """Run ``chosen`` (scenarios of the comparison) against ``built`` (scenario ``i`` with the
    seed ``seed + i``), their files under ``workdir``; ``announce`` says each scenario's line
    before it runs; ``gated``: the gate's metrics (--gate-metric, else the comparison's
    ``gate``), the first of the metrics' family."""
    out = Measured()
    project, comp, runtime = setup.project, setup.comp, setup.runtime
    if runtime is not None:
        runtime.prepare(workdir, project, comp, dry_run=False, bin_dir=built[0].bin,
                        variants=[runtimes.VariantBuild(b.variant.name, b.bin,
                                                        b.manifest["artifacts"]) for b in built])
    guard = procguard.activate(f"{workdir.name[:60]}-{cleanup.cgroup_tag()}")  # its cgroup
    try:
        for i, sc in enumerate(chosen):
            if announce:
                say(f"scenario {sc.name} ({sc.kind}): {sc.runs} runs per cell, {sc.rounds} "
                    f"round{'s' if sc.rounds != 1 else ''}")
            ctx = ScenarioContext(
                scenario=sc, built=built, runtime=runtime, workdir=workdir, seed=seed + i,
                layout=layout, project_root=project.root, alpha=comp.alpha,
                min_effect=comp.min_effect, extra_files=extra_files,
                until=until(sc) if until else None, gate_metrics=tuple(gated or comp.gate))
            result, found = get(sc.kind).run(ctx)
            out.stopping += ctx.stops
            out.scenarios.append(result)
            out.warnings += found
            procguard.check_active(f"scenario {sc.name}")
    finally:  # every step runs and none raises
        try:
            out.warnings += procguard.deactivate(guard)  # found, reported and killed
        except OSError as exc:
            out.warnings.append(f"teardown: the escaped-process check failed: {exc}")
        if runtime is not None:
            td = runtimes.tear_down(runtime, [(b.variant.name, b.bin) for b in built])
            out.teardown = {n: results.Teardown(removed_at_teardown=td.removed[n],
                                                left_after_teardown=td.left[n]) for n in td.left}
            try:
                out.runtime = (results.RuntimeRecord.model_validate(td.record) if td.record
                               else None)
            except ValidationError as exc:  # the teardown's finding, not the measurement's end
                out.warnings.append("teardown: the runtime's record is not valid: "
                                    f"{exc.errors()[0]['msg']}")
            out.warnings += td.problems
    return out
