"""Test isolation: every test runs with HOME, the builds and reports directories in temporary
directories, offline Go settings, and a tripwire that fails any code reaching the repository's
own builds/ or reports/."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchbench.runs import store as runstore
from patchbench.source import cache as source
from patchbench.util import layout, locks
from tests import support

REAL_BUILDS = (support.REPO_ROOT / "builds").resolve()
REAL_REPORTS = (support.REPO_ROOT / "reports").resolve()


def _go_env() -> dict[str, str]:
    """The real Go caches, computed once, before HOME is changed, so builds stay fast and
    offline; empty where there is no go (the unit tests need none)."""
    if shutil.which("go") is None:
        return {}
    out = subprocess.run(["go", "env", "GOCACHE", "GOMODCACHE", "GOPATH"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    return dict(zip(("GOCACHE", "GOMODCACHE", "GOPATH"), out, strict=True))


GO_ENV = _go_env()


def _forbid(path: Any) -> None:
    p = Path(path).resolve()
    for real in (REAL_BUILDS, REAL_REPORTS):
        if p == real or p.is_relative_to(real):
            raise AssertionError(f"a test reached the repository's own {real}: {p}")


def _guarded(fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(path: Any, *args: Any, **kwargs: Any) -> Any:
        _forbid(path)
        return fn(path, *args, **kwargs)

    return wrapper


def _guarded_method(fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(self: layout.Layout, *args: Any, **kwargs: Any) -> Any:
        _forbid(self.builds)
        return fn(self, *args, **kwargs)

    return wrapper


def _guarded_reports(fn: Any) -> Any:
    """``publish(results_file, reports, ...)``: the reports directory is the second argument."""

    @functools.wraps(fn)
    def wrapper(results_file: Any, reports: Any, *args: Any, **kwargs: Any) -> Any:
        _forbid(reports)
        return fn(results_file, reports, *args, **kwargs)

    return wrapper


@pytest.fixture(scope="session", autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    base = tmp_path_factory.mktemp("session-env")
    home = base / "home"
    home.mkdir()
    mp = pytest.MonkeyPatch()
    for key in list(os.environ):
        if key.startswith(("PATCHBENCH_", "GIT_")) or key in ("GOFLAGS", "GOENV"):
            mp.delenv(key)
    mp.setenv("HOME", str(home))
    mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    mp.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    # anything defaulting to the builds/reports directories lands here, never in the repository
    mp.setenv("PATCHBENCH_BUILDS", str(base / "default-builds"))
    mp.setenv("PATCHBENCH_REPORTS", str(base / "default-reports"))
    for key, value in GO_ENV.items():
        mp.setenv(key, value)
    mp.setenv("GOTOOLCHAIN", "local")
    mp.setenv("GOPROXY", "off")
    # the tripwire: in this process, the repository's own builds/ and reports/ are unusable
    mp.setattr(source, "cache_dir", _guarded(source.cache_dir))
    mp.setattr(source, "locked", _guarded(source.locked))
    mp.setattr(locks, "locked", _guarded(locks.locked))  # every cache write takes a lock
    mp.setattr(layout.Layout, "new_run", _guarded_method(layout.Layout.new_run))
    mp.setattr(runstore, "publish", _guarded_reports(runstore.publish))
    try:
        yield
    finally:
        mp.undo()


@pytest.fixture(scope="session")
def go_version() -> str:
    if shutil.which("go") is None:
        pytest.fail("this test needs go on PATH (it belongs in tests/integration)")
    return support.go_version()


@pytest.fixture(scope="session")
def upstream_template(tmp_path_factory: pytest.TempPathFactory) -> support.Upstream:
    return support.make_upstream(tmp_path_factory.mktemp("upstream-template") / "hello")


@pytest.fixture
def upstream(tmp_path: Path, upstream_template: support.Upstream) -> support.Upstream:
    """A private copy of the fixture upstream (tests may move its tags)."""
    return support.copy_upstream(upstream_template, tmp_path / "upstream")


@pytest.fixture
def project(tmp_path: Path, upstream: support.Upstream, go_version: str) -> support.Project:
    """A fixture project: matrix.yaml pinning upstream.a as v1 and four patch series."""
    proj = support.Project(tmp_path / "project", upstream, go_version, tmp_path / "builds",
                           tmp_path / "reports")
    proj.add_series("greet", ["greet"])
    proj.add_series("two", ["greet", "farewell"])
    proj.add_series("broken", ["broken"])
    proj.add_series("conflict", ["farewell", "conflict"])
    proj.write()
    return proj


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/integration uses the real git, go and hyperfine: mark it so, and
    `pytest -m "not integration"` runs the unit tests alone."""
    here = Path(__file__).resolve().parent / "integration"
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(here):
            item.add_marker(pytest.mark.integration)
