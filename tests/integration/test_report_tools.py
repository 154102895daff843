"""The report tools with the real programs that read their output: benchstat on the benchstat
export of committed runs, and headless Chromium on the HTML reports (the DOM holds the summary
table and every chart, each chart decodes, and a screenshot is not blank; one browser for the
run, a tab per page)."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchbench import results as results_mod
from patchbench.runs import merge
from patchbench.runs.export.benchstat import benchstat_name
from patchbench.util import cmd
from tests.browser import Chromium
from tests.support import REPO_ROOT, invoke

pytestmark = pytest.mark.integration

REPORTS = REPO_ROOT / "reports"
# opt-in: copy the screenshots there to look at them (read at import: the session clears
# PATCHBENCH_* variables)
KEEP = os.environ.get("PATCHBENCH_TEST_KEEP_SCREENSHOTS", "")
BURST = "runc-burst/20261129T225801Z"
DEMO = "demo/20261129T225457Z"


def load(key: str) -> dict[str, Any]:
    # as every command reads a saved run: through the loader (schema 1 files upgraded)
    return results_mod.load(REPORTS / key / "results.json").dump()


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run `bash .ci/install` (it installs it pinned)")
    return found


# --- benchstat --------------------------------------------------------------------------------

BENCHSTAT_ROW = re.compile(r"^(\S+)\s+([\d.]+)([mµn]?)\s+±\s*\d+%\s+([\d.]+)([mµn]?)\s+±")
SCALE = {"": 1.0, "m": 1e-3, "µ": 1e-6, "n": 1e-9}


@pytest.mark.parametrize("key", [DEMO, BURST, "runc-signal/20261129T223940Z"])
def test_benchstat_reads_the_export_and_finds_the_same_medians(key: str, tmp_path: Path) -> None:
    res = invoke("export", key, "--format", "benchstat", "--out", str(tmp_path),
                 "--reports", str(REPORTS), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    results = load(key)
    variants = list(results["builds"])
    files = [f"{v}.txt" for v in variants]
    out = cmd.run([tool("benchstat"), files[0], files[1]], cwd=tmp_path / "benchstat",
                      timeout=60).stdout
    procs = results["machine"]["cpu_count"]
    # benchstat shows names without "Benchmark"; it prints each side's median (3 digits)
    expected = {benchstat_name(sc["name"], c["params"], procs).removeprefix("Benchmark"):
                c["summary"]["median"]
                for sc in results["scenarios"] for c in sc.get("cells", []) if c["variant"] == variants[0]}
    rows = {m.group(1): float(m.group(2)) * SCALE[m.group(3)]
            for line in out.splitlines() if (m := BENCHSTAT_ROW.match(line))}
    assert rows.keys() == expected.keys(), out
    for name, median in rows.items():
        assert median == pytest.approx(expected[name], rel=5e-3), (name, out)
    assert "vs base" in out and f"{variants[1]}.txt" in out


# --- headless Chromium ------------------------------------------------------------------------

PROBE = ('<script>addEventListener("load", () => { for (const i of document.images) '
         "{ i.dataset.naturalWidth = i.naturalWidth; } document.body.dataset.loaded = '1'; });"
         "</script></body>")


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    """One headless Chromium for the whole run (a tab per page): starting one costs about as much
    as loading every page here."""
    b = Chromium(tool("chromium"), tmp_path_factory.mktemp("chromium-profile"), timeout=120)
    try:
        yield b
    finally:
        b.close()


def check_in_browser(browser: Chromium, page: str, tmp_path: Path, name: str, *, charts: int,
                     tables: list[str]) -> Path:
    """The DOM as Chromium built it and a screenshot; return the screenshot."""
    probe = tmp_path / f"{name}-probe.html"
    probe.write_text(page.replace("</body>", PROBE, 1))
    tab = browser.open(probe.as_uri(), width=1280, height=1800)
    dom = tab.dom()
    tab.close()
    assert 'data-loaded="1"' in dom  # the page loaded and its script ran
    for cls in tables:
        assert f'<table class="{cls}">' in dom, cls
    imgs = re.findall(r'<img class="chart"[^>]*>', dom)
    assert len(imgs) == charts
    widths = [int(w) for w in re.findall(r'data-natural-width="(\d+)"', dom)]
    assert len(widths) == charts and all(w >= 800 for w in widths)  # every chart decoded
    # the screenshot of the report itself (no probe)
    html_file = tmp_path / f"{name}.html"
    html_file.write_text(page)
    tab = browser.open(html_file.as_uri(), width=1280, height=1800)
    shot = tab.screenshot(tmp_path / f"{name}.png")
    tab.close()
    from PIL import Image  # the test extra's (patchbench itself draws no raster image)

    with Image.open(shot) as im:
        rgb = np.asarray(im.convert("RGB")).astype(np.uint32)
    assert rgb.shape[:2] == (1800, 1280)
    pixels = rgb / 255.0
    # distinct colours, each packed into one integer (np.unique over rows takes seconds)
    colors = np.unique((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2])
    assert len(colors) > 100, "the screenshot is (nearly) uniform: blank"
    assert (pixels.mean(axis=2) < 0.5).mean() > 0.01  # some dark ink: text, lines
    return shot


@pytest.mark.parametrize(("key", "charts", "tables"), [
    (DEMO, 2, ["summary", "detail", "builds"]),
    (BURST, 3, ["summary", "detail", "burst", "phases", "builds"]),
    ("runc-stress/20261129T231914Z", 2, ["stress", "builds"]),
    ("lima-log-sync/20261129T225449Z", 4, ["summary", "detail", "builds"]),
])
def test_html_report_in_headless_chromium(key: str, charts: int, tables: list[str],
                                          tmp_path: Path, browser: Chromium) -> None:
    res = invoke("export", key, "--format", "html", "--out", str(tmp_path / "out"),
                 "--reports", str(REPORTS), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "out" / "report.html").read_text()
    # the charts the code makes for this run's data (counted in the page, not drawn again)
    assert page.count('<img class="chart"') == charts
    shot = check_in_browser(browser, page, tmp_path, key.split("/")[0], charts=charts, tables=tables)
    if KEEP:
        Path(KEEP).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(KEEP) / shot.name)


def test_merged_html_in_headless_chromium(tmp_path: Path, browser: Chromium) -> None:
    a = load(DEMO)
    b = json.loads(json.dumps(a))
    b["machine"]["cpu_model"] = "another machine"
    m = merge.merge_runs([("m1", a), ("m2", b)], gate=lambda r: [])
    shot = check_in_browser(browser, merge.render_html(m), tmp_path, "merged", charts=1,
                            tables=["summary", "medians", "machines", "builds"])
    if KEEP:
        Path(KEEP).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(KEEP) / shot.name)
