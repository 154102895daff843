"""A strict reader of the git patch forms that ``git mailinfo`` and ``git apply`` accept, run
before git ever sees a patch, so that a patch can only edit regular files inside the tree: links
and submodules in any spelling, mode changes, renames and copies, binary patches, names that
leave the tree, malformed hunks, patch-like sections outside a ``diff --git`` block and encoded
mail bodies are refused, each with its own reason. docs/safety.md, class 7."""

from __future__ import annotations

import re
from dataclasses import dataclass

REGULAR_MODES = (0o100644, 0o100755)
S_IFMT = 0o170000
S_IFLNK = 0o120000
S_IFGITLINK = 0o160000
RENAME_HINT = "renames and copies are refused; write the change as a delete and an add"


class UnsafePatch(Exception):
    """The patch uses a form patchbench refuses; ``path`` is set when a name leaves the tree."""

    def __init__(self, reason: str, *, hint: str | None = None, path: str | None = None,
                 line: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.hint = hint
        self.path = path
        self.line = line


@dataclass(frozen=True)
class FileDiff:
    path: str
    new: bool
    deleted: bool
    hunks: int


@dataclass(frozen=True)
class PatchForm:
    files: tuple[FileDiff, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files)


def unsafe_path(path: str) -> bool:
    """A name that could write outside the tree, into .git, or mean something else elsewhere."""
    if path == "" or path.startswith("/") or "\\" in path:
        return True
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return True
    parts = path.split("/")
    return any(p in ("", ".", "..") or p.lower() == ".git" for p in parts)


# --- names ---------------------------------------------------------------------------------

_C_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
              "\\": "\\", '"': '"'}


def _unquote(text: str, lineno: int) -> tuple[str, str]:
    """A C-quoted name at the start of ``text`` (git's quote_c_style): (name, rest)."""
    assert text.startswith('"')
    out = bytearray()
    i = 1
    while i < len(text):
        c = text[i]
        if c == '"':
            try:
                return out.decode("utf-8"), text[i + 1:]
            except UnicodeDecodeError:
                raise UnsafePatch("a quoted file name is not UTF-8", line=lineno) from None
        if c == "\\":
            i += 1
            if i >= len(text):
                break
            e = text[i]
            if e in _C_ESCAPES:
                out += _C_ESCAPES[e].encode()
            elif e in "0123":
                digits = text[i:i + 3]
                if not re.fullmatch(r"[0-3][0-7]{2}", digits):
                    raise UnsafePatch("a quoted file name has a bad escape", line=lineno)
                out.append(int(digits, 8))
                i += 2
            else:
                raise UnsafePatch("a quoted file name has a bad escape", line=lineno)
        else:
            out += c.encode()
        i += 1
    raise UnsafePatch("a quoted file name is not closed", line=lineno)


def _check_name(name: str, lineno: int) -> str:
    if unsafe_path(name):
        raise UnsafePatch(f"writes {name!r}, outside the tree", path=name, line=lineno)
    return name


def _prefixed(raw: str, prefix: str, lineno: int, what: str) -> str:
    """``a/NAME`` -> NAME, checked. A name without the prefix is checked as written, then
    refused (git apply -p1 would drop its first component)."""
    if raw.startswith(prefix):
        return _check_name(raw[len(prefix):], lineno)
    _check_name(raw, lineno)
    raise UnsafePatch(f"{what} name {raw!r} lacks the {prefix!r} prefix of git format-patch",
                      line=lineno)


