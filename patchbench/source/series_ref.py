"""Upstream commits as patch series, by reference: a series line ``upstream <commit> <hash>``
names a commit instead of holding its patch, because this repository never holds upstream code.
The commit is fetched into the source cache (``ensure_commits``), and at build time its patch is
made with fixed diff options and checked against the pinned hash (``materialise``). The syntax
and the rules: docs/series.md."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from patchbench.errors import CommandError, ConfigError, PatchError, SourceError
from patchbench.source import patchform
from patchbench.source.cache import Checkout, locked
from patchbench.util import cmd
from patchbench.util.files import write_text_atomic
from patchbench.util.git import run_git

KEYWORD = "upstream"
UPSTREAM_REF_PREFIX = "refs/patchbench/upstream/"
FORMAT_PATCH = [
    "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
    "format-patch", "-1", "--stdout", "--zero-commit", "--no-signature", "--full-index",
    "--no-renames", "-U3", "--diff-algorithm=myers", "--no-indent-heuristic", "--no-color",
]
# the same diff options as FORMAT_PATCH, for the diff of a commit against its parent
DIFF = [
    "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
    "diff", "--full-index", "--no-renames", "-U3", "--diff-algorithm=myers",
    "--no-indent-heuristic", "--no-color", "--no-ext-diff", "--no-textconv",
]
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_HASH = re.compile(r"^(?P<kind>patch-id|sha256):(?P<value>[0-9a-f]+)$")
_HASH_LEN = {"patch-id": 40, "sha256": 64}
_SERIES_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PR = re.compile(r"^pr:([1-9][0-9]{0,8})$")


@dataclass(frozen=True)
class UpstreamRef:
    """One ``upstream <commit> <hash>`` line."""

    commit: str
    hash: str  # "patch-id:<hex>" or "sha256:<hex>"
    where: str  # patches/<series>/series:<line>
    pr: int | None = None  # the upstream pull request it came with

    @property
    def kind(self) -> str:
        return self.hash.split(":", 1)[0]

    @property
    def file_name(self) -> str:
        """The name the patch goes by in listings and the manifest."""
        return f"upstream-{self.commit}.patch"

    @property
    def pin_digest(self) -> str:
        """sha256 of the pin (commit and hash): stands for the patch file's sha256 in the
        series digest, so the build cache key changes exactly when the pin does."""
        return hashlib.sha256(f"{KEYWORD} {self.commit} {self.hash}\n".encode()).hexdigest()

    @property
    def origin(self) -> str:
        return f"upstream, commit:{self.commit}" + (f", pr:{self.pr}" if self.pr else "")


def is_ref(line: str) -> bool:
    """Whether a series line (comment already removed) names an upstream commit."""
    return line.split(None, 1)[0] == KEYWORD if line.strip() else False


def parse_line(line: str, where: str) -> UpstreamRef:
    """Parse ``upstream <commit> <hash>`` (comment already removed); PatchError names the line."""
    parts = line.split()
    example = f"{KEYWORD} <40-hex commit> patch-id:<40 hex> [pr:<N>]  # subject"
    pr = None
    if len(parts) == 4 and (m := _PR.match(parts[3])):
        pr = int(m.group(1))
        parts = parts[:3]
    if len(parts) != 3 or parts[0] != KEYWORD:
        raise PatchError(f"{where}: expected '{example}', got {line.strip()!r}")
    commit, pin = parts[1].lower(), parts[2].lower()
    if not _SHA1.match(commit):
        raise PatchError(f"{where}: {parts[1]!r} is not a full 40-hex commit SHA",
                         hint="name the commit by its full SHA (git rev-parse <commit>)")
    m = _HASH.match(pin)
    if not m or len(m.group("value")) != _HASH_LEN[m.group("kind")]:
        raise PatchError(f"{where}: {parts[2]!r} is not patch-id:<40 hex> or sha256:<64 hex>",
                         hint="invoke series add writes the line with the right hash")
    return UpstreamRef(commit, pin, where, pr)


def refs_in(series_file: Path) -> list[UpstreamRef]:
    """The upstream references of one series file (none when it does not exist)."""
    if not series_file.is_file():
        return []
    out = []
    name = series_file.parent.name
    for lineno, raw in enumerate(series_file.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line and is_ref(line):
            out.append(parse_line(line, f"patches/{name}/series:{lineno}"))
    return out


class SeriesUse(Protocol):
    """What this module reads of a comparison (patchbench.config.Comparison, which sits above)."""

    @property
    def target(self) -> str: ...
    @property
    def baseline(self) -> Sequence[str]: ...
    @property
    def candidates(self) -> Mapping[str, Sequence[str]]: ...


def series_of_target(comparisons: Iterable[SeriesUse], target: str) -> list[str]:
    """The series that the comparisons of ``target`` use, sorted."""
    names: set[str] = set()
    for comp in comparisons:
        if comp.target == target:
            names.update(comp.baseline)
            for series in comp.candidates.values():
                names.update(series)
    return sorted(names)


def commits_for_series(root: Path, names: Iterable[str]) -> list[str]:
    """Every upstream commit the named series refer to, in order, once each."""
    seen: dict[str, None] = {}
    for name in names:
        for ref in refs_in(root / "patches" / name / "series"):
            seen.setdefault(ref.commit)
    return list(seen)


# --- fetching ---------------------------------------------------------------------------------


def _has_commit(repo: Path, commit: str) -> bool:
    res = run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=repo, check=False)
    return res.returncode == 0


def _parents(repo: Path, commit: str) -> list[str]:
    """The parents the commit object names. Read from the object itself, not through rev-list:
    in a shallow cache a commit can be a shallow boundary (fetching its child at depth 2 makes it
    one), and git then pretends it has no parent, so a patch would be made against the empty
    tree."""
    out = run_git(["cat-file", "commit", commit], cwd=repo, error=PatchError).stdout
    header = out.split("\n\n", 1)[0]
    return [line.split()[1] for line in header.splitlines() if line.startswith("parent ")]


def _complete(repo: Path, commit: str) -> bool:
    """The commit and its parent (which the patch is made against) are in ``repo``."""
    if not _has_commit(repo, commit):
        return False
    try:
        return all(_has_commit(repo, p) for p in _parents(repo, commit))
    except (PatchError, CommandError):
        return False


def _fetch_url(url: str) -> str:
    p = Path(url)
    return p.resolve().as_uri() if p.exists() else url


def fetch_commit(checkout: Checkout, commit: str, builds: Path) -> None:
    """Fetch ``commit`` and its parent into the target's cache from where the checkout came
    from; SourceError when the source lacks it."""
    repo = checkout.repo
    if _complete(repo, commit):
        return
    if not checkout.url:
        raise SourceError(f"{checkout.target}: no source URL to fetch upstream commit {commit} from")
    shallow = run_git(["rev-parse", "--is-shallow-repository"], cwd=repo).stdout.strip() == "true"
    depth = ["--depth=2"] if shallow else []
    with locked(builds, f"source-{checkout.target}"):
        if _complete(repo, commit):
            return
        try:
            run_git(["fetch", "-q", "--no-tags", *depth, "--", _fetch_url(checkout.url),
                     f"+{commit}:{UPSTREAM_REF_PREFIX}{commit}"], cwd=repo, timeout=1800,
                    error=SourceError, what=f"fetch upstream commit {commit[:12]}")
        except SourceError as exc:
            raise SourceError(
                f"{checkout.target}: upstream commit {commit} is missing from {checkout.url}",
                hint="check the SHA, or point --source at a copy of the upstream that has it",
                detail=exc.detail,
            ) from None
    if not _complete(repo, commit):
        raise SourceError(f"{checkout.target}: fetched upstream commit {commit}, but its parent "
                          f"is missing from {checkout.url}")


def ensure_commits(checkout: Checkout, commits: Sequence[str], builds: Path) -> list[str]:
    """Fetch each upstream commit the target's series name, unless cached. A commit that cannot
    be fetched is not fatal here (the series may not be needed now): it is returned and warned
    about, and building or checking that series refuses it, naming the commit."""
    failed = []
    for commit in commits:
        try:
            fetch_commit(checkout, commit, builds)
        except SourceError as exc:
            cmd.say(f"warning: {exc.message}")
            failed.append(commit)
    return failed


# --- making and checking the patch ------------------------------------------------------------


def make_patch(repo: Path, commit: str, where: str = "") -> str:
    """The commit as a format-patch text, made with the fixed options above."""
    label = f"{where}: " if where else ""
    if not _has_commit(repo, commit):
        raise PatchError(
            f"{label}upstream commit {commit} is missing from the fetched source",
            hint="check the SHA; it is fetched from the target's URL or --source, which must "
            "have it",
        )
    parents = _parents(repo, commit)
    if len(parents) > 1:
        raise PatchError(f"{label}upstream commit {commit} is a merge; name the commits it "
                         "brings in instead")
    if parents and not _has_commit(repo, parents[0]):
        raise PatchError(f"{label}the parent of upstream commit {commit} is missing from the "
                         "fetched source")
    what = f"make the patch of upstream commit {commit[:12]}"
    text = run_git([*FORMAT_PATCH, *([] if parents else ["--root"]), commit], cwd=repo,
                   error=PatchError, what=what).stdout
    if parents:  # the diff against the parent the object names, whatever the shallow file says
        head = text.split("\n---\n", 1)[0]
        diff = run_git([*DIFF, parents[0], commit], cwd=repo, error=PatchError, what=what).stdout
        text = f"{head}\n---\n\n{diff}"
    if "\ndiff --git " not in text:
        raise PatchError(f"{label}upstream commit {commit} changes no file")
    return text


def patch_hash(repo: Path, text: str, kind: str) -> str:
    """``kind:<hex>`` of a patch text: ``git patch-id --stable`` or the sha256 of its diff."""
    if kind == "sha256":
        diff = text[text.index("\ndiff --git ") + 1:]
        return "sha256:" + hashlib.sha256(diff.encode()).hexdigest()
    if kind != "patch-id":
        raise ValueError(kind)
    out = run_git(["patch-id", "--stable"], cwd=repo, input=text, error=PatchError).stdout.split()
    if not out:
        raise PatchError("git patch-id found no diff in the patch")
    return "patch-id:" + out[0]


def materialise(worktree: Path, ref: UpstreamRef, series: str) -> Path:
    """Make the patch of ``ref`` from the worktree's repository, check its hash, and write it
    into the worktree's git directory (removed with the worktree); return the file."""
    text = make_patch(worktree, ref.commit, ref.where)
    got = patch_hash(worktree, text, ref.kind)
    if got != ref.hash:
        raise PatchError(
            f"{ref.where}: upstream commit {ref.commit} does not match its pinned hash: the "
            f"series pins {ref.hash}, the fetched commit gives {got}",
            hint="the commit in the fetched source differs from the one the series was written "
            f"for; check it before re-pinning with: invoke series add {series} --target ... "
            f"{ref.commit}",
        )
    try:  # the same forms as our own patches: plain text edits of regular files in the tree
        patchform.inspect(text)
    except patchform.UnsafePatch as exc:
        raise PatchError(f"{ref.where}: the patch made from upstream commit {ref.commit} "
                         f"{exc.reason}", hint=exc.hint) from None
    git_dir = Path(run_git(["rev-parse", "--git-dir"], cwd=worktree).stdout.strip())
    if not git_dir.is_absolute():
        git_dir = worktree / git_dir
    path = git_dir / f"patchbench-{ref.file_name}"
    path.write_text(text)
    return path


