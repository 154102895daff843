"""Test isolation: every test runs with HOME, the builds and reports directories in temporary
directories, offline Go settings, and a tripwire that fails any code reaching the repository's
own builds/ or reports/."""

from __future__ import annotations

import functools
import getpass
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# every scenario kind registers its config and result models (a matrix is read with the kinds)
from patchbench import scenarios  # noqa: F401
from patchbench.measure import launcher
from patchbench.runs import store as runstore
from patchbench.source import cache as source
from patchbench.util import cleanup, layout, locks
from tests import support

# --- the tests' temporary directories in memory -----------------------------------------------
# The tests write about 0.9 GB of throwaway files per run (a Docker engine's image store, builds,
# git repositories). On the disk, that writeback made the fsync of patchbench's atomic writes,
# Chromium's profile and cargo stall for seconds (ext4 orders a journal commit after the dirty
# data; IO pressure "full" 10-14 % over 5 minutes): single tests took 10x their time alone
# (Chromium 27 s against 2.5 s, a Rust build 22 s against 1.7 s) and the run 201-234 s; in
# /dev/shm it took 175-189 s with two workers (2026-12-02). So a run puts them there when
# /dev/shm is a tmpfs that allows executables, with TMPFS_FREE free in it and in memory, or when
# earlier runs' directories are there already (pytest removes them only where it puts its own:
# a run elsewhere would leave them in memory). PYTEST_DEBUG_TEMPROOT (pytest's own variable),
# TMPDIR or --basetemp choose another place. Nothing in the tests measures the disk; the
# integration tests passed with /dev/shm mounted nosuid,nodev too.
TMPFS = Path("/dev/shm")
TMPFS_FREE = 8 << 30


def _mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def _in_memory(path: Path) -> bool:
    """Whether ``path`` is on a tmpfs: the mount with the longest prefix, the last of equal ones
    (the one in effect)."""
    try:
        where = path.resolve()
        mounts = [f for line in Path("/proc/self/mounts").read_text().splitlines()
                  if len(f := line.split()) >= 3]
    except OSError:
        return False
    best: tuple[int, str] = (-1, "")
    for _, point, kind, *_ in mounts:
        if where.is_relative_to(point) and len(point) >= best[0]:
            best = (len(point), kind)
    return best[1] == "tmpfs"


def _tmpfs_usable(path: Path) -> bool:
    try:
        st = os.statvfs(path)
        free = min(st.f_bavail * st.f_frsize, _mem_available())
    except (OSError, ValueError):
        return False
    if not _in_memory(path) or st.f_flag & os.ST_NOEXEC:
        return False
    if not os.access(path, os.W_OK | os.X_OK):
        return False
    try:
        ours = path / f"pytest-of-{getpass.getuser()}"
    except (KeyError, OSError):  # no user name: pytest says "unknown"
        ours = path / "pytest-of-unknown"
    there = ours.is_dir() and not ours.is_symlink()
    return free >= TMPFS_FREE or (there and free >= TMPFS_FREE // 4)


if (not os.environ.get("PYTEST_DEBUG_TEMPROOT") and not os.environ.get("TMPDIR")
        and _tmpfs_usable(TMPFS)):
    os.environ["PYTEST_DEBUG_TEMPROOT"] = str(TMPFS)  # the workers inherit it

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


def _one_sweep_at_a_time(fn: Any) -> Any:
    """``cleanup.sweep_cgroups`` under support.CGROUP_SWEEP (a lock all test processes share)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with support.CGROUP_SWEEP:
            return fn(*args, **kwargs)

    return wrapper


def _shared_launcher(real: Any, session_dir: Path) -> Any:
    """``launcher.build`` through one build per test process: every measuring test has a builds
    directory of its own, and each used to link the launcher again (about 1 s of CPU). The first
    call builds it for real into a session directory; later calls copy that binary into the
    layout's tools/ under the name the real function uses (from the package's pin), then run
    the real function, which hashes it against the pin and finds it there. So each run still
    builds it once for real, with the real function."""

    @functools.wraps(real)
    def build(lay: layout.Layout) -> Path:
        built = real(layout.Layout(session_dir / "builds", session_dir / "reports"))
        dest = lay.tools / built.name
        if not dest.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
            shutil.copy2(built, tmp)
            os.replace(tmp, dest)
        return Path(real(lay))

    return build


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
    # one Go build cache for every builds/ of the session (upstream builds write it; a patched
    # build copies it): each test's builds/ would otherwise compile Go's standard library again
    mp.setenv("PATCHBENCH_GO_CACHE", str(base / "go-cache"))
    # the tripwire: in this process, the repository's own builds/ and reports/ are unusable
    mp.setattr(source, "cache_dir", _guarded(source.cache_dir))
    mp.setattr(source, "locked", _guarded(source.locked))
    mp.setattr(locks, "locked", _guarded(locks.locked))  # every cache write takes a lock
    mp.setattr(layout.Layout, "new_run", _guarded_method(layout.Layout.new_run))
    mp.setattr(runstore, "publish", _guarded_reports(runstore.publish))
    mp.setattr(launcher, "build", _shared_launcher(launcher.build, base / "launcher"))
    mp.setattr(cleanup, "sweep_cgroups", _one_sweep_at_a_time(cleanup.sweep_cgroups))
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


@pytest.fixture(scope="session")
def docker_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The engine and image state (``engine/``, ``images/``) the Docker build and engine files
    share in a test process: the go-busybox image (the host's GOROOT in a layer: about 10 s) is
    built by the first of them and found by the other when both run in one worker. Each stops
    the engine it started before its file ends."""
    return tmp_path_factory.mktemp("docker-state")


