"""A scenario kind is imported when it is first needed (patchbench/scenarios/__init__.py), and
``compare NAME`` validates comparison NAME alone once the same matrix bytes were validated whole
with the same code (util/validated.py, pipeline.load).

The import checks run in a fresh interpreter: this test process has every kind registered
(tests/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from patchbench import config, pipeline
from patchbench.cli import commands
from patchbench.errors import ConfigError
from patchbench.util.workspace import Workspace
from tests.support import ONE_TARGET, REPO_ROOT

MATRIX = ONE_TARGET + """\
comparisons:
  timed:
    target: t
    candidates: {fix: [fix]}
    scenarios:
      - name: start
        command: ["{bin}/t"]
  soaked:
    target: t
    candidates: {other: [other]}
    scenarios:
      - name: many
        kind: soak
        command: ["{bin}/t"]
        runs: 100
        block: 10
        timeout: 1
"""


def _fresh(code: str, cwd: Path) -> list[str]:
    """Run KINDS_IMPORTED, then ``code``, in a fresh interpreter; what it prints, line by line."""
    res = subprocess.run([sys.executable, "-c", KINDS_IMPORTED + textwrap.dedent(code)], cwd=cwd,
                         capture_output=True, text=True, timeout=120, check=False,
                         env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin",
                              "HOME": str(cwd)})
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


KINDS_IMPORTED = """
import sys
def kinds():
    from patchbench.scenarios import MODULES
    return ",".join(k for k, m in MODULES.items() if m in sys.modules) or "-"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for series in ("fix", "other"):
        (tmp_path / "patches" / series).mkdir(parents=True)
        (tmp_path / "patches" / series / "series").write_text("0001-x.patch\n")
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    return tmp_path


def test_importing_the_registry_imports_no_kind_and_a_matrix_imports_the_kinds_it_names(
        project: Path) -> None:
    out = _fresh("""
        from pathlib import Path
        import patchbench.scenarios
        from patchbench import config
        print(kinds())
        p = config.load(Path("matrix.yaml"), only="timed")
        print(kinds(), ",".join(p.matrix.comparisons))
        p = config.load(Path("matrix.yaml"), only="soaked")
        print(kinds(), ",".join(p.matrix.comparisons))
        p = config.load(Path("matrix.yaml"))
        print(kinds(), ",".join(p.matrix.comparisons))
        """, project)
    assert out == ["-", "command timed", "command,soak soaked", "command,soak timed,soaked"]


@pytest.mark.parametrize("run", ["demo-soak/20261130T023834Z", "youki-run-reap/20261201T121958Z"])
def test_a_results_file_imports_the_kinds_it_holds(project: Path, run: str) -> None:
    """A committed soak run (results versions 2 and 5: read through the upgrade steps too)."""
    path = REPO_ROOT / "reports" / run / "results.json"
    out = _fresh(f"""
        from pathlib import Path
        import patchbench.scenarios
        from patchbench import results
        res = results.load(Path({str(path)!r}))
        print(kinds(), ",".join(sorted({{sc.kind for sc in res.scenarios}})))
        """, project)
    assert out == ["soak soak"]


def test_results_of_two_kinds_read_one_after_the_other(project: Path) -> None:
    """The results' union is rebuilt when a second kind is imported (a soak run, then a
    command run), and the registry imports a kind it is asked for."""
    soak = REPO_ROOT / "reports" / "demo-soak" / "20261130T023834Z" / "results.json"
    timed = next(p for p in sorted((REPO_ROOT / "reports" / "demo").glob("*/results.json")))
    out = _fresh(f"""
        from pathlib import Path
        import patchbench.scenarios as s
        from patchbench import results
        for path in ({str(soak)!r}, {str(timed)!r}):
            print(",".join(sc.kind for sc in results.load(Path(path)).scenarios), kinds())
        print(s.KINDS["mounts"].name, kinds())
        """, project)
    assert out == ["soak soak", "command command,soak", "mounts command,soak,mounts"]


def test_a_kind_registered_from_outside_is_known_without_loading_the_others(
        project: Path) -> None:
    out = _fresh("""
        import patchbench.scenarios as s
        from tests.unit.test_kind_isolation import ToyKind
        s.register(ToyKind())
        s.load({"toy"})
        print(kinds())
        s.load({"toy", "nonesuch"})
        print(kinds())
        """, project)
    assert out == ["-", ",".join(__import__("patchbench.scenarios").scenarios.MODULES)]


