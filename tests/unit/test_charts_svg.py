"""The charts are SVG written directly (no plotting library): every chart is a well-formed
document, has one mark per datum, and shows hostile text from the results as text."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

from patchbench import results as results_mod
from patchbench.report import charts
from patchbench.runs import document
from tests.support import REPO_ROOT

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "</text><script>alert(1)</script>&amp; \"q\" 'a' ]]> \x01\x1b[31m"


def parse(svg: bytes | None) -> ElementTree.Element:
    assert svg is not None
    root = ElementTree.fromstring(svg)  # well-formed, or this raises
    assert root.tag == f"{NS}svg"
    assert float(root.get("width") or 0) >= 700
    return root


def marks(root: ElementTree.Element, cls: str) -> list[ElementTree.Element]:
    return [e for e in root.iter() if e.get("class") == cls]


def texts(root: ElementTree.Element) -> list[str]:
    return ["".join(e.itertext()) for e in root.iter(f"{NS}text")]


def cell(label: str, variant: str, times: list[float], rounds: list[int]) -> dict[str, Any]:
    med = float(np.median(times))
    return {"label": label, "variant": variant, "params": {},
            "samples": {"times": times, "rounds": rounds},
            "summary": {"median": med, "median_ci": [med * 0.98, med * 1.02], "min": min(times),
                        "max": max(times)}}


def scenario(label: str = "fix", name: str = "s", rounds: int = 4, per: int = 3) -> dict[str, Any]:
    rng = random.Random(1)
    rr = [r for r in range(1, rounds + 1) for _ in range(per)]
    base = cell("baseline", "baseline", [0.02 + rng.random() * 1e-3 for _ in rr], rr)
    cand = cell(label, "fix", [0.01 + rng.random() * 1e-3 for _ in rr], rr)
    return {"name": name, "cells": [base, cand],
            "comparisons": [{"baseline": "baseline", "candidate": label, "speedup": 2.0,
                             "ci_low": 1.9, "ci_high": 2.1}]}


def test_the_distribution_has_a_dot_per_run_and_a_box_median_and_ci_per_cell() -> None:
    root = parse(charts.distribution_chart(scenario(rounds=5, per=4)))
    assert len(marks(root, "run")) == 2 * 5 * 4
    assert len(marks(root, "box")) == 2
    assert len(marks(root, "median")) == 2
    assert len(marks(root, "ci")) == 2


def test_the_round_chart_has_a_point_per_round() -> None:
    root = parse(charts.round_ratio_chart(scenario(rounds=7)))
    assert len(marks(root, "point")) == 7
    assert [t for t in texts(root) if t.startswith("fix: overall")] == ["fix: overall 2.00×"]


def test_the_burst_stress_and_merge_charts_have_a_mark_per_datum() -> None:
    burst = results_mod.load(REPO_ROOT / "reports/runc-burst/20261129T225801Z").dump()
    sc = burst["scenarios"][0]
    root = parse(charts.burst_chart(sc))
    # left: a point per cell; right: a point per comparison
    assert len(marks(root, "point")) == len(sc["cells"]) + len(sc["comparisons"])
    stress = results_mod.load(REPO_ROOT / "reports/runc-stress/20261129T231914Z").dump()
    st = stress["scenarios"][0]
    root = parse(charts.stress_chart(st))
    assert len(marks(root, "bar")) == sum(1 for pb in st["per_build"].values()
                                          for n in pb["outcomes"].values() if n)
    comp = scenario()["comparisons"][0]
    root = parse(charts.merge_chart([("a", [("m1", comp), ("m2", comp)]),
                                     ("b", [("m1", comp), ("m2", None)])]))
    assert len(marks(root, "point")) == 3 and len(marks(root, "ci")) == 3


def test_hostile_labels_and_names_stay_text() -> None:
    sc = scenario(label=HOSTILE, name=HOSTILE)
    for svg in (charts.distribution_chart(sc), charts.round_ratio_chart(sc),
                charts.merge_chart([(HOSTILE, [(HOSTILE, sc["comparisons"][0])])])):
        assert svg is not None
        assert b"<script" not in svg and b"\x1b" not in svg and b"\x01" not in svg
        root = parse(svg)
        assert not list(root.iter(f"{NS}script"))
        shown = " ".join(texts(root)) + "".join(e.text or "" for e in root.iter(f"{NS}title"))
        assert "</text><script>alert(1)</script>&amp;" in shown  # shown, not interpreted


def test_the_chart_files_are_svg(tmp_path: Path) -> None:
    ks = [1, 2, 4, 8]
    medians = {(v, k): 0.01 * k * (1 if v == "baseline" else 0.8) for v in ("baseline", "fix")
               for k in ks}
    charts.burst(tmp_path / "b.svg", ks, ["baseline", "fix"], medians, HOSTILE)
    root = parse((tmp_path / "b.svg").read_bytes())
    assert len(marks(root, "point")) == 3 * len(ks)  # two builds and the k x single line
    layers = {(v, n, k): 0.01 * n for v in ("baseline", "fix") for n in (1, 4) for k in (1, 2)}
    charts.layers_time(tmp_path / "t.svg", [1, 4], [1, 2], ["baseline", "fix"], layers, "t")
    assert len(marks(parse((tmp_path / "t.svg").read_bytes()), "point")) == 8
    counts = {"baseline": {"1": {"mount": 2, "umount2": 1}, "4": {"mount": 5, "umount2": 4}}}
    charts.layers_mounts(tmp_path / "m.svg", [1, 4], counts, ("mount", "umount2"), "m")
    assert len(marks(parse((tmp_path / "m.svg").read_bytes()), "point")) == 2


def test_nothing_to_draw_is_no_chart() -> None:
    assert charts.distribution_chart({"name": "s", "cells": []}) is None
    assert charts.round_ratio_chart(scenario(rounds=1)) is None  # one round: no line
    assert charts.merge_chart([("a", [("m1", None)])]) is None


def test_ticks_are_round_numbers_inside_the_axis() -> None:
    ticks = charts.nice_ticks(charts.Scale(0.93, 1.27))
    assert [label for _, label in ticks] == ["0.95", "1.00", "1.05", "1.10", "1.15", "1.20",
                                             "1.25"]
    log = charts.nice_ticks(charts.Scale(0.8, 300.0, log=True))
    assert [label for _, label in log] == ["1", "2", "5", "10", "20", "50", "100", "200"]


def test_the_html_report_inlines_svg_and_draws_no_png() -> None:
    res = results_mod.load(REPO_ROOT / "reports/demo/20261129T225457Z").dump()
    page = document.html(res, gate=[])
    assert page.count('src="data:image/svg+xml;base64,') == 2
    assert "data:image/png" not in page


def test_a_cell_of_many_runs_draws_a_bounded_number_of_dots() -> None:
    rr = [1 + i % 10 for i in range(5000)]
    big = cell("baseline", "baseline", [0.01 + (i % 97) * 1e-5 for i in range(5000)], rr)
    small = cell("fix", "fix", [0.005 + i * 1e-6 for i in range(10)], rr[:10])
    svg = charts.distribution_chart({"name": "s", "cells": [big, small], "comparisons": []})
    root = parse(svg)
    assert len(marks(root, "run")) == charts.MAX_DOTS + 10
    assert any("evenly spaced quantiles" in t for t in texts(root))
    thin = charts.thinned(big["samples"]["times"])
    assert thin[0] == min(big["samples"]["times"]) and thin[-1] == max(big["samples"]["times"])
