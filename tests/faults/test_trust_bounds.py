"""Untrusted saved runs and artifacts (docs/security.md), unbounded inputs: the documented limits
(docs/security.md) hold. A results file past the size limit (10 million samples) is refused at
once, before it is read; a cell past the sample limit, a scenario past the cell limit, a merge past
the run limit and a series past the patch limit are refused naming the limit."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest

from patchbench import results
from patchbench.errors import PatchError, ReportError
from patchbench.source import patching
from tests.faults.trust_support import demo, merge, save


def test_ten_million_samples_are_refused_quickly_without_reading_them(tmp_path: Path) -> None:
    data = demo()
    head, tail = json.dumps(data).split('"times": [', 1)
    path = tmp_path / "run" / "results.json"
    path.parent.mkdir()
    with open(path, "w") as f:  # a real document: 10 million samples in one cell
        f.write(head + '"times": [')
        f.write("0.1," * 10**7)  # then the cell's own samples
        f.write(tail)
    assert path.stat().st_size > results.MAX_FILE_BYTES
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(ReportError) as info:
        results.load(path)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert f"at most {results.MAX_FILE_BYTES}" in info.value.message
    assert str(path) in info.value.message
    assert seconds < 0.5 and peak < 1 << 20  # not read: under 1 MiB, not 0.9 GB


def test_a_document_nested_past_the_depth_limit_is_refused(tmp_path: Path) -> None:
    data = demo()
    deep: dict[str, object] = {}
    cur = deep
    for _ in range(900):  # parses, but pydantic's dump used to fail: exit 3 in merge
        cur["x"] = cur = {}
    data["builds"]["baseline"]["recipe"] = deep
    art = tmp_path / "art"
    save(art / "a", demo())
    save(art / "b", data)
    code, _, err = merge([str(art)], tmp_path / "reports")
    assert code == 18, err
    assert f"nested more than {results.MAX_DEPTH} levels deep" in err


def test_a_cell_past_the_sample_limit_is_refused(tmp_path: Path) -> None:
    data = demo()
    data["scenarios"][0]["cells"][0]["samples"]["times"] = [0.1] * (results.MAX_SAMPLES + 1)
    with pytest.raises(ReportError, match=r"cells\.0\.samples\.times: List should have at most"):
        results.load(save(tmp_path / "r", data))


def test_a_scenario_past_the_cell_limit_is_refused(tmp_path: Path) -> None:
    data = demo()
    cell = data["scenarios"][0]["cells"][0]
    cell["samples"] = {"times": [0.1]}
    data["scenarios"][0]["cells"] = [cell] * (results.MAX_CELLS + 1)
    with pytest.raises(ReportError, match=r"scenarios\.0\.command\.cells: List should have"):
        results.load(save(tmp_path / "r", data))


def test_a_merge_past_the_run_limit_is_refused_before_loading(tmp_path: Path) -> None:
    art = tmp_path / "art"
    for i in range(results.MAX_RUNS + 1):
        save(art / f"m{i}", "not even JSON")  # never read: the count is refused first
    code, _, err = merge([str(art)], tmp_path / "reports")
    assert code == 18, err
    assert f"a merge takes at most {results.MAX_RUNS}" in err


def test_a_series_past_the_patch_limit_is_refused_before_any_patch_is_read(
        tmp_path: Path) -> None:
    (tmp_path / "patches" / "s").mkdir(parents=True)
    lines = [f"{i:04d}-p.patch" for i in range(5000)]
    (tmp_path / "patches" / "s" / "series").write_text("\n".join(lines) + "\n")
    t0 = time.perf_counter()
    with pytest.raises(PatchError, match=f"lists 5000 patches; a series may list at most "
                                         f"{patching.MAX_PATCHES}"):
        patching.load_series(tmp_path, "s")
    assert time.perf_counter() - t0 < 0.5