def subject(repo: Path, commit: str) -> str:
    return run_git(["show", "-s", "--format=%s", commit], cwd=repo, error=PatchError).stdout.strip()


# --- invoke series add ------------------------------------------------------------------------


def add(root: Path, checkout: Checkout, name: str, commits: Sequence[str], builds: Path, *,
        pr: int | None = None) -> list[str]:
    """Append ``upstream <commit> patch-id:<hash> [pr:<N>]  # <subject>`` for each commit to
    ``patches/<name>/series`` (made when new, replaced whole: never written through a link);
    return the lines written. The caller holds the project's lock."""
    if not _SERIES_NAME.match(name):
        raise ConfigError(f"{name!r} is not a series name (letters, digits, '.', '_', '-')")
    if not commits:
        raise ConfigError("name at least one upstream commit (its full SHA)")
    wanted = []
    for c in commits:
        c = c.strip().lower()
        if not _SHA1.match(c):
            raise ConfigError(f"{c!r} is not a full 40-hex commit SHA",
                              hint="name the commit by its full SHA (git rev-parse <commit>)")
        wanted.append(c)
    series_file = root / "patches" / name / "series"
    present = {r.commit for r in refs_in(series_file)}
    again = [c for c in wanted if c in present]
    if again or len(set(wanted)) != len(wanted):
        raise ConfigError(f"patches/{name}/series already names {', '.join(again or wanted)}")
    lines = []
    for c in wanted:
        fetch_commit(checkout, c, builds)
        text = make_patch(checkout.repo, c)
        lines.append(f"{KEYWORD} {c} {patch_hash(checkout.repo, text, 'patch-id')}"
                     + (f" pr:{pr}" if pr else "")
                     + f"  # {' '.join(subject(checkout.repo, c).split())}")
    series_file.parent.mkdir(parents=True, exist_ok=True)
    head = "" if series_file.is_file() else (
        f"# {name}: upstream {checkout.target} commits by reference (invoke series add); see "
        "docs/series.md\n")
    old = series_file.read_text() if series_file.is_file() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    write_text_atomic(series_file, old + head + "".join(f"{line}\n" for line in lines))
    return lines


__all__ = [
    "KEYWORD",
    "UpstreamRef",
    "add",
    "commits_for_series",
    "ensure_commits",
    "fetch_commit",
    "is_ref",
    "make_patch",
    "materialise",
    "parse_line",
    "patch_hash",
    "refs_in",
    "series_of_target",
]
