"""A source cache entry is used only as far as patchbench can check it.

CI restores ``builds/sources/`` from a cache that a pull request can influence, and git honours
much of what a repository holds: its config (filter drivers, ``core.fsmonitor``, hooks paths,
``include.path``, URL rewrites, credential helpers), ``info/attributes``, hooks (also for the git
that a build's Makefile runs in the worktree), replace refs, grafts, alternates, a ``commondir``
that points elsewhere. So:

- ``check`` refuses (exit 11) an entry holding anything patchbench does not write: a config key
  other than the few git writes itself, attributes, grafts, alternates, a ``commondir``, replace
  refs, a hook that is not one of git's samples, old-style remotes, a link or a special file
  anywhere, and as root a file that another user owns or may write. Like git's safe.directory and
  OpenSSH's StrictModes it refuses rather than repairs; removing the entry fetches it again.
- ``verify_tree`` hashes a checked-out tree file by file and compares the tree those hashes make
  with the tree of the commit, whose object git hashes again when it reads it: a planted object
  cannot change what is built without being seen.

Every git call also runs with a configuration patchbench controls (``util/git.py``).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Collection
from pathlib import Path

from patchbench.errors import SourceError
from patchbench.util import ownership
from patchbench.util.git import run_git

_BOOL = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})
# the keys git itself writes into a repository patchbench made (init, fetch, worktree add,
# sparse-checkout), with the values they may have; anything else was put there by someone else
CONFIG_KEYS: dict[str, frozenset[str]] = {
    "core.repositoryformatversion": frozenset({"0", "1"}),
    "core.filemode": _BOOL,
    "core.bare": _BOOL,
    "core.logallrefupdates": _BOOL,
    "core.ignorecase": _BOOL,
    "core.precomposeunicode": _BOOL,
    "core.symlinks": _BOOL,
    "core.sparsecheckout": _BOOL,
    "core.sparsecheckoutcone": _BOOL,
    "extensions.worktreeconfig": _BOOL,
}
# what may sit directly in a cache entry (a bare repository)
TOP = frozenset({"HEAD", "FETCH_HEAD", "ORIG_HEAD", "config", "config.worktree", "description",
                 "hooks", "info", "objects", "refs", "packed-refs", "shallow", "logs",
                 "worktrees", "branches", "gc.log", "gc.pid"})
INFO = frozenset({"exclude", "refs"})  # info/: ignore rules and update-server-info's list
OBJECTS_INFO = frozenset({"packs", "commit-graph", "commit-graphs"})  # objects/info/
HEX40 = re.compile(r"^[0-9a-f]{40}$")


def _refuse(repo: Path, path: Path, why: str) -> SourceError:
    rel = path.relative_to(repo).as_posix() if path != repo else "."
    return SourceError(
        f"the source cache {repo} is not used: {rel} {why}; patchbench runs git on it only "
        "holding what patchbench and git wrote",
        hint=f"remove it (rm -rf {repo}); the next run fetches it again")


def _allowed(repo: Path, path: Path, parts: tuple[str, ...], is_dir: bool) -> str | None:
    """Why ``parts`` (a path relative to the repository) may not be there, or None."""
    top = parts[0]
    if len(parts) == 1:
        if top in TOP or top.endswith(".lock"):
            return None
        if top == "commondir":
            return "points git at another repository"
        return "is not part of a repository patchbench made"
    if top == "hooks":
        return None if not is_dir and parts[-1].endswith(".sample") and len(parts) == 2 else (
            "is a hook, which git would run")
    if top == "info":
        if parts[1] == "attributes":
            return "sets attributes (filters, conversions) git would apply"
        if parts[1] == "grafts":
            return "rewrites commits' parents"
        return None if len(parts) == 2 and parts[1] in INFO else "is not part of a repository " \
            "patchbench made"
    if top == "objects" and len(parts) >= 3 and parts[1] == "info":
        if parts[2] in ("alternates", "http-alternates"):
            return "borrows objects from another repository"
        return None if parts[2] in OBJECTS_INFO else "is not part of a repository patchbench made"
    if top == "refs" and parts[1] == "replace":
        return None if is_dir else "replaces an object by another"
    if top in ("branches", "remotes"):
        return "names a remote"
    return None


def check(repo: Path) -> None:
    """Refuse the cache entry ``repo`` (if it exists) unless it holds only what patchbench and
    git write; SourceError (exit 11) naming the first file that is not."""
    try:
        st = os.lstat(repo)
    except FileNotFoundError:
        return
    trust = ownership.Trust.from_environment() if os.geteuid() == 0 else None
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(repo, repo, "is not a directory (a link?)")
    configs: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(repo):
        here = Path(dirpath)
        for name in (*dirnames, *filenames):
            path = here / name
            try:
                info = os.lstat(path)
            except FileNotFoundError:  # a lock or a worktree another run just removed
                continue
            if stat.S_ISLNK(info.st_mode):
                raise _refuse(repo, path, "is a symbolic link, which git would follow")
            is_dir = stat.S_ISDIR(info.st_mode)
            if not is_dir and not stat.S_ISREG(info.st_mode):
                raise _refuse(repo, path, "is not a regular file")
            if trust is not None:
                why = ownership.problem(path, info, trust)
                if why is not None:
                    raise _refuse(repo, path, why)
            parts = path.relative_to(repo).parts
            if parts[0] == "worktrees":  # a live run's worktree: only its config is read
                if name == "config.worktree" and len(parts) == 3:
                    configs.append(path)
                continue
            why = _allowed(repo, path, parts, is_dir)
            if why is not None:
                raise _refuse(repo, path, why)
            if len(parts) == 1 and name in ("config", "config.worktree"):
                configs.append(path)
    if trust is not None:
        why = ownership.problem(repo, st, trust)
        if why is not None:
            raise _refuse(repo, repo, why)
    _check_packed_refs(repo)
    for path in configs:
        _check_config(repo, path)


def _check_packed_refs(repo: Path) -> None:
    path = repo / "packed-refs"
    if not path.is_file():
        return
    with open(path, "rb") as f:
        for line in f:
            if b" refs/replace/" in line:
                raise _refuse(repo, path, "lists a replace ref, which replaces an object by another")


def _check_config(repo: Path, path: Path) -> None:
    """Every key of the config file ``path`` must be one git writes, with a plain value."""
    res = run_git(["config", "--file", str(path), "--no-includes", "--list", "-z"],
                  cwd=repo.parent, check=False)
    if res.returncode != 0:
        raise _refuse(repo, path, "is not a config file git can read")
    for item in res.stdout.split("\0"):
        if not item:
            continue
        key, _, value = item.partition("\n")
        allowed = CONFIG_KEYS.get(key.lower())
        if allowed is None:
            raise _refuse(repo, path, f"sets {key}, which patchbench never writes")
        if value.lower() not in allowed:
            raise _refuse(repo, path, f"sets {key} to {value!r}")


def commit_tree(repo: Path, commit: str, what: str) -> str:
    """The tree of ``commit``, read by git from the commit object after hashing that object again
    (without replace refs or the commit-graph: util/git.py); SourceError when the object in the
    cache is not the commit its name says."""
    res = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^{{tree}}"],
                  cwd=repo, check=False)
    tree = res.stdout.strip()
    if res.returncode != 0 or not HEX40.match(tree):
        detail = res.stderr.strip()
        why = ("its object does not hash to its name (planted?)" if "hash mismatch" in detail
               else "is missing or unreadable")
        raise SourceError(f"{what}: commit {commit} in the source cache {repo} {why}",
                          hint=f"remove it (rm -rf {repo}); the next run fetches it again",
                          detail=detail or None)
    return tree


# --- a checked-out tree, hashed ----------------------------------------------------------------

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(text: str) -> bytes:
    """A path as ``git ls-files`` prints it (C-quoted when it holds special bytes) -> its bytes."""
    if not text.startswith('"'):
        return text.encode()
    out = bytearray()
    i, body = 0, text[1:-1]
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode()
            i += 1
        elif body[i + 1] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        else:
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
    return bytes(out)


def _object_id(kind: bytes, data: bytes) -> bytes:
    return hashlib.sha1(kind + b" %d\0" % len(data) + data).digest()


def tree_id(entries: list[tuple[str, bytes, bytes]]) -> str:
    """The id of the tree that index entries (mode, path, 20-byte object id) make, hashed here
    (``git write-tree`` would take ids from the index's cached trees, made from the very objects
    being checked)."""
    root: dict[bytes, object] = {}
    for mode, path, oid in entries:
        *dirs, name = path.split(b"/")
        node = root
        for d in dirs:
            child = node.setdefault(d, {})
            assert isinstance(child, dict)
            node = child
        node[name] = (mode, oid)

    def build(node: dict[bytes, object]) -> bytes:
        items = []
        for name, value in node.items():
            if isinstance(value, dict):
                items.append((name + b"/", b"40000 " + name + b"\0" + build(value)))
            else:
                assert isinstance(value, tuple)
                mode, oid = value
                items.append((name, mode.encode() + b" " + name + b"\0" + oid))
        return _object_id(b"tree", b"".join(body for _, body in sorted(items)))

    return build(root).hex()


def verify_tree(tree: Path, commit: str, missing: Collection[str], what: str) -> None:
    """The worktree ``tree`` holds exactly ``commit``'s tree: its index makes that tree, and every
    file's content (links: their target) hashes to its index entry (with the tree's own
    attributes applied, as ``git add`` would), except ``missing`` (paths the cache lacks, left
    out of a sparse checkout). SourceError (exit 11) naming the first difference."""
    want = commit_tree(tree, commit, what)
    listing = run_git(["-c", "core.quotePath=true", "ls-files", "--stage"], cwd=tree,
                      error=SourceError, what=what).stdout
    entries: list[tuple[str, bytes, bytes]] = []
    rehash: list[tuple[Path, bytes]] = []
    for line in listing.splitlines():
        meta, _, quoted = line.partition("\t")
        mode, oid_hex, stage = meta.split()
        path = _unquote(quoted)
        oid = bytes.fromhex(oid_hex)
        if stage != "0":
            raise SourceError(f"{what}: the checkout of {commit[:12]} left {path!r} unmerged")
        entries.append((mode, path, oid))
        if mode == "160000" or os.fsdecode(path) in missing:
            continue  # a submodule (checked out and checked on its own), or left out
        file = tree / os.fsdecode(path)
        try:
            info = os.lstat(file)
        except FileNotFoundError:
            raise SourceError(f"{what}: the checkout of {commit[:12]} lacks {os.fsdecode(path)}"
                              ) from None
        if mode == "120000":
            ok = stat.S_ISLNK(info.st_mode) and _object_id(
                b"blob", os.fsencode(os.readlink(file))) == oid
        elif not stat.S_ISREG(info.st_mode):
            ok = False
        else:
            ok = _object_id(b"blob", file.read_bytes()) == oid
            if not ok:  # maybe converted on checkout (eol, ident): git hashes it as `add` would
                rehash.append((file, oid))
                continue
        if not ok:
            raise _differs(what, commit, os.fsdecode(path))
    for start in range(0, len(rehash), 200):
        chunk = rehash[start:start + 200]
        ids = run_git(["hash-object", "--", *(str(f) for f, _ in chunk)], cwd=tree,
                      error=SourceError, what=what).stdout.split()
        for (file, oid), got in zip(chunk, ids, strict=True):
            if bytes.fromhex(got) != oid:
                raise _differs(what, commit, file.relative_to(tree).as_posix())
    got_tree = tree_id(entries)
    if got_tree != want:
        raise SourceError(
            f"{what}: the checked-out files of {commit[:12]} make tree {got_tree}, but the "
            f"commit's tree is {want}: the source cache holds objects that are not what their "
            "names say", hint="remove the target's entry under builds/sources/; the next run "
            "fetches it again")


def _differs(what: str, commit: str, path: str) -> SourceError:
    return SourceError(
        f"{what}: {path} as checked out is not the file of commit {commit[:12]}: the source "
        "cache holds an object that is not what its name says",
        hint="remove the target's entry under builds/sources/; the next run fetches it again")