def _header_names(rest: str, lineno: int) -> tuple[str, str]:
    """The two names of ``diff --git A B``: quoted ones, or the one split where both halves
    name the same file (as git does). Two different unquoted names are a rename."""
    if rest.startswith('"'):
        a, tail = _unquote(rest, lineno)
        if not tail.startswith(" "):
            raise UnsafePatch("a malformed diff --git line", line=lineno)
        tail = tail[1:]
        if tail.startswith('"'):
            b, extra = _unquote(tail, lineno)
            if extra:
                raise UnsafePatch("a malformed diff --git line", line=lineno)
        else:
            b = tail
        a_name = _prefixed(a, "a/", lineno, "the diff --git")
        b_name = _prefixed(b, "b/", lineno, "the diff --git")
        if a_name != b_name:
            raise UnsafePatch("the diff --git line names two different files (a rename or copy)",
                              hint=RENAME_HINT, line=lineno)
        return a_name, b_name
    candidates = [m.start() for m in re.finditer(" ", rest)]
    for pos in candidates:
        a, b = rest[:pos], rest[pos + 1:]
        if b.startswith('"'):
            b = _unquote(b, lineno)[0]
        if a.startswith("a/") and b.startswith("b/") and a[2:] == b[2:]:
            name = _check_name(a[2:], lineno)
            return name, name
    # no split gives one name: check every reading for an escape, then refuse
    for pos in candidates:
        a, b = rest[:pos], rest[pos + 1:]
        for raw, prefix in ((a, "a/"), (b, "b/")):
            _check_name(raw[len(prefix):] if raw.startswith(prefix) else raw, lineno)
    raise UnsafePatch("the diff --git line names two different files (a rename or copy)",
                      hint=RENAME_HINT, line=lineno)


def _side_name(raw: str, prefix: str, lineno: int, what: str) -> str | None:
    """The name of a ``---``/``+++`` line: None for /dev/null."""
    if raw.startswith('"'):
        raw, tail = _unquote(raw, lineno)
        if tail and not tail.startswith("\t"):
            raise UnsafePatch(f"a malformed {what} line", line=lineno)
    else:
        # git writes a tab after a name that has a space; anything after a tab is not the name
        raw = raw.split("\t", 1)[0]
    if raw == "/dev/null":
        return None
    return _prefixed(raw, prefix, lineno, what)


def _mode(value: str, lineno: int, what: str) -> int:
    if not re.fullmatch(r"[0-7]{1,7}", value):
        raise UnsafePatch(f"{what} {value!r} is not an octal file mode", line=lineno)
    mode = int(value, 8)
    kind = mode & S_IFMT
    if kind == S_IFLNK:
        raise UnsafePatch(
            f"creates a symbolic link or makes a file one ({what} {value})",
            hint="symlinks could point outside the tree; write the file itself", line=lineno)
    if kind == S_IFGITLINK:
        raise UnsafePatch(f"touches a submodule ({what} {value})", line=lineno)
    if mode not in REGULAR_MODES:
        raise UnsafePatch(f"uses file mode {value} ({what}); only 100644 and 100755 are allowed",
                          line=lineno)
    return mode


# --- the mail part ---------------------------------------------------------------------------

_HEADER_LIKE = re.compile(
    r"^(diff -|Index: |@@ -|GIT binary patch|Binary files |"
    r"rename (from|to|old|new) |copy (from|to) |(old|new) mode |deleted file mode |"
    r"new file mode |similarity index |dissimilarity index |\+\+\+ )"
)


def check_mail(text: str) -> int:
    """Refuse mail bodies git mailinfo would decode before applying (what is read must be what
    runs); return the index of the blank line that ends the mail headers."""
    lines = text.split("\n")
    try:
        blank = lines.index("")
    except ValueError:
        raise UnsafePatch("has no mail body") from None
    fields: dict[str, str] = {}
    current = None
    for line in lines[:blank]:
        if line[:1] in (" ", "\t") and current:
            fields[current] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if sep:
            current = key.strip().lower()
            fields[current] = value.strip()
    cte = fields.get("content-transfer-encoding", "").lower()
    if cte not in ("", "7bit", "8bit"):
        raise UnsafePatch(f"the mail body is encoded ({cte}); git would decode it before applying",
                          hint="make it with plain git format-patch (8bit)")
    ctype = fields.get("content-type", "").lower()
    if ctype:
        main = ctype.split(";", 1)[0].strip()
        charset = re.search(r"charset\s*=\s*\"?([a-z0-9_.:-]+)", ctype)
        if main != "text/plain" or (charset and charset.group(1) not in ("utf-8", "us-ascii")):
            raise UnsafePatch(f"the mail has Content-Type {ctype!r}; only plain UTF-8 text is "
                              "accepted", hint="make it with plain git format-patch")
    return blank


