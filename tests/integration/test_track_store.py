"""The track database for real, on SQLite and on a PostgreSQL server this module starts from
Debian's binaries (``initdb`` and ``pg_ctl`` of /usr/lib/postgresql/*/bin, in a temporary folder,
on a unix socket only; `.ci/install` installs the package): the schema migrated by Alembic
matches the tables, points and changes round-trip, a commit is never stored twice, writers in
several processes at once lose nothing, one run per track at a time, and values are never
assembled into SQL."""

from __future__ import annotations

import concurrent.futures
import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbench.errors import ConfigError
from patchbench.track import database as st
from patchbench.track import schema

pytestmark = pytest.mark.integration


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name))
    return Path(found[-1]).parent if found else None


@contextlib.contextmanager
def _postgres() -> Iterator[str]:
    """A PostgreSQL server of our own for the module: a cluster in a temporary folder, listening
    on a unix socket there only, stopped and removed at the end; its URL."""
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL's server binaries are not installed (Debian's postgresql; "
                    "`bash .ci/install` installs them)")
    as_root = os.geteuid() == 0
    if as_root:
        try:
            user = pwd.getpwnam("postgres")  # initdb refuses root: Debian's package makes it
        except KeyError:
            pytest.skip("running as root and there is no postgres user to run the server as")
    else:
        user = pwd.getpwuid(os.geteuid())
    base = Path(tempfile.mkdtemp(prefix="patchbench-pg-"))
    os.chmod(base, 0o755)
    os.chown(base, user.pw_uid, user.pw_gid)

    def as_user() -> None:
        if as_root:
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)

    def run(*args: str) -> None:
        res = subprocess.run(args, capture_output=True, text=True, timeout=120,
                             preexec_fn=as_user, cwd=base, check=False,
                             env={"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"})
        assert res.returncode == 0, f"{args[0]}: {res.stdout}{res.stderr}"

    data = base / "data"
    run(str(bindir / "initdb"), "-D", str(data), "-U", "bench", "--auth=trust", "-E", "UTF8",
        "--no-instructions")
    run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(base / "log"), "-w", "-o",
        f"-k {base} -c listen_addresses= -p 54329 -c fsync=off", "start")
    try:
        yield f"postgresql://bench@/postgres?host={base}&port=54329"
    finally:
        with contextlib.suppress(AssertionError):
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with _postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'track.db'}"
        return
    base: str = request.getfixturevalue("pg_url")
    # a database of its own per test
    db = f"t{abs(hash(request.node.name)) % 10**9}"
    s = st.open_store(base, tmp_path / "unused.db")
    try:
        with s.engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            from sqlalchemy import text

            conn.execute(text(f'DROP DATABASE IF EXISTS "{db}"'))  # a name made here
            conn.execute(text(f'CREATE DATABASE "{db}"'))
    finally:
        s.close()
    yield base.replace("/postgres?", f"/{db}?")


SHA = [f"{i:040x}" for i in range(1, 200)]


def _open(url: str, tmp: Path) -> st.Store:
    return st.open_store(url, tmp / "default.db")


def _track(s: st.Store) -> st.Track:
    return s.track("demo", target="demo", url="https://example.invalid/demo.git",
                   branch="main", reference="f" * 40)


def _value(ratio: float) -> st.Value:
    return st.Value(series="", metric="wall", verdict="slower", unit="s", ratio=ratio,
                    ci_low=ratio * 0.9, ci_high=ratio * 1.1, p_value=0.01, value=0.004,
                    ref_value=0.003)


def test_the_schema_is_migrated_and_matches_the_tables(url: str, tmp_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    s = _open(url, tmp_path)
    try:
        assert s.revision() == "0001"
        with s.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), schema.metadata)
        assert diff == []
        assert s.migrate() == "0001"  # again: nothing to do
    finally:
        s.close()


