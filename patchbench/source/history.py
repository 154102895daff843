"""A target's history beyond its pinned commit, for bisect and history runs.

The source cache holds the pinned commit, often shallow. ``fetch_history`` fetches the branches
and tags of the target's source (its URL or ``--source`` override) with their full history into
``refs/patchbench/history/``; ``resolve`` turns a ref (tag, branch or SHA) into a commit of that
cache, and ``first_parent`` lists the first-parent chain from one commit to another, oldest
first, with each commit's subject and author date.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from patchbench.errors import ConfigError, SourceError
from patchbench.source.cache import Checkout, locked
from patchbench.util import safeargs
from patchbench.util.git import run_git

HISTORY_PREFIX = "refs/patchbench/history/"
# a commit-ish git reads as a revision and never as an option or a range: a SHA (short or full),
# a tag or branch, with ``~N`` and ``^N`` suffixes (``v1.2.3~4``, ``main^2``)
_COMMITISH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/+-]*(?:[~^][0-9]{0,6})*$")


def check_commitish(text: str, what: str = "ref") -> str:
    """``text`` when git can only read it as a revision (a SHA, a tag or branch, with ``~N`` or
    ``^N``); ConfigError otherwise."""
    if (not _COMMITISH.match(text) or ".." in text or text.endswith((".", "/", ".lock"))
            or "//" in text or len(text) > 256):
        raise ConfigError(f"{what} {text!r} is not a commit, tag or branch",
                          hint="give a tag (v1.2.5), a branch, a commit SHA (short or full) or "
                               "one of them with ~N or ^N (v1.2.5~4)")
    return text


def _is_git_dir(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def _rev_parse(repo: Path, rev: str) -> str | None:
    res = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                  cwd=repo, check=False, timeout=120)
    out = res.stdout.strip()
    return out if res.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", out) else None


def resolve_commitish(url: str, rev: str) -> str | None:
    """The full SHA of the commit ``rev`` names at ``url`` (a local git directory is read where it
    is; a remote's branches and tags are fetched into a temporary repository first), or None."""
    check_commitish(rev)
    try:
        safeargs.check_url(url, "the source")
    except safeargs.UnsafeValue as exc:
        raise SourceError(str(exc)) from None
    local = Path(url)
    if local.is_dir() and _is_git_dir(local):
        return _rev_parse(local, rev)
    with tempfile.TemporaryDirectory(prefix="patchbench-resolve-") as tmp:
        repo = Path(tmp) / "r.git"
        run_git(["init", "-q", "--bare", "--", str(repo)], cwd=Path(tmp), error=SourceError)
        run_git([*safeargs.GIT_TRANSPORTS, "fetch", "-q", "--no-tags", "--filter=blob:none", "--",
                 _url(url), "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
                cwd=repo, timeout=3600, error=SourceError,
                what=f"fetch the branches and tags of {url} to find {rev}")
        return _rev_parse(repo, rev)


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    author_date: str  # ISO 8601, as git prints it (%aI)

    @property
    def short(self) -> str:
        return self.sha[:12]


def _url(url: str) -> str:
    p = Path(url)
    return p.resolve().as_uri() if p.exists() else url


def fetch_history(checkout: Checkout, builds: Path) -> None:
    """Fetch every branch and tag of the checkout's source, with full history, into the cache
    (under refs/patchbench/history/); a shallow cache is deepened."""
    if not checkout.url:
        raise SourceError(f"{checkout.target}: no source URL to fetch its history from")
    try:
        safeargs.check_url(checkout.url, f"the source of {checkout.target}")
    except safeargs.UnsafeValue as exc:
        raise SourceError(str(exc)) from None
    repo = checkout.repo
    with locked(builds, f"source-{checkout.target}"):
        shallow = run_git(["rev-parse", "--is-shallow-repository"],
                          cwd=repo).stdout.strip() == "true"
        run_git([*safeargs.GIT_TRANSPORTS, "fetch", "-q", "--no-tags",
                 *(["--unshallow"] if shallow else []), "--", _url(checkout.url),
                 f"+refs/heads/*:{HISTORY_PREFIX}heads/*",
                 f"+refs/tags/*:{HISTORY_PREFIX}tags/*"],
                cwd=repo, timeout=3600, error=SourceError,
                what=f"fetch the history of {checkout.target} from {checkout.url}")


def resolve(checkout: Checkout, ref: str) -> str:
    """The commit ``ref`` names: a tag or branch of the source, or a commit (full or abbreviated
    SHA) in the cache, each with ``~N`` or ``^N`` if given (``v1.2.3~4``)."""
    try:
        check_commitish(ref, f"{checkout.target} ref")
    except ConfigError as exc:
        raise SourceError(exc.message, hint=exc.hint) from None
    for name in (f"{HISTORY_PREFIX}tags/{ref}", f"{HISTORY_PREFIX}heads/{ref}", ref):
        res = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options",
                       f"{name}^{{commit}}"], cwd=checkout.repo, check=False)
        if res.returncode == 0 and res.stdout.strip():
            return res.stdout.strip()
    raise SourceError(f"{checkout.target}: no tag, branch or commit {ref!r} in its source "
                      f"({checkout.url})", hint="give a tag, a branch or a SHA of that history")


