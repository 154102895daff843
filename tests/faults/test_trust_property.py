"""Untrusted saved runs and artifacts (docs/security.md), the property: whatever a saved run or an
artifact tree holds, ``report``, ``diff`` and ``merge`` end with a documented exit code (0, or 18
for a file they refuse; 10 is allowed for a configuration they refuse), never an internal error
(3), and write nothing outside their output folder. Hypothesis feeds them arbitrary JSON, the
committed demo run with arbitrary values put in at arbitrary places, and arbitrary folder trees
with links in and out.

Bounded for CI: a few dozen examples per property, well under 30 s in all."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchbench.cli import commands
from patchbench.runs import store as runstore
from tests.faults.trust_support import demo, diff, merge, run, save

DOCUMENTED = {0, 10, 18}
SECRET = "outside-secret-5e1c"
SCALE = float(os.environ.get("TRUST_EXAMPLES_SCALE", "1"))  # more examples locally: 10


# How many: with the loader's JSON error left uncaught again (a document with Infinity was an
# internal error), the diff property fails from 15 examples on and the merge property from 12
# (derandomized, so always the same ones); 25 and 60 keep twice that. 50 and 120 took twice as
# long (13 s of CPU) and found nothing more among the bugs tried (docs/cost.md, test suite).
def bounded(examples: int) -> settings:
    """Reproducible (derandomized) and bounded: the three properties take about 8 s."""
    return settings(max_examples=int(examples * SCALE), deadline=None, database=None,
                    derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

text = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["../../x", "/abs", "<b>x</b>", "a|b", "=1+1", "\x1b[31m", "baseline", "sha256", "demo"])
scalar = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
          | st.floats(allow_nan=False, allow_infinity=False) | text)
json_value = st.recursive(scalar, lambda kids: st.lists(kids, max_size=4)
                          | st.dictionaries(text, kids, max_size=4), max_leaves=12)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            yield from _paths(v, (*prefix, i))


DEMO_PATHS = [p for p in _paths(demo()) if p]
# places grouped by region (the top-level key, or the scenario's cell or comparison), so that
# each region is as likely to be hit as any other, however many leaves it has
REGIONS: dict[str, list[tuple[Any, ...]]] = {}
for _p in DEMO_PATHS:
    REGIONS.setdefault("/".join(map(str, _p[:4] if _p[0] == "scenarios" else _p[:2])),
                       []).append(_p)


def replacement(draw: st.DrawFn, old: Any) -> Any:
    """Arbitrary JSON, or the old value with its type confused (a number as a string, an
    infinite or huge number, an empty list or mapping)."""
    return draw(json_value | st.sampled_from(
        [str(old), [], {}, None, float("inf"), -float("inf"), float("nan"), 10**400 // 10**399,
         1e308, -1, 0, [str(old)], {"x": old}]))


@st.composite
def mutated_demo(draw: st.DrawFn) -> Any:
    """The demo run with 1 to 3 places replaced by arbitrary JSON, or removed."""
    doc = demo()
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(REGIONS[draw(st.sampled_from(sorted(REGIONS)))]))
        cur: Any = doc
        for key in path[:-1]:
            if not isinstance(cur, dict | list):
                break
            try:
                cur = cur[key]
            except (KeyError, IndexError, TypeError):
                break
        else:
            last = path[-1]
            if isinstance(cur, dict) and draw(st.booleans()) and last in cur:
                del cur[last]
            elif isinstance(cur, dict):
                cur[last] = replacement(draw, cur.get(last))
            elif isinstance(cur, list) and isinstance(last, int) and last < len(cur):
                cur[last] = replacement(draw, cur[last])
    return doc


documents = json_value | mutated_demo() | mutated_demo() | mutated_demo()


@contextmanager
def sandbox() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="trust-prop-") as tmp:
        root = Path(tmp)
        (root / "outside").mkdir()
        (root / "outside" / "secret").write_text(SECRET)
        save(root / "outside" / "run", demo())
        yield root


def snapshot(root: Path, *, skip: tuple[Path, ...]) -> dict[str, tuple[int, bytes]]:
    """Every path under ``root`` but the output folders, with its type and content."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            if any(p == s or s in p.parents for s in skip):
                continue
            st_ = os.lstat(p)
            data = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
            out[str(p)] = (st_.st_mode, data)
    return out


def no_secret(root: Path) -> None:
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            assert SECRET not in p.read_text(errors="replace"), p


@bounded(25)
@given(doc=documents)
def test_diff_and_report_of_any_document(doc: Any) -> None:
    with sandbox() as root:
        bad = root / "runs" / "bad"
        save(bad, json.dumps(doc))
        reports = root / "reports"
        before = snapshot(root, skip=(reports,))
        code, _, err = diff(root / "outside" / "run", bad, reports)
        assert code in DOCUMENTED, err
        ws = commands.workspace(project=str(root), reports=str(reports))
        code, _, err = run(lambda: commands.do_report(ws, str(bad), None))
        assert code in DOCUMENTED, err
        code, _, err = run(lambda: print(runstore.publish(bad / "results.json", reports,
                                                           stamp="20260101T000000Z")))
        assert code in DOCUMENTED, err
        assert snapshot(root, skip=(reports,)) == before
        no_secret(reports)


@bounded(60)
@given(docs=st.lists(documents, min_size=1, max_size=2), good=st.booleans())
def test_merge_of_any_documents(docs: list[Any], good: bool) -> None:
    with sandbox() as root:
        art = root / "art"
        for i, doc in enumerate(docs):
            save(art / f"m{i}", json.dumps(doc))
        if good:
            save(art / "good", demo())
        reports, out = root / "reports", root / "out"
        before = snapshot(root, skip=(reports, out))
        for kw in ({}, {"out": str(out)}):
            code, _, err = merge([str(art)], reports, **kw)
            assert code in DOCUMENTED, err
        assert snapshot(root, skip=(reports, out)) == before


names = st.sampled_from(["results.json", "exit-code-m1", "exit-code-../x", "sub", "m1", "m2",
                         "report.md", "<i>", "a|b"])
targets = st.sampled_from(["outside/secret", "outside/run", "outside/run/results.json",
                           "outside", "..", "/", "missing"])
entry = st.tuples(st.lists(names, min_size=1, max_size=3),
                  st.sampled_from(["demo", "garbage", "code", "link", "dir"]), targets)


@bounded(40)
@given(entries=st.lists(entry, min_size=1, max_size=8))
def test_merge_of_any_tree_with_links(entries: list[tuple[list[str], str, str]]) -> None:
    with sandbox() as root:
        art = root / "art"
        art.mkdir()
        for parts, kind, target in entries:
            path = art.joinpath(*[p.replace("/", "_") for p in parts])
            if path.exists() or path.is_symlink():
                continue
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                continue
            if kind == "demo":
                path.write_text(json.dumps(demo()))
            elif kind == "garbage":
                path.write_bytes(b"\xff\x00{")
            elif kind == "code":
                path.write_text("1\n")
            elif kind == "link":
                path.symlink_to(root / target if not target.startswith("/") else target)
            else:
                path.mkdir()
        reports, out = root / "reports", root / "out"
        before = snapshot(root, skip=(reports, out))
        for kw in ({}, {"out": str(out)}):
            code, _, err = merge([str(art)], reports, **kw)
            assert code in DOCUMENTED, err
        assert snapshot(root, skip=(reports, out)) == before
        no_secret(reports)
        no_secret(out)
