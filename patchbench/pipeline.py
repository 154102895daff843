"""The stages wired together: fetch -> patch -> build -> measure -> statistics -> report.
``tasks.py`` only parses arguments and calls these functions."""

from __future__ import annotations

import os
import secrets
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from patchbench import __version__, bench, build, command, config, patching, report, runtimes, source, stats
from patchbench.bench import Cell, Invocation, Samples
from patchbench.config import Comparison, Project, Scenario
from patchbench.errors import (
    ConfigError,
    PatchbenchError,
    PatchError,
    RequirementError,
    SourceError,
)
from patchbench.machine import machine_info


@dataclass
class Options:
    root: Path  # the project root (matrix.yaml, patches/, overlays/)
    matrix: Path
    builds: Path
    reports: Path
    sources: dict[str, str] = field(default_factory=dict)
    seed: int | None = None
    aa: bool = False
    dry_run: bool = False
    runs: int | None = None  # override every scenario's runs (quick looks, integration tests)
    rounds: int | None = None
    warmup: int | None = None
    only: list[str] = field(default_factory=list)  # scenario names
    gate: bool = False  # exit non-zero when a candidate is slower or not correct


say = command.say


def load(opts: Options) -> Project:
    return config.load(opts.matrix)


# --- fetch ------------------------------------------------------------------------------


def fetch(project: Project, opts: Options, target_name: str) -> source.Checkout:
    target = project.target(target_name)
    override = opts.sources.get(target_name)
    url = override or target.url
    if not override and not _looks_remote(url):
        url = str((project.root / url).resolve())
    if override and not _looks_remote(override):
        path = Path(override).expanduser()
        if not path.exists():
            raise SourceError(f"--source {target_name}={override}: no such directory")
        url = str(path.resolve())
    say(f"fetching {target_name} {target.ref} ({target.commit[:12]})")
    checkout = source.fetch(
        opts.builds, target_name, url, target.ref, target.commit, overridden=bool(override)
    )
    say(f"{target_name}: {'cached' if checkout.from_cache else 'fetched'} {checkout.commit[:12]}")
    return checkout


def _looks_remote(url: str) -> bool:
    return "://" in url or url.startswith("git@")


# --- patch --check ----------------------------------------------------------------------


def patch_check(
    project: Project, opts: Options, names: list[str], checkout: source.Checkout | None = None,
) -> list[tuple[str, str, str]]:
    """Apply each series to a throwaway worktree of its target's pinned commit.
    Returns (series, target, result) rows; raises PatchError listing every failure."""
    wanted = names or project.all_series()
    targets: dict[str, set[str]] = {}
    for comp in project.matrix.comparisons.values():
        used = set(comp.baseline) | {s for ss in comp.candidates.values() for s in ss}
        for s in used:
            targets.setdefault(s, set()).add(comp.target)
    rows: list[tuple[str, str, str]] = []
    failures: list[str] = []
    for name in wanted:
        try:
            series = patching.load_series(project.root, name)
        except PatchError as exc:
            rows.append((name, "-", f"FAILED: {exc.message}"))
            failures.append(exc.message)
            continue
        for target_name in sorted(targets.get(name, set())) or ["-"]:
            if target_name == "-":
                rows.append((name, "-", "not used by any comparison"))
                continue
            if checkout is None or checkout.target != target_name:
                checkout = fetch(project, opts, target_name)
            tmp = opts.builds / "tmp" / f"check-{name}-{secrets.token_hex(4)}"
            tmp.parent.mkdir(parents=True, exist_ok=True)
            source.add_worktree(checkout, tmp, opts.builds)
            try:
                patching.apply_series(tmp, [series], checkout.commit_epoch())
                n = len(series.patches)
                rows.append((name, target_name, f"ok ({n} patch{'es' if n > 1 else ''})"))
            except PatchError as exc:
                rows.append((name, target_name, f"FAILED: {exc.message}"))
                failures.append(exc.message)
            finally:
                source.remove_worktree(checkout, tmp, opts.builds)
    if failures:
        raise PatchError(
            f"{len(failures)} series did not apply", detail=_rows_text(rows),
        )
    return rows


