"""The tables of the track database, as SQLAlchemy Core metadata. The schema is versioned by
Alembic (patchbench/track/migrations): every change here comes with a migration, and a test
checks that the migrated database matches these tables.

Times are ISO 8601 strings in UTC (``2026-12-03T16:22:36Z``), the same in SQLite and PostgreSQL.
A point is one interleaved measurement of one commit against the reference build; its values
(one row per series and metric) are what the change-point detection reads."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

SHA = 40  # a full commit SHA (git's SHA-1)

metadata = MetaData()

tracks = Table(
    "tracks", metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200), nullable=False, unique=True),  # the comparison
    Column("target", String(200), nullable=False),
    Column("url", Text, nullable=False),
    Column("branch", String(255), nullable=False),
    Column("reference", String(SHA), nullable=False),  # the pinned reference build's commit
    Column("created_at", String(32), nullable=False),
)

commits = Table(
    "commits", metadata,
    Column("track_id", Integer, ForeignKey("tracks.id"), primary_key=True),
    Column("sha", String(SHA), primary_key=True),
    Column("subject", Text, nullable=False),
    Column("author_date", String(64), nullable=False),
    # commits on the first-parent chain before it: the series' order along a branch
    Column("depth", Integer, nullable=False),
)

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True),
    Column("track_id", Integer, ForeignKey("tracks.id"), nullable=False),
    Column("started_at", String(32), nullable=False),
    Column("finished_at", String(32)),
    # running | finished | interrupted | failed
    Column("status", String(16), nullable=False),
    Column("tool", String(64), nullable=False),
    Column("host", String(255), nullable=False),
    Column("seed", Integer, nullable=False),
)

points = Table(
    "points", metadata,
    Column("id", Integer, primary_key=True),
    Column("track_id", Integer, ForeignKey("tracks.id"), nullable=False),
    Column("run_id", Integer, ForeignKey("runs.id"), nullable=False),
    Column("scenario", String(200), nullable=False),
    Column("sha", String(SHA), nullable=False),
    Column("reference", String(SHA), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("factor", Integer, nullable=False),
    Column("seed", Integer, nullable=False),
    Column("measured_at", String(32), nullable=False),
    # the scenario kind's result of the measurement, whole (JSON, paths redacted)
    Column("result", Text, nullable=False),
    Column("warnings", Text, nullable=False),  # JSON list
    # a commit is measured once per scenario against one reference: resuming never adds twice
    UniqueConstraint("track_id", "scenario", "sha", "reference", name="uq_points_commit"),
)

values = Table(
    "point_values", metadata,
    Column("point_id", Integer, ForeignKey("points.id"), primary_key=True),
    Column("series", String(200), primary_key=True),  # a cell's condition ("" for none)
    Column("metric", String(64), primary_key=True),  # wall, cpu, ..., hangs
    # the commit against the reference: its value / the reference's (time, memory), with the
    # round-paired CI; for hangs the counts below and the two rates' ratio is not kept
    Column("ratio", Float),
    Column("ci_low", Float),
    Column("ci_high", Float),
    Column("p_value", Float),
    Column("verdict", String(32), nullable=False),
    Column("value", Float),  # the commit's own median (wall) or mean per run, in ``unit``
    Column("ref_value", Float),
    Column("unit", String(16), nullable=False),
    Column("hangs", Integer),
    Column("runs", Integer),
    Column("ref_hangs", Integer),
    Column("ref_runs", Integer),
)

build_failures = Table(
    "build_failures", metadata,
    Column("track_id", Integer, ForeignKey("tracks.id"), primary_key=True),
    Column("sha", String(SHA), primary_key=True),
    Column("reason", Text, nullable=False),
    Column("at", String(32), nullable=False),
)

changes = Table(
    "changes", metadata,
    Column("id", Integer, primary_key=True),
    Column("track_id", Integer, ForeignKey("tracks.id"), nullable=False),
    Column("scenario", String(200), nullable=False),
    Column("series", String(200), nullable=False),
    Column("metric", String(64), nullable=False),
    Column("before_sha", String(SHA), nullable=False),  # the last point before the change
    Column("after_sha", String(SHA), nullable=False),  # the first point after it
    Column("direction", String(16), nullable=False),  # regression | improvement
    Column("detect_p", Float, nullable=False),
    Column("magnitude", Float, nullable=False),  # mean after / mean before, as detected
    # confirmed | not-confirmed (the A/B did not show it) | unconfirmable (no A/B possible)
    Column("status", String(16), nullable=False),
    Column("found_at", String(32), nullable=False),
    Column("run_id", Integer, ForeignKey("runs.id"), nullable=False),
    Column("ab", Text, nullable=False),  # JSON: the A/B's verdict and the file that holds it
    Column("culprit", String(SHA)),  # the commit named (bisect, or adjacent points)
    Column("culprit_subject", Text),
    Column("bisect", Text, nullable=False),  # JSON: outcome, report folder, range
    Column("why", Text, nullable=False),
    UniqueConstraint("track_id", "scenario", "series", "metric", "before_sha", "after_sha",
                     name="uq_changes_candidate"),
)
