"""Test isolation: every test runs with HOME, the builds and reports directories in temporary
directories, offline Go settings, and a tripwire that fails any code reaching the repository's
own builds/ or reports/."""

from __future__ import annotations

import contextlib
import functools
import gc
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
# three workers only with the temporary directories in memory (scheduling, below)
IN_MEMORY = _in_memory(Path(os.environ.get("PYTEST_DEBUG_TEMPROOT")
                            or os.environ.get("TMPDIR") or "/tmp"))

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
    layout's tools/ under the name the real function computes (from the sources and `go
    version`), then run the real function, which finds it there. So each run still builds it
    once for real, with the real function."""

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


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    """A test that loads a project in-process freezes what exists (util/gcpause.py), which is
    the whole test process's: undone after each test, so that what one leaves in cycles is
    collected as before."""
    yield
    gc.unfreeze()


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
    built by the first of them and found by the other. They run one after the other in one
    worker (DOCKER, below), and each stops the engine it started before its file ends."""
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

# --- scheduling: three pytest-xdist workers when a folder of tests runs -------------------------
# The integration tests spend most of their time waiting (deadlines, sleeps, dockerd, hyperfine's
# runs): two workers kept about one of the two cores busy. `python3 -m pytest` runs them in three
# worker processes (`-n auto` in pyproject.toml, resolved below; `-n 0` runs everything in one,
# `-n 2` in two), a whole file per worker at a time, the longest files first. The third worker
# (SIDE_WORKER) is a side worker: it takes only the files that mostly wait and time nothing
# (SIDE), niced (NICE), and stops when none is left; the other two take any file at the run's own
# priority. Until 2026-12-02 this lost a timed test in about one run of five (the bisect history
# test, the planted delay: a commit's rounds slowed 10x for a few seconds, docs/cost.md), when the
# tests' files were on the disk and the side worker took the unit and fault files too (CPU it
# spent beside the timed tests). With the temporary directories in memory (above) and the side
# worker on SIDE alone, three workers ran the suite in 136-179 s (seven runs), two in 175-189 s.

# Seconds each file took (2026-12-01 19:22 UTC, a fresh clone, two workers, load 1.2-2.3: 170.5 s;
# less the later cuts of planted, stress_exec, workflow, stress, measure, ctrstress_apply and
# docker_engine), for the order only: the longest start first, so that no long file is left to
# run alone at the end; files not named count 0.
SECONDS = {
    "integration/test_bisect.py": 46, "integration/test_docker_build.py": 31,
    "integration/test_demo.py": 17, "integration/test_docker_engine.py": 13,
    "integration/test_planted.py": 11, "integration/test_stress_exec.py": 10,
    "integration/test_timed_hangs.py": 9, "integration/test_report_tools.py": 9,
    "integration/test_docker_run_flow.py": 9, "integration/test_mounts_runc.py": 8,
    "integration/test_cli.py": 8, "integration/test_workflow.py": 8,
    "integration/test_burst.py": 6, "integration/test_build.py": 6,
    "faults/test_patch_forms.py": 6, "unit/test_reproduce_reports.py": 6,
    "integration/test_rust_toolchain.py": 6, "faults/test_cache_verify.py": 6,
    "integration/test_series_ref.py": 5, "integration/test_own_patch.py": 5,
    "integration/test_stress.py": 5, "faults/test_parsing.py": 5,
    "integration/test_c_submodules.py": 4, "integration/test_soak.py": 4,
    "integration/test_patch_apply.py": 4, "integration/test_command.py": 4,
    "integration/test_measure.py": 4, "unit/test_stats_paired.py": 4,
    "unit/test_paired_verdict.py": 3, "integration/test_containerd.py": 3,
    "integration/test_apple_container_flow.py": 3, "faults/test_small.py": 3,
    "faults/test_results_safe.py": 3, "integration/test_ctrstress_apply.py": 2,
    "integration/test_overlay.py": 2, "integration/test_conditions.py": 2,
    "integration/test_help.py": 2, "faults/test_trust_property.py": 2, "faults/test_escaped.py": 2,
    "unit/test_hangs.py": 1.7, "unit/test_stats.py": 1.2,
}
# files that each start a Docker engine of their own run in one worker, one after the other, on
# one engine and image state (docker_state, above)
DOCKER = ("integration/test_docker_build.py", "integration/test_docker_engine.py",
          "integration/test_docker_run_flow.py")
# the unit files that check against scipy.stats, whose import costs a worker about 1.1 s of CPU:
# one worker imports it for all of them
SCIPY = ("unit/test_stats_paired.py", "unit/test_stats.py", "unit/test_hangs.py",
         "unit/test_rundiff_merge.py")
# the integration files the side worker takes: they wait on deadlines, sleeps and signals, start no
# Docker engine, build nothing big and assert no measured time beyond a deadline
SIDE = ("integration/test_stress_exec.py", "integration/test_mounts_runc.py",
        "integration/test_timed_hangs.py", "integration/test_soak.py", "integration/test_stress.py",
        "integration/test_ctrstress_apply.py", "integration/test_measure.py",
        "integration/test_command.py", "integration/test_containerd.py",
        "integration/test_deadline.py")
SIDE_WORKER = "gw2"  # with -n 3 or more
NICE = 10  # the side worker's niceness, above the run's own
WORKERS = 3


def _rel(path: Path | str) -> str:
    p = Path(path).resolve()
    return p.relative_to(TESTS).as_posix() if p.is_relative_to(TESTS) else p.as_posix()


def _weight(rel: str) -> float:
    for group in (DOCKER, SCIPY):
        if rel in group:
            return sum(SECONDS.get(f, 0) for f in group)
    return SECONDS.get(rel, 0)


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C is Ctrl-C in the tests that send it, even when the run was started with SIGINT
    ignored (a background job of a non-interactive shell, `nohup`): an ignored SIGINT is inherited
    by every worker and every patchbench the tests start, and Python then never raises
    KeyboardInterrupt (test_an_interrupted_build_is_not_cached, test_ctrl_c_removes_the_container
    failed so)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: three workers when a folder holding integration tests is among the arguments
    (or the arguments are the default, tests/) and the temporary directories are in memory (on
    the disk, two: three lost a timed test in about one run of five there), two for another
    folder (the side worker would find nothing to take), none for files: a unit file starts
    faster without. tests/unit alone
    took 36.6 s in one process and 19.5 s in two (load 1, 2026-12-01)."""
    args = [a.split("::", 1)[0] for a in config.args] or [str(TESTS)]
    folders = [p for a in args if (p := Path(config.invocation_params.dir, a).resolve()).is_dir()]
    here = TESTS / "integration"
    if any(here.is_relative_to(p) or p.is_relative_to(here) for p in folders):
        return WORKERS if IN_MEMORY else 2
    return 2 if folders else 0


def _for_side(scope: str) -> bool:
    """Whether the side worker takes this file (a SIDE file)."""
    return scope.removeprefix("tests/") in SIDE


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole files per worker (module fixtures are built once), in the order of the collection
    (the longest first, below), with the Docker files as one unit and the scipy files as one.
    With a side worker (-n 3 or more), it takes SIDE files and stops when only others are left
    (unless it is the only worker left); the other workers take the first file not in SIDE, else
    a SIDE one."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            rel = nodeid.split("::", 1)[0].removeprefix("tests/")
            return "docker" if rel in DOCKER else "scipy" if rel in SCIPY else "tests/" + rel

        def _next_for(self, node: Any) -> str | None:
            alone = all(n is node or n.shutting_down for n in self.nodes)  # e.g. one file to run
            if node.gateway.id == SIDE_WORKER and not alone:
                return next((s for s in self.workqueue if _for_side(s)), None)
            side = any(n.gateway.id == SIDE_WORKER and not n.shutting_down for n in self.nodes)
            return next((s for s in self.workqueue if not side or not _for_side(s)),
                        next(iter(self.workqueue), None))

        def _assign_work_unit(self, node: Any) -> None:
            scope = self._next_for(node)
            if scope is None:
                return
            self.workqueue.move_to_end(scope, last=False)  # the base class takes the first
            super()._assign_work_unit(node)

        def _reschedule(self, node: Any) -> None:
            if (not node.shutting_down and self.workqueue and self._next_for(node) is None
                    and self._pending_of(self.assigned_work[node]) == 0):
                node.shutdown()  # what is left is not for the side worker
                return
            super()._reschedule(node)

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
    # the side worker, in a run with integration tests beside it: niced (above)
    if os.environ.get("PYTEST_XDIST_WORKER") == SIDE_WORKER and any(
            Path(str(item.fspath)).resolve().is_relative_to(here) for item in items):
        os.nice(NICE)


# --- the earlier runs' temporary directories, removed while this run's tests run --------------
# pytest keeps the temporary directories of the last 3 runs and, at the end of a run, removes the
# one that falls out of them: a whole earlier run's tree (about 35,000 files and 0.9 GB here,
# mostly a test Docker engine's image store), which took 10-25 s after the last test had finished
# (py-spy, 2026-12-02). The process that runs the session (the xdist controller) starts that
# removal at the start instead, with rm at the lowest priority beside the tests, which leave a
# core idle about half the time, and waits for it at the end: the same directories go, by the
# same rules (pytest's own candidates and locks), and no process outlives the run.
_EARLY_CLEANUP: list[subprocess.Popen[bytes]] = []
EARLY_PREFIX = "garbage-early-"  # pytest removes garbage-* directories whose lock is not live


def _early_cleanup(config: pytest.Config) -> None:
    from _pytest import pathlib as pytest_pathlib

    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None or factory._given_basetemp is not None:
        return  # --basetemp: pytest empties that one itself, at the start
    policy_keep = 0 if factory._retention_policy == "none" else factory._retention_count
    basetemp = factory.getbasetemp()  # xdist makes it here for its workers anyway
    root = basetemp.parent
    dead_before = basetemp.stat().st_mtime - pytest_pathlib.LOCK_TIMEOUT
    garbage = []
    # what an earlier run's removal left (interrupted): its process is gone
    for path in root.glob(f"{EARLY_PREFIX}*"):
        pid = path.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            garbage.append(str(path))
    for path in list(pytest_pathlib.cleanup_candidates(root, "pytest-", policy_keep)):
        if path == basetemp or not pytest_pathlib.ensure_deletable(path, dead_before):
            continue
        target = root / f"{EARLY_PREFIX}{path.name}-{os.getpid()}"
        try:
            path.rename(target)
            # a live lock: another run's pytest, which removes every garbage-* directory it
            # finds at its end, leaves this one to the rm below (and to this run's own cleanup
            # after the rm)
            (target / ".lock").touch()
        except OSError:
            continue  # another run took it first
        garbage.append(str(target))
    if garbage:
        _EARLY_CLEANUP.append(subprocess.Popen(
            ["rm", "-rf", "--", *garbage], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, preexec_fn=lambda: os.nice(19)))


def pytest_sessionstart(session: pytest.Session) -> None:
    """The xdist controller of a run with workers (a folder of tests): a run of one file, without
    workers, leaves pytest's cleanup as it is and makes no temporary directory it does not need."""
    if session.config.pluginmanager.has_plugin("dsession"):
        _early_cleanup(session.config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Wait for the early removal of the earlier runs' directories (above), before pytest's own
    cleanup looks at them.

    Hypothesis's pytest plugin imports all of Hypothesis for its end-of-run summary (1-2 s at
    the end of every run). When nothing in this process imported Hypothesis (a unit run, the
    xdist controller) it has nothing to say: unregister it. A failing example a worker reported
    keeps it."""
    import sys

    while _EARLY_CLEANUP:
        proc = _EARLY_CLEANUP.pop()
        with contextlib.suppress(OSError):  # waited for now: at the run's own priority
            os.setpriority(os.PRIO_PROCESS, proc.pid, os.getpriority(os.PRIO_PROCESS, 0))
        proc.wait()
    pm = session.config.pluginmanager
    plugin = pm.get_plugin("hypothesispytest")
    if plugin is None or "hypothesis" in sys.modules:
        return
    reporter = pm.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {}) if reporter is not None else {}
    if any("_hypothesis_failing_examples" in getattr(r, "__dict__", {})
           for reports in stats.values() for r in reports):
        return
    pm.unregister(plugin)
