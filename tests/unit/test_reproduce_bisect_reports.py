"""Every committed bisect and history report under reports/ loads with the current record models
and re-renders byte for byte (report.md and report.html are made from the results file alone)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchbench import results
from patchbench.bisect import record, render
from tests.support import REPO_ROOT, committed_reports


def stored(dump: object, raw: object) -> object:
    """``dump`` less the fields a newer record model added as None or empty (a verdict record of
    schema 5 has fields, such as the effect in seconds, that reports judged by the older rule
    lack; samples of results version 6 have ``metrics``)."""
    if isinstance(dump, dict) and isinstance(raw, dict):
        return {k: stored(v, raw.get(k)) for k, v in dump.items()
                if k in raw or v not in (None, {}, [])}
    if isinstance(dump, list) and isinstance(raw, list):
        return [stored(d, r) for d, r in zip(dump, raw, strict=False)] + dump[len(raw):]
    return dump


def upgraded(raw: object, key: str = "") -> object:
    """``raw`` with its samples as results version 6 reads them (per-run user/system arrays as
    metrics: patchbench.results.legacy_cpu)."""
    if isinstance(raw, dict):
        out = {k: upgraded(v, k) for k, v in raw.items()}
        return results.legacy_cpu(out) if key == "samples" else out
    if isinstance(raw, list):
        return [upgraded(v) for v in raw]
    return raw


BISECTS = committed_reports("bisect-*/*/bisect.json")
HISTORIES = committed_reports("history-*/*/history.json")


def test_there_is_a_committed_bisect_report() -> None:
    assert BISECTS


@pytest.mark.parametrize("path", BISECTS, ids=[str(p.parent.relative_to(REPO_ROOT))
                                               for p in BISECTS])
def test_a_committed_bisect_report_rerenders(path: Path) -> None:
    rec = record.parse_bisect(json.loads(path.read_text()))
    assert (path.parent / "report.md").read_text() == render.markdown(rec)
    assert (path.parent / "report.html").read_text() == render.html(rec)
    raw = upgraded(json.loads(path.read_text()))
    assert stored(rec.model_dump(mode="json"), raw) == raw


@pytest.mark.parametrize("path", HISTORIES, ids=[str(p.parent.relative_to(REPO_ROOT))
                                                 for p in HISTORIES])
def test_a_committed_history_report_rerenders(path: Path) -> None:
    rec = record.parse_history(json.loads(path.read_text()))
    assert (path.parent / "report.md").read_text() == render.markdown(rec)
    assert (path.parent / "report.html").read_text() == render.html(rec)
    raw = upgraded(json.loads(path.read_text()))
    assert stored(rec.model_dump(mode="json"), raw) == raw
