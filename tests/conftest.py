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

# every scenario kind registers its config and result models (a matrix is loaded and results are
# read only with the kinds registered: patchbench.config and patchbench.results import none)
from patchbench import scenarios  # noqa: F401
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


TESTS = Path(__file__).resolve().parent

# --- scheduling: two workers (pytest-xdist) when the integration tests run --------------------
# The integration tests spend most of their time waiting (deadlines, sleeps, dockerd, hyperfine's
# runs): a serial run used 45 % of one core. `python3 -m pytest` therefore runs them in two
# worker processes (`-n auto` in pyproject.toml, resolved below; `-n 0` runs everything in one),
# a whole file per worker at a time, the longest files first.

# Seconds each file took in a serial run (2026-12-01, load 3-5), for the order only: the longest
# start first, so that no long file is left to run alone at the end.
SECONDS = {
    "integration/test_docker_build.py": 32, "integration/test_workflow.py": 29,
    "integration/test_stress_exec.py": 25, "integration/test_docker_engine.py": 19,
    "integration/test_timed_hangs.py": 18, "integration/test_report_tools.py": 17,
    "integration/test_planted.py": 15, "integration/test_demo.py": 13,
    "faults/test_results_safe.py": 12, "integration/test_docker_run_flow.py": 9,
    "integration/test_soak.py": 8, "integration/test_series_ref.py": 8,
    "integration/test_stress.py": 8, "integration/test_burst.py": 8, "integration/test_cli.py": 7,
    "unit/test_reproduce_reports.py": 6,
}
# files that each start a Docker engine of their own run in one worker, one after the other
DOCKER = ("integration/test_docker_build.py", "integration/test_docker_engine.py",
          "integration/test_docker_run_flow.py")
WORKERS = 2


def _rel(path: Path | str) -> str:
    p = Path(path).resolve()
    return p.relative_to(TESTS).as_posix() if p.is_relative_to(TESTS) else p.as_posix()


def _weight(rel: str) -> float:
    return sum(SECONDS.get(f, 0) for f in DOCKER) if rel in DOCKER else SECONDS.get(rel, 0)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers when the integration tests are among the arguments (or the
    arguments are the default, tests/), none otherwise: a unit file starts faster without."""
    args = [a.split("::", 1)[0] for a in config.args] or [str(TESTS)]
    integration = TESTS / "integration"
    for a in args:
        p = Path(config.invocation_params.dir, a).resolve()
        if p.is_dir() and integration.is_relative_to(p):
            return WORKERS
    return 0


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole files per worker (module fixtures are built once), in the order of the collection
    (the longest first, below), with the Docker files as one unit."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            rel = "tests/" + nodeid.split("::", 1)[0].removeprefix("tests/")
            return "docker" if rel.removeprefix("tests/") in DOCKER else rel

    config.option.loadscopereorder = False
    return ByFile(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/integration uses the real git, go and hyperfine: mark it so, and
    `pytest -m "not integration"` runs the unit tests alone. The longest files first (SECONDS),
    the rest in their order; within a file, the file's own order."""
    here = TESTS / "integration"
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(here):
            item.add_marker(pytest.mark.integration)
    order = {id(item): n for n, item in enumerate(items)}
    items.sort(key=lambda item: (-_weight(_rel(str(item.fspath))), order[id(item)]))