def _rows_text(rows: list[tuple[str, str, str]]) -> str:
    return "\n".join(f"{a}  {b}  {c}" for a, b, c in rows)


# --- build ------------------------------------------------------------------------------


def variants_of(comp: Comparison) -> list[build.Variant]:
    out = [build.Variant("baseline", tuple(comp.baseline))]
    for name, series in comp.candidates.items():
        out.append(build.Variant(name, tuple(comp.baseline) + tuple(series)))
    return out


def target_for_series(project: Project, series: str) -> tuple[str, Comparison | None]:
    for comp in project.matrix.comparisons.values():
        if any(series in s for s in comp.candidates.values()) or series in comp.baseline:
            return comp.target, comp
    raise PatchError(
        f"no comparison in {project.path.name} uses patch series {series!r}",
        hint="known series: " + ", ".join(project.all_series()),
    )


def build_variants(
    project: Project, opts: Options, target_name: str, variants: list[build.Variant],
    overlays: list[str], checkout: source.Checkout | None = None,
) -> list[build.Built]:
    """Build every variant from one checkout with one toolchain. Without ``checkout``, fetch and
    check the machine first (a caller passing one has done both)."""
    if checkout is None:
        # fetch and check the patches first: they run anywhere, even where the build cannot
        checkout = fetch(project, opts, target_name)
        check_machine(project, opts, target_name, variants, checkout, None)
    ovs = [patching.load_overlay(project.root, o) for o in overlays]
    try:
        plan = build.BuildPlan.prepare(project, target_name, checkout, opts.builds, ovs)
        built = [build.build_variant(plan, v) for v in variants]
    finally:
        build.close_backends()  # stops patchbench's own dockerd, if it started one
    build.check_same_toolchain(built)
    base = built[0]
    for other in built[1:]:
        same = build.identical_artifacts(base, other)
        if same:
            say(f"warning: {other.variant.name} is byte-identical to baseline for "
                f"{', '.join(same)}: the patch changed nothing that was built")
    return built


def check_machine(
    project: Project, opts: Options, target_name: str, variants: list[build.Variant],
    checkout: source.Checkout, comp: Comparison | None,
) -> None:
    """Stop before building when this machine cannot build or run the target; the fetch is done
    by then, and the patch series are checked against the pinned commit first, so the message
    says what was verified here."""
    target = project.target(target_name)
    series = sorted({s for v in variants for s in v.series})
    for name in series:
        patching.load_series(project.root, name)
    try:
        runtimes.check_requirements(target)
        runtime = runtimes.get(target.runtime)
        if runtime is not None and comp is not None:
            runtime.check(project, comp, target)
    except RequirementError as exc:
        checked = ""
        if series:
            patch_check(project, opts, series, checkout=checkout)
            checked = f"; the series {', '.join(series)} apply to {checkout.commit[:12]}"
        raise RequirementError(
            f"{target_name}: fetched {target.ref} ({checkout.commit[:12]}){checked}; but building "
            f"and measuring stop here: {exc.message}",
            hint=exc.hint,
        ) from None


def build_for_patch(project: Project, opts: Options, series: str) -> list[build.Built]:
    target_name, comp = target_for_series(project, series)
    variants = [build.Variant("baseline", tuple(comp.baseline) if comp else ()),
                build.Variant(series, (*(comp.baseline if comp else ()), series))]
    return build_variants(project, opts, target_name, variants, comp.overlays if comp else [])


# --- compare ----------------------------------------------------------------------------


