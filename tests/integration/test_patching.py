"""Patch series: format, DEP-3 header, series file mistakes, and paths leaving the tree, all
refused while reading the files (before any worktree exists)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from patchbench.errors import PatchError
from patchbench.source import patching
from tests.support import Upstream, patch_file, write_series


def test_a_series_loads(tmp_path: Path, upstream_template: Upstream) -> None:
    write_series(tmp_path, "two", [("0001-greet.patch", upstream_template.patches["greet"]),
                                   ("0002-farewell.patch", upstream_template.patches["farewell"])],
                 series_text="# comment\n\n0001-greet.patch  # the greeting\n0002-farewell.patch\n")
    series = patching.load_series(tmp_path, "two")
    assert series.name == "two"
    assert [p.path.name for p in series.patches] == ["0001-greet.patch", "0002-farewell.patch"]
    assert set(series.patches[0].files) == {"main.go"}
    assert series.patches[0].subject == "[PATCH] hello: a patched greeting"
    assert re.fullmatch(r"[0-9a-f]{64}", series.patches[0].sha256)
    assert series.digest == patching.load_series(tmp_path, "two").digest


def test_the_series_digest_follows_patch_content(tmp_path: Path, upstream_template: Upstream
                                                 ) -> None:
    d = write_series(tmp_path, "greet", [("0001-greet.patch", upstream_template.patches["greet"])])
    before = patching.load_series(tmp_path, "greet").digest
    text = (d / "0001-greet.patch").read_text()
    (d / "0001-greet.patch").write_text(text.replace("hello, patched", "hello, PATCHED"))
    assert patching.load_series(tmp_path, "greet").digest != before


def load_error(root: Path, name: str) -> PatchError:
    with pytest.raises(PatchError) as info:
        patching.load_series(root, name)
    return info.value


def test_a_listed_file_that_does_not_exist(tmp_path: Path, upstream_template: Upstream) -> None:
    write_series(tmp_path, "s", [("0001-greet.patch", upstream_template.patches["greet"])],
                 series_text="0001-greet.patch\n0002-missing.patch\n")
    err = load_error(tmp_path, "s")
    assert err.message == "patches/s/series:2: 0002-missing.patch does not exist in patches/s/"


def test_a_patch_listed_twice(tmp_path: Path, upstream_template: Upstream) -> None:
    write_series(tmp_path, "s", [("0001-greet.patch", upstream_template.patches["greet"])],
                 series_text="0001-greet.patch\n# again\n0001-greet.patch\n")
    err = load_error(tmp_path, "s")
    assert err.message == "patches/s/series:3: 0001-greet.patch is listed twice"


@pytest.mark.parametrize("text", ["", "\n\n", "# nothing here yet\n   # still nothing\n"])
def test_an_empty_series(tmp_path: Path, text: str) -> None:
    write_series(tmp_path, "s", [], series_text=text)
    assert load_error(tmp_path, "s").message == "patches/s/series lists no patches"


def test_no_series_file(tmp_path: Path) -> None:
    (tmp_path / "patches" / "s").mkdir(parents=True)
    assert "no patch series 's'" in load_error(tmp_path, "s").message


@pytest.mark.parametrize("line", ["../greet/0001-greet.patch", "a.patch b.patch", "..",
                                  "sub/0001.patch"])
def test_a_series_line_that_is_not_one_file_name(tmp_path: Path, line: str) -> None:
    write_series(tmp_path, "s", [], series_text=f"{line}\n")
    err = load_error(tmp_path, "s")
    assert err.message.startswith("patches/s/series:1: expected one patch file name per line")


def plain_diff(format_patch: str) -> str:
    """The diff part only, as ``git diff`` would print it."""
    return "diff --git " + format_patch.split("\ndiff --git ", 1)[1]


@pytest.mark.parametrize("make", [
    plain_diff,
    lambda fp: "just some notes about a fix\n",
    lambda fp: fp.replace("Subject: ", "Topic: ", 1),
    lambda fp: "\n" + fp,
])
def test_a_file_not_in_format_patch_form(tmp_path: Path, upstream_template: Upstream,
                                         make: object) -> None:
    text = make(upstream_template.patches["greet"])  # type: ignore[operator]
    write_series(tmp_path, "s", [("0001-greet.patch", text)])
    err = load_error(tmp_path, "s")
    assert err.message == "series 's': 0001-greet.patch is not in git format-patch form"
    assert err.hint and "git format-patch" in err.hint


def test_a_binary_file_is_refused(tmp_path: Path) -> None:
    d = write_series(tmp_path, "s", [("0001-greet.patch", "")])
    (d / "0001-greet.patch").write_bytes(b"From \xff\xfe\x00binary")
    err = load_error(tmp_path, "s")
    assert "cannot read 0001-greet.patch" in err.message


def test_missing_dep3_forwarded(tmp_path: Path, upstream_template: Upstream) -> None:
    text = upstream_template.patches["greet"].replace("Forwarded: not-needed\n", "")
    assert "Forwarded" not in text
    write_series(tmp_path, "s", [("0001-greet.patch", text)])
    err = load_error(tmp_path, "s")
    assert err.message == "series 's': 0001-greet.patch lacks the DEP-3 field Forwarded"


def test_dep3_fields_must_be_in_the_header_not_the_diff(tmp_path: Path,
                                                        upstream_template: Upstream) -> None:
    # a "Forwarded: " line that only appears inside the diff does not count
    text = upstream_template.patches["greet"].replace("Forwarded: not-needed\n", "")
    text += "Forwarded: yes\n"
    write_series(tmp_path, "s", [("0001-greet.patch", text)])
    assert "lacks the DEP-3 field Forwarded" in load_error(tmp_path, "s").message


def _paths(old: str, new: str):  # type: ignore[no-untyped-def]
    """Rewrite every path of the greet patch from main.go to ``new`` (or only in lines that
    start with ``old``)."""

    def make(fp: str) -> str:
        out = []
        for line in fp.splitlines(keepends=True):
            if line.startswith(old):
                tab = "\t" if " " in new else ""
                line = (line.replace("a/main.go", f"a/{new}").replace("b/main.go", f"b/{new}")
                        .rstrip("\n") + ("" if line.startswith("diff") else tab) + "\n")
            out.append(line)
        return "".join(out)

    return make


ESCAPES = {
    "dotdot everywhere": _paths(("diff --git", "---", "+++"), "../evil.go"),
    "dotdot deep": _paths(("diff --git", "---", "+++"), "sub/../../evil.go"),
    "dotdot in +++ only": _paths(("+++",), "../evil.go"),
    "dotdot in --- only": _paths(("---",), "../evil.go"),
    "dotdot in header only": _paths(("diff --git",), "../evil.go"),
    "absolute": lambda fp: (fp.replace("diff --git a/main.go b/main.go",
                                       "diff --git a//tmp/evil.go b//tmp/evil.go")
                            .replace("--- a/main.go", "--- /tmp/evil.go")
                            .replace("+++ b/main.go", "+++ /tmp/evil.go")),
    "into .git": _paths(("diff --git", "---", "+++"), ".git/hooks/post-checkout"),
    "backslash": _paths(("diff --git", "---", "+++"), "..\\evil.go"),
    "with a space": _paths(("diff --git", "---", "+++"), "x y/../../evil.go"),
    "rename to outside": lambda fp: fp.replace(
        "index ", "similarity index 90%\nrename from main.go\nrename to ../evil.go\nindex ", 1),
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_a_patch_escaping_the_tree_is_refused(tmp_path: Path, upstream_template: Upstream,
                                              name: str) -> None:
    text = ESCAPES[name](upstream_template.patches["greet"])
    assert text != upstream_template.patches["greet"]
    write_series(tmp_path, "evil", [(patch_file(1, "evil"), text)])
    err = load_error(tmp_path, "evil")
    assert err.message.startswith("series 'evil': 0001-evil.patch writes ")
    assert "outside the tree; refused before anything was written" in err.message


def test_a_patch_creating_a_symlink_is_refused(tmp_path: Path, upstream_template: Upstream
                                               ) -> None:
    text = upstream_template.patches["greet"].replace(
        "index ", "new file mode 120000\nindex ", 1)
    write_series(tmp_path, "s", [("0001-link.patch", text)])
    assert "creates a symbolic link" in load_error(tmp_path, "s").message


def test_unsafe_paths() -> None:
    for bad in ("../x", "a/../../x", "/etc/passwd", ".git/config", ".git", "a\\b"):
        assert patching._unsafe(bad), bad
    for good in ("main.go", "a/b/c.go", "x..y/z", ".github/workflows/ci.yml", "a/.git-keep"):
        assert not patching._unsafe(good), good


def test_overlays(tmp_path: Path) -> None:
    base = tmp_path / "overlays" / "ov"
    (base / "sub").mkdir(parents=True)
    (base / "sub" / "b.go").write_text("b")
    (base / "a.go").write_text("a")
    ov = patching.load_overlay(tmp_path, "ov")
    assert ov.files == ("a.go", "sub/b.go")
    digest = ov.digest
    (base / "a.go").write_text("changed")
    assert patching.load_overlay(tmp_path, "ov").digest != digest
    (base / "link").symlink_to("/etc/passwd")
    with pytest.raises(PatchError, match="symlink; refused"):
        patching.load_overlay(tmp_path, "ov")
    (tmp_path / "overlays" / "empty").mkdir()
    with pytest.raises(PatchError, match="has no files"):
        patching.load_overlay(tmp_path, "empty")
    with pytest.raises(PatchError, match="no overlay 'nope'"):
        patching.load_overlay(tmp_path, "nope")
