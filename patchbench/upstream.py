"""The fetch and patch stages of a project: a target's pinned commit in the source cache (with the
upstream commits its series name by reference), its submodules at their gitlinks, and every
series tried against the commit it is for (``invoke patch --check``). ``--source NAME=...``
replaces a target's or a submodule's URL here."""

from __future__ import annotations

from pathlib import Path

from patchbench.config import NamedTarget, Project
from patchbench.errors import ConfigError, PatchError, SourceError
from patchbench.source import cache as source
from patchbench.source import patching, series_ref, submodules
from patchbench.util.progress import say
from patchbench.util.suggest import suggest
from patchbench.util.workspace import Workspace


def fetch(project: Project, ws: Workspace, target: NamedTarget) -> source.Checkout:
    """The target's pinned commit in the source cache, with the upstream commits that the
    series of its comparisons name by reference (``--source NAME=...`` replaces its URL)."""
    spec = target.spec
    override = _source_override(ws, target.name)
    url = override or spec.url
    if not override and not _looks_remote(url):
        url = str((project.root / url).resolve())
    used = series_ref.series_of_target(project.matrix.comparisons.values(), target.name)
    commits = series_ref.commits_for_series(project.root, used)
    say(f"fetching {target.name} " + (f"at {spec.commit[:12]}" if spec.ref == spec.commit
                                       else f"{spec.ref} ({spec.commit[:12]})"))
    checkout = source.fetch(ws.builds, target.name, url, spec.ref, spec.commit,
                            overridden=bool(override))
    say(f"{target.name}: {'cached' if checkout.from_cache else 'fetched'} {checkout.commit[:12]}")
    series_ref.ensure_commits(checkout, commits, ws.builds)
    return checkout


def fetch_submodules(ws: Workspace, target: NamedTarget, checkout: source.Checkout
                     ) -> list[submodules.Pinned]:
    """The target's submodules at the gitlinks of its pinned tree, fetched (``--source NAME=DIR``
    replaces a submodule's URL)."""
    declared = target.spec.submodules
    if not declared:
        return []
    overrides = {m.name: o for m in declared if (o := _source_override(ws, m.name))}
    pinned = submodules.resolve(target.name, declared, checkout, ws.builds, overrides)
    for p in pinned:
        say(f"{target.name}: submodule {p.module.path} at {p.commit[:12]} "
            + (f"omitted ({p.module.omit})" if p.checkout is None else
               "cached" if p.checkout.from_cache else "fetched"))
    return pinned


def _looks_remote(url: str) -> bool:
    return "://" in url or url.startswith("git@")


def _source_override(ws: Workspace, name: str) -> str | None:
    """``--source NAME=...``: a URL as given, a local directory resolved (it must exist)."""
    override = ws.sources.get(name)
    if not override or _looks_remote(override):
        return override
    path = Path(override).expanduser()
    if not path.exists():
        raise SourceError(f"--source {name}={override}: no such directory")
    return str(path.resolve())


def _targets_of(project: Project, names: list[str], given: str | None) -> dict[str, set[str]]:
    """series -> the targets it is checked against: ``given`` (--target), else those of the
    comparisons that use it, else the target its series file names (``series new`` and ``series
    add`` write it), else the project's only target."""
    targets: dict[str, set[str]] = {}
    for comp in project.matrix.comparisons.values():
        for s in set(comp.baseline) | {s for ss in comp.candidates.values() for s in ss}:
            targets.setdefault(s, set()).add(comp.target)
    known = project.matrix.targets
    if given is not None:
        if given not in known:
            raise ConfigError(f"--target {given}: no such target" + suggest(given, known),
                              hint="targets: " + ", ".join(known))
        return {name: {given} for name in names or project.all_series()}
    for name in names or project.all_series():
        if targets.get(name):
            continue
        named = series_ref.target_of(project.series_dir(name) / "series")
        if named in known:
            targets[name] = {named}
        elif len(known) == 1:
            targets[name] = set(known)
    return targets


def patch_check(project: Project, ws: Workspace, names: list[str],
                checkout: source.Checkout | None = None, target: str | None = None
                ) -> list[tuple[str, str, str]]:
    """Apply each series to a throwaway worktree of its target's pinned commit (the target of
    the comparisons that use it, else the one ``--target`` or its series file names).
    Returns (series, target, result) rows; raises PatchError listing every failure."""
    targets = _targets_of(project, names, target)
    rows: list[tuple[str, str, str]] = []
    failures: list[str] = []
    unreadable: list[str] = []  # series that could not be read (form, DEP-3): never "did not apply"
    for name in names or project.all_series():
        try:
            series = patching.load_series(project.root, name)
        except PatchError as exc:
            rows.append((name, "-", f"FAILED: {exc.message}"))
            unreadable.append(exc.message)
            continue
        if not targets.get(name):
            if names:  # asked for by name: checked against something, or said how
                raise ConfigError(
                    f"series {name}: no comparison uses it and its series file names no target, "
                    "so there is nothing to check it against",
                    hint=f"patchbench patch --check --series {name} --target TARGET")
            rows.append((name, "-", "not used by any comparison (--target T checks it)"))
        for target_name in sorted(targets.get(name, set())):
            if checkout is None or checkout.target != target_name:
                checkout = fetch(project, ws, project.named_target(target_name))
            # its upstream commits, when no comparison of the target names them
            series_ref.ensure_commits(checkout, series_ref.commits_for_series(project.root,
                                                                              [name]), ws.builds)
            try:
                rows.append((name, target_name, patching.trial_apply(
                    checkout, series, ws.layout.tmp / f"check-{name}", ws.builds)))
            except PatchError as exc:
                rows.append((name, target_name, f"FAILED: {exc.message}"))
                failures.append(exc.message)
    if failures or unreadable:
        heads = ([unreadable[0] if len(unreadable) == 1 else f"{len(unreadable)} series could not "
                  "be read"] if unreadable else []) + (
            [f"{len(failures)} series did not apply"] if failures else [])
        raise PatchError("; ".join(heads), detail="\n".join(f"{a}  {b}  {c}" for a, b, c in rows))
    return rows