def test_points_and_changes_round_trip_and_a_commit_is_stored_once(url: str,
                                                                    tmp_path: Path) -> None:
    s = _open(url, tmp_path)
    try:
        tr = _track(s)
        assert _track(s) == tr  # found again, not made twice
        run = s.start_run(tr, 7, "patchbench test")
        for depth, sha in ((3, SHA[2]), (1, SHA[0]), (2, SHA[1])):
            s.add_commit(tr, sha, f"commit at {depth}", f"2026-11-0{depth}T00:00:00Z", depth)
            assert s.add_point(tr, run, scenario="start", sha=sha, kind="command", factor=1,
                               seed=1, result={"x": 1}, warnings=[],
                               values=[_value(1.0 + depth / 10)]) is not None
        # the same commit again (a resumed or a concurrent run): refused, nothing added
        assert s.add_point(tr, run, scenario="start", sha=SHA[1], kind="command", factor=1,
                           seed=2, result={}, warnings=[], values=[_value(9.0)]) is None
        series = s.series(tr)
        assert [p.commit.sha for p in series] == SHA[:3]  # along the branch, by depth
        assert [p.value.ratio for p in series] == pytest.approx([1.1, 1.2, 1.3])
        assert s.measured(tr) == {("start", sha) for sha in SHA[:3]}
        ch = st.ChangeRow(scenario="start", series="", metric="wall", before_sha=SHA[0],
                          after_sha=SHA[1], direction="regression", detect_p=1e-5,
                          magnitude=1.5, status="confirmed", found_at=st.now(), run_id=run,
                          ab={"ratio": 1.5, "ci": [1.4, 1.6]}, culprit=SHA[1],
                          culprit_subject="the culprit", bisect={"outcome": "found"})
        assert s.add_change(tr, ch) and not s.add_change(tr, ch)
        (back,) = s.changes(tr)
        assert back.key == ch.key and back.ab == ch.ab and back.culprit == SHA[1]
        s.finish_run(run, "finished")
        assert s.run_statuses(tr) == [(run, "finished")]
    finally:
        s.close()


def test_values_are_bound_never_assembled_into_sql(url: str, tmp_path: Path) -> None:
    s = _open(url, tmp_path)
    try:
        tr = _track(s)
        run = s.start_run(tr, 1, "t")
        evil = "start'); DROP TABLE points; --"
        s.add_commit(tr, SHA[0], "it's \"quoted\"; DELETE FROM runs;", "2026", 1)
        assert s.add_point(tr, run, scenario=evil, sha=SHA[0], kind="command", factor=1, seed=1,
                           result={}, warnings=[], values=[_value(1.0)]) is not None
        (p,) = s.series(tr)
        assert p.scenario == evil and p.commit.subject.startswith("it's")
    finally:
        s.close()


def _write_points(url: str, tmp: str, first: int, count: int) -> int:
    """A writer process: ``count`` points from SHA[first]; the ones it added."""
    s = st.open_store(url, Path(tmp) / "default.db")
    try:
        tr = _track(s)
        run = s.start_run(tr, first, "writer")
        added = 0
        for sha in SHA[first:first + count]:
            s.add_commit(tr, sha, "c", "2026", SHA.index(sha))
            added += s.add_point(tr, run, scenario="start", sha=sha, kind="command", factor=1,
                                 seed=1, result={"sha": sha}, warnings=[],
                                 values=[_value(1.0)]) is not None
        s.finish_run(run, "finished")
        return added
    finally:
        s.close()


def test_writers_in_several_processes_lose_nothing_and_never_store_a_commit_twice(
        url: str, tmp_path: Path) -> None:
    _open(url, tmp_path).close()  # migrated once (concurrent migrations are serialised too)
    # four writers, each overlapping the next by 10 commits: 70 distinct commits
    starts = [0, 10, 20, 30, 40]
    with concurrent.futures.ProcessPoolExecutor(4) as pool:
        added = list(pool.map(_write_points, [url] * 5, [str(tmp_path)] * 5, starts,
                              [30, 30, 30, 30, 30]))
    s = _open(url, tmp_path)
    try:
        tr = _track(s)
        assert sum(added) == 70 and s.point_count(tr) == 70
        assert len(s.series(tr)) == 70
        assert [st_ for _, st_ in s.run_statuses(tr)] == ["finished"] * 5
    finally:
        s.close()


def _hold_and_try(url: str, tmp: str) -> str:
    """In another process: try to take the track's run lock."""
    s = st.open_store(url, Path(tmp) / "default.db")
    try:
        with s.run_lock("demo"):
            return "taken"
    except ConfigError as exc:
        return exc.message
    finally:
        s.close()


def test_one_run_per_track_at_a_time(url: str, tmp_path: Path) -> None:
    import multiprocessing

    spawn = multiprocessing.get_context("spawn")  # a process of its own, not a fork of this one
    s = _open(url, tmp_path)
    try:
        with s.run_lock("demo"), concurrent.futures.ProcessPoolExecutor(1, spawn) as pool:
            said = pool.submit(_hold_and_try, url, str(tmp_path)).result(timeout=60)
            assert said.startswith("another track run of demo is running")
            other = pool.submit(_hold_and_try_other, url, str(tmp_path)).result(timeout=60)
            assert other == "taken"  # another track is not held
        with concurrent.futures.ProcessPoolExecutor(1, spawn) as pool:  # released with the run
            assert pool.submit(_hold_and_try, url, str(tmp_path)).result(timeout=60) == "taken"
    finally:
        s.close()


