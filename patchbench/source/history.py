"""A target's history beyond its pinned commit, for bisect and history runs.

The source cache holds the pinned commit, often shallow. ``fetch_history`` fetches the branches
and tags of the target's source (its URL or ``--source`` override) with their full history into
``refs/patchbench/history/``; ``resolve`` turns a ref (tag, branch or SHA) into a commit of that
cache, and ``first_parent`` lists the first-parent chain from one commit to another, oldest
first, with each commit's subject and author date.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchbench.errors import SourceError
from patchbench.source.cache import Checkout, locked
from patchbench.util import safeargs
from patchbench.util.git import run_git

HISTORY_PREFIX = "refs/patchbench/history/"


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
    SHA) in the cache."""
    try:
        safeargs.check_ref(ref, f"{checkout.target} ref")
    except safeargs.UnsafeValue as exc:
        raise SourceError(str(exc)) from None
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


def first_parent(checkout: Checkout, good: str, bad: str) -> list[Commit]:
    """The first-parent chain from ``good`` to ``bad``, both included, oldest first. ``good``
    must be on ``bad``'s first-parent chain (an older release of the same branch)."""
    if good == bad:
        raise SourceError(f"{checkout.target}: the two ends are the same commit ({good[:12]})")
    shas = run_git(["rev-list", "--first-parent", "--reverse", f"{good}..{bad}", "--"],
                   cwd=checkout.repo, error=SourceError).stdout.split()
    if not shas:
        raise SourceError(f"{checkout.target}: {bad[:12]} is not a descendant of {good[:12]}",
                          hint="--good is the older commit, --bad the newer one")
    parent = run_git(["rev-parse", f"{shas[0]}^1"], cwd=checkout.repo, check=False).stdout.strip()
    if parent != good:
        raise SourceError(
            f"{checkout.target}: {good[:12]} is not on the first-parent history of {bad[:12]}",
            hint="give a --good commit of the same branch (a merge base or an older release)")
    return [describe(checkout, s) for s in (good, *shas)]


def every(commits: list[Commit], n: int) -> list[Commit]:
    """Every ``n``th commit of ``commits``, the first and the last always included."""
    if n < 1:
        raise ValueError("n must be at least 1")
    picked = commits[::n]
    if picked[-1] != commits[-1]:
        picked.append(commits[-1])
    return picked