def _scenario(sc: Scenario, opts: Options) -> Scenario:
    changes: dict[str, Any] = {}
    if opts.rounds is not None:
        changes["rounds"] = opts.rounds
    if opts.runs is not None:
        changes["runs"] = opts.runs
    if opts.warmup is not None:
        changes["warmup"] = opts.warmup
    if not changes:
        return sc
    rounds = changes.get("rounds", sc.rounds)
    runs = changes.get("runs", sc.runs)
    if rounds >= 1 and runs >= 1:
        changes["runs"] = max(rounds, runs - runs % rounds)
    try:  # validated like the matrix: --rounds 0 is refused, not a division by zero
        return Scenario.model_validate({**sc.model_dump(), **changes})
    except ValidationError as exc:
        raise ConfigError(f"--runs/--rounds/--warmup: {exc.errors()[0]['msg']}") from None


def compare(project: Project, opts: Options, name: str) -> tuple[dict[str, Any], Path | None]:
    comp = project.comparison(name)
    target = project.target(comp.target)
    runtime = runtimes.get(target.runtime)
    scenarios = [_scenario(s, opts) for s in comp.scenarios
                 if not opts.only or s.name in opts.only]
    if not scenarios:
        raise PatchbenchError(f"--scenario {opts.only} matches none of {name}'s scenarios")
    variants = variants_of(comp)
    if opts.dry_run:
        print_plan(project, opts, name, comp, variants, scenarios)
        return {}, None
    # what can run anywhere comes first: fetch and patch check; then the machine's requirements
    checkout = fetch(project, opts, comp.target)
    check_machine(project, opts, comp.target, variants, checkout, comp)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    seed = next(s for s in (opts.seed, comp.seed, secrets.randbelow(2**31)) if s is not None)
    built = build_variants(project, opts, comp.target, variants, comp.overlays, checkout)
    if opts.aa:
        baseline = built[0]
        twin = build.Built(build.Variant("baseline-again", baseline.variant.series),
                           baseline.path, baseline.manifest, True)
        built = [baseline, twin]
    workdir = opts.builds / "runs" / f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    say(f"measuring {name} (seed {seed}); raw hyperfine output in {workdir}")
    machine = machine_info()
    results: dict[str, Any] = {
        "schema_version": report.RESULTS_SCHEMA,
        "schema_history": report.SCHEMA_HISTORY,
        "tool": f"patchbench {__version__}",
        "comparison": name,
        "description": comp.description,
        "target": comp.target,
        "url": target.url,
        "ref": target.ref,
        "commit": target.commit,
        "aa": opts.aa,
        "seed": seed,
        "settings": {"alpha": comp.alpha, "min_effect": comp.min_effect},
        "started_at": started,
        "machine": machine,
        "builds": {b.variant.name: b.manifest for b in built},
        "scenarios": [],
        "warnings": [],
    }
    extra_files: dict[str, Path] = {}
    if runtime is not None:
        runtime.prepare(workdir, project, comp, dry_run=False, bin_dir=built[0].bin)
    try:
        for i, sc in enumerate(scenarios):
            say(f"scenario {sc.name} ({sc.kind}): {sc.runs} runs per cell, {sc.rounds} rounds")
            ctx = ScenarioContext(project, comp, sc, built, runtime, workdir, seed + i,
                                  opts.builds)
            out = run_scenario(ctx, extra_files)
            results["scenarios"].append(out)
            results["warnings"].extend(out.pop("warnings", []))
    finally:
        if runtime is not None:
            teardown: dict[str, Any] = {}
            for b in built:
                removed = runtime.cleanup(b.variant.name, b.bin)
                teardown[b.variant.name] = {
                    "removed_at_teardown": removed,
                    "left_after_teardown": runtime.leftovers(b.variant.name, b.bin),
                }
            results["teardown"] = teardown
    results["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results = redact(results, {str(workdir): "<run>", str(opts.builds): "<builds>",
                               str(project.root): "<project>"})
    run_dir = report.save_run(opts.reports, name, results, extra_files)
    return results, run_dir


