"""What a bisect and a history run share: the target's history fetched, variants at commits
built (cached by commit) with the target's pinned toolchain, and sets of them measured
interleaved by a scenario kind, each measurement kept whole for the versioned results file.

A variant at a commit is named by its short SHA (12 hex digits), so cells, evidence and
results say which commit they are."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from patchbench import build, redact, scenarios
from patchbench.config import Comparison, Project
from patchbench.config.scenarios import ScenarioConfig
from patchbench.errors import BuildError, ConfigError
from patchbench.results import ScenarioResult
from patchbench.scenarios import harness
from patchbench.scenarios.harness import Setup
from patchbench.source import cache as source
from patchbench.source import history, patching
from patchbench.util.progress import say
from patchbench.util.workspace import Workspace


@dataclass(frozen=True)
class Probe:
    """The scenario a bisect or history measures, resolved once from ``COMPARISON:SCENARIO``
    (``spec``), and its comparison's target."""

    setup: Setup
    scenario: ScenarioConfig
    spec: str
    target: str


def scenario_of(project: Project, spec: str) -> Probe:
    """``COMPARISON:SCENARIO`` (or a comparison with one scenario), resolved."""
    name, _, sc_name = spec.partition(":")
    setup = Setup.of(project, name)
    comp = setup.comp
    if not sc_name:
        if len(comp.scenarios) != 1:
            raise ConfigError(f"--scenario {spec}: {name} has {len(comp.scenarios)} scenarios; "
                              "name one as COMPARISON:SCENARIO",
                              hint="its scenarios: " + ", ".join(s.name for s in comp.scenarios))
        sc_name = comp.scenarios[0].name
    chosen = [s for s in comp.scenarios if s.name == sc_name]
    if not chosen:
        raise ConfigError(f"--scenario {spec}: no scenario {sc_name!r} in {name}",
                          hint="its scenarios: " + ", ".join(s.name for s in comp.scenarios))
    sc = chosen[0]
    if scenarios.KINDS[sc.kind].step is None:  # the kind says whether a step can judge it
        judged = [f"{k} ({kind.step.measures})" for k, kind in scenarios.KINDS.items()
                  if kind.step is not None]
        raise ConfigError(f"--scenario {spec}: a {sc.kind} scenario cannot be bisected",
                          hint="the kinds a step judges: " + ", ".join(judged))
    return Probe(setup, sc, f"{name}:{sc.name}", setup.target.name)


def check_target(probe: Probe, target: str | None) -> None:
    """A TARGET given beside ``COMPARISON:SCENARIO`` must be the one its comparison measures."""
    if target is not None and target != probe.target:
        raise ConfigError(f"--scenario {probe.spec}: its comparison measures target "
                          f"{probe.target!r}, not {target!r}", hint=f"give a comparison of {target}")


@dataclass
class Measurement:
    """One interleaved measurement of some commits; ``result`` is the scenario kind's."""

    label: str
    commits: list[str]  # full SHAs, in the order the variants were given (the first is the base)
    factor: int  # the scenario's runs and rounds times this
    seed: int
    result: ScenarioResult  # of a kind with a step rule (scenarios/steps.py)
    warnings: list[str]


@dataclass
class Session:
    setup: Setup
    scenario: ScenarioConfig  # with --runs and --rounds applied
    ws: Workspace
    checkout: source.Checkout
    plan: build.BuildPlan
    workdir: Path
    seed: int
    builds: dict[str, build.Built] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # sha -> why it did not build
    measurements: list[Measurement] = field(default_factory=list)
    extra_files: dict[str, Path] = field(default_factory=dict)
    built_fresh: int = 0

    @property
    def comp(self) -> Comparison:
        return self.setup.comp

    @classmethod
    def open(cls, ws: Workspace, probe: Probe, seed: int, *, runs: int | None = None,
             rounds: int | None = None) -> Session:
        """Fetch the target and its history; ``runs``/``rounds`` override the scenario's (as
        compare's --runs and --rounds do)."""
        from patchbench import pipeline, upstream

        setup = probe.setup
        sc = scenarios.override(probe.scenario, runs, rounds, None)
        checkout = upstream.fetch(setup.project, ws, setup.target)
        pipeline.check_machine(setup.project, ws, setup.target, [build.Variant(
            "baseline", tuple(setup.comp.baseline))], checkout, setup)
        say(f"fetching the history of {probe.target} from {checkout.url}")
        history.fetch_history(checkout, ws.builds)
        ovs = [patching.load_overlay(setup.project.root, o) for o in setup.comp.overlays]
        plan = build.BuildPlan.prepare(setup.project, setup.target, checkout, ws.layout, ovs)
        workdir = ws.layout.new_run(f"bisect-{probe.target}")
        return cls(setup, sc, ws, checkout, plan, workdir, seed)

    def commit(self, ref: str) -> history.Commit:
        return history.describe(self.checkout, history.resolve(self.checkout, ref))

    def build_at(self, sha: str) -> build.Built | None:
        """The build of the comparison's baseline series at ``sha`` (cached), or None when it
        does not build (the reason kept in ``failed``)."""
        if sha in self.builds:
            return self.builds[sha]
        if sha in self.failed:
            return None
        variant = build.Variant(sha[:12], tuple(self.comp.baseline), commit=sha)
        try:  # a commit that does not build is skipped, like `git bisect skip`, and named
            built = build.build_variant(self.plan, variant)
        except BuildError as exc:
            self.failed[sha] = exc.message
            say(f"{sha[:12]}: does not build, skipped ({exc.message})")
            return None
        if self.builds:
            build.check_same_toolchain([next(iter(self.builds.values())), built])
        self.built_fresh += not built.cached
        self.builds[sha] = built
        return built

    def measure(self, label: str, shas: list[str], factor: int = 1) -> Measurement:
        """Measure the builds of ``shas`` interleaved (the first is the kind's baseline) with
        the scenario's runs and rounds times ``factor``."""
        sc = self.scenario
        runs = sc.runs * factor
        step = scenarios.KINDS[sc.kind].step
        rounds = sc.rounds * factor if step is not None and step.scales_rounds else None
        chosen = scenarios.override(sc, runs, rounds, None) if factor > 1 else sc
        built = [self.builds[s] for s in shas]
        built = [replace(b, variant=replace(b.variant, name=s[:12])) for b, s in zip(
            built, shas, strict=True)]
        n = len(self.measurements)
        while (self.workdir / f"m{n:02d}").exists():  # one whose runs failed keeps its folder
            n += 1
        seed = self.seed + 104729 * n
        workdir = self.workdir / f"m{n:02d}"
        workdir.mkdir(parents=True)
        say(f"{label}: measuring {', '.join(s[:12] for s in shas)} interleaved "
            f"({chosen.runs} runs per commit" + (f", {chosen.rounds} rounds)" if rounds else ")"))
        extra: dict[str, Path] = {}
        measured = harness.measure(self.setup.again(), [chosen], built, workdir=workdir,
                                   layout=self.ws.layout, seed=seed, extra_files=extra,
                                   announce=False)
        (out,), warnings = measured.scenarios, measured.warnings
        prefix = f"{workdir.name}-"
        self.extra_files.update({prefix + k: v for k, v in extra.items()})
        m = Measurement(label, list(shas), factor, seed, out, warnings)
        self.measurements.append(m)
        return m

    def redacted(self, obj: Any) -> Any:
        return redact.tree(redact.paths(obj, {
            str(self.workdir): "<run>", str(self.ws.builds): "<builds>",
            str(self.setup.project.root): "<project>"}))


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
