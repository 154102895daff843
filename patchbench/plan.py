"""``invoke compare NAME --dry-run``: every step the comparison would take, and nothing done."""

from __future__ import annotations

import shlex
from pathlib import Path

from patchbench import build, runtimes, scenarios
from patchbench.build import toolchains
from patchbench.config.scenarios import ScenarioConfig
from patchbench.scenarios.harness import Setup
from patchbench.util.workspace import Workspace


def lines(setup: Setup, ws: Workspace, variants: list[build.Variant],
          chosen: list[ScenarioConfig]) -> list[str]:
    project, name, comp, named, runtime = (setup.project, setup.name, setup.comp, setup.target,
                                           setup.runtime)
    target = named.spec
    url = ws.sources.get(named.name, target.url)
    out = [f"# plan for comparison {name!r} (dry run: nothing is fetched, built or run)",
           f"fetch   {named.name}: {url} ref {target.ref} -> must be {target.commit}",
           f"require {', '.join(target.requires) or 'nothing special'}; tools: "
           f"{', '.join(target.tools) or '-'}",
           f"toolchain {toolchains.describe(target)}"]
    for v in variants:
        out.append(f"variant {v.name}: worktree at {target.commit[:12]}, apply as commits "
                   + (" ".join(f"patches/{s}/" for s in v.series) or "(no patches)")
                   + (f", overlays {', '.join(comp.overlays)}" if comp.overlays else ""))
        out += [f"  build ({target.build.backend}): {shlex.join(argv)}"
                for argv in target.build.commands]
        out.append(f"  artifacts: {', '.join(target.build.artifacts)}")
        if v.layout is not None:  # compare --aa-layout: the baseline again, laid out differently
            out.append(f"  A/A layout build: {v.layout.method} ("
                       + ", ".join(f"{k} += {f}" for k, f in v.layout.append)
                       + f"): {v.layout.why}; cached apart from the baseline, never gated")
    if target.build.backend == "docker":
        from patchbench.build import docker as docker_backend

        out += docker_backend.plan_lines(target, ws.layout.builds)
    fake = ws.layout.dry_run(name)
    fake_built = [build.Built(v, ws.layout.artifacts(named.name) / f"<{v.name}>",
                              {"target": named.name, "built_commit": "<not built>",
                               "series": [], "fingerprint": {},
                               "artifacts": {Path(a).name: {"sha256": "<not built>"}
                                             for a in target.build.artifacts}},
                              False) for v in variants]
    if runtime is not None:
        runtime.prepare(fake, project, comp, dry_run=True,
                        variants=[runtimes.VariantBuild(b.variant.name, b.bin,
                                                        b.manifest["artifacts"])
                                  for b in fake_built])
    for i, sc in enumerate(chosen):
        kind = scenarios.get(sc.kind)
        block = getattr(sc, "block_warmup", None)
        blocks = (f" (blocks of {sc.runs // sc.rounds}, each after {block} warm-up run"
                  f"{'s' if block != 1 else ''})" if block else "")
        out.append(f"scenario {sc.name} ({sc.kind}): {sc.runs} runs per cell in {sc.rounds} "
                   f"interleaved rounds{blocks}, warmup {sc.warmup}, timeout {sc.timeout:g} s "
                   "per run" + sc.plan_detail())
        ctx = scenarios.ScenarioContext(
            scenario=sc, built=fake_built, runtime=runtime, workdir=fake, seed=0,
            layout=ws.layout, project_root=project.root, alpha=comp.alpha,
            min_effect=comp.min_effect)
        out += kind.plan(ctx)
        if i == 0 and runtime is not None and hasattr(runtime, "plan_notes"):
            out += [f"  note: {line}" for line in runtime.plan_notes()]
    out.append(f"report  {ws.layout.comparison_reports(name)}/<UTC time>/ (report.md, "
               "results.json, manifests)")
    return out
