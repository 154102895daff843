"""The track database: SQLite by default (``reports/track/track.db``), PostgreSQL with
``--db postgresql://...`` (the psycopg 3 driver), both through SQLAlchemy Core, the schema
versioned and migrated by Alembic when the database is opened (patchbench/track/migrations).

- Every statement is built by SQLAlchemy with bound parameters; no SQL text is assembled from
  values.
- Writers are safe side by side: SQLite in WAL mode, each transaction ``BEGIN IMMEDIATE`` with
  a busy timeout (writers queue, readers go on); PostgreSQL's own transactions. A point is
  written in one transaction with its values, and a unique key (track, scenario, commit,
  reference) refuses a second measurement of a commit.
- One ``track`` run per track at a time (:meth:`Store.run_lock`): a flock beside the SQLite file,
  a session-level advisory lock in PostgreSQL; either goes with the process that holds it,
  however it ends, and the next run marks a run left ``running`` as interrupted.
- What is read back is checked: SHAs are 40 hex digits, numbers are finite or null, a change's
  direction, status and the A/B and bisect figures the outputs show have their forms, and no
  more than :data:`MAX_ROWS` rows of a kind are read.
- A password in a URL is never printed or stored (``shown``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, func, insert, select, update
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.engine.url import URL
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError
from sqlalchemy.pool import NullPool

from patchbench.errors import ConfigError, ReportError
from patchbench.track import schema
from patchbench.util import files, locks

MAX_ROWS = 200_000  # points, values or changes read back for one track
BUSY_TIMEOUT_MS = 60_000  # SQLite: how long a writer waits for another's transaction
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_SHA = re.compile(r"[0-9a-f]{40}")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _sha(value: object, what: str) -> str:
    if not isinstance(value, str) or not _SHA.fullmatch(value):
        raise ReportError(f"the track database holds a {what} that is not a full SHA: "
                          f"{str(value)[:60]!r}", hint="it was not written by patchbench")
    return value


def _num(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReportError(f"the track database holds a number that is not one: {value!r}")
    f = float(value)
    return f if math.isfinite(f) else None


def _int(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ReportError(f"the track database holds a count that is not one: {value!r}")
    return value


@dataclass(frozen=True)
class Track:
    id: int
    name: str
    target: str
    url: str
    branch: str
    reference: str
    created_at: str


@dataclass(frozen=True)
class CommitRow:
    sha: str
    subject: str
    author_date: str
    depth: int

    @property
    def short(self) -> str:
        return self.sha[:12]


@dataclass(frozen=True)
class Value:
    """One series' value of a point (the commit against the reference)."""

    series: str
    metric: str
    verdict: str
    unit: str
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    value: float | None = None
    ref_value: float | None = None
    hangs: int | None = None
    runs: int | None = None
    ref_hangs: int | None = None
    ref_runs: int | None = None

    @property
    def rate(self) -> float | None:
        """Hangs per run of the commit (hangs only)."""
        return self.hangs / self.runs if self.hangs is not None and self.runs else None


@dataclass(frozen=True)
class SeriesPoint:
    """A value with the point and commit it belongs to."""

    point_id: int
    run_id: int
    scenario: str
    commit: CommitRow
    value: Value


@dataclass
class ChangeRow:
    scenario: str
    series: str
    metric: str
    before_sha: str
    after_sha: str
    direction: str
    detect_p: float
    magnitude: float
    status: str
    found_at: str
    run_id: int
    ab: dict[str, Any] = field(default_factory=dict)
    culprit: str | None = None
    culprit_subject: str | None = None
    bisect: dict[str, Any] = field(default_factory=dict)
    why: str = ""
    id: int | None = None

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return self.scenario, self.series, self.metric, self.before_sha, self.after_sha


def engine_url(url: str | None, default: Path) -> URL:
    """``--db URL`` (or the default SQLite file) as a SQLAlchemy URL with the driver patchbench
    uses: sqlite (pysqlite) or postgresql (psycopg 3)."""
    if url is None:
        return URL.create("sqlite+pysqlite", database=str(default))
    try:
        u = make_url(url)
    except ArgumentError:
        raise ConfigError(f"--db: {shown_text(url)!r} is not a database URL",
                          hint="sqlite:///path/track.db or postgresql://user@host/dbname") from None
    backend = u.get_backend_name()
    if backend == "sqlite":
        if not u.database or u.database == ":memory:":
            raise ConfigError("--db: a SQLite database must be a file (sqlite:///path/track.db)")
        return u.set(drivername="sqlite+pysqlite")
    if backend in ("postgresql", "postgres"):
        return u.set(drivername="postgresql+psycopg")
    raise ConfigError(f"--db: {backend!r} databases are not supported",
                      hint="sqlite:///path/track.db, or postgresql://user@host/dbname")


