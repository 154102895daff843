"""The test session itself: HOME, builds and reports are temporary, the Go caches are the real
ones, and the repository's own builds/ and reports/ cannot be reached."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from patchbench.cli import commands as cli
from patchbench.runs import store as runstore
from patchbench.source import cache as source
from tests.conftest import GO_ENV, REAL_BUILDS, REAL_REPORTS
from tests.support import REPO_ROOT


def test_environment_is_isolated(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = Path(os.environ["HOME"])
    assert home != Path(pwd.getpwuid(os.getuid()).pw_dir)
    # in the session's temporary directory: /dev/shm or the system's (tests/conftest.py)
    assert home.is_relative_to(tmp_path_factory.getbasetemp().resolve())
    for key in ("PATCHBENCH_BUILDS", "PATCHBENCH_REPORTS"):
        assert not Path(os.environ[key]).resolve().is_relative_to(REPO_ROOT)
    for key, value in GO_ENV.items():
        assert os.environ[key] == value
        assert not value.startswith(str(home))
    assert os.environ["GOPROXY"] == "off"


def test_cli_defaults_do_not_point_into_the_repository() -> None:
    opts = cli.workspace()
    assert opts.builds == Path(os.environ["PATCHBENCH_BUILDS"]).resolve()
    assert opts.reports == Path(os.environ["PATCHBENCH_REPORTS"]).resolve()
    assert opts.matrix == REPO_ROOT / "matrix.yaml"


def test_the_repository_builds_and_reports_are_unusable() -> None:
    before = sorted(p.name for p in REAL_BUILDS.iterdir()) if REAL_BUILDS.exists() else None
    with pytest.raises(AssertionError, match="reached the repository"):
        source.fetch(REAL_BUILDS, "demo", "/nonexistent", "v1", "0" * 40, overridden=False)
    with pytest.raises(AssertionError, match="reached the repository"), \
            source.locked(REAL_BUILDS / "sub", "x"):
        pass
    with pytest.raises(AssertionError, match="reached the repository"):
        runstore.publish(REAL_BUILDS / "runs" / "x" / "results.json", REAL_REPORTS)
    after = sorted(p.name for p in REAL_BUILDS.iterdir()) if REAL_BUILDS.exists() else None
    assert before == after