def redact(obj: Any, paths: dict[str, str]) -> Any:
    """Replace this machine's paths in every string, so saved reports can be committed."""
    if isinstance(obj, str):
        for path, name in paths.items():
            obj = obj.replace(path, name)
        return obj
    if isinstance(obj, dict):
        return {k: redact(v, paths) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v, paths) for v in obj]
    return obj


@dataclass
class ScenarioContext:
    project: Project
    comparison: Comparison
    scenario: Scenario
    built: list[build.Built]
    runtime: runtimes.Runtime | None
    workdir: Path
    seed: int
    builds: Path
    # names instances when no runtime does ({id}); stress counts listed names with this prefix
    token: str = field(default_factory=lambda: secrets.token_hex(3))

    def values(self, b: build.Built, cell: Cell) -> dict[str, str]:
        v = {"bin": str(b.bin), "work": str(self.workdir), "variant": b.variant.name,
             "project": str(self.project.root), "id": f"pb-{self.token}-{b.variant.name}+"}
        for art in b.manifest["artifacts"]:
            v.setdefault(art.replace("-", "_").replace(".", "_"), str(b.bin / art))
        if self.runtime is not None:
            v.update(self.runtime.placeholders(b.variant.name, b.bin))
        v.update({"i": "{i}", "round": "{round}"})  # filled per instance by burst and stress
        v.update(dict(cell.params))
        return v

    def expand(self, cell: Cell) -> Invocation:
        b = next(x for x in self.built if x.variant.name == cell.variant)
        vals = self.values(b, cell)
        where = f"scenario {self.scenario.name}"
        sc = self.scenario
        return Invocation(
            command=bench.fill_argv(sc.command, vals, where),
            setup=[bench.fill_argv(a, vals, where) for a in sc.setup],
            teardown=[bench.fill_argv(a, vals, where) for a in sc.teardown],
            prepare=bench.fill(sc.prepare, vals, where) if sc.prepare else None,
            cleanup=bench.fill(sc.cleanup, vals, where) if sc.cleanup else None,
        )


def cell_result(cell: Cell, samples: Samples, seed: int = 0) -> dict[str, Any]:
    summ = stats.summarize(samples.times)
    ci = stats.median_ci(samples.times, seed=seed)
    return {
        "variant": cell.variant,
        "params": dict(cell.params),
        "label": cell.label,
        "summary": {**summ.__dict__, "cv": summ.cv, "noisy": summ.noisy,
                    "median_ci": list(ci) if ci else None},
        "samples": samples.as_dict(),
    }


def compare_cells(
    base: Cell, cand: Cell, samples: dict[Cell, Samples], comp: Comparison, seed: int
) -> dict[str, Any]:
    c = stats.compare(samples[base].times, samples[cand].times, alpha=comp.alpha,
                      min_effect=comp.min_effect, seed=seed)
    params = " ".join(f"{k}={v}" for k, v in base.params)
    return {"baseline": base.label, "candidate": cand.label, "candidate_variant": cand.variant,
            "params": params, **c.as_dict()}


def run_scenario(ctx: ScenarioContext, extra_files: dict[str, Path]) -> dict[str, Any]:
    sc = ctx.scenario
    if sc.kind == "burst":
        from patchbench.bench import burst

        return burst.run(ctx, extra_files)
    if sc.kind == "stress":
        from patchbench.bench import stress

        return stress.run(ctx, extra_files)
    cells = [Cell(b.variant.name) for b in ctx.built]
    samples, order = bench.measure(sc, cells, ctx.expand, seed=ctx.seed, workdir=ctx.workdir,
                                   on_round=bench.progress)
    out = scenario_header(sc)
    out["order"] = order
    out["cells"] = [cell_result(c, samples[c], ctx.seed) for c in cells]
    out["comparisons"] = [compare_cells(cells[0], c, samples, ctx.comparison, ctx.seed)
                          for c in cells[1:]]
    out["warnings"] = noisy_warnings(sc.name, out["cells"])
    if sc.verify:
        out["verify"] = run_verify(ctx, cells)
        out["markdown"] = [verify_markdown(out["verify"])]
        out["warnings"] += [f"{sc.name} {v}: the verify check FAILED (exit {r['exit_code']})"
                            for v, r in out["verify"].items() if not r["passed"]]
    return out