def shown_text(url: str) -> str:
    """A URL as it may be printed: its password replaced."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)


class Store:
    """An open track database (one Engine). Use :func:`open_store`."""

    def __init__(self, engine: Engine, url: URL) -> None:
        self.engine = engine
        self.url = url
        self.dialect = url.get_backend_name()

    @property
    def shown(self) -> str:
        return self.url.render_as_string(hide_password=True)

    @property
    def sqlite_path(self) -> Path | None:
        return Path(self.url.database or "") if self.dialect == "sqlite" else None

    def close(self) -> None:
        self.engine.dispose()

    # --- the schema --------------------------------------------------------------------------

    def migrate(self) -> str:
        """Bring the schema to the newest revision this patchbench knows (in one transaction,
        serialised between processes); return that revision."""
        from alembic import command
        from alembic.config import Config
        from alembic.script import ScriptDirectory
        from alembic.util import CommandError

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        head = ScriptDirectory.from_config(cfg).get_current_head()
        assert head is not None
        with self._begin() as conn:
            if self.dialect == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(_lock_key("migrate"))))
            cfg.attributes["connection"] = conn
            try:
                command.upgrade(cfg, "head")
            except CommandError as exc:
                raise ConfigError(f"the track database {self.shown} has a schema this patchbench "
                                  f"does not know ({exc})",
                                  hint="a newer patchbench wrote it: use that one") from None
        return head

    def revision(self) -> str | None:
        from alembic.runtime.migration import MigrationContext

        with self.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
        except IntegrityError:
            raise  # a row there already: the callers' answer, not a broken database
        except DatabaseError as exc:  # unreachable, refused, not a database, not allowed
            raise ConfigError(f"the track database {self.shown}: {str(exc.orig).strip()}",
                              hint="check --db (the file; or the server, the database, the "
                                   "user)") from None

    # --- one run at a time per track ----------------------------------------------------------

    @contextlib.contextmanager
    def run_lock(self, name: str) -> Iterator[None]:
        """Hold the track ``name`` for one run: a second run of it stops at once (exit 10)."""
        def busy() -> Exception:
            return ConfigError(f"another track run of {name} is running against {self.shown}",
                               hint="wait for it to end; its lock goes with its process")

        path = self.sqlite_path
        if path is not None:
            with locks.held(path.parent / f".{path.name}.{name}.lock", 0, on_timeout=busy):
                yield
            return
        with self.engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            got = conn.execute(select(func.pg_try_advisory_lock(_lock_key(name)))).scalar()
            if not got:
                raise busy()
            try:
                yield
            finally:
                conn.execute(select(func.pg_advisory_unlock(_lock_key(name))))

    # --- tracks, runs, commits ----------------------------------------------------------------

    def track(self, name: str, *, target: str, url: str, branch: str, reference: str) -> Track:
        """The track ``name``, made with ``reference`` pinned on first use; afterwards the
        stored reference stands (its branch is updated when given another)."""
        t = schema.tracks
        with self._begin() as conn:
            row = conn.execute(select(t).where(t.c.name == name)).mappings().first()
        if row is None:
            try:
                with self._begin() as conn:
                    conn.execute(insert(t).values(name=name, target=target, url=url,
                                                  branch=branch, reference=reference,
                                                  created_at=now()))
            except IntegrityError:  # made by another process meanwhile
                pass
        elif row["branch"] != branch:
            with self._begin() as conn:
                conn.execute(update(t).where(t.c.id == row["id"]).values(branch=branch))
        with self._begin() as conn:
            row = conn.execute(select(t).where(t.c.name == name)).mappings().one()
        if row["target"] != target:
            raise ConfigError(f"track {name}: the database tracks it for target "
                              f"{row['target']!r}, the comparison now measures {target!r}",
                              hint="track it under another database (--db) or keep its target")
        return Track(int(row["id"]), str(row["name"]), str(row["target"]), str(row["url"]),
                     str(row["branch"]), _sha(row["reference"], "reference"),
                     str(row["created_at"]))

    def find_track(self, name: str) -> Track | None:
        t = schema.tracks
        with self._begin() as conn:
            row = conn.execute(select(t).where(t.c.name == name)).mappings().first()
        if row is None:
            return None
        return Track(int(row["id"]), str(row["name"]), str(row["target"]), str(row["url"]),
                     str(row["branch"]), _sha(row["reference"], "reference"),
                     str(row["created_at"]))

    def start_run(self, track: Track, seed: int, tool: str) -> int:
        """A new run, after marking the runs of this track left ``running`` as interrupted
        (the caller holds the run lock: they are dead)."""
        r = schema.runs
        with self._begin() as conn:
            conn.execute(update(r).where(r.c.track_id == track.id, r.c.status == "running")
                         .values(status="interrupted"))
            res = conn.execute(insert(r).values(track_id=track.id, started_at=now(),
                                                status="running", tool=tool[:64],
                                                host=socket.gethostname()[:255], seed=seed))
            key = res.inserted_primary_key
            assert key is not None
            return int(key[0])

    def finish_run(self, run_id: int, status: str) -> None:
        r = schema.runs
        with self._begin() as conn:
            conn.execute(update(r).where(r.c.id == run_id).values(status=status,
                                                                    finished_at=now()))

    def run_statuses(self, track: Track) -> list[tuple[int, str]]:
        r = schema.runs
        with self._begin() as conn:
            rows = conn.execute(select(r.c.id, r.c.status).where(r.c.track_id == track.id)
                                .order_by(r.c.id).limit(MAX_ROWS)).all()
        return [(int(i), str(s)) for i, s in rows]

    def add_commit(self, track: Track, sha: str, subject: str, author_date: str,
                   depth: int) -> None:
        c = schema.commits
        with self._begin() as conn:
            if conn.execute(select(c.c.sha).where(c.c.track_id == track.id,
                                                  c.c.sha == sha)).first() is not None:
                return
        # (added by another run meanwhile: kept)
        with contextlib.suppress(IntegrityError), self._begin() as conn:
            conn.execute(insert(c).values(track_id=track.id, sha=sha, subject=subject,
                                          author_date=author_date, depth=depth))

    def commits(self, track: Track) -> dict[str, CommitRow]:
        c = schema.commits
        with self._begin() as conn:
            rows = conn.execute(select(c).where(c.c.track_id == track.id)
                                .limit(MAX_ROWS)).mappings().all()
        return {r["sha"]: CommitRow(_sha(r["sha"], "commit"), str(r["subject"]),
                                    str(r["author_date"]), int(r["depth"])) for r in rows}

    # --- points -------------------------------------------------------------------------------

    def measured(self, track: Track) -> set[tuple[str, str]]:
        """(scenario, sha) of every point measured against the track's reference."""
        p = schema.points
        with self._begin() as conn:
            rows = conn.execute(select(p.c.scenario, p.c.sha).where(
                p.c.track_id == track.id, p.c.reference == track.reference)
                .limit(MAX_ROWS)).all()
        return {(str(s), _sha(h, "commit")) for s, h in rows}

    def build_failures(self, track: Track) -> dict[str, str]:
        b = schema.build_failures
        with self._begin() as conn:
            rows = conn.execute(select(b.c.sha, b.c.reason).where(b.c.track_id == track.id)
                                .limit(MAX_ROWS)).all()
        return {_sha(s, "commit"): str(r) for s, r in rows}

    def add_build_failure(self, track: Track, sha: str, reason: str) -> None:
        b = schema.build_failures
        with contextlib.suppress(IntegrityError), self._begin() as conn:
            conn.execute(insert(b).values(track_id=track.id, sha=sha, reason=reason[:2000],
                                          at=now()))

    def add_point(self, track: Track, run_id: int, *, scenario: str, sha: str, kind: str,
                  factor: int, seed: int, result: Mapping[str, Any], warnings: Sequence[str],
                  values: Sequence[Value]) -> int | None:
        """One measured point and its values, in one transaction; None when the commit was
        measured already (by another run meanwhile): nothing is added."""
        p, v = schema.points, schema.values
        try:
            with self._begin() as conn:
                res = conn.execute(insert(p).values(
                    track_id=track.id, run_id=run_id, scenario=scenario, sha=sha,
                    reference=track.reference, kind=kind, factor=factor, seed=seed,
                    measured_at=now(), result=_strict_json(result),
                    warnings=json.dumps(list(warnings))))
                key = res.inserted_primary_key
                assert key is not None
                point_id = int(key[0])
                if values:
                    conn.execute(insert(v), [{"point_id": point_id, **_value_row(x)}
                                             for x in values])
        except IntegrityError:
            return None
        return point_id

    def point_count(self, track: Track) -> int:
        p = schema.points
        with self._begin() as conn:
            return int(conn.execute(select(func.count()).select_from(p).where(
                p.c.track_id == track.id)).scalar() or 0)

    def points_by_run(self, track: Track) -> list[tuple[int, str, str]]:
        """(run id, scenario, sha) of every point, in the order they were written."""
        p = schema.points
        with self._begin() as conn:
            rows = conn.execute(select(p.c.run_id, p.c.scenario, p.c.sha).where(
                p.c.track_id == track.id).order_by(p.c.id).limit(MAX_ROWS)).all()
        return [(int(r), str(s), _sha(h, "commit")) for r, s, h in rows]

    def series(self, track: Track) -> list[SeriesPoint]:
        """Every value measured against the track's reference, in the order of the commits
        along the branch (first-parent depth, then author date)."""
        p, v, c = schema.points, schema.values, schema.commits
        q = (select(p.c.id, p.c.run_id, p.c.scenario, c.c.sha, c.c.subject, c.c.author_date,
                    c.c.depth, v)
             .join(v, v.c.point_id == p.c.id)
             .join(c, (c.c.track_id == p.c.track_id) & (c.c.sha == p.c.sha))
             .where(p.c.track_id == track.id, p.c.reference == track.reference)
             .order_by(c.c.depth, c.c.author_date, p.c.id).limit(MAX_ROWS))
        with self._begin() as conn:
            rows = conn.execute(q).mappings().all()
        out = []
        for r in rows:
            commit = CommitRow(_sha(r["sha"], "commit"), str(r["subject"]),
                               str(r["author_date"]), int(r["depth"]))
            value = Value(series=str(r["series"]), metric=str(r["metric"]),
                          verdict=str(r["verdict"]), unit=str(r["unit"]),
                          ratio=_num(r["ratio"]), ci_low=_num(r["ci_low"]),
                          ci_high=_num(r["ci_high"]), p_value=_num(r["p_value"]),
                          value=_num(r["value"]), ref_value=_num(r["ref_value"]),
                          hangs=_int(r["hangs"]), runs=_int(r["runs"]),
                          ref_hangs=_int(r["ref_hangs"]), ref_runs=_int(r["ref_runs"]))
            out.append(SeriesPoint(int(r["id"]), int(r["run_id"]), str(r["scenario"]), commit,
                                   value))
        return out

    # --- changes ------------------------------------------------------------------------------

    def changes(self, track: Track) -> list[ChangeRow]:
        ch = schema.changes
        with self._begin() as conn:
            rows = conn.execute(select(ch).where(ch.c.track_id == track.id)
                                .order_by(ch.c.id).limit(MAX_ROWS)).mappings().all()
        return [ChangeRow(
            id=int(r["id"]), scenario=str(r["scenario"]), series=str(r["series"]),
            metric=str(r["metric"]), before_sha=_sha(r["before_sha"], "commit"),
            after_sha=_sha(r["after_sha"], "commit"),
            direction=_one_of(r["direction"], DIRECTIONS, "direction"),
            detect_p=_required(r["detect_p"]), magnitude=_required(r["magnitude"]),
            status=_one_of(r["status"], STATUSES, "status"), found_at=str(r["found_at"]),
            run_id=int(r["run_id"]), ab=_checked(_json_obj(r["ab"]), AB_FIELDS, "A/B"),
            culprit=_sha(r["culprit"], "culprit") if r["culprit"] is not None else None,
            culprit_subject=None if r["culprit_subject"] is None else str(r["culprit_subject"]),
            bisect=_checked(_json_obj(r["bisect"]), BISECT_FIELDS, "bisect"),
            why=str(r["why"])) for r in rows]

    def add_change(self, track: Track, ch: ChangeRow) -> bool:
        """Record a candidate's outcome; False when the same candidate is already recorded."""
        t = schema.changes
        try:
            with self._begin() as conn:
                conn.execute(insert(t).values(
                    track_id=track.id, scenario=ch.scenario, series=ch.series,
                    metric=ch.metric, before_sha=ch.before_sha, after_sha=ch.after_sha,
                    direction=ch.direction, detect_p=ch.detect_p, magnitude=ch.magnitude,
                    status=ch.status, found_at=ch.found_at, run_id=ch.run_id,
                    ab=_strict_json(ch.ab), culprit=ch.culprit,
                    culprit_subject=ch.culprit_subject,
                    bisect=_strict_json(ch.bisect), why=ch.why))
        except IntegrityError:
            return False
        return True


