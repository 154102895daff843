"""Where the commits of a series come from, so that a report can name them.

- ``series new`` copies commits from a clone of yours. Some of them may be upstream's already (a
  clone that holds upstream's branches, a cherry-pick of an upstream fix). With upstream's
  history in the source cache (``source/history.py``, as bisect fetches it), a commit is
  upstream's when a branch or tag of upstream reaches it (the same SHA), or when a commit of
  upstream after the pinned one makes the same change (``git patch-id --stable``: whitespace and
  line numbers ignored, so a cherry-pick onto another base matches).
- ``series add --pr N`` names the commits of a pull request. Offline first: the merge commit
  ``Merge pull request #N from ...`` in the source's history (fetched as above); the pull
  request's commits are its second parent's that its first parent lacks, oldest first. Else the
  forge: its head (``refs/pull/N/head``, as GitHub and its mirrors publish it) is fetched into the
  target's cache, and its commits are those between the pinned commit and that head, so the
  pinned commit must be the pull request's base (or below it). When neither has it, the error
  says what to give instead (its commits, or a source that has the merge).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchbench.errors import CommandError, ConfigError, PatchbenchError, SourceError
from patchbench.source import history
from patchbench.source.cache import Checkout, locked
from patchbench.source.history import HISTORY_PREFIX
from patchbench.util import safeargs
from patchbench.util.git import run_git
from patchbench.util.progress import say

PR_REF = "refs/patchbench/pr/"
MAX_CANDIDATES = 5000  # upstream commits whose patch-id is computed (those touching your files)
PR_DEPTH = 500  # commits fetched below a pull request's head
_SHA = re.compile(r"^[0-9a-f]{40}$")
_PR_URL = re.compile(r"^https://[^/\s]+/[^/\s]+/[^/\s]+/pulls?/(\d+)/?$")


def _url(url: str) -> str:
    p = Path(url)
    return p.resolve().as_uri() if p.exists() else url


def _patch_ids(repo: Path, commits: Sequence[str]) -> dict[str, str]:
    """commit -> ``git patch-id --stable`` of its change (commits that change nothing: none)."""
    if not commits:
        return {}
    diffs = run_git(["diff-tree", "--stdin", "-p", "--root", "--no-renames", "--no-color",
                     "--no-ext-diff", "--no-textconv", "--pretty=format:commit %H"],
                    cwd=repo, input="".join(f"{c}\n" for c in commits), timeout=600,
                    error=SourceError).stdout
    out = run_git(["patch-id", "--stable"], cwd=repo, input=diffs, timeout=600,
                  error=SourceError).stdout
    ids: dict[str, str] = {}
    for line in out.splitlines():
        pid, _, commit = line.partition(" ")
        ids[commit.strip()] = pid
    return ids


def _upstream_has(repo: Path, commit: str) -> bool:
    """A branch or tag of upstream's history reaches ``commit`` (not merely an object in the
    cache: the variants' patched commits are there too)."""
    if run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=repo, check=False).returncode:
        return False
    out = run_git(["for-each-ref", "--count=1", "--contains", commit, "--format=%(refname)",
                   HISTORY_PREFIX], cwd=repo, check=False)
    return out.returncode == 0 and bool(out.stdout.strip())


def _paths(clone: Path, commits: Iterable[str]) -> list[str]:
    names: set[str] = set()
    for c in commits:
        out = run_git(["diff-tree", "-r", "--root", "--no-commit-id", "--name-only", "-z",
                       "--no-renames", c], cwd=clone, error=SourceError).stdout
        names.update(n for n in out.split("\0") if n)
    return sorted(names)


