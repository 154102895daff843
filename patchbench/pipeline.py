"""The stages wired together: fetch -> patch -> build -> measure (a scenario kind) -> statistics ->
report. Nothing here knows a scenario kind: each is a module of patchbench.scenarios. The fetch
and patch stages of a project are patchbench.upstream (``fetch``, ``fetch_submodules`` and
``patch_check`` are imported here, the names the pipeline's callers use)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from patchbench import __version__, build, config, plan, redact, results, runtimes, scenarios
from patchbench.analysis import sequential
from patchbench.build import aa
from patchbench.config import Comparison, NamedTarget, Project
from patchbench.config.scenarios import ScenarioConfig
from patchbench.errors import ConfigError, PatchError, RequirementError
from patchbench.measure import hyperfine2
from patchbench.measure import machine as measure_machine
from patchbench.runs import store as runstore
from patchbench.scenarios import budget, harness
from patchbench.scenarios.harness import Setup
from patchbench.source import cache as source
from patchbench.source import patching
from patchbench.upstream import fetch, fetch_submodules, patch_check
from patchbench.util import cleanup, ownership
from patchbench.util.progress import say
from patchbench.util.workspace import Switches, Workspace


def load(ws: Workspace, *, pending_series: frozenset[str] = frozenset()) -> Project:
    """The matrix, validated whole, with ``--backend`` applied; then, as root, the ownership of
    what it names (StrictModes-style), and what runs killed with SIGKILL left behind, swept."""
    project = config.load(ws.matrix, pending_series=pending_series).with_backend(ws.backend)
    for warning in config.check_source_names(project, ws.sources, ws.source_flags):
        say(warning)
    ownership.check_project(project.path, project.root, ws.builds)
    for what in cleanup.sweep_all(ws.builds):
        say(what)
    return project


def variants_of(comp: Comparison) -> list[build.Variant]:
    out = [build.Variant("baseline", tuple(comp.baseline))]
    out += [build.Variant(name, tuple(comp.baseline) + tuple(series))
            for name, series in comp.candidates.items()]
    return out


def comparison_for_series(project: Project, series: str) -> str:
    """The first comparison that applies ``series`` (to its baseline or a candidate)."""
    for name, comp in project.matrix.comparisons.items():
        if any(series in s for s in comp.candidates.values()) or series in comp.baseline:
            return name
    raise PatchError(f"no comparison in {project.path.name} uses patch series {series!r}",
                     hint="known series: " + ", ".join(project.all_series()))


def build_variants(project: Project, ws: Workspace, target: NamedTarget,
                   variants: list[build.Variant], overlays: list[str],
                   setup: Setup | None = None) -> list[build.Built]:
    """Fetch the target, check that this machine can build it (and, for a comparison's
    ``setup``, run it), then build every variant from that one checkout with one toolchain. The
    fetch and the series' check run anywhere, so they come first."""
    checkout = fetch(project, ws, target)
    check_machine(project, ws, target, variants, checkout, setup)
    ovs = [patching.load_overlay(project.root, o) for o in overlays]
    try:
        pinned = fetch_submodules(ws, target, checkout)
        plan = build.BuildPlan.prepare(project, target, checkout, ws.layout, ovs,
                                       submodules=pinned)
        built = [build.build_variant(plan, v) for v in variants]
    finally:
        build.close_backends()  # stops patchbench's own dockerd, if it started one
    build.check_same_toolchain(built)
    for other in built[1:]:
        same = build.identical_artifacts(built[0], other)
        if same and other.variant.layout is None:  # a layout build's sha256: compare says
            say(f"warning: {other.variant.name} is byte-identical to baseline for "
                f"{', '.join(same)}: the patch changed nothing that was built")
    return built


def check_machine(project: Project, ws: Workspace, target: NamedTarget,
                  variants: list[build.Variant], checkout: source.Checkout,
                  setup: Setup | None) -> None:
    """Stop before building when this machine cannot build or run the target; the fetch is done
    by then and the series are checked against the pinned commit, so the message says what was
    verified here."""
    spec = target.spec
    series = sorted({s for v in variants for s in v.series})
    for name in series:
        patching.load_series(project.root, name)
    try:
        runtimes.check_requirements(spec)
        if setup is not None and setup.runtime is not None:
            setup.runtime.check(project, setup.comp, spec)
    except RequirementError as exc:
        checked = ""
        if series:
            patch_check(project, ws, series, checkout=checkout)
            checked = f"; the series {', '.join(series)} apply to {checkout.commit[:12]}"
        raise RequirementError(
            f"{target.name}: fetched {spec.ref} ({checkout.commit[:12]}){checked}; but building "
            f"and measuring stop here: {exc.message}", hint=exc.hint) from None


