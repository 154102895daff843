"""``invoke compare NAME --dry-run``: every step the comparison would take, and nothing done;
then every blocker it can see before building (``blocker`` lines): what the machine lacks (the
target's requirements and tools, the runtime's own, hyperfine 2 and the metrics asked for), and a
source the build could not get (a target or submodule commit neither cached nor in the local
clone named, a URL that cannot be reached). Only reads: a remote is asked for its refs
(``git ls-remote``), nothing is fetched."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from patchbench import build, runtimes, scenarios
from patchbench.build import toolchains
from patchbench.config import NamedTarget, Project
from patchbench.config.scenarios import ScenarioConfig
from patchbench.errors import PatchbenchError, RequirementError
from patchbench.measure import hyperfine2
from patchbench.scenarios.harness import Setup
from patchbench.source import submodules as gitmodules
from patchbench.source.cache import PIN_PREFIX, cache_dir
from patchbench.util import safeargs, sandbox
from patchbench.util.git import run_git
from patchbench.util.workspace import Workspace

BLOCKER = "blocker "  # the prefix of a line naming what would stop the run
PROBE_TIMEOUT = 30  # s: git ls-remote of a source that is not cached


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
    if target.build.backend == "host":
        uid, gid = sandbox.build_user()
        out.append(f"sandbox every build command, fetch and fingerprint: bubblewrap, as uid {uid}:"
                   f"{gid} with no capability, seeing the system's folders, the toolchain, the "
                   "worktree and its caches only, " + ("with" if target.build.network else
                                                      "without") + " the network")
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
    found = blockers(setup, ws, chosen)
    out += [f"{BLOCKER}{b}" for b in found] or [
        "blockers: none seen (requirements, tools, hyperfine, sources)"]
    return out


def _said(exc: PatchbenchError) -> str:
    return exc.message + (f" ({exc.hint})" if exc.hint else "")


def blockers(setup: Setup, ws: Workspace, chosen: list[ScenarioConfig]) -> list[str]:
    """What would stop ``compare`` before or while building, as far as can be seen without
    fetching or building anything."""
    out: list[str] = []
    project, comp, named, runtime = setup.project, setup.comp, setup.target, setup.runtime
    spec = named.spec
    checks: list[Callable[[], object]] = [lambda: runtimes.check_requirements(spec)]
    if runtime is not None:
        checks.append(lambda: runtime.check(project, comp, spec))
    checks.append(lambda: hyperfine2.check_scenarios(chosen))
    for check in checks:
        try:
            check()
        except RequirementError as exc:
            out.append(f"machine: {_said(exc)}")
    out += source_blockers(project, ws, named)
    return out


def _remote(url: str) -> bool:
    return "://" in url or url.startswith("git@")


def _pinned(repo: Path, commit: str) -> bool:
    return (repo / "HEAD").is_file() and run_git(
        ["rev-parse", "--verify", "--quiet", f"{PIN_PREFIX}{commit}"], cwd=repo,
        check=False).returncode == 0


def _has(repo: Path, commit: str) -> bool:
    return run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=repo,
                   check=False).returncode == 0


def _is_git(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


class _Sources:
    """Where each source would come from, and whether it can: probes are made once per URL."""

    def __init__(self) -> None:
        self.reached: dict[str, str | None] = {}

    def unreachable(self, url: str) -> str | None:
        """None when ``git ls-remote`` reads the URL; else git's first line of complaint."""
        if url not in self.reached:
            try:
                safeargs.check_url(url, "a source")
                res = run_git([*safeargs.GIT_TRANSPORTS, "ls-remote", "--heads", "--", url],
                              check=False, timeout=PROBE_TIMEOUT)
                why = None if res.returncode == 0 else (
                    (res.stderr or res.stdout).strip().splitlines() or ["git ls-remote failed"]
                )[-1]
            except (safeargs.UnsafeValue, PatchbenchError) as exc:
                why = str(exc)
            self.reached[url] = why
        return self.reached[url]

    def problem(self, what: str, url: str, commit: str, flag: str) -> tuple[str | None,
                                                                            Path | None]:
        """(why the commit cannot be had from ``url``, a local repository that has it)."""
        if _remote(url):
            why = self.unreachable(url)
            return ((f"{what}: {commit[:12]} is not cached and {url} cannot be reached ({why}); "
                     f"give a local clone: {flag}") if why else None), None
        path = Path(url)
        if not path.exists():
            return f"{what}: {url} does not exist; give a local clone: {flag}", None
        if not _is_git(path):
            return None, None  # a plain folder: snapshotted, its commit checked when fetched
        if not _has(path, commit):
            return (f"{what}: {url} lacks commit {commit}; give a clone that has it: {flag}",
                    None)
        return None, path


def source_blockers(project: Project, ws: Workspace, named: NamedTarget) -> list[str]:
    """A target or submodule commit that is neither in the source cache nor to be had from the
    local clone or the reachable URL it comes from. Submodules are read from the pinned tree
    where it can be read (the cache, or a local clone), recursively."""
    spec = named.spec
    probe = _Sources()
    out: list[str] = []
    override = ws.sources.get(named.name)
    url = override or spec.url
    if not _remote(url) and not Path(url).expanduser().is_absolute():
        url = str((Path.cwd() if override else project.root) / Path(url).expanduser())
    cached = cache_dir(ws.builds) / f"{named.name}.git"
    repo: Path | None = cached if _pinned(cached, spec.commit) else None
    if repo is None:
        why, local = probe.problem(f"target {named.name}", url, spec.commit,
                                   f"--source {named.name}=DIR")
        if why:
            out.append(f"source: {why}")
        repo = local
    if not spec.submodules:
        return out
    if repo is None:
        return out  # the gitlinks are read once the target is fetched (compare says then)
    declared = {m.path: m for m in spec.submodules}
    todo: list[tuple[Path, str, str]] = [(repo, spec.commit, "")]
    while todo:
        at, commit, prefix = todo.pop(0)
        try:
            links = gitmodules.gitlinks(at, commit)
        except PatchbenchError:
            continue
        for rel, sha in sorted(links.items()):
            module = declared.get(prefix + rel)
            if module is None or module.omit is not None:
                continue  # an undeclared gitlink is refused when fetched, with its hint
            sub_cache = cache_dir(ws.builds) / f"{gitmodules.cache_name(named.name, module)}.git"
            if _pinned(sub_cache, sha):
                todo.append((sub_cache, sha, prefix + rel + "/"))
                continue
            sub_override = ws.sources.get(module.name)
            sub_url = sub_override or module.url
            if sub_override and not _remote(sub_url):
                sub_url = str(Path(sub_url).expanduser().resolve())
            why, local = probe.problem(f"submodule {module.name} ({prefix + rel})", sub_url, sha,
                                       f"--source {module.name}=DIR")
            if why:
                out.append(f"source: {why}")
            if local is not None:
                todo.append((local, sha, prefix + rel + "/"))
    return out