def recognise(checkout: Checkout, clone: Path, commits: Sequence[str]) -> dict[str, str]:
    """Your commit -> the upstream commit that is it (the same SHA) or makes the same change
    (the same patch-id, among upstream's commits after the pinned one that touch the same
    files), for those upstream has; upstream's history is in the cache already."""
    repo = checkout.repo
    found = {c: c for c in commits if _upstream_has(repo, c)}
    rest = [c for c in commits if c not in found]
    mine = _patch_ids(clone, rest)
    paths = _paths(clone, rest) if mine else []
    if not paths:
        return found
    candidates = run_git(["rev-list", "--no-merges", f"--glob={HISTORY_PREFIX}*",
                          f"^{checkout.commit}", "--", *paths], cwd=repo, timeout=600,
                         error=SourceError).stdout.split()[:MAX_CANDIDATES]
    theirs: dict[str, str] = {}
    for commit, pid in _patch_ids(repo, candidates).items():
        theirs.setdefault(pid, commit)  # the newest upstream commit with that change
    for c, pid in mine.items():
        if pid in theirs:
            found[c] = theirs[pid]
    return found


# --- pull requests ------------------------------------------------------------------------------


def pr_number(text: str) -> int:
    """``N``, ``#N`` or a pull request's URL (``https://host/owner/repo/pull/N``) -> N."""
    value = text.strip().removeprefix("#")
    if value.isdigit() and 0 < int(value) < 10**9:
        return int(value)
    m = _PR_URL.match(text.strip())
    if m:
        return int(m.group(1))
    raise ConfigError(f"--pr {text!r}: expected a pull request's number or URL",
                      hint="e.g. --pr 4567 or --pr https://github.com/opencontainers/runc/pull/4567")


@dataclass(frozen=True)
class PullRequest:
    """A pull request's commits, oldest first, and where they were found."""

    number: int
    commits: list[str]
    merge: str | None = None  # the merge commit that brought it in (found offline)
    subject: str = ""  # the merge's subject ("Merge pull request #N from owner/branch")

    @property
    def found_by(self) -> str:
        return (f"merge {self.merge[:12]} ({self.subject})" if self.merge else
                f"refs/pull/{self.number}/head")


def _rev(repo: Path, what: str) -> str | None:
    res = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{what}^{{commit}}"],
                  cwd=repo, check=False)
    return res.stdout.strip() if res.returncode == 0 and res.stdout.strip() else None


def _is_ancestor(repo: Path, a: str, b: str) -> bool:
    return run_git(["merge-base", "--is-ancestor", a, b], cwd=repo, check=False).returncode == 0


def pr_merge(checkout: Checkout, number: int) -> tuple[str, str] | None:
    """(merge commit, subject) of the newest ``Merge pull request #N ...`` in the source's
    history (fetched into the cache, refs/patchbench/history/), or None."""
    out = run_git(["log", "--merges", "-E", f"--grep=^Merge pull request #{number}( |$)",
                   "--format=%H %s", "-n", "1", f"--glob={HISTORY_PREFIX}*", "--"],
                  cwd=checkout.repo, check=False, timeout=600)
    line = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() \
        else ""
    sha, _, subject = line.partition(" ")
    return (sha, subject.strip()) if _SHA.match(sha) else None


def _check(number: int, shas: list[str], limit: int, how: str) -> list[str]:
    if not shas:
        raise ConfigError(f"pull request {number} adds no commit to the pinned commit ({how})")
    if len(shas) > limit or not all(_SHA.match(s) for s in shas):
        raise ConfigError(
            f"pull request {number}: {len(shas)} commits ({how}); at most {limit}",
            hint="pin the target at the pull request's base (patchbench target new ... --ref "
                 "BASE), or name the commits: series add NAME --target T --pr N SHA...")
    return shas


