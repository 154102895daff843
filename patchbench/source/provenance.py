"""Where the commits of a series come from, so that a report can name them.

- ``series new`` copies commits from a clone of yours. Some of them may be upstream's already (a
  clone that holds upstream's branches, a cherry-pick of an upstream fix). With upstream's
  history in the source cache (``source/history.py``, as bisect fetches it), a commit is
  upstream's when a branch or tag of upstream reaches it (the same SHA), or when a commit of
  upstream after the pinned one makes the same change (``git patch-id --stable``: whitespace and
  line numbers ignored, so a cherry-pick onto another base matches).
- ``series add --pr N`` names the commits of a pull request: its head (``refs/pull/N/head``, as
  GitHub and its mirrors publish it) is fetched into the target's cache, and its commits are those
  between the pinned commit and that head, so the pinned commit must be the pull request's base
  (or below it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from patchbench.errors import CommandError, ConfigError, PatchbenchError, SourceError
from patchbench.source.cache import Checkout, locked
from patchbench.source.history import HISTORY_PREFIX
from patchbench.util import safeargs
from patchbench.util.git import run_git

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


def pr_commits(checkout: Checkout, number: int, builds: Path, limit: int) -> list[str]:
    """The commits of pull request ``number`` (oldest first): its head fetched from where the
    target comes from, then the commits between the pinned commit and it (merges left out)."""
    ref = f"refs/pull/{number}/head"
    local = f"{PR_REF}{number}"
    with locked(builds, f"source-{checkout.target}"):
        try:
            run_git([*safeargs.GIT_TRANSPORTS, "fetch", "-q", "--no-tags", f"--depth={PR_DEPTH}",
                     "--", _url(checkout.url), f"+{ref}:{local}"],
                    cwd=checkout.repo, timeout=1800, error=SourceError,
                    what=f"fetch pull request {number} of {checkout.target}")
        except SourceError as exc:
            raise SourceError(f"{checkout.target}: pull request {number} is not at {checkout.url} "
                              f"(no {ref})",
                              hint="check the number; a mirror must carry refs/pull/*, or "
                                   f"name its commits: series add NAME --target "
                                   f"{checkout.target} SHA...",
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
    if not shas:
        raise ConfigError(f"pull request {number} adds no commit to the pinned commit "
                          f"{checkout.commit[:12]} (merged before it?)")
    if len(shas) > limit or not all(_SHA.match(s) for s in shas):
        raise ConfigError(
            f"pull request {number}: {len(shas)} commits between the pinned commit and its head; "
            f"at most {limit}",
            hint="pin the target at the pull request's base (patchbench target new ... --ref "
                 "BASE), or name the commits: series add NAME --target T --pr N SHA...")
    return shas