def build_for_patch(project: Project, ws: Workspace, series: str) -> list[build.Built]:
    setup = Setup.of(project, comparison_for_series(project, series))
    base = tuple(setup.comp.baseline)
    variants = [build.Variant("baseline", base), build.Variant(series, (*base, series))]
    return build_variants(project, ws, setup.target, variants, setup.comp.overlays)


def compare(project: Project, ws: Workspace, name: str, sw: Switches | None = None
            ) -> tuple[results.Results | None, list[str], Path | None]:
    """Run comparison ``name``; return its results, the --dry-run plan lines, and the saved run
    folder (None on a dry run)."""
    sw = sw or Switches()
    if sw.gate and (sw.aa or sw.aa_layout):  # an A/A's twin is never taken for a candidate
        raise ConfigError("--gate judges candidates; an A/A run (--aa, --aa-layout) has none",
                          hint="run the A/A without --gate: its verdict is the noise floor")
    setup = Setup.of(project, name)
    comp, target = setup.comp, setup.target
    chosen = [scenarios.for_run(s, sw) for s in comp.scenarios if not sw.only or s.name in sw.only]
    unknown = sorted(set(sw.only) - {s.name for s in comp.scenarios})
    if unknown:
        raise ConfigError(f"--scenario {', '.join(unknown)}: no such scenario in {name}",
                          hint="its scenarios: " + ", ".join(s.name for s in comp.scenarios))
    variants = variants_of(comp)
    variants, layout = aa.variants(target.spec, variants, sw.aa_layout)
    gated = list(sw.gate_metrics) or comp.gate  # the gate's metrics (and --budget's)
    for problem in config.gate_problems(gated, chosen):
        raise ConfigError(f"--gate-metric: {problem}")
    if sw.dry_run:
        return None, plan.lines(setup, ws, variants, chosen), None
    hyperfine2.check_scenarios(chosen)  # hyperfine 2 and every metric asked for, before building
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    seed = next(s for s in (sw.seed, comp.seed, secrets.randbelow(2**31)) if s is not None)
    built = build_variants(project, ws, target, variants, comp.overlays, setup)
    built, aa_build = aa.pair(built, layout, sw.aa)
    workdir = ws.layout.new_run(name)
    say(f"measuring {name} (seed {seed}); raw hyperfine output in {workdir}")
    machine = measure_machine.machine_info()
    busy = measure_machine.load_warning()  # said now, and kept with the run's warnings
    if busy:
        say(f"warning: {busy}")
    extra_files: dict[str, Path] = {}
    target_ci = sw.until_ci
    # --gate adds rounds until each gated metric is called pass or fail (--until-ci stops by its
    # own rule instead); --budget until each is decided, or called when gated, or the time is up
    given = (budget.start(sw.budget, comp.alpha, gated, chosen, gate=sw.gate,
                          margin=comp.gate_margin, max_rounds=sw.max_rounds)
             if sw.budget is not None or (sw.gate and target_ci is None) else None)

    def until(sc: ScenarioConfig) -> sequential.UntilCI | sequential.Budget | None:
        if given is not None:  # --budget: one for the whole measurement
            return given
        return None if target_ci is None else sequential.UntilCI(  # --until-ci, per scenario
            target=target_ci, max_rounds=sw.max_rounds or scenarios.UNTIL_BUDGET * sc.rounds,
            alpha=comp.alpha)

    measured = harness.measure(setup, chosen, built, workdir=workdir, layout=ws.layout,
                               seed=seed, extra_files=extra_files, until=until, gated=gated)
    res = results.Results(
        tool=f"patchbench {__version__}", comparison=name, description=comp.description,
        target=target.name, url=target.spec.url, ref=target.spec.ref, commit=target.spec.commit,
        aa=aa_build is not None, aa_build=aa_build, seed=seed,
        settings=results.Settings(alpha=comp.alpha, min_effect=comp.min_effect,
                                  gate_margin=comp.gate_margin),
        started_at=started, machine=machine,
        builds={b.variant.name: dict(b.manifest) for b in built}, scenarios=measured.scenarios,
        warnings=[*([busy] if busy else []), *measured.warnings], teardown=measured.teardown,
        runtime=measured.runtime,
        stopping=measured.stopping or None,
        gate=sw.gate, gate_allow_inconclusive=sw.gate_allow_inconclusive, report_format=3,
        gate_metrics=gated)
    res.finished_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    res = results.parse(redact.tree(redact.paths(res.dump(), {
        str(workdir): "<run>", str(ws.builds): "<builds>", str(project.root): "<project>"})),
        "results")
    # the complete results first, under builds/runs/<run>/; then the report folder from them
    complete = runstore.save_complete(workdir, res, extra_files)
    return res, [], runstore.publish(complete, ws.reports)