def test_the_kinds_keep_their_order_whichever_is_imported_first(project: Path) -> None:
    out = _fresh("""
        import patchbench.scenarios as s
        from patchbench import results
        from patchbench.config.scenarios import config_models
        s.load({"mounts"})
        s.load({"soak"})
        print(kinds())
        print(",".join(s.KINDS), ",".join(config_models()), ",".join(results.result_models()))
        """, project)
    from patchbench.scenarios import MODULES

    order = ",".join(MODULES)
    assert out == ["soak,mounts", f"{order} {order} {order}"]


def test_an_unknown_kind_is_refused_with_every_kind_listed(project: Path) -> None:
    (project / "matrix.yaml").write_text(MATRIX.replace("kind: soak", "kind: sok"))
    out = _fresh("""
        from pathlib import Path
        import patchbench.scenarios
        from patchbench import config
        from patchbench.errors import ConfigError
        try:
            config.load(Path("matrix.yaml"), only="timed")  # only: the proof is the caller's
            print("timed alone: loaded")
            config.load(Path("matrix.yaml"))
        except ConfigError as exc:
            print(exc.message)
        """, project)
    assert out[0] == "timed alone: loaded"
    assert "soaked.scenarios.0" in out[1] and "unknown scenario kind (known: command, burst, " \
        "stress, layers, soak, ctrstress, mounts)" in out[1]


# --- compare validates its comparison alone once the bytes were validated whole -----------


@pytest.fixture
def ws(project: Path) -> Workspace:
    (project / "builds").mkdir()
    return commands.workspace(project=str(project), builds=str(project / "builds"))


