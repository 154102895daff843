"""Untrusted saved runs and artifacts (docs/security.md), internal errors where the README promises
a code: hostile saved runs and artifacts give ``diff`` and ``merge`` exit 18 naming the file and
the field (never exit 3), a full disk while the built binary is copied is exit 14 naming the path,
a full disk under ``merge`` is exit 18, and a ``series`` file that is not UTF-8 is exit 12 naming
it."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from patchbench.build import Variant
from patchbench.errors import BuildError, PatchError
from patchbench.source import patching
from tests import support
from tests.faults.test_results_safe import full_disk
from tests.faults.trust_support import demo, diff, merge, save
from tests.support import TARGET, Project

Edit = Callable[[dict[str, Any]], None]


def _first_artifact(d: dict[str, Any]) -> dict[str, Any]:
    return next(iter(d["builds"]["baseline"]["artifacts"].values()))  # type: ignore[no-any-return]


HOSTILE: dict[str, tuple[Edit, str]] = {
    "missing sha256": (lambda d: _first_artifact(d).pop("sha256"), "sha256"),
    "sha256 not hex": (lambda d: _first_artifact(d).update(sha256="../x"), "sha256"),
    "comparison names a missing cell": (
        lambda d: d["scenarios"][0]["comparisons"][0].update(candidate="nope"),
        "comparisons.0.candidate"),
    "load_avg as strings": (lambda d: d["machine"].update(load_avg=["1.0", "x"]), "load_avg"),
    "memory_bytes as a string": (lambda d: d["machine"].update(memory_bytes="8G"),
                                 "memory_bytes"),
    "a time as a string": (lambda d: d["scenarios"][0]["cells"][0]["samples"].update(
        times=["0.1"]), "times"),
    "a negative time": (lambda d: d["scenarios"][0]["cells"][0]["samples"].update(
        times=[-1.0]), "times"),
    "alpha out of range": (lambda d: d["settings"].update(alpha=7), "alpha"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_runs_are_exit_18_naming_the_field(tmp_path: Path, case: str) -> None:
    edit, field = HOSTILE[case]
    bad = demo()
    edit(bad)
    art = tmp_path / "art"
    save(art / "good", demo())
    save(art / "bad", bad)
    for code, _, err in (merge([str(art)], tmp_path / "reports"),
                         diff(art / "good", art / "bad", tmp_path / "reports")):
        assert code == 18, err
        assert str(art / "bad" / "results.json") in err and field in err
        assert "internal error" not in err
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("text", ["1e999", "Infinity", "-Infinity", "NaN"])
def test_an_infinite_speedup_is_refused(tmp_path: Path, text: str) -> None:
    import json

    data = demo()
    data["scenarios"][0]["comparisons"][0]["speedup"] = "@SPEEDUP@"
    raw = json.dumps(data).replace('"@SPEEDUP@"', text)
    art = tmp_path / "art"
    save(art / "a", demo())
    save(art / "b", raw)
    code, _, err = merge([str(art)], tmp_path / "reports")
    assert code == 18 and str(art / "b" / "results.json") in err, err
    assert "finite" in err


def test_diff_of_a_cell_without_timed_runs_is_not_an_internal_error(tmp_path: Path) -> None:
    hung = demo()
    cell = hung["scenarios"][0]["cells"][0]
    cell["samples"].update(times=[], user=[], system=[], exit_codes=[], rounds=[])
    a, b = save(tmp_path / "a", demo()), save(tmp_path / "b", hung)
    code, out, err = diff(a, b, tmp_path / "reports")
    assert code == 0, err
    assert f"{cell['label']}: no timed runs in B; not compared" in out


def test_a_series_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "patches" / "s").mkdir(parents=True)
    (tmp_path / "patches" / "s" / "series").write_bytes(b"0001-caf\xe9.patch\n")
    with pytest.raises(PatchError) as info:
        patching.load_series(tmp_path, "s")
    assert info.value.exit_code == 12
    assert "patches/s/series is not UTF-8" in info.value.message


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_under_merge_is_exit_18_saying_so(tmp_path: Path) -> None:
    art = tmp_path / "art"
    save(art / "a", demo())
    with full_disk(tmp_path / "full") as full:
        code, _, err = merge([str(art)], tmp_path / "reports", out=str(full / "out"))
        assert code == 18, err
        assert "the disk is full" in err and str(full / "out") in err


@pytest.mark.integration
def test_a_full_disk_while_the_binary_is_copied_is_exit_14(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.copyfileobj

    def copyfileobj(src: Any, dst: Any, *args: Any) -> Any:
        if "out" in Path(str(getattr(dst, "name", ""))).parts:  # the binary into the output
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst.name))
        return real(src, dst, *args)

    monkeypatch.setattr(shutil, "copyfileobj", copyfileobj)
    with pytest.raises(BuildError) as info:
        support.build(project.load(), project.options(), TARGET,
                                [Variant("baseline", ())], [])
    err = info.value
    assert err.exit_code == 14
    assert "the disk is full" in err.message and "bin/hello" in err.message
    assert not [p for p in (project.builds / "artifacts").rglob("COMPLETE")]