DIRECTIONS = ("regression", "improvement")
STATUSES = ("confirmed", "not-confirmed", "unconfirmable")
# what the summary and the dashboard read of a change's A/B and bisect records, by its form
AB_FIELDS = {"ratio": "number", "p": "number", "level": "number", "factor": "count",
             "ci": "interval", "hangs": "count", "runs": "count", "before_hangs": "count",
             "before_runs": "count", "text": "text", "verdict": "text", "file": "text"}
BISECT_FIELDS = {"outcome": "text", "report": "text", "why": "text", "first_bad": "sha",
                 "first_bad_subject": "text", "range": "shas"}


def _one_of(value: object, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise ReportError(f"the track database holds a change whose {what} is "
                          f"{str(value)[:40]!r}, not one of {', '.join(allowed)}")
    return str(value)


def _required(value: object) -> float:
    got = _num(value)
    if got is None:
        raise ReportError(f"the track database holds a change without a number: {value!r}")
    return got


def _in_form(v: object, form: str) -> bool:
    """Whether ``v`` (not None) has ``form``; a malformed number or SHA raises ReportError."""
    if form == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if form == "count":
        return _int(v) is not None
    if form == "text":
        return isinstance(v, str)
    if form == "sha":
        return bool(_sha(v, "commit"))
    if form == "shas":
        return isinstance(v, list) and all(_sha(x, "commit") for x in v)
    return isinstance(v, list) and len(v) == 2 and all(x is None or _in_form(x, "number")
                                                       for x in v)  # an interval


def _checked(data: dict[str, Any], fields: Mapping[str, str], what: str) -> dict[str, Any]:
    """A change's record with each field the outputs read in its form (or null)."""
    for key, form in fields.items():
        v = data.get(key)
        if v is not None and not _in_form(v, form):
            raise ReportError(f"the track database holds a change whose {what} record has "
                              f"{key} = {str(v)[:40]!r}, not a {form}")
    return data


def _strict_json(data: Any) -> str:
    """Strict JSON, a NaN or infinite number as null (as results.json is written)."""
    return json.dumps(files.finite(data), allow_nan=False)


def _json_obj(value: object) -> dict[str, Any]:
    try:
        data = json.loads(str(value))
    except ValueError:
        raise ReportError("the track database holds a change whose record is not JSON") from None
    if not isinstance(data, dict):
        raise ReportError("the track database holds a change whose record is not an object")
    return data


def _value_row(v: Value) -> dict[str, Any]:
    def fin(x: float | None) -> float | None:
        return x if x is not None and math.isfinite(x) else None

    return {"series": v.series, "metric": v.metric, "ratio": fin(v.ratio),
            "ci_low": fin(v.ci_low), "ci_high": fin(v.ci_high), "p_value": fin(v.p_value),
            "verdict": v.verdict, "value": fin(v.value), "ref_value": fin(v.ref_value),
            "unit": v.unit, "hangs": v.hangs, "runs": v.runs, "ref_hangs": v.ref_hangs,
            "ref_runs": v.ref_runs}


def _lock_key(name: str) -> int:
    """A PostgreSQL advisory lock key (a signed 64-bit integer) for ``name``."""
    digest = hashlib.sha256(f"patchbench-track:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _sqlite_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy's "begin" below issues BEGIN
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_MS)}")  # a constant, not a value
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # a writer takes the write lock when it begins (waiting up to the busy timeout), so
        # that two writers never deadlock upgrading a read lock
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def open_store(url: str | None, default: Path) -> Store:
    """Open (and migrate) the database of ``--db URL``, or the SQLite file ``default``."""
    u = engine_url(url, default)
    if u.get_backend_name() == "sqlite":
        path = Path(u.database or "")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot make {path.parent}: {exc.strerror}") from None
        if path.is_symlink():
            raise ConfigError(f"{path} is a symbolic link; the track database must be a file")
        engine = create_engine(u, poolclass=NullPool,
                               connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        _sqlite_setup(engine)
    else:
        engine = create_engine(u, poolclass=NullPool)
    store = Store(engine, u)
    try:
        store.migrate()
    except BaseException:
        store.close()
        raise
    return store
