"""util/tables.py: tabulate without wcwidth's import until a table needs it, aligned exactly as
tabulate with wcwidth aligns it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.support import REPO_ROOT

TABLES = [
    ([["baseline", "12.3 ms ± 0.4", "1.00×"], ["fix", "11.1 ms – 12.0", "≥ 1.05 → faster"]],
     ["variant", "time", "ratio"]),
    ([["日本語の説明", "1"], ["b", "22"]], ["名前", "n"]),  # East Asian wide
    ([["e\u0301te\u0301", "1"], ["🚀 start", "2"]], ["x", "y"]),  # a combining mark, an emoji
    ({"col": ["a", "ｗｉｄｅ"], "n": [1, 2]}, "keys"),  # a dict of columns
    ([["☰☰☰☰", "1"], ["b", "2"]], ["x", "y"]),  # wide in newer Unicode, narrow in older tables
    ([["a\tb", "1"], ["b", "2"]], ["x", "y"]),  # a control character
]


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60, cwd=REPO_ROOT).stdout


@pytest.mark.parametrize("fmt", ["simple", "github", "plain"])
def test_every_table_is_aligned_as_tabulate_with_wcwidth_aligns_it(fmt: str) -> None:
    pytest.importorskip("wcwidth")
    tables = json.dumps(TABLES)
    theirs = _fresh(f"import json, tabulate\nfor rows, headers in json.loads({tables!r}):\n"
                    f"    print(tabulate.tabulate(rows, headers, tablefmt={fmt!r}))")
    ours = _fresh(f"import json\nfrom patchbench.util.tables import tabulate\n"
                  f"for rows, headers in json.loads({tables!r}):\n"
                  f"    print(tabulate(rows, headers, tablefmt={fmt!r}))")
    assert ours == theirs


def test_wcwidth_is_imported_only_for_a_table_that_needs_it() -> None:
    out = _fresh("import sys\nfrom patchbench.util.tables import tabulate\n"
                 "print('wcwidth' in sys.modules)\n"
                 "tabulate([['a', '± 1 – 2 × 3 → ≥ …']], ['x'])\n"
                 "print('wcwidth' in sys.modules)\n"
                 "tabulate(iter([['日本', '1']]), ['x', 'y'])\n"
                 "print('wcwidth' in sys.modules)\n")
    installed = importlib.util.find_spec("wcwidth") is not None
    assert out.split() == ["False", "False", str(installed)]


def test_the_one_column_symbols_are_one_column_for_wcwidth() -> None:
    wcwidth = pytest.importorskip("wcwidth")
    from patchbench.util import tables

    assert {ch: wcwidth.wcwidth(ch) for ch in tables.ONE_COLUMN} == \
        dict.fromkeys(tables.ONE_COLUMN, 1)
