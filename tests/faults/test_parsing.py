"""Safety class 6 (docs/safety.md): parsing is bounded. An alias bomb, a document nested past any
sense or a recursive alias in matrix.yaml ends as a config error (exit 10) within a second, with
bounded memory; non-UTF-8 bytes in the matrix name the file; a results.json that is not UTF-8, not
JSON or of the wrong shape is a report error (exit 18), never "internal error (a bug)". Property
tests: any bytes as matrix.yaml give a Project or a ConfigError; any bytes as results.json give a
rendered report or a ReportError."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchbench import config
from patchbench.cli import commands as cli
from patchbench.errors import ConfigError, ReportError
from patchbench.runs import document
from patchbench.runs import store as runstore
from patchbench.util import yamlsafe
from tests.support import DEMO_RUN, REPO_ROOT, invoke_argv

BOMB = "\n".join(
    ["a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]"]
    + [f"{chr(ord('a') + i)}: &{chr(ord('a') + i)} [" + ",".join(
        [f"*{chr(ord('a') + i - 1)}"] * 9) + "]" for i in range(1, 9)]
) + "\nversion: *i\n"


def load_error(tmp_path: Path, data: bytes | str) -> ConfigError:
    path = tmp_path / "matrix.yaml"
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        config.load(path)
    assert info.value.exit_code == 10
    return info.value


def test_an_alias_bomb_is_refused_fast_with_little_memory(tmp_path: Path) -> None:
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        err = load_error(tmp_path, BOMB)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0, elapsed
    assert peak < 20 << 20, peak
    assert "alias bomb" in err.message
    assert str(tmp_path / "matrix.yaml") in err.message


@pytest.mark.parametrize("text, expected", [
    ("a: &a [*a]\n", "recursive alias"),
    ("a: &a {b: *a}\n", "recursive alias"),
    ("[" * 200 + "]" * 200 + "\n", "nests deeper"),
])
def test_recursive_and_deep_documents_are_refused(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in load_error(tmp_path, text).message


def cli_run(tmp_path: Path, *args: str, limit_gib: int = 2) -> subprocess.CompletedProcess[str]:
    """The real command line, with its address space capped (a runaway parse fails, not the
    machine) and a deadline."""
    prelude = (f"import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, "
               f"({limit_gib << 30}, {limit_gib << 30})); sys.argv = {invoke_argv(*args)[2:]!r};"
               " sys.argv[0] = 'invoke'; runpy.run_module('invoke', run_name='__main__')")
    return subprocess.run([sys.executable, "-c", prelude], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.parametrize("name, text", [
    ("alias bomb", BOMB),
    ("nested 100000 deep (libyaml's composer crashes)", "[" * 100_000 + "]" * 100_000 + "\n"),
])
def test_the_command_line_ends_with_exit_10(tmp_path: Path, name: str, text: str) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(text)
    t0 = time.monotonic()
    res = cli_run(tmp_path, "list", "--matrix", str(matrix))
    assert res.returncode == 10, (name, res.returncode, res.stderr[-2000:])
    assert time.monotonic() - t0 < 20
    assert str(matrix) in res.stderr
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr


def test_a_non_utf8_matrix_names_the_file(tmp_path: Path) -> None:
    matrix = tmp_path / "weird.yaml"
    matrix.write_bytes(b"version: 1\ntargets: {}\n# caf\xe9\ncomparisons: {}\n")
    res = cli_run(tmp_path, "list", "--matrix", str(matrix))
    assert res.returncode == 10, res.stderr
    assert f"{matrix}:3: not UTF-8 text" in res.stderr
    assert "Traceback" not in res.stderr


# --- results.json ---------------------------------------------------------------------------

def good_results() -> dict[str, object]:
    saved = DEMO_RUN / "results.json"
    data: dict[str, object] = json.loads(saved.read_text())
    return data


BAD_RESULTS: dict[str, bytes] = {
    "not UTF-8": b'{"comparison": "caf\xe9"}',
    "not JSON": b"{results",
    "a list": b"[1, 2, 3]",
    "deeply nested JSON": b"[" * 100_000 + b"]" * 100_000,
    "only a version": json.dumps({"schema_version": 1, "comparison": "x"}).encode(),
    "scenarios is a string": json.dumps({**good_results(), "scenarios": "x"}).encode(),
    "a cell without summary": json.dumps({**good_results(), "scenarios": [
        {"name": "s", "kind": "command", "command": "x", "runs": 1, "rounds": 1, "warmup": 0,
         "cells": [{"label": "baseline"}], "comparisons": []}]}).encode(),
    "machine is null": json.dumps({**good_results(), "machine": None}).encode(),
}


@pytest.mark.parametrize("name", sorted(BAD_RESULTS))
def test_a_bad_results_json_is_a_report_error(tmp_path: Path, name: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "reports" / "x" / "20260101T000000Z"
    run.mkdir(parents=True)
    (run / "results.json").write_bytes(BAD_RESULTS[name])
    ws = cli.workspace(reports=str(tmp_path / "reports"), builds=str(tmp_path / "builds"))
    with pytest.raises(SystemExit) as info:
        cli.guarded(lambda: cli.do_report(ws, str(run), None))
    err = capsys.readouterr().err
    assert info.value.code == 18, err
    assert "patchbench: report error: " in err and str(run) in err
    assert "internal error" not in err and "Traceback" not in err


def test_the_good_results_render(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(good_results()))
    data = runstore.load_run(path)
    assert runstore.render_checked(document.markdown, data, path).startswith("# demo")


# --- properties -----------------------------------------------------------------------------

YAML_TOKENS = st.sampled_from([
    "version: 1\n", "targets:\n", "comparisons:\n", "  a:\n", "    url: x\n", "&x ", "*x ", "[",
    "]", "{", "}", ": ", "- ", "\n", "  ", "!!python/object/apply:os.system ['true']", "!!binary ",
    "? ", "'", '"', "1", "null", "~", "\t", "%YAML 1.1\n", "---\n", "...\n", "<<: *x\n", "!!set ",
    "!foo ", "\xff", "\ud800", "\x00", "é",
])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=400),
                 st.lists(YAML_TOKENS, max_size=60).map(
                     lambda parts: "".join(parts).encode("utf-8", "surrogatepass"))))
def test_property_any_bytes_give_a_project_or_a_config_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "matrix.yaml"
        path.write_bytes(data)
        try:
            project = config.load(path)
        except ConfigError as exc:
            assert exc.exit_code == 10
            assert str(path) in exc.message or exc.message.startswith("cannot read")
        else:
            assert isinstance(project, config.Project)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.integers(2, 12))
def test_property_expanded_size_is_counted_without_expanding(levels: int, width: int) -> None:
    lines = ["l0: &l0 x"] + [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]"
                             for i in range(1, levels + 1)]
    text = "\n".join(lines) + "\n"
    sizes = [1]  # l0 is one scalar; l_i is a sequence of `width` copies of l_{i-1}
    for _ in range(levels):
        sizes.append(1 + width * sizes[-1])
    expected = 1 + (levels + 1) + sum(sizes)  # the top mapping, its keys, its values
    limits = yamlsafe.Limits(max_nodes=10**30)
    assert yamlsafe.check(text, limits) == expected


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["schema_version", "comparison", "scenarios", "cells", "machine",
                         "builds", "summary", "label", "name", "x"]), inner, max_size=5),
    max_leaves=30)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=200), JSONISH.map(lambda v: json.dumps(v).encode()),
                 JSONISH.map(lambda v: json.dumps(
                     {**good_results(), "scenarios": v}).encode())))
def test_property_any_results_file_renders_or_is_a_report_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.json"
        path.write_bytes(data)
        with contextlib.suppress(ReportError):
            results = runstore.load_run(path)
            assert isinstance(runstore.render_checked(document.markdown, results, path), str)