def _check_outside(lines: list[str], start: int, end: int, where: str) -> None:
    """Lines outside every diff --git block: nothing git apply would take as a patch."""
    for i in range(start, end):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        plain = line.startswith("--- ") and nxt.startswith("+++ ")
        if plain or _HEADER_LIKE.match(line):
            if plain:
                for raw, prefix in ((line[4:], "a/"), (nxt[4:], "b/")):
                    name = raw.split("\t", 1)[0]
                    if name != "/dev/null":
                        _check_name(name[len(prefix):] if name.startswith(prefix) else name, i + 1)
            raise UnsafePatch(
                f"has a patch section {where} (line {i + 1}: {line[:60]!r}) that git apply would "
                "also apply", hint="a patch holds only git diff blocks; remove the extra section",
                line=i + 1)


# --- the diff part ---------------------------------------------------------------------------

_HUNK = re.compile(r"^@@ -(\d{1,9})(?:,(\d{1,9}))? \+(\d{1,9})(?:,(\d{1,9}))? @@")
_INDEX = re.compile(r"^index ([0-9a-f]{4,64})\.\.([0-9a-f]{4,64})(?: (\S+))?$")


def inspect(text: str) -> PatchForm:
    """Read a ``git format-patch`` file; return what it changes or raise UnsafePatch."""
    if "\r" in text or "\0" in text:
        raise UnsafePatch("has carriage returns or NUL bytes; git would read other names than "
                          "these", hint="save the patch with Unix line endings")
    lines = text.split("\n")
    blank = check_mail(text)
    first = next((i for i, line in enumerate(lines) if line.startswith("diff --git ")), None)
    if first is None:
        raise UnsafePatch("has no diff --git block")
    # git mailinfo ends the message at its first patch break and git apply reads everything
    # after it, the diffstat included: nothing before the first block may look like a patch
    _check_outside(lines, blank + 1, first, "in the commit message or diffstat")
    files: list[FileDiff] = []
    i = first
    n = len(lines)
    while i < n and lines[i].startswith("diff --git "):
        fd, i = _file_diff(lines, i)
        files.append(fd)
        j = i  # blank lines between blocks are skipped, as git does
        while j < n and lines[j] == "":
            j += 1
        if j < n and lines[j].startswith("diff --git "):
            i = j
    # after the last block: blank lines and an optional signature, nothing that is a patch
    _check_trailer(lines, i)
    if not files:  # pragma: no cover - first exists
        raise UnsafePatch("has no diff --git block")
    return PatchForm(tuple(files))


def _check_trailer(lines: list[str], i: int) -> None:
    n = len(lines)
    while i < n and lines[i] == "":
        i += 1
    if i >= n:
        return
    if lines[i] != "-- ":
        line = lines[i]
        if line.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "):
            _check_outside(lines, i, i + 1, "after the last hunk")
        raise UnsafePatch(
            f"has text after the last hunk (line {i + 1}: {line[:60]!r}) that is not part of "
            "any diff; git apply would read it as another patch or a corrupt hunk",
            hint="a patch ends after its last hunk (and an optional '-- ' signature)",
            line=i + 1)
    _check_outside(lines, i + 1, n, "after the signature")


