"""The HTML report and its charts, from the committed reference runs' data alone: the summary
table, every chart that applies to each scenario kind, escaping, and the gate's reasons."""

from __future__ import annotations

import copy
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest

from patchbench import results as results_mod
from patchbench.report import charts as report_charts
from patchbench.report import html as report_html
from patchbench.runs import document
from tests.support import REPO_ROOT

REPORTS = REPO_ROOT / "reports"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"'


def load(key: str) -> dict[str, Any]:
    # as every command reads a saved run: through the loader (schema 1 files upgraded)
    return results_mod.load(REPORTS / key / "results.json").dump()


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags
                if t == tag and all(a.get(k.rstrip("_")) == v for k, v in attrs.items())]


def parse(page: str) -> Elements:
    p = Elements()
    p.feed(page)
    return p


def test_burst_run_has_summary_tables_and_every_chart() -> None:
    results = load("runc-burst/20261129T225801Z")
    page = document.html(results, gate=[])
    el = parse(page)
    assert len(el.find("table", class_="summary")) == 1
    assert len(el.find("table", class_="detail")) == 1
    assert len(el.find("table", class_="burst")) == 1
    assert len(el.find("table", class_="phases")) == 1
    kinds = [a["data-chart"] for a in el.find("img", class_="chart")]
    assert kinds == ["distribution", "rounds", "burst"]
    for img in el.find("img", class_="chart"):
        assert str(img["src"]).startswith("data:image/svg+xml;base64,")
    assert 'id="gate">Gate: passed' in page
    assert "<link" not in page and "http://" not in page.split("<body>")[0]  # self-contained


def test_stress_run_has_its_chart_and_table_and_the_gate_reasons() -> None:
    results = load("runc-stress/20261129T223430Z")
    page = document.html(results, gate=["signal-mid-start x: 1 leftovers"])
    el = parse(page)
    assert not el.find("table", class_="summary")  # no timing comparisons, no empty table
    assert len(el.find("table", class_="stress")) == 2
    assert [a["data-chart"] for a in el.find("img", class_="chart")] == ["stress", "stress"]
    assert 'class="gate failed"' in page and "<li>signal-mid-start x: 1 leftovers</li>" in page
    assert page.count("<details>") == 2 + len(results["builds"])  # machine, settings, manifests


def test_text_from_the_results_is_escaped() -> None:
    results = copy.deepcopy(load("demo/20261129T225457Z"))
    results["scenarios"][0]["description"] = "<script>alert(1)</script>"
    page = document.html(results, gate=[])
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_round_ratios_are_medians_within_each_round() -> None:
    results = load("demo/20261129T225457Z")
    sc = results["scenarios"][0]
    comp = sc["comparisons"][0]
    ratios = report_charts.round_ratios(sc, comp)
    assert [r for r, _ in ratios] == [1, 2, 3, 4, 5]
    cells = {c["label"]: c["samples"] for c in sc["cells"]}
    b, c = cells["baseline"], cells["per-sandbox-lock"]
    in_round = [t for t, r in zip(b["times"], b["rounds"], strict=True) if r == 3]
    c_round = [t for t, r in zip(c["times"], c["rounds"], strict=True) if r == 3]
    assert ratios[2][1] == pytest.approx(np.median(in_round) / np.median(c_round))


def test_charts_apply_to_the_kinds_that_have_their_data() -> None:
    burst = load("runc-burst/20261129T225801Z")["scenarios"][0]
    command = load("demo/20261129T225457Z")["scenarios"][0]
    stress = load("runc-stress/20261129T231914Z")["scenarios"][0]
    assert (report_charts.burst_chart(burst) or b"").startswith(SVG)
    assert report_charts.burst_chart(command) is None
    assert (report_charts.distribution_chart(command) or b"").startswith(SVG)
    assert report_charts.distribution_chart(stress) is None
    assert report_charts.round_ratio_chart(stress) is None
    assert (report_charts.stress_chart(stress) or b"").startswith(SVG)
    assert report_charts.stress_chart(command) is None


def test_time_unit() -> None:
    assert report_charts.time_unit([0.5]) == (1e3, "ms")
    assert report_charts.time_unit([2.0]) == (1.0, "s")
    assert report_charts.time_unit([5e-4]) == (1e6, "µs")


def test_data_shown_as_it_is_is_folded_and_escaped() -> None:
    from patchbench.report.blocks import Data

    section = report_html.block(Data("future data", {"per_build": {"<b>": {"hangs": 1}}}))
    assert section.startswith("<details><summary>future data</summary><pre>")
    assert "&quot;hangs&quot;: 1" in section and "<b>" not in section


def test_a_ctrstress_run_gets_its_own_table() -> None:
    from patchbench import results
    from tests.support import REPO_ROOT

    res = results.load(REPO_ROOT / "reports" / "mount-mayhem-stress" / "20261130T051127Z")
    page = document.html(res)
    assert "<th>mounts left (idmapped)</th>" in page
    assert "<td>idmap-once-per-overlay</td><td>30</td>" in page
    assert "ctrstress data" not in page  # not the fallback for kinds without tables
