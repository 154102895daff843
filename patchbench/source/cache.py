"""Upstream sources: a locked, atomically written cache of pinned commits under builds/sources/.

- The ref is resolved first (``git ls-remote``); when it now points somewhere other than the pinned
  commit, the run stops naming the ref and both SHAs, and the cache is left untouched.
- Once the pinned commit is cached it is used without touching the network.
- A fetch goes into a temporary repository and only a verified result is moved or fetched into
  the cache; the pinned ref is written last and is the completion stamp.
- A local directory that is not a git repository (the bundled demo) is snapshotted into a
  deterministic commit, so it can be pinned like any upstream.
- No hooks run from any repository; inherited GIT_* variables are dropped.
- A cache entry holding anything patchbench did not write is refused before git reads it, and
  every worktree is hashed against its commit's tree (source/integrity.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from patchbench.errors import CommandError, SourceError
from patchbench.source import integrity
from patchbench.util import cleanup, locks, safeargs
from patchbench.util.git import GIT_CONFIG, IDENTITY, SNAPSHOT_DATE, git_env, run_git
from patchbench.util.layout import locks_dir

__all__ = ["GIT_CONFIG", "IDENTITY", "SNAPSHOT_DATE", "Checkout", "fetch", "git_env", "run_git"]

PIN_PREFIX = "refs/patchbench/pinned/"


@dataclass(frozen=True)
class Checkout:
    """A pinned commit available in the local cache."""

    target: str
    repo: Path  # the bare cache repository
    commit: str
    ref: str
    from_cache: bool
    overridden: bool  # fetched from a --source override rather than the matrix URL
    url: str = ""  # where it was fetched from (the matrix URL or the --source override)

    def commit_epoch(self) -> int:
        out = run_git(["show", "-s", "--format=%ct", self.commit], cwd=self.repo).stdout
        return int(out.strip())


def cache_dir(builds: Path) -> Path:
    return builds / "sources"


def locked(builds: Path, name: str, timeout: float = 3600.0) -> contextlib.AbstractContextManager[None]:
    """The lock ``name`` of the builds/ directory ``builds`` (see patchbench.util.locks)."""
    return locks.locked(locks_dir(builds), name, timeout)


def _pin_exists(repo: Path, commit: str) -> bool:
    """Whether the pin (the stamp of a complete fetch) is there; its commit is checked by the
    caller (integrity.commit_tree), which hashes the object again."""
    res = run_git(["rev-parse", "--verify", "--quiet", f"{PIN_PREFIX}{commit}"],
                  cwd=repo, check=False)
    return res.returncode == 0


def snapshot_directory(src: Path, dest: Path, ref: str) -> str:
    """Commit the files of ``src`` (not a git repository) into a new repository at ``dest`` with a
    fixed identity and date, tag it ``ref``, and return the commit. The same files always give the
    same commit, so the demo can be pinned in matrix.yaml."""
    shutil.copytree(src, dest, symlinks=True)
    env = {**IDENTITY, "GIT_AUTHOR_DATE": SNAPSHOT_DATE, "GIT_COMMITTER_DATE": SNAPSHOT_DATE}
    run_git(["init", "-q", "-b", "main"], cwd=dest, env=env)
    run_git(["add", "-A"], cwd=dest, env=env)
    run_git(["commit", "-q", "--no-gpg-sign", "-m", f"snapshot of {src.name}"], cwd=dest, env=env)
    run_git(["tag", ref], cwd=dest, env=env)
    return run_git(["rev-parse", "HEAD"], cwd=dest).stdout.strip()


def _resolve_remote(url: str, ref: str, target: str) -> str | None:
    """The commit ``ref`` points to at ``url`` (peeled), or None if the ref does not exist."""
    try:
        out = run_git(
            [*safeargs.GIT_TRANSPORTS, "ls-remote", "--", url, ref, f"refs/tags/{ref}",
             f"refs/tags/{ref}^{{}}", f"refs/heads/{ref}"],
            timeout=120,
            error=SourceError,
            what=f"resolve {target} ref {ref!r} at {url}",
        ).stdout
    except SourceError as exc:
        raise SourceError(
            f"cannot reach the source of {target!r} ({url})",
            hint=f"point it at a local git directory: --source {target}=/path/to/{target} "
            f"or PATCHBENCH_SOURCE_{target.upper().replace('-', '_')}=/path/to/{target}",
            detail=exc.detail,
        ) from None
    refs: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, name = line.partition("\t")
        refs[name] = sha
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if name in refs:
            return refs[name]
    return None


def fetch(builds: Path, target: str, url: str, ref: str, commit: str, *, overridden: bool) -> Checkout:
    """Make ``commit`` available in the cache, refusing a ref that no longer points at it."""
    try:  # nothing from the command line, environment or matrix reaches git as an option
        safeargs.check_url(url, f"the source of {target}")
        safeargs.check_ref(ref, f"the ref of {target}")
    except safeargs.UnsafeValue as exc:
        raise SourceError(str(exc)) from None
    cache = cache_dir(builds) / f"{target}.git"
    integrity.check(cache)  # before git reads any of it
    if _pin_exists_safe(cache, commit):
        integrity.commit_tree(cache, commit, target)
        return Checkout(target, cache, commit, ref, from_cache=True, overridden=overridden,
                        url=url)
    with locked(builds, f"source-{target}"):
        if _pin_exists_safe(cache, commit):  # another process finished it while we waited
            return Checkout(target, cache, commit, ref, from_cache=True, overridden=overridden,
                            url=url)
        cache.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{target}-{cleanup.owner_tag()}-",
                                         dir=cache.parent) as tmp_s:
            tmp = Path(tmp_s)
            fetch_url = url
            local = Path(url)
            if local.is_dir() and not _is_git_dir(local):
                fetch_url = str(tmp / "snapshot")
                snapshot_directory(local, Path(fetch_url), ref)
            # a ref that is the commit itself (an untagged commit, e.g. a pull request's base)
            # cannot move: it is fetched by SHA and checked like any other
            resolved = commit if ref == commit else _resolve_remote(fetch_url, ref, target)
            if resolved is None:
                raise SourceError(
                    f"{target}: ref {ref!r} does not exist at {url}",
                    hint="check 'ref' in matrix.yaml, or pass --source with a copy that has it",
                )
            if resolved != commit and fetch_url != url and overridden:  # a plain --source dir
                raise SourceError(
                    f"{target}: {url} is not a git repository (no .git), and a snapshot of its "
                    f"files is not the pinned commit {commit}",
                    hint=f"point --source {target}= at a git clone of {target} that has {commit}",
                )
            if resolved != commit:
                raise SourceError(
                    f"{target}: ref {ref!r} now points at {resolved}, but matrix.yaml pins {commit}",
                    hint="the tag moved upstream; check the new commit before updating the pin "
                    "(the cache was left untouched)",
                )
            incoming = tmp / "incoming.git"
            import git  # GitPython, imported only when a fetch needs it

            git.Repo.init(incoming, bare=True)
            try:
                _fetch_into(incoming, fetch_url, ref, commit, target)
            except SourceError:
                if not (Path(fetch_url).is_dir() and _is_git_dir(Path(fetch_url))):
                    raise
                # A local snapshot that lacks some blobs cannot be packed for a fetch; copy its
                # object store instead, as `git clone --local` does (dropping failed attempts).
                for junk in (incoming / "objects" / "pack").glob("tmp_*"):
                    junk.unlink()
                _copy_local(Path(fetch_url), incoming, ref, resolved_ref_object(fetch_url, ref))
                run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=incoming, error=SourceError,
                        what=f"{target}: find commit {commit} in {url}")
            if not (cache / "HEAD").exists():
                shutil.rmtree(cache, ignore_errors=True)
                os.replace(incoming, cache)
            else:
                try:
                    run_git(
                        ["fetch", "-q", "--no-tags", "--", str(incoming),
                         "+refs/patchbench/*:refs/patchbench/*", "+refs/tags/*:refs/tags/*"],
                        cwd=cache, error=SourceError,
                        what=f"store {target}@{commit[:12]} in the cache",
                    )
                except SourceError:
                    _copy_local(incoming, cache, ref, resolved_ref_object(str(incoming), ref))
            # Written last: the pin is the stamp that says this commit is completely cached.
            run_git(["update-ref", f"{PIN_PREFIX}{commit}", commit], cwd=cache)
    return Checkout(target, cache, commit, ref, from_cache=False, overridden=overridden, url=url)


def _pin_exists_safe(cache: Path, commit: str) -> bool:
    return (cache / "HEAD").exists() and _pin_exists(cache, commit)


def _is_git_dir(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def _fetch_into(repo: Path, url: str, ref: str, commit: str, target: str) -> None:
    """Fetch the ref (as a tag when it is one, so ``git describe`` works) and the commit."""
    tag = f"+refs/tags/{ref}:refs/tags/{ref}"
    by_sha = f"+{commit}:refs/patchbench/fetched/{commit}"
    # shallow first, full as the fallback; the tag when it is one, else the commit itself
    attempts = [(["--depth=1"], tag), (["--depth=1"], by_sha), ([], tag), ([], by_sha)]
    for n, (depth, refspec) in enumerate(attempts, 1):
        try:
            run_git([*safeargs.GIT_TRANSPORTS, "fetch", "-q", "--no-tags", *depth, "--",
                     _as_url(url), refspec], cwd=repo,
                    timeout=1800, error=SourceError, what=f"fetch {target} {ref}")
            break
        except SourceError:
            if n == len(attempts):
                raise
    try:
        run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=repo, error=SourceError)
    except (SourceError, CommandError):
        raise SourceError(
            f"{target}: commit {commit} is missing from {url}",
            hint="check 'commit' in matrix.yaml, or point --source at a copy that has it",
        ) from None


def resolved_ref_object(url: str, ref: str) -> str:
    """The object (annotated tag or commit) ``refs/tags/<ref>`` names in a local repository."""
    return run_git(["rev-parse", "--verify", f"refs/tags/{ref}"], cwd=Path(url),
                   error=SourceError).stdout.strip()


def _copy_local(src: Path, dest: Path, ref: str, tag_object: str) -> None:
    common = Path(run_git(["rev-parse", "--git-common-dir"], cwd=src).stdout.strip())
    if not common.is_absolute():
        common = src / common
    objects = common / "objects"
    for item in objects.rglob("*"):
        if item.is_file() and item.parent.name != "info" and not item.name.startswith("tmp_"):
            target = dest / "objects" / item.relative_to(objects)
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                shutil.copy2(item, target)
    run_git(["update-ref", f"refs/tags/{ref}", tag_object], cwd=dest, error=SourceError)


def _as_url(url: str) -> str:
    """Local paths go through file:// so that --depth is honoured."""
    p = Path(url)
    if p.exists():
        return p.resolve().as_uri()
    return url