def _file_diff(lines: list[str], i: int) -> tuple[FileDiff, int]:
    n = len(lines)
    head = lines[i]
    lineno = i + 1
    a, b = _header_names(head[len("diff --git "):], lineno)
    i += 1
    new = deleted = False
    forms: list[tuple[str, int]] = []  # refused forms, reported once names are all checked
    old_name: str | None = a
    new_name: str | None = b
    saw_minus = saw_plus = False
    while i < n:
        line = lines[i]
        ln = i + 1
        if line.startswith("new file mode "):
            _mode(line[len("new file mode "):], ln, "new file mode")
            new = True
        elif line.startswith("deleted file mode "):
            _mode(line[len("deleted file mode "):], ln, "deleted file mode")
            deleted = True
        elif line.startswith(("old mode ", "new mode ")):
            key = line[:8].strip()
            _mode(line[len(key) + 1:], ln, key)
            forms.append(("changes a file mode (old mode/new mode)", ln))
        elif m := _INDEX.match(line):
            if m.group(3) is not None:
                _mode(m.group(3), ln, "index mode")
        elif line.startswith(("rename from ", "rename to ", "rename old ", "rename new ",
                              "copy from ", "copy to ")):
            words = line.split(" ", 2)
            raw = words[2]
            name = _unquote(raw, ln)[0] if raw.startswith('"') else raw
            _check_name(name, ln)
            forms.append((f"{'renames' if words[0] == 'rename' else 'copies'} a file "
                          f"({words[0]} {words[1]} {name!r})", ln))
        elif line.startswith(("similarity index ", "dissimilarity index ")):
            forms.append((f"renames, copies or rewrites a file ({line.strip()})", ln))
        elif line.startswith("--- "):
            old_name = _side_name(line[4:], "a/", ln, "---")
            saw_minus = True
        elif line.startswith("+++ "):
            new_name = _side_name(line[4:], "b/", ln, "+++")
            saw_plus = True
        elif line.startswith("GIT binary patch") or (
                line.startswith("Binary files ") and line.endswith(" differ")):
            forms.append(("is a binary patch", ln))
            break
        else:
            break
        i += 1
    if forms:
        reason, ln = forms[0]
        if "mode" in reason:
            hint = "mode changes are refused; keep the file's mode"
        elif "binary" in reason:
            hint = "binary patches are refused; patch text files only"
        else:
            hint = RENAME_HINT
        raise UnsafePatch(reason, hint=hint, line=ln)
    if saw_minus != saw_plus:
        raise UnsafePatch("has a --- line without +++ (or the reverse)", line=i + 1)
    for side, side_name in (("---", old_name), ("+++", new_name)):
        if side_name is not None and side_name != a:
            raise UnsafePatch(f"its {side} line names {side_name!r}, but diff --git names {a!r}",
                              line=lineno)
    if saw_minus and ((old_name is None) != new or (new_name is None) != deleted):
        raise UnsafePatch("its ---/+++ lines disagree with new/deleted file mode", line=lineno)
    hunks = 0
    while i < n and lines[i].startswith("@@"):
        if not saw_minus:
            raise UnsafePatch("has a hunk without ---/+++ lines", line=i + 1)
        i = _hunk(lines, i)
        hunks += 1
    if saw_minus and hunks == 0:
        raise UnsafePatch("has ---/+++ lines but no hunk", line=i + 1)
    return FileDiff(a, new, deleted, hunks), i


def _hunk(lines: list[str], i: int) -> int:
    m = _HUNK.match(lines[i])
    if not m:
        raise UnsafePatch(f"has a malformed hunk header (line {i + 1})", line=i + 1)
    old = int(m.group(2)) if m.group(2) is not None else 1
    new = int(m.group(4)) if m.group(4) is not None else 1
    start = i + 1
    i += 1
    n = len(lines)
    while old > 0 or new > 0:
        if i >= n or (i == n - 1 and lines[i] == ""):
            raise UnsafePatch(f"the hunk at line {start - 1} ends early", line=start - 1)
        line = lines[i]
        c = line[:1]
        if c == " " or line == "":  # git reads an empty line as an empty context line
            old -= 1
            new -= 1
        elif c == "-":
            old -= 1
        elif c == "+":
            new -= 1
        elif c == "\\":
            pass
        else:
            raise UnsafePatch(f"the hunk at line {start - 1} has a line that is not part of a "
                              f"hunk (line {i + 1}: {line[:60]!r})", line=i + 1)
        if old < 0 or new < 0:
            raise UnsafePatch(f"the hunk at line {start - 1} is longer than its header says",
                              line=i + 1)
        i += 1
    if i < n and lines[i].startswith("\\"):
        i += 1
    return i
