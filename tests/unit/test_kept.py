"""`list` keeps its rows with everything validating the matrix read (util/validated.py): the same
bytes, code and file-system facts print the kept rows without validating; any change validates
the matrix again (and its error is the error); the kept file is untrusted input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from patchbench import config
from patchbench.cli import commands
from patchbench.errors import ConfigError
from patchbench.util import validated
from patchbench.util.workspace import Workspace
from tests.support import ONE_TARGET

MATRIX = ONE_TARGET + """\
comparisons:
  c:
    description: a   test
    target: t
    candidates: {fix: [fix]}
    overlays: [extra]
    rootfs: rootfs
    scenarios:
      - name: start
        command: ["{bin}/t"]
"""


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "patches" / "fix").mkdir(parents=True)
    (tmp_path / "patches" / "fix" / "series").write_text("0001-x.patch\n")
    (tmp_path / "overlays" / "extra").mkdir(parents=True)
    (tmp_path / "rootfs").mkdir()
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    return commands.workspace(project=str(tmp_path), builds=str(tmp_path / "builds"))


class Loads:
    """Counts the validations (config.load) behind ``commands.list_rows``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        real = config.load

        def load(*a: object, **kw: object) -> config.Project:
            self.n += 1
            return real(*a, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(config, "load", load)


def test_the_kept_rows_are_the_validated_ones_and_need_no_validation(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    loads = Loads(monkeypatch)
    first = commands.list_rows(ws)
    assert loads.n == 1
    assert first == ([["t", "https://example.com/t.git", "v1", "0123456789ab", "go 1.22", "-"]],
                     [["c", "t", "fix", "start", "a test"]])
    kept = json.loads(ws.layout.listing_cache.read_text())
    root = str(ws.root)
    assert kept["facts"] == [["file", f"{root}/patches/fix/series"],
                             ["dir", f"{root}/overlays/extra"], ["inside", root, "rootfs"]]
    assert commands.list_rows(ws) == first
    assert loads.n == 1  # printed from what was kept


def test_a_changed_matrix_is_validated_again_and_its_error_is_the_error(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    commands.list_rows(ws)
    ws.matrix.write_text(MATRIX.replace("description: a   test", "descripton: a test"))
    with pytest.raises(ConfigError, match="descripton"):
        commands.list_rows(ws)
    ws.matrix.write_text(MATRIX.replace("a   test", "another"))
    loads = Loads(monkeypatch)
    assert commands.list_rows(ws)[1] == [["c", "t", "fix", "start", "another"]]
    assert loads.n == 1


@pytest.mark.parametrize("change", ["series", "overlay", "rootfs"])
def test_a_fact_that_no_longer_holds_validates_again(ws: Workspace, change: str) -> None:
    commands.list_rows(ws)
    if change == "series":
        (ws.root / "patches" / "fix" / "series").unlink()
        message = "patch series 'fix' has no file"
    elif change == "overlay":
        (ws.root / "overlays" / "extra").rmdir()
        message = "no directory overlays/extra"
    else:
        (ws.root / "rootfs").rmdir()
        (ws.root / "rootfs").symlink_to("/")  # now leaves the repository
        message = "leaves the repository"
    with pytest.raises(ConfigError, match=message):
        commands.list_rows(ws)


@pytest.mark.parametrize("damage", ["link", "not json", "wrong shape", "too large", "a dir",
                                    "unknown fact", "world-writable", "another owner"])
def test_a_damaged_kept_file_is_ignored_never_followed(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, damage: str) -> None:
    first = commands.list_rows(ws)
    store = ws.layout.listing_cache
    kept = json.loads(store.read_text())
    if damage == "link":  # a link to a file that would say something else
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(json.dumps({**kept, "targets": [["x"] * 6]}))
        store.unlink()
        store.symlink_to(elsewhere)
    elif damage == "not json":
        store.write_text("{")
    elif damage == "wrong shape":
        store.write_text(json.dumps({**kept, "targets": [["x", 1, "a", "b", "c", "d"]]}))
    elif damage == "too large":
        store.write_text(json.dumps({**kept, "pad": "x" * validated.MAX_CACHE_BYTES}))
    elif damage == "a dir":
        store.unlink()
        store.mkdir()
    elif damage == "unknown fact":
        store.write_text(json.dumps({**kept, "targets": [["x"] * 6],
                                     "facts": [["exec", "/bin/true"]]}))
    else:  # sound, but as root not to be trusted: anyone could have written these rows
        if os.geteuid() != 0:
            pytest.skip("the ownership rule applies as root")
        store.write_text(json.dumps({**kept, "targets": [["x"] * 6]}))
        if damage == "world-writable":
            store.chmod(0o666)
        else:
            os.chown(store, 4242, 4242)
    loads = Loads(monkeypatch)
    assert commands.list_rows(ws) == first
    assert loads.n == 1  # validated, not read from the damaged file


def test_an_unwritable_kept_file_is_not_an_error(ws: Workspace,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path, data: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(validated.files, "write_json_atomic", refuse)
    assert commands.list_rows(ws)[1] == [["c", "t", "fix", "start", "a test"]]
    assert not ws.layout.listing_cache.exists()


def test_the_key_follows_the_matrix_bytes_and_path(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    assert validated.key(a, b"x") == validated.key(a, b"x")
    assert validated.key(a, b"x") != validated.key(a, b"y")
    assert validated.key(a, b"x") != validated.key(b, b"x")