# --- worktrees ----------------------------------------------------------------------------


def missing_blobs(repo: Path, commit: str) -> list[str]:
    """Paths of ``commit`` whose blobs are not in the object store (a source snapshot that left
    out its largest files)."""
    listing = run_git(["ls-tree", "-r", "-z", commit], cwd=repo, error=SourceError).stdout
    entries = []
    for item in listing.split("\0"):
        if not item:
            continue
        meta, _, path = item.partition("\t")
        _mode, kind, sha = meta.split()
        if kind == "blob":
            entries.append((sha, path))
    if not entries:
        return []
    check = run_git(["cat-file", "--batch-check"], cwd=repo, error=SourceError,
                    input="\n".join(sha for sha, _ in entries) + "\n").stdout
    gone = {line.split()[0] for line in check.splitlines() if line.endswith(" missing")}
    return [path for sha, path in entries if sha in gone]


def add_worktree(checkout: Checkout, path: Path, builds: Path) -> list[str]:
    """A fresh worktree at the pinned commit, hashed against the commit's tree. Files whose blobs
    the cache lacks are left out (sparse checkout) and returned, so the manifest can say so;
    everything else is checked out."""
    what = f"create a worktree of {checkout.target}@{checkout.commit[:12]}"
    with locked(builds, f"source-{checkout.target}"):
        run_git(["worktree", "add", "-q", "--no-checkout", "--detach", "--", str(path),
                 checkout.commit],
                cwd=checkout.repo, error=SourceError, what=what)
    try:
        missing = missing_blobs(path, checkout.commit)
        if missing:
            run_git(["sparse-checkout", "set", "--no-cone", "/*", *[f"!/{m}" for m in missing]],
                    cwd=path, error=SourceError, what=what)
        run_git(["reset", "-q", "--hard", checkout.commit], cwd=path, error=SourceError,
                what=what)
        integrity.verify_tree(path, checkout.commit, set(missing), what)
    except BaseException:
        remove_worktree(checkout, path, builds)
        raise
    return missing


def remove_worktree(checkout: Checkout, path: Path, builds: Path) -> None:
    with locked(builds, f"source-{checkout.target}"):
        run_git(["worktree", "remove", "--force", "--", str(path)], cwd=checkout.repo,
                check=False)
        shutil.rmtree(path, ignore_errors=True)
        run_git(["worktree", "prune"], cwd=checkout.repo, check=False)
