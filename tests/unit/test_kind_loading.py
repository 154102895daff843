"""Importing patchbench.scenarios registers every kind, in the registry's order, for the matrix and
for results.json alike; a matrix naming an unknown kind is refused with every kind listed.

The import checks run in a fresh interpreter: this test process has every kind registered
(tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from patchbench import pipeline
from patchbench.cli import commands
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
ORDER = "command,burst,stress,layers,soak,ctrstress,mounts"


def _fresh(code: str, cwd: Path) -> list[str]:
    """Run ``code`` in a fresh interpreter; what it prints, line by line."""
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                         capture_output=True, text=True, timeout=120, check=False,
                         env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin",
                              "HOME": str(cwd)})
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for series in ("fix", "other"):
        (tmp_path / "patches" / series).mkdir(parents=True)
        (tmp_path / "patches" / series / "series").write_text("0001-x.patch\n")
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    return tmp_path


def test_importing_the_registry_registers_every_kind_in_its_order(project: Path) -> None:
    out = _fresh("""
        from pathlib import Path
        import patchbench.scenarios as s
        from patchbench import config, results
        from patchbench.config.scenarios import config_models
        print(",".join(s.KINDS), ",".join(config_models()), ",".join(results.result_models()))
        print(",".join(config.load(Path("matrix.yaml")).matrix.comparisons))
        """, project)
    assert out == [f"{ORDER} {ORDER} {ORDER}", "timed,soaked"]


def test_results_of_two_kinds_read_one_after_the_other(project: Path) -> None:
    soak = REPO_ROOT / "reports" / "demo-soak" / "20261130T023834Z" / "results.json"
    timed = REPO_ROOT / "reports" / "demo" / "20261129T225457Z" / "results.json"
    out = _fresh(f"""
        from pathlib import Path
        import patchbench.scenarios
        from patchbench import results
        for path in ({str(soak)!r}, {str(timed)!r}):
            print(",".join(sc.kind for sc in results.load(Path(path)).scenarios))
        """, project)
    assert out == ["soak", "command"]


def test_an_unknown_kind_is_refused_with_every_kind_listed(project: Path) -> None:
    (project / "matrix.yaml").write_text(MATRIX.replace("kind: soak", "kind: sok"))
    out = _fresh("""
        from pathlib import Path
        import patchbench.scenarios
        from patchbench import config
        from patchbench.errors import ConfigError
        try:
            config.load(Path("matrix.yaml"))
        except ConfigError as exc:
            print(exc.message)
        """, project)
    assert "soaked.scenarios.0" in out[0] and "unknown scenario kind (known: command, burst, " \
        "stress, layers, soak, ctrstress, mounts)" in out[0]


def test_a_load_makes_no_builds_directory(project: Path) -> None:
    """(a dry run builds nothing and makes no builds/)"""
    ws = commands.workspace(project=str(project), builds=str(project / "builds"))
    pipeline.load(ws)
    assert not (project / "builds").exists()
