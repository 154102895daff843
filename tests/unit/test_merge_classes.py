"""``merge`` of real saved runs of demo-hosts made as eight hosts (reports/demo-hosts, made on
2026-12-05 with `invoke compare demo-hosts --until-ci 1 --max-rounds 60`: a, b, c at the
machine's own load; d likewise; e and f beside 4 and 10 CPU hogs; g pinned to one CPU; h with a
timer slack of 2 ms, which lengthens every sleep and so the planted 5 ms one): per class of
machines one verdict across its hosts, and a host-dependent class."""

from __future__ import annotations

import json

import pytest

from patchbench.analysis import hosts
from patchbench.cli.runs import parse_classes
from patchbench.errors import ReportError
from patchbench.runs import merge, store
from tests.support import REPO_ROOT, committed_reports

RUNS = [p.parent for p in committed_reports("demo-hosts/*/results.json")]
LABELS = "abcdefgh"
CLASSES = {"quiet": ["a", "b", "c"], "loaded": ["e", "f"], "mixed": ["d", "g", "h"]}


def merged(classes: dict[str, list[str]] | None = CLASSES) -> merge.Merged:
    assert len(RUNS) == len(LABELS)
    return merge.merge_runs([(label, store.load_run(p)) for label, p in zip(LABELS, RUNS,
                                                                             strict=True)],
                            classes=classes)


def test_each_class_gets_one_verdict_across_its_hosts_and_one_is_host_dependent() -> None:
    m = merged()
    got = {cr.machine_class.name: cr.verdict for cr in m.class_rows}
    assert set(got) == set(CLASSES)
    quiet, loaded, mixed = got["quiet"], got["loaded"], got["mixed"]
    # three hosts at the same load agree: slower (a planted 5 ms on about 12 ms), the interval
    # over hosts excluding min_effect
    assert quiet.verdict == "slower" and [h.host for h in quiet.hosts] == CLASSES["quiet"]
    assert quiet.heterogeneity_p is not None and quiet.heterogeneity_p > 0.05
    assert quiet.ci_high is not None and quiet.ci_high < 1 / 1.02
    # two hosts: their spread alone makes the interval (1 degree of freedom): wide, by design
    assert loaded.verdict == "inconclusive" and loaded.ci_low is not None
    assert loaded.ci_high is not None and loaded.ci_high > 1
    # the timer-slack host's ratio differs beyond the hosts' noise and by more than the margin
    assert mixed.verdict == hosts.HOST_DEPENDENT
    assert mixed.heterogeneity_p is not None and mixed.heterogeneity_p < 0.01
    assert mixed.between_sd is not None and mixed.between_sd > 0.02
    h = {x.host: x.speedup for x in mixed.hosts}
    assert h["h"] > 0.75 > h["d"]
    # every host's own verdict stays what its run says: slower on each
    assert all(c is not None and c.verdict == "slower" for c in m.rows[0].per_machine.values())


def test_classes_are_never_pooled() -> None:
    m = merged()
    by = {cr.machine_class.name: cr.verdict for cr in m.class_rows}
    for name, members in CLASSES.items():
        assert [x.host for x in by[name].hosts] == members
    alone = merged({"quiet": CLASSES["quiet"], "rest": ["d", "e", "f", "g", "h"]})
    again = {cr.machine_class.name: cr.verdict for cr in alone.class_rows}
    assert again["quiet"] == by["quiet"]  # what other classes hold changes nothing


def test_without_classes_the_machines_group_by_fingerprint() -> None:
    m = merged(None)
    (only,) = m.classes  # eight runs of one machine: one fingerprint
    assert only.by == "fingerprint" and only.hosts == tuple(LABELS)
    assert "microcode" in only.what or "CPUs" in only.what
    (cr,) = m.class_rows
    assert cr.verdict.verdict == hosts.HOST_DEPENDENT  # h's timer slack


def test_the_report_and_merged_json_show_the_classes() -> None:
    m = merged()
    md = merge.render_markdown(m)
    assert "## Verdicts across hosts" in md and "| mixed " in md and "host-dependent" in md
    assert "the host is the unit" in md
    page = merge.render_html(m)
    assert 'class="classes"' in page
    data = merge.to_json(m)
    assert [c["name"] for c in data["classes"]] == list(CLASSES)
    assert {v["class"]: v["verdict"] for v in data["class_verdicts"]} == {
        "quiet": "slower", "loaded": "inconclusive", "mixed": "host-dependent"}
    json.dumps(data)
    committed = REPO_ROOT / "reports" / "demo-hosts"
    (folder,) = [p for p in committed.iterdir() if p.name.startswith("merged-")]
    assert (folder / "report.md").read_text() == md  # as `invoke merge ... --class` wrote it


def test_a_class_must_hold_every_run_once() -> None:
    with pytest.raises(ReportError, match="in no class: h"):
        merged({"quiet": ["a", "b", "c"], "rest": ["d", "e", "f", "g"]})
    with pytest.raises(ReportError, match="in two classes: a"):
        merged({"x": list("abcdefgh"), "y": ["a"]})
    with pytest.raises(ReportError, match="no run labelled z"):
        merged({"x": [*LABELS, "z"]})
    assert parse_classes(["quiet=a,b", "busy=c"]) == {"quiet": ["a", "b"], "busy": ["c"]}
    assert parse_classes([]) is None
    for bad in (["quiet"], ["=a"], ["x=a", "x=b"], ["x="]):
        with pytest.raises(ReportError):
            parse_classes(bad)