def _from_merge(checkout: Checkout, number: int, limit: int) -> PullRequest | None:
    found = pr_merge(checkout, number)
    if found is None:
        return None
    merge, subject = found
    repo = checkout.repo
    parents = history.parents(checkout, merge)
    if len(parents) != 2:
        return None
    first, second = parents
    shas = run_git(["rev-list", "--reverse", "--no-merges", second, f"^{first}", "--"],
                   cwd=repo, error=SourceError, timeout=600).stdout.split()
    how = f"{subject!r}, {merge[:12]}"
    if any(_is_ancestor(repo, s, checkout.commit) for s in shas[:1] + shas[-1:]):
        raise ConfigError(
            f"pull request {number} is in the pinned commit {checkout.commit[:12]} of "
            f"{checkout.target} already (merged by {merge[:12]}, {subject!r}): applied again, its "
            "commits would change nothing",
            hint=f"pin a target at the merge's first parent, the commit before it came in: "
                 f"patchbench target new {checkout.target}-base --runtime R --source "
                 f"{checkout.url} --ref {first[:12]} (or init --ref {first[:12]})")
    base = run_git(["merge-base", first, second], cwd=repo, check=False).stdout.strip()
    if _SHA.match(base) and not _is_ancestor(repo, base, checkout.commit):
        say(f"note: pull request {number} branched off at {base[:12]}, after the pinned commit "
            f"{checkout.commit[:12]}; `patchbench patch --check` tells whether it applies")
    return PullRequest(number, _check(number, shas, limit, how), merge, subject)


def pr_commits(checkout: Checkout, number: int, builds: Path, limit: int) -> PullRequest:
    """The commits of pull request ``number`` (oldest first): offline, from its merge commit in
    the source's history (which ``history.fetch_history`` brought into the cache); else from its
    head at the forge (``refs/pull/N/head`` of where the target comes from)."""
    try:
        history.fetch_history(checkout, builds)
    except SourceError as exc:
        say(f"note: the history of {checkout.target} could not be fetched ({exc.message}); "
            "looking for the pull request's head instead")
    found = _from_merge(checkout, number, limit)
    if found is not None:
        return found
    return _from_head(checkout, number, builds, limit)


def _from_head(checkout: Checkout, number: int, builds: Path, limit: int) -> PullRequest:
    """The commits between the pinned commit and ``refs/pull/N/head`` of the source."""
    ref = f"refs/pull/{number}/head"
    local = f"{PR_REF}{number}"
    with locked(builds, f"source-{checkout.target}"):
        try:
            run_git([*safeargs.GIT_TRANSPORTS, "fetch", "-q", "--no-tags", f"--depth={PR_DEPTH}",
                     "--", _url(checkout.url), f"+{ref}:{local}"],
                    cwd=checkout.repo, timeout=1800, error=SourceError,
                    what=f"fetch pull request {number} of {checkout.target}")
        except SourceError as exc:
            raise SourceError(
                f"{checkout.target}: pull request {number} is not at {checkout.url}: its history "
                f"has no merge commit 'Merge pull request #{number} from ...', and it publishes "
                f"no {ref}",
                hint=f"check the number; or name its commits, oldest first: patchbench series add "
                     f"NAME --target {checkout.target} --pr {number} SHA SHA...; or point "
                     f"--source {checkout.target}=... at a clone that has the merge (or "
                     "refs/pull/*)",
                detail=exc.detail) from None
    head = run_git(["rev-parse", "--verify", f"{local}^{{commit}}"], cwd=checkout.repo,
                   error=SourceError).stdout.strip()
    base = run_git(["merge-base", "--is-ancestor", checkout.commit, head], cwd=checkout.repo,
                   check=False).returncode == 0
    if not base:
        raise ConfigError(
            f"pull request {number} (head {head[:12]}) does not build on the pinned commit "
            f"{checkout.commit[:12]} of {checkout.target}",
            hint=f"pin the target at the pull request's base (patchbench target new ... --ref "
                 f"BASE), or name the commits: series add NAME --target {checkout.target} "
                 f"--pr {number} SHA...")
    try:
        shas = run_git(["rev-list", "--reverse", "--no-merges", head, f"^{checkout.commit}"],
                       cwd=checkout.repo, error=SourceError).stdout.split()
    except (SourceError, CommandError) as exc:
        raise SourceError(f"cannot list the commits of pull request {number}",
                          detail=exc.detail if isinstance(exc, PatchbenchError) else None
                          ) from None
    return PullRequest(number, _check(number, shas, limit, f"{ref} {head[:12]}"))
