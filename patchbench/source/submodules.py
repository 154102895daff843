"""Submodules from pinned sources: every gitlink of a target's pinned tree (recursively, a
submodule's own gitlinks too) is matched with a submodule the target declares, its commit fetched
into the source cache and checked, and checked out in every variant's worktree.

- The commit is never configured: it is the gitlink the parent's pinned tree records.
- A gitlink the target does not declare, or a declared submodule no gitlink names, stops the run;
  so does a mirror that lacks the pinned commit (naming both).
- A submodule declared with ``omit`` (libocispec's yajl, built from Debian's libyajl instead) is
  neither fetched nor checked out; its directory stays empty and every manifest says why.
- Nothing runs ``git submodule``: no URL from ``.gitmodules`` is ever contacted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from patchbench.errors import SourceError
from patchbench.source import integrity
from patchbench.source.cache import (
    PIN_PREFIX,
    Checkout,
    _as_url,
    _pin_exists_safe,
    add_worktree,
    cache_dir,
    locked,
    remove_worktree,
    run_git,
)
from patchbench.util import cleanup, safeargs

GITLINK_MODE = "160000"


class Submodule(Protocol):
    """A declared submodule (``patchbench.config.Submodule``)."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def omit(self) -> str | None: ...


@dataclass(frozen=True)
class Pinned:
    """One submodule of a target's pinned tree, as it is checked out."""

    module: Submodule
    commit: str  # the parent's gitlink
    parent: str  # the target's name, or the parent submodule's name
    checkout: Checkout | None  # None when omitted
    top: bool = True  # a gitlink of the superproject itself

    def content(self) -> dict[str, Any]:
        """What the build gets from it (a cache key's part): where it sits and its commit, or
        that it is left out; never where it was fetched from."""
        return {"name": self.module.name, "path": self.module.path, "commit": self.commit,
                "omitted": self.checkout is None}

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.module.name, "path": self.module.path,
                               "commit": self.commit, "pinned_by": self.parent}
        if self.checkout is None:
            out["omitted"] = self.module.omit
        else:
            out["url"] = self.module.url
            out["fetched_from"] = "--source override" if self.checkout.overridden else "url"
        return out


def gitlinks(repo: Path, commit: str) -> dict[str, str]:
    """path -> commit of every gitlink in ``commit``'s tree."""
    listing = run_git(["ls-tree", "-r", "-z", commit], cwd=repo, error=SourceError).stdout
    out: dict[str, str] = {}
    for item in listing.split("\0"):
        meta, _, path = item.partition("\t")
        if meta.startswith(GITLINK_MODE + " "):
            out[path] = meta.split()[2]
    return out


def cache_name(target: str, module: Submodule) -> str:
    """The source cache entry of a submodule: per target, so two targets never share one."""
    return f"{target}+{module.name}"


def fetch_commit(builds: Path, name: str, url: str, commit: str, *, overridden: bool,
                 what: str) -> Checkout:
    """Make ``commit`` (no ref: a gitlink) available in the cache entry ``name``."""
    try:
        safeargs.check_url(url, f"the source of {what}")
    except safeargs.UnsafeValue as exc:
        raise SourceError(str(exc)) from None
    cache = cache_dir(builds) / f"{name}.git"
    done = Checkout(name, cache, commit, commit, from_cache=True, overridden=overridden, url=url)
    integrity.check(cache)  # before git reads any of it
    if _pin_exists_safe(cache, commit):
        integrity.commit_tree(cache, commit, what)
        return done
    with locked(builds, f"source-{name}"):
        if _pin_exists_safe(cache, commit):
            return done
        cache.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{name}-{cleanup.owner_tag()}-",
                                         dir=cache.parent) as tmp_s:
            incoming = Path(tmp_s) / "incoming.git"
            run_git(["init", "-q", "--bare", "--", str(incoming)], cwd=Path(tmp_s),
                    error=SourceError)
            refspec = f"+{commit}:refs/patchbench/fetched/{commit}"
            failure = ""
            for depth in (["--depth=1"], []):  # shallow first, the whole history as fallback
                res = run_git([*safeargs.GIT_TRANSPORTS, "fetch", "-q", "--no-tags", *depth, "--",
                               _as_url(url), refspec], cwd=incoming, timeout=1800, check=False)
                if res.returncode == 0:
                    break
                failure = res.stderr.strip()
            present = run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=incoming,
                              check=False).returncode == 0
            if not present:
                raise SourceError(
                    f"{what}: {url} lacks commit {commit}, which the parent's pinned tree "
                    "records as its gitlink",
                    hint=f"point --source {name.partition('+')[2]}= at a mirror that has {commit}",
                    detail=failure or None)
            if not (cache / "HEAD").exists():
                shutil.rmtree(cache, ignore_errors=True)
                os.replace(incoming, cache)
            else:
                run_git(["fetch", "-q", "--no-tags", "--", str(incoming),
                         "+refs/patchbench/*:refs/patchbench/*"], cwd=cache, error=SourceError,
                        what=f"store {what}@{commit[:12]} in the cache")
            run_git(["update-ref", f"{PIN_PREFIX}{commit}", commit], cwd=cache)  # the stamp
    return Checkout(name, cache, commit, commit, from_cache=False, overridden=overridden, url=url)