def gate_failures(results: dict[str, Any]) -> list[str]:
    """What fails an A/B gate: a candidate significantly slower, a failed verify check, or a
    candidate whose stress rounds hung, left something behind or could not run a fresh one.
    "Slower" is judged with Holm-adjusted p-values over every comparison of the run (a burst scan
    makes one per k), so that more comparisons do not mean more false alarms."""
    out = []
    comps = [(sc, c) for sc in results["scenarios"] for c in sc.get("comparisons", [])]
    adjusted = stats.holm([c["p_value"] if c["p_value"] is not None else 1.0 for _, c in comps])
    for (sc, c), p_adj in zip(comps, adjusted, strict=True):
        if c["verdict"] == "slower" and p_adj < c["alpha"]:
            out.append(f"{sc['name']} {c['candidate']}: slower ({c['speedup']:.2f}×, "
                       f"Holm-adjusted p {p_adj:.2g})")
    for sc in results["scenarios"]:
        for variant, v in sc.get("verify", {}).items():
            if not v["passed"]:
                out.append(f"{sc['name']} {variant}: verify failed (exit {v['exit_code']})")
        for variant, pb in sc.get("per_build", {}).items():
            if variant != "baseline" and (pb["hangs"] or pb["leftovers"] or pb["fresh_failures"]):
                out.append(f"{sc['name']} {variant}: {pb['hangs']} hangs, {pb['leftovers']} "
                           f"leftovers, {pb['fresh_failures']} failed fresh runs")
    return out


def scenario_header(sc: Scenario) -> dict[str, Any]:
    return {
        "name": sc.name, "kind": sc.kind, "description": sc.description,
        "command": shlex.join(sc.command), "runs": sc.runs, "rounds": sc.rounds,
        "warmup": sc.warmup, "rate": sc.rate.model_dump() if sc.rate else None,
    }


def noisy_warnings(name: str, cells: list[dict[str, Any]]) -> list[str]:
    return [
        f"{name} {c['label']}: noisy samples (σ is {c['summary']['cv']:.0%} of the mean)"
        for c in cells if c["summary"]["noisy"]
    ]


def run_verify(ctx: ScenarioContext, cells: list[Cell]) -> dict[str, Any]:
    """Run the scenario's check once per variant; a failing check is a finding, kept and shown."""

    out: dict[str, Any] = {}
    for cell in cells:
        b = next(x for x in ctx.built if x.variant.name == cell.variant)
        argv = bench.fill_argv(ctx.scenario.verify, ctx.values(b, cell), ctx.scenario.name)
        try:
            res = command.run(argv, timeout=ctx.scenario.timeout * 10, check=False)
        except PatchbenchError as exc:  # a hung or unstartable check is a failed check, kept
            out[cell.variant] = {"command": shlex.join(argv), "exit_code": None, "passed": False,
                                 "output": exc.message}
            continue
        out[cell.variant] = {"command": shlex.join(argv), "exit_code": res.returncode,
                             "passed": res.returncode == 0,
                             "output": (res.stdout.strip() or res.stderr.strip())[-2000:]}
    return out


def verify_markdown(verify: dict[str, Any]) -> str:
    lines = ["Check after measuring (`verify`):", ""]
    for variant, v in verify.items():
        state = "passed" if v["passed"] else f"FAILED (exit {v['exit_code']})"
        lines.append(f"- {variant}: {state} — `{v['output'][:300]}`")
    return "\n".join(lines)


# --- dry run ------------------------------------------------------------------------------