def _project(tmp_path: Path, upstream: support.Upstream, go_version: str) -> support.Project:
    proj = support.Project(tmp_path / "project", upstream, go_version, tmp_path / "builds",
                           tmp_path / "reports")
    proj.add_series("greet", ["greet"])
    proj.add_series("two", ["greet", "farewell"])
    proj.add_series("broken", ["broken"])
    proj.add_series("conflict", ["farewell", "conflict"])
    proj.write()
    return proj


@pytest.fixture
def project(tmp_path: Path, upstream: support.Upstream, go_version: str) -> support.Project:
    """A fixture project: matrix.yaml pinning upstream.a as v1 and four patch series."""
    return _project(tmp_path, upstream, go_version)


@pytest.fixture(scope="session")
def prebuilt_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The artifact cache (``artifacts/``) the ``prebuilt_project`` tests of a test process share."""
    return tmp_path_factory.mktemp("prebuilt") / "artifacts"


@pytest.fixture
def prebuilt_project(tmp_path: Path, upstream_template: support.Upstream, go_version: str,
                     prebuilt_store: Path) -> Iterator[support.Project]:
    """The fixture project for a test that measures builds and asserts nothing about building
    them (a file takes it as its ``project``): its builds directory is its own, but its
    ``artifacts/`` starts with what earlier such tests in this process built, so the baseline
    and greet builds (0.6-1.3 s a test) are found in the cache as in a user's second run (and
    re-hashed before they are measured). It builds the session's upstream template itself, not
    a private copy (it moves no tag), so that the cached manifests name this test's source."""
    proj = _project(tmp_path, upstream_template, go_version)
    if prebuilt_store.is_dir():
        shutil.copytree(prebuilt_store, proj.builds / "artifacts", symlinks=True)
    yield proj
    mine = proj.builds / "artifacts"
    for d in mine.glob("*/*"):  # what this test built, for the next (complete entries only)
        dest = prebuilt_store / d.relative_to(mine)
        if (d / "COMPLETE").is_file() and not dest.exists():
            tmp = dest.with_name(f".{dest.name}.tmp")
            shutil.copytree(d, tmp, symlinks=True)
            os.replace(tmp, dest)


TESTS = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C is Ctrl-C in the tests that send it, even when the run was started with SIGINT
    ignored (a background job of a non-interactive shell, `nohup`): an ignored SIGINT is inherited
    by every worker and every patchbench the tests start, and Python then never raises
    KeyboardInterrupt (test_an_interrupted_build_is_not_cached, test_ctrl_c_removes_the_container
    failed so)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/integration uses the real git, go and hyperfine: mark it so, and
    `pytest -m "not integration"` runs the unit tests alone."""
    here = TESTS / "integration"
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(here):
            item.add_marker(pytest.mark.integration)
