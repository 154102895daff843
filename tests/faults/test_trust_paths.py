"""Untrusted saved runs and artifacts (docs/security.md), names used as paths: a comparison or
variant name from a saved run never leads a write out of the output folder. ``merge``'s default
folder is ``reports/<comparison>/``; ``report --from`` writes ``manifest-<variant>.json``. Both
names are refused (exit 18) unless they are plain names, the rule ``compare`` uses (``NAME_RE``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchbench import results
from patchbench.errors import ReportError
from patchbench.runs import store as runstore
from tests.faults.trust_support import demo, files_under, merge, save


@pytest.mark.parametrize("comparison", ["../../x", "ABSOLUTE", "a/b", "..", "", "Demo"])
def test_merge_refuses_a_comparison_that_is_not_a_plain_name(tmp_path: Path,
                                                              comparison: str) -> None:
    absolute = tmp_path / "absolute"
    data = demo()
    data["comparison"] = str(absolute) if comparison == "ABSOLUTE" else comparison
    art = tmp_path / "artifacts"
    save(art / "m1", data)
    save(art / "m2", data)
    reports = tmp_path / "work" / "a" / "reports"
    before = files_under(tmp_path)
    code, _, err = merge([str(art)], reports)
    assert code == 18, err
    assert "comparison" in err and "results.json" in err
    assert files_under(tmp_path) == before  # nothing written, inside or out
    assert not absolute.exists()


@pytest.mark.parametrize("variant", ["x/../../escaped", "../escaped", "/abs", "a b"])
def test_report_from_refuses_a_variant_that_is_not_a_plain_name(tmp_path: Path,
                                                                variant: str) -> None:
    data = demo()
    data["builds"][variant] = data["builds"].pop("baseline-again")
    run_dir = save(tmp_path / "builds" / "runs" / "demo-1", data)
    reports = tmp_path / "reports"
    with pytest.raises(ReportError) as info:
        runstore.publish(run_dir / "results.json", reports, stamp="20260101T000000Z")
    assert info.value.exit_code == 18
    assert "builds" in info.value.message and str(run_dir / "results.json") in info.value.message
    assert not reports.exists()
    assert not list(tmp_path.rglob("*escaped*"))


@pytest.mark.parametrize("field", ["scenario", "cell variant"])
def test_other_names_that_become_paths_are_refused(tmp_path: Path, field: str) -> None:
    data = demo()
    if field == "scenario":
        data["scenarios"][0]["name"] = "../x"
    else:
        data["scenarios"][0]["cells"][0]["variant"] = "../x"
    with pytest.raises(ReportError, match=r"scenarios\.0\."):
        results.load(save(tmp_path / "r", data))


def test_attached_files_never_come_from_out_of_the_run(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root only")
    run_dir = save(tmp_path / "builds" / "runs" / "demo-1", demo())
    (run_dir / "chart.svg").symlink_to(secret)
    (run_dir / "attached.json").write_text('{"chart.svg": "chart.svg"}')
    with pytest.raises(ReportError, match="link"):
        runstore.publish(run_dir / "results.json", tmp_path / "reports", stamp="20260101T000000Z")
    assert "root only" not in "".join(p.read_text() for p in (tmp_path / "reports").rglob("*")
                                      if p.is_file())