def print_plan(project: Project, opts: Options, name: str, comp: Comparison,
               variants: list[build.Variant], scenarios: list[Scenario]) -> None:
    target = project.target(comp.target)
    url = opts.sources.get(comp.target, target.url)
    p = print
    p(f"# plan for comparison {name!r} (dry run: nothing is fetched, built or run)")
    p(f"fetch   {comp.target}: {url} ref {target.ref} -> must be {target.commit}")
    p(f"require {', '.join(target.requires) or 'nothing special'}; tools: "
      f"{', '.join(target.tools) or '-'}")
    tc = target.toolchain
    p(f"toolchain {tc.kind} {tc.version}" + (" (downloaded through the module proxy)"
      if getattr(tc, "download", False) else ""))
    for v in variants:
        p(f"variant {v.name}: worktree at {target.commit[:12]}, apply as commits "
          + (" ".join(f"patches/{s}/" for s in v.series) or "(no patches)")
          + (f", overlays {', '.join(comp.overlays)}" if comp.overlays else ""))
        for argv in target.build.commands:
            p(f"  build ({target.build.backend}): {shlex.join(argv)}")
        p(f"  artifacts: {', '.join(target.build.artifacts)}")
    if target.build.backend == "docker":
        for line in build.docker_backend.plan_lines(target, opts.builds):
            p(line)
    runtime = runtimes.get(target.runtime)
    fake = opts.builds / "runs" / f"{name}-DRYRUN"
    if runtime is not None:
        runtime.prepare(fake, project, comp, dry_run=True)
    for i, sc in enumerate(scenarios):
        p(f"scenario {sc.name} ({sc.kind}): {sc.runs} runs per cell in {sc.rounds} interleaved "
          f"rounds, warmup {sc.warmup}, timeout {sc.timeout:g} s per run"
          + (f", k = {sc.k}" if sc.k else "")
          + (f", {sc.instances} instances x actions {sc.actions}" if sc.kind == "stress" else ""))
        fake_built = [build.Built(v, opts.builds / "artifacts" / comp.target / f"<{v.name}>",
                                  {"artifacts": {Path(a).name: {} for a in
                                                 target.build.artifacts}}, False)
                      for v in variants]
        ctx = ScenarioContext(project, comp, sc, fake_built, runtime, fake, 0, opts.builds)
        for b in fake_built:
            if sc.kind == "stress":
                vals = ctx.values(b, Cell(b.variant.name))
                steps = [*[("setup", a) for a in sc.setup], ("launch", sc.launch),
                         *[(f"kill/{a}", c) for a, c in sc.kill.items()],
                         ("list", sc.list_cmd), ("fresh", sc.fresh),
                         *[("teardown", a) for a in sc.teardown]]
                for label, argv in steps:
                    p(f"  [{b.variant.name}] {label + ':':<9} "
                      f"{shlex.join(bench.fill_argv(argv, vals, sc.name))}")
                continue
            params = (("k", str(sc.k[0])),) if sc.k else ()
            inv = ctx.expand(Cell(b.variant.name, params))
            for a in inv.setup:
                p(f"  [{b.variant.name}] setup:    {shlex.join(a)}")
            p(f"  [{b.variant.name}] measure:  {shlex.join(inv.command)}")
            if inv.prepare:
                p(f"  [{b.variant.name}] prepare:  {inv.prepare}")
            if inv.cleanup:
                p(f"  [{b.variant.name}] cleanup:  {inv.cleanup}")
            for a in inv.teardown:
                p(f"  [{b.variant.name}] teardown: {shlex.join(a)}")
            if sc.verify:
                p(f"  [{b.variant.name}] verify:   "
                  + shlex.join(bench.fill_argv(sc.verify, ctx.values(b, Cell(b.variant.name)),
                                               sc.name)))
        if i == 0 and runtime is not None and hasattr(runtime, "plan_notes"):
            for line in runtime.plan_notes():
                p(f"  note: {line}")
    p(f"report  {opts.reports / name}/<UTC time>/ (report.md, results.json, manifests)")