def resolve(target_name: str, modules: Sequence[Submodule], checkout: Checkout, builds: Path,
            sources: dict[str, str]) -> list[Pinned]:
    """Every submodule of ``checkout`` (parents before children), fetched unless omitted.
    ``sources`` maps a submodule's name to a --source override (a path or URL)."""
    declared = {m.path: m for m in modules}
    out: list[Pinned] = []
    # (the repository and commit whose gitlinks are read, the path prefix, who pins them)
    todo: list[tuple[Path, str, str, str]] = [(checkout.repo, checkout.commit, "", target_name)]
    while todo:
        repo, commit, prefix, parent = todo.pop(0)
        for rel, sha in sorted(gitlinks(repo, commit).items()):
            path = prefix + rel
            module = declared.get(path)
            if module is None:
                raise SourceError(
                    f"{target_name}: {parent}@{commit[:12]} has a submodule at {path} (commit "
                    f"{sha}) that matrix.yaml does not declare",
                    hint=f"add it to targets.{target_name}.submodules (name, path, url), or with "
                    "'omit: <reason>' when the build does not need it")
            if module.omit is not None:
                out.append(Pinned(module, sha, parent, None, top=not prefix))
                continue
            override = sources.get(module.name)
            url = override or module.url
            sub = fetch_commit(builds, cache_name(target_name, module), url, sha,
                               overridden=bool(override), what=f"{target_name} submodule "
                               f"{module.name} ({path})")
            out.append(Pinned(module, sha, parent, sub, top=not prefix))
            todo.append((sub.repo, sha, path + "/", module.name))
    unused = sorted(set(declared) - {p.module.path for p in out})
    if unused:
        raise SourceError(
            f"{target_name}: matrix.yaml declares submodules that its pinned tree has no gitlink "
            f"for: {', '.join(unused)}",
            hint="check each submodule's path (relative to the target's tree)")
    return out


def check_unchanged(tree: Path, pinned: list[Pinned], target_name: str) -> None:
    """A patch series may not add, move or repoint a submodule of the superproject."""
    head = run_git(["rev-parse", "HEAD"], cwd=tree, error=SourceError).stdout.strip()
    now = gitlinks(tree, head)
    want = {p.module.path: p.commit for p in pinned if p.top}
    if now != want:
        changed = sorted(set(now.items()) ^ set(want.items()))
        raise SourceError(
            f"{target_name}: the patched tree's submodules differ from the pinned ones: "
            + ", ".join(f"{path}@{sha[:12]}" for path, sha in changed),
            hint="patches may not add, move or repoint submodules")


def add_worktrees(pinned: list[Pinned], tree: Path, builds: Path) -> list[Pinned]:
    """Check every fetched submodule out at its gitlink inside ``tree`` (parents first); return
    the ones added, for ``remove_worktrees``. On failure, what was added is removed again."""
    added: list[Pinned] = []
    try:
        for p in pinned:
            if p.checkout is None:
                continue
            dest = tree / p.module.path
            if dest.is_dir() and not any(dest.iterdir()):
                dest.rmdir()  # git leaves an empty directory for a gitlink
            add_worktree(p.checkout, dest, builds)
            added.append(p)
    except BaseException:
        remove_worktrees(added, tree, builds)
        raise
    return added


def remove_worktrees(added: list[Pinned], tree: Path, builds: Path) -> None:
    for p in reversed(added):  # children first
        assert p.checkout is not None
        remove_worktree(p.checkout, tree / p.module.path, builds)
