"""Patch series and overlays.

A series is ``patches/<name>/series``: one patch file name per line (``#`` starts a comment), each
a ``git format-patch`` file whose commit message carries a DEP-3 header (Description or Subject,
Author or Origin, Forwarded). It is applied patch by patch as commits, so version strings show the
patched commit and never "-dirty". Application is all or nothing.

An overlay is ``overlays/<name>/``: files that are added identically to every variant of a
comparison (measuring code upstream lacks) and committed after the patches. It may only add files.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from patchbench.errors import PatchError, SourceError
from patchbench.source import patchform, series_ref
from patchbench.source.cache import (
    IDENTITY,
    SNAPSHOT_DATE,
    Checkout,
    add_worktree,
    remove_worktree,
    run_git,
)
from patchbench.util import cleanup
from patchbench.util.files import sha256_file
from patchbench.util.models import NAME_RE

DEP3_DESCRIPTION = ("Description",)
DEP3_AUTHOR = ("Author", "Origin")
DEP3_FORWARDED = ("Forwarded",)


@dataclass(frozen=True)
class Patch:
    path: Path
    sha256: str
    files: tuple[str, ...]
    subject: str
    upstream: series_ref.UpstreamRef | None = None  # an upstream commit by reference
    origin: str = ""  # its DEP-3 Origin field (``upstream, commit:<sha>`` from series new)


@dataclass(frozen=True)
class Series:
    name: str
    patches: tuple[Patch, ...]

    @property
    def digest(self) -> str:
        h = hashlib.sha256(self.name.encode())
        for p in self.patches:
            h.update(p.path.name.encode() + b"\0" + p.sha256.encode())
        return h.hexdigest()


def _unsafe(path: str) -> bool:
    return patchform.unsafe_path(path)


def parse_patch(path: Path, series: str) -> Patch:
    """Check one patch file: format-patch form, DEP-3 header, and no path leaving the tree."""
    try:  # bytes as git reads them: no newline translation hides a carriage return
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PatchError(f"series {series!r}: cannot read {path.name}: {exc}") from None
    if not text.startswith("From ") or "\nSubject: " not in text or "\ndiff --git " not in text:
        raise PatchError(
            f"series {series!r}: {path.name} is not in git format-patch form",
            hint="make it with: git format-patch -1 --zero-commit --no-signature",
        )
    try:  # an encoded mail body would hide both the DEP-3 header and the diff
        patchform.check_mail(text)
    except patchform.UnsafePatch as exc:
        raise _refusal(series, path, exc) from None
    header = text.partition("\ndiff --git ")[0]
    # DEP-3 fields live in the commit message, after the mail headers (whose From: and Subject:
    # would otherwise always satisfy "Author" and "Description")
    message = header.split("\n\n", 1)[1] if "\n\n" in header else ""
    fields = {m.group(1) for m in re.finditer(r"^([A-Z][A-Za-z-]+): ", message, re.M)}
    missing = [" or ".join(group) for group in (DEP3_DESCRIPTION, DEP3_AUTHOR, DEP3_FORWARDED)
               if not fields.intersection(group)]
    if missing:  # every missing field at once, not one per run
        raise MissingDep3(series, path.name, missing)
    try:
        files = patchform.inspect(text).paths
    except patchform.UnsafePatch as exc:
        raise _refusal(series, path, exc) from None
    subject = re.search(r"^Subject: (.*)$", header, re.M)
    origin = re.search(r"^Origin: (.*)$", message, re.M)
    return Patch(path, sha256_file(path), files, subject.group(1) if subject else "",
                 origin=origin.group(1).strip()[:300] if origin else "")


DEP3_HINT = ("put Description:, Author: or Origin:, and Forwarded: in the commit message "
             "(`series new` fills them from your commits)")


class MissingDep3(PatchError):
    """A patch lacks DEP-3 fields; ``load_series`` gathers these for every patch of a series."""

    def __init__(self, series: str, patch: str, missing: list[str]):
        self.patch, self.missing = patch, missing
        super().__init__(f"series {series!r}: {patch} lacks the DEP-3 field"
                         f"{'s' if len(missing) > 1 else ''} {', '.join(missing)}", hint=DEP3_HINT)


def _refusal(series: str, path: Path, exc: patchform.UnsafePatch) -> PatchError:
    where = f"series {series!r}: {path.name}"
    if exc.path is not None:
        return PatchError(
            f"{where} writes {exc.path!r}, outside the tree; refused before anything was "
            "written" + (f" (line {exc.line})" if exc.line else ""),
        )
    return PatchError(
        f"{where} {exc.reason}; refused before git runs"
        + (f" (line {exc.line})" if exc.line and "line " not in exc.reason else ""),
        hint=exc.hint,
    )


def _check_name(kind: str, name: str) -> None:
    """A series or overlay name is one directory name inside patches/ or overlays/ (--series
    comes from the command line: ../../etc is refused, not read)."""
    if not re.fullmatch(NAME_RE, name):
        where = "patches" if kind == "series" else "overlays"
        raise PatchError(f"{kind} {name!r} is not a name of a directory in {where}/ (lower case "
                         "letters, digits, '.', '_', '-'; no '/')",
                         hint=f"the {kind} names are the directories of {where}/")


MAX_PATCHES = 500  # per series (docs/security.md: limits); each costs about 66 ms to apply


def load_series(root: Path, name: str) -> Series:
    _check_name("series", name)
    series_file = root / "patches" / name / "series"
    if not series_file.is_file():
        raise PatchError(f"no patch series {name!r} (expected {series_file})")
    patches: list[Patch] = []
    lacking: list[MissingDep3] = []
    seen: set[str] = set()
    try:
        text = series_file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchError(f"patches/{name}/series is not UTF-8 text (byte {exc.start})",
                         hint="write the series file as UTF-8: one patch file name per line") \
            from None
    except OSError as exc:
        raise PatchError(f"cannot read patches/{name}/series: {exc.strerror or exc}") from None
    listed = sum(1 for raw in text.splitlines() if raw.split("#", 1)[0].strip())
    if listed > MAX_PATCHES:  # refused before any patch is read
        raise PatchError(f"patches/{name}/series lists {listed} patches; a series may list at "
                         f"most {MAX_PATCHES}", hint="docs/security.md: limits; split the series")
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"patches/{name}/series:{lineno}"
        if series_ref.is_ref(line):  # an upstream commit by reference: see series_ref.py
            ref = series_ref.parse_line(line, where)
            patches.append(Patch(Path(ref.file_name), ref.pin_digest, (), "", upstream=ref))
            continue
        if len(line.split()) != 1 or "/" in line or line in (".", ".."):
            raise PatchError(f"{where}: expected one patch file name per line, got {raw!r}")
        if line in seen:
            raise PatchError(f"{where}: {line} is listed twice")
        seen.add(line)
        path = series_file.parent / line
        if not path.is_file():
            raise PatchError(f"{where}: {line} does not exist in patches/{name}/")
        try:
            patches.append(parse_patch(path, name))
        except MissingDep3 as exc:
            lacking.append(exc)
    if len(lacking) == 1:
        raise lacking[0]
    if lacking:
        raise PatchError(f"series {name!r}: {len(lacking)} patches lack DEP-3 fields: " + "; ".join(
            f"{e.patch} ({', '.join(e.missing)})" for e in lacking), hint=DEP3_HINT)
    if not patches:
        raise PatchError(f"patches/{name}/series lists no patches")
    return Series(name, tuple(patches))


def _failure_detail(worktree: Path, patch: Patch) -> str:
    """Name the file and hunk that do not apply (from ``git apply --check``)."""
    res = run_git(["apply", "--check", "--verbose", str(patch.path)], cwd=worktree, check=False)
    output = res.stdout + res.stderr
    m = re.search(r"error: patch failed: (?P<file>.+):(?P<line>\d+)", output)
    if not m:
        return output.strip().splitlines()[-1] if output.strip() else "git apply failed"
    file, line = m.group("file"), int(m.group("line"))
    hunk_no, header = _find_hunk(patch.path.read_text(), file, line)
    where = f"hunk #{hunk_no} ({header})" if hunk_no else f"line {line}"
    return f"{file}: {where} does not apply"


def _find_hunk(text: str, file: str, line: int) -> tuple[int, str]:
    current = None
    count = 0
    for raw in text.splitlines():
        m = re.match(r"^diff --git a/(\S+) b/", raw)
        if m:
            current = m.group(1)
            count = 0
            continue
        h = re.match(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@", raw)
        if h and current == file:
            count += 1
            if int(h.group(1)) == line:
                return count, raw.split(" @@")[0] + " @@"
    return 0, ""


def commit_index(worktree: Path, message: str, env: dict[str, str]) -> str:
    """Commit the index on top of HEAD and move HEAD there. Like ``git commit``, except that
    blobs missing from the object store (a source snapshot without its largest files, checked out
    sparse) do not stop it: the tree is written with --missing-ok."""
    tree = run_git(["write-tree", "--missing-ok"], cwd=worktree, error=PatchError).stdout.strip()
    head = run_git(["rev-parse", "HEAD"], cwd=worktree, error=PatchError).stdout.strip()
    commit = run_git(["commit-tree", tree, "-p", head, "-F", "-"], cwd=worktree, env=env,
                     error=PatchError, input=message).stdout.strip()
    run_git(["update-ref", "--no-deref", "-m", "patchbench", "HEAD", commit], cwd=worktree,
            env=env, error=PatchError)
    return commit


def _mailinfo(worktree: Path, patch: Patch) -> tuple[dict[str, str], str, Path]:
    """Split a format-patch file with ``git mailinfo``: headers, commit message, and the diff."""
    scratch = Path(run_git(["rev-parse", "--git-dir"], cwd=worktree).stdout.strip())
    if not scratch.is_absolute():
        scratch = worktree / scratch
    msg, diff = scratch / "patchbench-msg", scratch / "patchbench-diff"
    res = run_git(["mailinfo", "-k", str(msg), str(diff)], cwd=worktree, error=PatchError,
                  input=patch.path.read_text())
    info = {}
    for line in res.stdout.splitlines():
        key, _, value = line.partition(": ")
        info[key] = value
    body = msg.read_text().strip()
    subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", info.get("Subject", ""))
    return info, subject + ("\n\n" + body if body else "") + "\n", diff


def apply_series(worktree: Path, series: list[Series], date_epoch: int) -> list[str]:
    """Apply every series as commits, patch by patch: ``git apply --index`` (all or nothing per
    patch, no .rej files) then a commit with the patch's author and date, so version strings show
    the patched commit and never "-dirty". On failure the index and files are reset to HEAD and
    PatchError names the series, patch, file and hunk; the caller removes the worktree. The
    committer and dates are fixed, so the patched commit is reproducible."""
    del date_epoch  # the commit dates come from the patches themselves
    applied: list[str] = []
    for s in series:
        for patch in s.patches:
            if patch.upstream is not None:  # made from the fetched source, its hash checked
                patch = replace(patch, path=series_ref.materialise(worktree, patch.upstream, s.name))
            info, message, diff = _mailinfo(worktree, patch)
            res = run_git(["apply", "--index", "--whitespace=nowarn", str(diff)], cwd=worktree,
                          check=False)
            if res.returncode != 0:
                run_git(["reset", "-q", "--hard"], cwd=worktree, check=False)
                detail = _failure_detail(worktree, patch)
                raise PatchError(
                    f"series {s.name!r}, patch {patch.path.name}: {detail}",
                    hint="rebase the patch on the pinned commit (patchbench patch --check lists all)",
                    detail=(res.stdout + res.stderr).strip() or None,
                )
            date = info.get("Date", "")
            env = {**IDENTITY, "GIT_AUTHOR_NAME": info.get("Author", "unknown"),
                   "GIT_AUTHOR_EMAIL": info.get("Email", ""), "GIT_AUTHOR_DATE": date,
                   "GIT_COMMITTER_DATE": date}
            commit_index(worktree, message, env)
            applied.append(patch.path.name)
    return applied


# --- overlays -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Overlay:
    name: str
    root: Path
    files: tuple[str, ...]
    digest: str


def load_overlay(root: Path, name: str) -> Overlay:
    _check_name("overlay", name)
    base = root / "overlays" / name
    if not base.is_dir():
        raise PatchError(f"no overlay {name!r} (expected overlays/{name}/)")
    files: list[str] = []
    h = hashlib.sha256(name.encode())
    for path in sorted(p for p in base.rglob("*") if p.is_file() or p.is_symlink()):
        if path.is_symlink():
            raise PatchError(f"overlay {name!r}: {path.relative_to(base)} is a symlink; refused")
        rel = path.relative_to(base).as_posix()
        files.append(rel)
        h.update(rel.encode() + b"\0" + sha256_file(path).encode())
    if not files:
        raise PatchError(f"overlay {name!r} has no files")
    return Overlay(name, base, tuple(files), h.hexdigest())


def apply_overlays(worktree: Path, overlays: list[Overlay], date_epoch: int) -> None:
    """Copy overlay files in (never over an upstream file) and commit them."""
    if not overlays:
        return
    for ov in overlays:
        for rel in ov.files:
            dest = worktree / rel
            if dest.exists() or dest.is_symlink():
                raise PatchError(
                    f"overlay {ov.name!r}: {rel} already exists in the tree; overlays may only add "
                    "files, so that the measured difference comes from the patch alone",
                )
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ov.root / rel, dest)
    date = f"@{date_epoch} +0000"
    env = {**IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    names = ", ".join(o.name for o in overlays)
    run_git(["add", "--", *sorted({rel for o in overlays for rel in o.files})], cwd=worktree,
            env=env, error=SourceError)
    commit_index(worktree, f"patchbench overlay: {names}\n", env)


__all__ = [
    "SNAPSHOT_DATE",
    "Overlay",
    "Patch",
    "Series",
    "apply_overlays",
    "apply_series",
    "load_overlay",
    "load_series",
    "parse_patch",
]


def trial_apply(checkout: Checkout, series: Series, prefix: Path, builds: Path) -> str:
    """Apply ``series`` to a throwaway worktree of ``checkout``'s pinned commit (``prefix``, made
    unique per process and call), removed afterwards: "ok (N patches)", or a PatchError."""
    tmp = prefix.with_name(f"{prefix.name}-{cleanup.owner_tag()}-{secrets.token_hex(4)}")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    add_worktree(checkout, tmp, builds)
    try:
        apply_series(tmp, [series], checkout.commit_epoch())
    finally:
        remove_worktree(checkout, tmp, builds)
    n = len(series.patches)
    return f"ok ({n} patch{'es' if n > 1 else ''})"