def describe(checkout: Checkout, sha: str) -> Commit:
    out = run_git(["show", "-s", "--format=%H%n%aI%n%s", sha, "--"], cwd=checkout.repo,
                  error=SourceError).stdout.split("\n", 2)
    return Commit(out[0].strip(), out[2].strip(), out[1].strip())


def _is_ancestor(repo: Path, a: str, b: str) -> bool:
    return run_git(["merge-base", "--is-ancestor", a, b], cwd=repo, check=False).returncode == 0


def first_parent(checkout: Checkout, good: str, bad: str, *, every: int = 1,
                 most: int | None = None, why: str = "the cells a saved run may hold"
                 ) -> list[Commit]:
    """The first-parent chain from ``good`` to ``bad``, both included, oldest first (with
    ``every``: every nth commit of it, the first and the last always). ``good`` must be an
    ancestor of ``bad``. When it is not on ``bad``'s first-parent chain (a release tag on a
    branch that was merged), the chain goes on from the first first-parent commit that contains
    it (the merge that brought it in). More than ``most`` commits are refused (exit 10, saying
    ``why`` that is the most) before any is described."""
    if good == bad:
        raise SourceError(f"{checkout.target}: the two ends are the same commit ({good[:12]})")
    if not _is_ancestor(checkout.repo, good, bad):
        raise SourceError(f"{checkout.target}: {bad[:12]} is not a descendant of {good[:12]}",
                          hint="--good is the older commit, --bad the newer one")
    shas = run_git(["rev-list", "--first-parent", "--reverse", f"{good}..{bad}", "--"],
                   cwd=checkout.repo, error=SourceError).stdout.split()
    start = next(i for i, sha in enumerate(shas) if _is_ancestor(checkout.repo, good, sha))
    chain = [good, *shas[start:]]
    picked = chain[::every] + ([] if (len(chain) - 1) % every == 0 else [chain[-1]])
    if most is not None and len(picked) > most:
        least = -(-(len(chain) - 1) // (most - 1))  # every nth: at most `most` commits
        raise ConfigError(
            f"{checkout.target}: {len(chain):,} first-parent commits from {good[:12]} to "
            f"{bad[:12]}" + (f", {len(picked):,} of them every {every}th" if every > 1 else "")
            + f"; one run measures at most {most:,} ({why})",
            hint=f"give --every {least} or more, or a shorter --range")
    return [describe(checkout, s) for s in picked]


def parents(checkout: Checkout, sha: str) -> list[str]:
    """The parents of ``sha``, first parent first (two or more: a merge)."""
    out = run_git(["rev-list", "--parents", "-n", "1", sha, "--"], cwd=checkout.repo,
                  error=SourceError).stdout.split()
    return out[1:]


def merged_branch(checkout: Checkout, merge: str) -> list[Commit] | None:
    """The branch that the two-parent ``merge`` brought in, as a first-parent chain from the
    merge base (oldest, like the merge's first parent) to the merge's second parent; None when
    ``merge`` is not a two-parent merge."""
    ps = parents(checkout, merge)
    if len(ps) != 2:
        return None
    base = run_git(["merge-base", ps[0], ps[1]], cwd=checkout.repo,
                   error=SourceError).stdout.strip()
    if base == ps[1]:  # the second parent is already on the first-parent side
        return None
    return first_parent(checkout, base, ps[1])


def tags(checkout: Checkout, pattern: str) -> list[str]:
    """The tags of the source whose names match the glob ``pattern`` (``v1.2.*``), oldest
    version first (git's version sort)."""
    try:
        safeargs.check_path(pattern, "--tags pattern")
    except safeargs.UnsafeValue as exc:
        raise SourceError(str(exc)) from None
    prefix = f"{HISTORY_PREFIX}tags/"
    out = run_git(["for-each-ref", "--sort=v:refname", "--format=%(refname)", "--",
                   f"{prefix}{pattern}"], cwd=checkout.repo, error=SourceError).stdout.split()
    return [ref.removeprefix(prefix) for ref in out]


def tag_of(checkout: Checkout, sha: str) -> str | None:
    """A tag of the source that points at ``sha`` (the highest version when several), or None."""
    prefix = f"{HISTORY_PREFIX}tags/"
    out = run_git(["for-each-ref", "--sort=-v:refname", "--format=%(refname)", "--points-at",
                   sha, "--", prefix], cwd=checkout.repo, check=False).stdout.split()
    return out[0].removeprefix(prefix) if out else None


def every(commits: list[Commit], n: int) -> list[Commit]:
    """Every ``n``th commit of ``commits``, the first and the last always included."""
    if n < 1:
        raise ValueError("n must be at least 1")
    picked = commits[::n]
    if picked[-1] != commits[-1]:
        picked.append(commits[-1])
    return picked