def _hold_and_try_other(url: str, tmp: str) -> str:
    s = st.open_store(url, Path(tmp) / "default.db")
    try:
        with s.run_lock("other"):
            return "taken"
    finally:
        s.close()


def test_a_url_is_shown_without_its_password(pg_url: str, tmp_path: Path) -> None:
    u = st.engine_url("postgresql://bench:s3cret@db.example/track", tmp_path / "x.db")
    assert u.drivername == "postgresql+psycopg"
    assert "s3cret" not in u.render_as_string(hide_password=True)
    assert "s3cret" not in st.shown_text("postgresql://bench:s3cret@db.example/track")
    with pytest.raises(ConfigError, match="not supported"):
        st.engine_url("mysql://x@y/z", tmp_path / "x.db")
    with pytest.raises(ConfigError) as refused:
        # a server that refuses: said as a config error naming the database without secrets
        st.open_store(pg_url.replace("bench@", "nobody:s3cret@"), tmp_path / "x.db")
    assert "nobody" in refused.value.message and "s3cret" not in refused.value.render()


def test_a_file_that_is_not_a_database_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    junk = tmp_path / "notes.db"
    junk.write_text("not a database, but a file someone gave as --db\n" * 100)
    with pytest.raises(ConfigError) as refused:
        st.open_store(f"sqlite:///{junk}", tmp_path / "default.db")
    assert "not a database" in refused.value.message and str(junk) in refused.value.message
    assert junk.read_text().startswith("not a database")  # left as it was


@pytest.mark.parametrize(("column", "value"), [
    ("ab", '{"ratio": "fast", "ci": [1.4, 1.6]}'), ("ab", '{"ci": "wide"}'),
    ("ab", '{"hangs": -3, "runs": 10, "before_hangs": 0, "before_runs": 10}'),
    ("bisect", '{"outcome": "found", "range": [1, 2]}'), ("bisect", '{"report": 7}'),
    ("direction", "sideways"), ("status", "maybe"), ("detect_p", "low")])
def test_a_change_read_back_is_checked(tmp_path: Path, column: str, value: str) -> None:
    """A change row altered in the database (a shared file, a team's server) is refused when read
    back (exit 18), not trusted by the summary and the dashboard."""
    import sqlite3

    from patchbench.errors import ReportError

    s = _open(f"sqlite:///{tmp_path / 'track.db'}", tmp_path)
    try:
        tr = _track(s)
        run = s.start_run(tr, 1, "t")
        assert s.add_change(tr, st.ChangeRow(
            scenario="start", series="", metric="wall", before_sha=SHA[0], after_sha=SHA[1],
            direction="regression", detect_p=1e-5, magnitude=1.5, status="confirmed",
            found_at=st.now(), run_id=run, ab={"ratio": 1.5, "ci": [1.4, 1.6], "p": 0.001},
            culprit=SHA[1], bisect={"outcome": "found", "first_bad": SHA[1]}))
        assert len(s.changes(tr)) == 1  # as written: read back
        with contextlib.closing(sqlite3.connect(tmp_path / "track.db")) as db, db:
            # (SQLite keeps what it is given, a text in a number's column too)
            db.execute(f"UPDATE changes SET {column} = ?", (value,))  # a column named above
        with pytest.raises(ReportError, match="track database"):
            s.changes(tr)
    finally:
        s.close()


def test_a_result_and_a_change_holding_nan_are_stored_with_null(tmp_path: Path) -> None:
    """A measurement's result may hold NaN (a cell whose every run hung has no median; a fit of
    too few rounds): it is stored as strict JSON with null, as results.json is, not refused."""
    import json

    s = _open(f"sqlite:///{tmp_path / 'track.db'}", tmp_path)
    try:
        tr = _track(s)
        run = s.start_run(tr, 1, "t")
        s.add_commit(tr, SHA[0], "c", "2026", 1)
        assert s.add_point(tr, run, scenario="start", sha=SHA[0], kind="command", factor=1,
                           seed=1, result={"cells": [{"median": float("nan")}],
                                           "fit": [float("inf"), 1.0]},
                           warnings=[], values=[_value(1.0)]) is not None
        with s._begin() as conn:
            (stored,) = conn.execute(schema.points.select()).mappings().all()
        assert json.loads(stored["result"]) == {"cells": [{"median": None}], "fit": [None, 1.0]}
        assert s.add_change(tr, st.ChangeRow(
            scenario="start", series="", metric="wall", before_sha=SHA[0], after_sha=SHA[1],
            direction="regression", detect_p=1e-5, magnitude=1.5, status="not-confirmed",
            found_at=st.now(), run_id=run, ab={"ratio": None, "p": float("nan")},
            bisect={}))
        (back,) = s.changes(tr)
        assert back.ab == {"ratio": None, "p": None}
    finally:
        s.close()