class Loads:
    """Records the ``only`` of every config.load."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.only: list[str | None] = []
        real = config.load

        def load(*a: object, **kw: object) -> config.Project:
            self.only.append(kw.get("only"))  # type: ignore[arg-type]
            return real(*a, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(config, "load", load)


def test_compare_validates_the_whole_matrix_once_then_its_comparison_alone(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    loads = Loads(monkeypatch)
    first = pipeline.load(ws, only="timed")
    assert list(first.matrix.comparisons) == ["timed", "soaked"] and loads.only == [None]
    kept = json.loads(ws.layout.listing_cache.read_text())
    assert [row[0] for row in kept["comparisons"]] == ["timed", "soaked"]  # list's rows too
    again = pipeline.load(ws, only="timed")
    assert list(again.matrix.comparisons) == ["timed"] and loads.only == [None, "timed"]
    assert again.matrix.comparisons["timed"] == first.matrix.comparisons["timed"]
    assert again.matrix.targets == first.matrix.targets
    # a command other than compare validates whole; so does a name the matrix does not have
    assert list(pipeline.load(ws).matrix.comparisons) == ["timed", "soaked"]
    assert list(pipeline.load(ws, only="timd").matrix.comparisons) == ["timed", "soaked"]
    assert loads.only[2:] == [None, "timd"]  # (compare then says there is no comparison timd)


def test_a_partial_load_reads_the_other_comparisons_series_from_the_kept_validation(
        ws: Workspace) -> None:
    """What a run reads of every comparison (fetch ensures the upstream commits the target's
    series name; patch-check applies each series to every target using it) is the same after a
    partial load as after a whole one."""
    from patchbench.source import series_ref

    whole = pipeline.load(ws)
    part = pipeline.load(ws, only="timed")
    assert list(part.matrix.comparisons) == ["timed"]
    assert part.uses == whole.uses == [
        config.SeriesUse("t", (), {"fix": ("fix",)}), config.SeriesUse("t", (), {"other": ("other",)})]
    assert series_ref.series_of_target(part.uses, "t") == ["fix", "other"]
    assert part.with_backend("host").uses == part.uses


@pytest.mark.parametrize("uses", [[], [{"target": "t"}] * 2, [{"target": "T!", "baseline": [],
                                                              "candidates": {}}] * 2, "x",
                                  [{"target": "t", "baseline": [], "candidates": {}, "x": 1}] * 2])
def test_kept_series_of_the_wrong_shape_validate_whole(ws: Workspace, uses: object) -> None:
    pipeline.load(ws)
    store = ws.layout.listing_cache
    store.write_text(json.dumps({**json.loads(store.read_text()), "uses": uses}))
    assert list(pipeline.load(ws, only="timed").matrix.comparisons) == ["timed", "soaked"]


def test_kept_series_that_disagree_with_the_validated_comparison_are_not_believed(
        ws: Workspace) -> None:
    """The compared comparison's own series, as just validated, must be what the kept file
    says of it; if not, none of the file is believed and the matrix is validated whole."""
    pipeline.load(ws)
    store = ws.layout.listing_cache
    forged = [{"target": "t", "baseline": [], "candidates": {}}] * 2  # the right shape
    store.write_text(json.dumps({**json.loads(store.read_text()), "uses": forged}))
    project = pipeline.load(ws, only="timed")
    assert list(project.matrix.comparisons) == ["timed", "soaked"]
    assert project.uses == [config.SeriesUse("t", (), {"fix": ("fix",)}),
                            config.SeriesUse("t", (), {"other": ("other",)})]
    assert json.loads(store.read_text())["uses"] != forged  # kept again, as validated


def test_a_list_keeps_the_proof_for_compare(ws: Workspace, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    commands.list_rows(ws)
    loads = Loads(monkeypatch)
    assert list(pipeline.load(ws, only="soaked").matrix.comparisons) == ["soaked"]
    assert loads.only == ["soaked"]


@pytest.mark.parametrize("change", ["another comparison", "its series", "another's series",
                                    "no proof", "a damaged proof"])
def test_anything_changed_since_validates_whole_and_its_error_is_the_error(
        ws: Workspace, change: str) -> None:
    pipeline.load(ws, only="timed")
    store = ws.layout.listing_cache
    if change == "another comparison":  # other bytes: another key
        ws.matrix.write_text(MATRIX.replace("block: 10", "blocks: 10"))
        message = "blocks"
    elif change in ("its series", "another's series"):  # a fact the proof relied on
        series = "fix" if change == "its series" else "other"
        (ws.root / "patches" / series / "series").unlink()
        message = f"patch series '{series}' has no file"
    else:
        if change == "no proof":
            store.unlink()
        else:
            store.write_text("{")
        assert list(pipeline.load(ws, only="timed").matrix.comparisons) == ["timed", "soaked"]
        assert json.loads(store.read_text())["comparisons"]  # kept again
        return
    with pytest.raises(ConfigError, match=message):
        pipeline.load(ws, only="timed")


def test_a_load_for_a_series_about_to_be_made_is_no_proof(ws: Workspace) -> None:
    (ws.root / "patches" / "other" / "series").unlink()
    pipeline.load(ws, pending_series=frozenset({"other"}))
    assert not ws.layout.listing_cache.exists()
    with pytest.raises(ConfigError, match="patch series 'other' has no file"):
        pipeline.load(ws, only="timed")


def test_a_load_makes_no_builds_directory(project: Path) -> None:
    """(a dry run builds nothing and makes no builds/: then nothing is kept either)"""
    ws = commands.workspace(project=str(project), builds=str(project / "builds"))
    pipeline.load(ws, only="timed")
    assert not (project / "builds").exists()


def test_what_a_compare_validates_comes_from_the_bytes_never_from_the_kept_file(
        ws: Workspace) -> None:
    """The kept file is as writable as builds/ (a CI cache restores it): anyone can recompute
    its key, so nothing in it may stand in for the matrix's bytes. A forged file with the
    right key and data of its own changes nothing a partial load validates."""
    whole = pipeline.load(ws)
    store = ws.layout.listing_cache
    forged = json.loads(store.read_text())
    doc = yaml.safe_load(MATRIX)
    doc["comparisons"]["timed"]["scenarios"][0]["command"] = ["/bin/sh", "-c", "echo forged"]
    doc["targets"]["t"]["url"] = "https://forged.example/t.git"
    forged["document"] = doc
    forged["targets"] = [["t", "https://forged.example/t.git", "v1", "0123456789ab", "go 1.22",
                          "-"]]
    store.write_text(json.dumps(forged))
    part = pipeline.load(ws, only="timed")
    assert part.matrix.comparisons["timed"] == whole.matrix.comparisons["timed"]
    assert part.matrix.targets == whole.matrix.targets
