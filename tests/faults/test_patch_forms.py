"""Safety class 7 (docs/safety.md): patchbench's own patch check knows every git patch form and
refuses, before git runs, each one that could reach outside the tree. One test per form, the forms
that must keep passing, and property tests of the parser (Hypothesis)."""

from __future__ import annotations

import base64
import contextlib
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchbench.errors import PatchError
from patchbench.source import patchform, patching
from tests.support import write_series

MAIL = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Fixture Author <fixture@example.invalid>
Date: Thu, 2 Jan 2025 03:04:05 +0000
Subject: [PATCH] hello: a patched greeting

Description: hello: a patched greeting (fixture patch greet)
Author: Fixture Author <fixture@example.invalid>
Origin: vendor, patchbench tests
Forwarded: not-needed
---
 main.go | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

"""
DIFF = "".join(line + "\n" for line in [
    "diff --git a/main.go b/main.go",
    "index 59d8f88..331bb31 100644",
    "--- a/main.go",
    "+++ b/main.go",
    "@@ -7,7 +7,7 @@ import (",
    " )",
    " ",
    " func greeting() string {",
    '-\treturn "hello"',
    '+\treturn "hello, patched"',
    " }",
    " ",
    " // padding so that the two functions land in separate hunks",
])
GREET = MAIL + DIFF + "\n"
NEW_FILE = """\
diff --git a/{name} b/{name}
new file mode {mode}
index 0000000..8baef1b
--- /dev/null
+++ b/{name}
@@ -0,0 +1 @@
+{content}
"""
HUNK = "@@ -0,0 +1 @@\n+evil\n"


def load(tmp_path: Path, text: str) -> patching.Series:
    write_series(tmp_path, "s", [("0001-x.patch", text)])
    return patching.load_series(tmp_path, "s")


def refused(tmp_path: Path, text: str) -> PatchError:
    with pytest.raises(PatchError) as info:
        load(tmp_path, text)
    assert info.value.exit_code == 12
    return info.value


def new_file(name: str, mode: str = "100644", content: str = "evil") -> str:
    return NEW_FILE.format(name=name, mode=mode, content=content)


def test_the_fixture_patch_itself_passes(tmp_path: Path) -> None:
    assert load(tmp_path, GREET).patches[0].files == ("main.go",)


# --- forms that must keep passing ----------------------------------------------------------

ACCEPTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "a new regular file": (MAIL + DIFF + new_file("docs/new.md"), ("main.go", "docs/new.md")),
    "a new executable file": (MAIL + new_file("run.sh", "100755"), ("run.sh",)),
    "a deleted file": (MAIL + "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n"
                       "index 8baef1b..0000000\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n"
                       "-gone\n", ("old.txt",)),
    "a new empty file": (MAIL + "diff --git a/empty b/empty\nnew file mode 100644\n"
                         "index 0000000..e69de29\n", ("empty",)),
    "a name with a space": (MAIL + "diff --git a/x y/z.go b/x y/z.go\nindex 1111111..2222222 "
                            "100644\n--- a/x y/z.go\t\n+++ b/x y/z.go\t\n@@ -1 +1 @@\n-a\n+b\n",
                            ("x y/z.go",)),
    "a quoted non-ASCII name": (MAIL + 'diff --git "a/caf\\303\\251.go" "b/caf\\303\\251.go"\n'
                                'index 1111111..2222222 100644\n--- "a/caf\\303\\251.go"\n'
                                '+++ "b/caf\\303\\251.go"\n@@ -1 +1 @@\n-a\n+b\n',
                                ("café.go",)),
    "no newline at end of file": (MAIL + "diff --git a/n b/n\nindex 1111111..2222222 100644\n"
                                  "--- a/n\n+++ b/n\n@@ -1 +1 @@\n-a\n\\ No newline at end of "
                                  "file\n+b\n\\ No newline at end of file\n", ("n",)),
    "a signature": (GREET + "-- \n2.39.5\n\n", ("main.go",)),
    "a .github directory": (MAIL + new_file(".github/workflows/ci.yml"),
                            (".github/workflows/ci.yml",)),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_plain_text_edits_pass(tmp_path: Path, name: str) -> None:
    text, files = ACCEPTED[name]
    assert load(tmp_path, text).patches[0].files == files


# --- one test per refused form ---------------------------------------------------------------

def _replace(old: str, new: str) -> Callable[[str], str]:
    def make(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return make


INDEX = "index 59d8f88..331bb31 100644\n"
REFUSED: dict[str, tuple[str, str]] = {
    # symlinks, in every spelling git accepts
    "symlink: new file mode 120000": (MAIL + new_file("link", "120000", "/etc/passwd"),
                                      "symbolic link"),
    "symlink: new file mode 0120000": (MAIL + new_file("link", "0120000", "/etc/passwd"),
                                       "symbolic link"),
    "symlink: mode change to 120000": (_replace(INDEX, "old mode 100644\nnew mode 120000\n"
                                                + INDEX)(GREET), "symbolic link"),
    "symlink: old mode 120000": (_replace(INDEX, "old mode 120000\nnew mode 100644\n"
                                          + INDEX)(GREET), "symbolic link"),
    "symlink: index line mode": (_replace(INDEX, "index 59d8f88..331bb31 120000\n")(GREET),
                                 "symbolic link"),
    "symlink: deleted file mode 120000": (
        MAIL + "diff --git a/l b/l\ndeleted file mode 120000\nindex 8baef1b..0000000\n"
        "--- a/l\n+++ /dev/null\n@@ -1 +0,0 @@\n-/etc\n\\ No newline at end of file\n",
        "symbolic link"),
    "submodule: mode 160000": (MAIL + new_file("sub", "160000", "Subproject commit 0"),
                               "submodule"),
    "odd mode 100777": (MAIL + new_file("x", "100777"), "file mode"),
    # mode changes
    "mode change 100644 -> 100755": (_replace(INDEX, "old mode 100644\nnew mode 100755\n"
                                              + INDEX)(GREET), "changes a file mode"),
    "mode-only change": (MAIL + "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n",
                         "changes a file mode"),
    # renames and copies
    "rename from/to": (_replace(INDEX, "similarity index 90%\nrename from main.go\n"
                                "rename to other.go\n" + INDEX)(GREET), "rename"),
    "rename old/new": (_replace(INDEX, "rename old main.go\nrename new other.go\n"
                                + INDEX)(GREET), "renames a file"),
    "copy from/to": (_replace(INDEX, "similarity index 90%\ncopy from main.go\n"
                              "copy to other.go\n" + INDEX)(GREET), "cop"),
    "dissimilarity index": (_replace(INDEX, "dissimilarity index 90%\n" + INDEX)(GREET),
                            "rewrites"),
    "two names on diff --git": (_replace("diff --git a/main.go b/main.go",
                                         "diff --git a/main.go b/other.go")(GREET),
                                "two different files"),
    # binary patches
    "GIT binary patch": (MAIL + "diff --git a/b.bin b/b.bin\nnew file mode 100644\n"
                         "index 0000000..1111111\nGIT binary patch\nliteral 4\n"
                         "LcmZ?wbaZn9005Z)\n\nliteral 0\nHcmV?d00001\n\n", "binary patch"),
    "Binary files differ": (MAIL + "diff --git a/b.bin b/b.bin\nindex 1111111..2222222 100644\n"
                            "Binary files a/b.bin and b/b.bin differ\n", "binary patch"),
    # absolute paths and '..' in every header that names a file
    "absolute in diff --git": (_replace("diff --git a/main.go b/main.go",
                                        "diff --git a//etc/x b//etc/x")(GREET), "writes '/etc/x'"),
    "absolute in ---": (_replace("--- a/main.go", "--- /etc/x")(GREET), "writes '/etc/x'"),
    "absolute in +++": (_replace("+++ b/main.go", "+++ /etc/x")(GREET), "writes '/etc/x'"),
    "dotdot in diff --git": (_replace("diff --git a/main.go b/main.go",
                                      "diff --git a/../x b/../x")(GREET), "writes '../x'"),
    "dotdot in ---": (_replace("--- a/main.go", "--- a/../main.go")(GREET), "writes '../main.go'"),
    "dotdot in +++": (_replace("+++ b/main.go", "+++ b/../main.go")(GREET), "writes '../main.go'"),
    "dotdot in rename to": (_replace(INDEX, "similarity index 90%\nrename from main.go\n"
                                     "rename to ../x\n" + INDEX)(GREET), "writes '../x'"),
    "dotdot in rename from": (_replace(INDEX, "rename from ../x\nrename to main.go\n"
                                       + INDEX)(GREET), "writes '../x'"),
    "dotdot in copy to": (_replace(INDEX, "copy from main.go\ncopy to a/../../x\n"
                                   + INDEX)(GREET), "writes 'a/../../x'"),
    "dotdot quoted with octal escapes": (
        _replace("diff --git a/main.go b/main.go",
                 'diff --git "a/\\056\\056/x" "b/\\056\\056/x"')(GREET), "writes '../x'"),
    "dotdot inside a name with a space": (MAIL + new_file("x y/../../evil"), "writes"),
    "into .git": (MAIL + new_file(".git/hooks/post-checkout"), "writes '.git/hooks"),
    "into a nested .GIT": (MAIL + new_file("sub/.GIT/config"), "writes 'sub/.GIT/config'"),
    "backslash": (MAIL + new_file("..\\evil"), "writes"),
    "no a/ prefix": (_replace("--- a/main.go", "--- main.go")(GREET), "prefix"),
    # sections outside the diff --git blocks that git apply would also apply
    "plain ---/+++ section after a hunk": (GREET.rstrip("\n") + "\n--- a/other.go\n"
                                           "+++ b/other.go\n" + HUNK, "the last hunk"),
    "plain section after a hunk, outside": (GREET.rstrip("\n") + "\n--- a/../evil\n"
                                            "+++ b/../evil\n" + HUNK, "writes '../evil'"),
    "plain section after the signature": (GREET + "-- \n2.39.5\n--- a/x\n+++ b/x\n" + HUNK,
                                          "after the signature"),
    "plain section in the diffstat": (_replace(" 1 file changed", "--- a/x\n+++ b/x\n" + HUNK
                                               + " 1 file changed")(GREET), "diffstat"),
    "Index: line in the message": (_replace("Forwarded: not-needed\n",
                                            "Forwarded: not-needed\nIndex: x\n")(GREET),
                                   "commit message"),
    "text after the last hunk": (GREET + "rm -rf /\n", "the last hunk"),
    "a hunk longer than its header": (_replace(' // padding so that the two functions land in '
                                               'separate hunks\n', ' // padding\n+extra\n')(GREET),
                                      "hunk"),
    "a hunk cut short": (_replace("@@ -7,7 +7,7 @@", "@@ -7,9 +7,9 @@")(GREET), "ends early"),
    "base64 body": (GREET.replace("Subject:", "Content-Transfer-Encoding: base64\nSubject:", 1)
                    .split("\n\n", 1)[0] + "\n\n"
                    + base64.encodebytes(GREET.split("\n\n", 1)[1].encode()).decode()
                    + "\ndiff --git a/x b/x\n", "encoded"),
    "quoted-printable body": (GREET.replace("Subject:", "Content-Transfer-Encoding: "
                                            "quoted-printable\nSubject:", 1), "encoded"),
    "multipart mail": (GREET.replace("Subject:", "Content-Type: multipart/mixed; boundary=x\n"
                                     "Subject:", 1), "Content-Type"),
    "carriage returns": (GREET.replace("diff --git a/main.go b/main.go\n",
                                       "diff --git a/main.go b/main.go\r\n"), "carriage"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_unsafe_form_is_refused_before_git_runs(tmp_path: Path, name: str) -> None:
    text, expected = REFUSED[name]
    err = refused(tmp_path, text)
    assert expected in err.message, err.message
    assert err.message.startswith("series 's': 0001-x.patch ")
    assert "refused before" in err.message


# --- properties ----------------------------------------------------------------------------

SAFE_PART = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._- ", min_size=1,
                    max_size=8).filter(lambda p: p.strip() == p and p not in (".", "..")
                                       and p.lower() != ".git")
SAFE_PATH = st.lists(SAFE_PART, min_size=1, max_size=4).map("/".join)
LINE = st.text(alphabet="abc xyz(){}\"'/\\.-+@", max_size=20)


@st.composite
def hunks(draw: st.DrawFn) -> str:
    ops = draw(st.lists(st.tuples(st.sampled_from(" -+"), LINE), min_size=1, max_size=12))
    old = sum(1 for op, _ in ops if op in " -")
    new = sum(1 for op, _ in ops if op in " +")
    body = "".join(f"{op}{text}\n" for op, text in ops)
    return f"@@ -1,{old} +1,{new} @@\n{body}"


@st.composite
def safe_patches(draw: st.DrawFn) -> tuple[str, list[str]]:
    names = draw(st.lists(SAFE_PATH, min_size=1, max_size=4, unique=True))
    blocks = []
    for name in names:
        tab = "\t" if " " in name else ""
        kind = draw(st.sampled_from(["edit", "new", "exec"]))
        header = f"diff --git a/{name} b/{name}\n"
        if kind == "edit":
            header += f"index 1111111..2222222 100644\n--- a/{name}{tab}\n+++ b/{name}{tab}\n"
            blocks.append(header + "".join(draw(st.lists(hunks(), min_size=1, max_size=3))))
        else:
            mode = "100755" if kind == "exec" else "100644"
            lines = draw(st.lists(LINE, min_size=1, max_size=5))
            blocks.append(header + f"new file mode {mode}\nindex 0000000..1111111\n"
                          f"--- /dev/null\n+++ b/{name}{tab}\n@@ -0,0 +1,{len(lines)} @@\n"
                          + "".join(f"+{x}\n" for x in lines))
    trailer = draw(st.sampled_from(["", "\n", "-- \n2.39.5\n\n"]))
    return MAIL + "".join(blocks) + trailer, names


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(safe_patches())
def test_property_every_well_formed_text_patch_passes(patch: tuple[str, list[str]]) -> None:
    text, names = patch
    assert list(patchform.inspect(text).paths) == names


MUTATIONS: list[Callable[[str, str], str]] = [
    lambda t, p: t + f"--- a/{p}\n+++ b/{p}\n" + HUNK,
    lambda t, p: t.replace(f"diff --git a/{p} b/{p}\n", f"diff --git a/{p} b/{p}\nold mode "
                           "100644\nnew mode 120000\n", 1),
    lambda t, p: t.replace(f"diff --git a/{p} b/{p}\n", f"diff --git a/{p} b/{p}\nrename from "
                           f"{p}\nrename to {p}.x\n", 1),
    lambda t, p: t.replace(f"diff --git a/{p} b/{p}\n", f"diff --git a/../{p} b/../{p}\n", 1),
    lambda t, p: t.replace(f"+++ b/{p}", f"+++ /{p}", 1),
    lambda t, p: t.replace(f"diff --git a/{p} b/{p}\n", f"diff --git a/{p} b/{p}\nnew file "
                           "mode 0120000\n", 1),
    lambda t, p: t + "GIT binary patch\nliteral 0\n",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(safe_patches(), st.sampled_from(range(len(MUTATIONS))))
def test_property_an_unsafe_form_added_to_any_patch_is_refused(
        patch: tuple[str, list[str]], which: int) -> None:
    text, names = patch
    mutated = MUTATIONS[which](text, names[0])
    assert mutated != text
    with pytest.raises(patchform.UnsafePatch):
        patchform.inspect(mutated)


PATCHY = st.lists(st.sampled_from([
    "diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1 +1 @@", "@@ -1,2 +1 @@", "-a", "+b", " c",
    "", "new file mode 120000", "index 1..2 100644", "rename from x", '"a/\\056"', "-- ",
    "GIT binary patch", "\\ No newline", "--- /dev/null", "diff --git \"a/x", "@@ -99999999999",
]), max_size=30).map("\n".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=300), PATCHY.map(lambda body: MAIL + body)))
def test_property_any_text_is_a_patch_form_or_refused(text: str) -> None:
    try:
        form = patchform.inspect(text)
    except patchform.UnsafePatch:
        return
    for path in form.paths:
        assert not patchform.unsafe_path(path)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_property_any_file_gives_a_series_or_a_patch_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = write_series(Path(tmp), "s", [("0001-x.patch", "")])
        (d / "0001-x.patch").write_bytes(b"From 0 Mon\nSubject: x\n\n" + data
                                         + b"\ndiff --git a/x b/x\n")
        with contextlib.suppress(PatchError):
            patching.load_series(Path(tmp), "s")


@given(st.lists(st.sampled_from(["a", "..", ".", "", ".git", "b c", "/", "\\"]), min_size=1,
                max_size=5))
def test_property_unsafe_path_flags_every_escape(parts: list[str]) -> None:
    path = "/".join(parts)
    escapes = (path.startswith("/") or "\\" in path
               or any(p in ("", ".", "..", ".git") for p in path.split("/")))
    assert patchform.unsafe_path(path) == escapes
