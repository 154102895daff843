"""Upstream commits named in a series by reference: the line syntax, and how a series file with
such lines loads (no git here; fetching, hashing and building are in
tests/integration/test_series_ref.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchbench.errors import PatchError
from patchbench.source import patching, series_ref

SHA = "e64390545e1b2bd9f02c73a8cb07af4d5c5dfcaa"
PID = "072b1d1fe62e4bc26fe4648f2bcc966d109a31a5"


def test_the_line_syntax() -> None:
    ref = series_ref.parse_line(f"upstream {SHA} patch-id:{PID}", "s:1")
    assert (ref.commit, ref.hash, ref.kind) == (SHA, f"patch-id:{PID}", "patch-id")
    assert ref.origin == f"upstream, commit:{SHA}"
    assert ref.file_name == f"upstream-{SHA}.patch"
    assert series_ref.parse_line(f"upstream {SHA.upper()} sha256:{'ab' * 32}", "s:1").commit == SHA
    assert series_ref.is_ref(f"upstream {SHA} patch-id:{PID}")
    assert not series_ref.is_ref("0001-upstream-fix.patch") and not series_ref.is_ref("")
    for bad, says in [
        (f"upstream {SHA[:12]} patch-id:{PID}", "not a full 40-hex commit SHA"),
        (f"upstream {SHA} patch-id:{PID[:20]}", "is not patch-id:<40 hex> or sha256:<64 hex>"),
        (f"upstream {SHA} md5:{PID}", "is not patch-id"),
        (f"upstream {SHA}", "expected 'upstream <40-hex commit> patch-id:<40 hex>"),
        (f"upstream {SHA} patch-id:{PID} extra", "expected"),
    ]:
        with pytest.raises(PatchError, match=says) as exc:
            series_ref.parse_line(bad, "patches/x/series:3")
        assert exc.value.message.startswith("patches/x/series:3: ")


def write(root: Path, name: str, text: str) -> Path:
    d = root / "patches" / name
    d.mkdir(parents=True)
    (d / "series").write_text(text)
    return d / "series"


def test_a_series_with_an_upstream_line_loads_without_the_source(tmp_path: Path) -> None:
    write(tmp_path, "up", f"# comment\nupstream {SHA} patch-id:{PID}  # a subject, # and more\n")
    s = patching.load_series(tmp_path, "up")
    (p,) = s.patches
    assert p.upstream is not None and p.upstream.commit == SHA
    assert p.upstream.where == "patches/up/series:2"
    assert p.path.name == f"upstream-{SHA}.patch" and p.sha256 == p.upstream.pin_digest
    assert series_ref.refs_in(tmp_path / "patches" / "up" / "series") == [p.upstream]
    assert series_ref.commits_for_series(tmp_path, ["up", "up", "absent"]) == [SHA]
    # the build cache key (series digest) follows the pin
    other = tmp_path / "other"
    write(other, "up", f"upstream {SHA} patch-id:{'0' * 40}\n")
    assert patching.load_series(other, "up").digest != s.digest
    same = tmp_path / "same"
    write(same, "up", f"upstream {SHA} patch-id:{PID}  # another comment\n")
    assert patching.load_series(same, "up").digest == s.digest


def test_a_bad_upstream_line_names_its_place(tmp_path: Path) -> None:
    write(tmp_path, "up", f"upstream {SHA[:7]} patch-id:{PID}\n")
    with pytest.raises(PatchError, match=r"^patches/up/series:1: .* not a full 40-hex commit SHA"):
        patching.load_series(tmp_path, "up")


def test_a_patch_file_without_dep3_headers_is_told_so(tmp_path: Path) -> None:
    d = tmp_path / "patches" / "plain"
    d.mkdir(parents=True)
    (d / "0001-x.patch").write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: A <a@example.invalid>\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n"
        "Subject: [PATCH] x\n\nSigned-off-by: A <a@example.invalid>\n---\n"
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n")
    (d / "series").write_text("0001-x.patch\n")
    with pytest.raises(PatchError) as exc:
        patching.load_series(tmp_path, "plain")
    assert exc.value.message == ("series 'plain': 0001-x.patch lacks the DEP-3 fields "
                                 "Description, Author or Origin, Forwarded")
    assert "did not apply" not in exc.value.render()
