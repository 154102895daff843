"""The first schema of the track database: tracks, commits, runs, points and their values,
build failures, changes.

Revision ID: 0001
Revises:
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tracks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("target", sa.String(200), nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("reference", sa.String(40), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False))
    op.create_table(
        "commits",
        sa.Column("track_id", sa.Integer, sa.ForeignKey("tracks.id"), primary_key=True),
        sa.Column("sha", sa.String(40), primary_key=True),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("author_date", sa.String(64), nullable=False),
        sa.Column("depth", sa.Integer, nullable=False))
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("track_id", sa.Integer, sa.ForeignKey("tracks.id"), nullable=False),
        sa.Column("started_at", sa.String(32), nullable=False),
        sa.Column("finished_at", sa.String(32)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("tool", sa.String(64), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("seed", sa.Integer, nullable=False))
    op.create_table(
        "points",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("track_id", sa.Integer, sa.ForeignKey("tracks.id"), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("scenario", sa.String(200), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("reference", sa.String(40), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("factor", sa.Integer, nullable=False),
        sa.Column("seed", sa.Integer, nullable=False),
        sa.Column("measured_at", sa.String(32), nullable=False),
        sa.Column("result", sa.Text, nullable=False),
        sa.Column("warnings", sa.Text, nullable=False),
        sa.UniqueConstraint("track_id", "scenario", "sha", "reference",
                            name="uq_points_commit"))
    op.create_table(
        "point_values",
        sa.Column("point_id", sa.Integer, sa.ForeignKey("points.id"), primary_key=True),
        sa.Column("series", sa.String(200), primary_key=True),
        sa.Column("metric", sa.String(64), primary_key=True),
        sa.Column("ratio", sa.Float),
        sa.Column("ci_low", sa.Float),
        sa.Column("ci_high", sa.Float),
        sa.Column("p_value", sa.Float),
        sa.Column("verdict", sa.String(32), nullable=False),
        sa.Column("value", sa.Float),
        sa.Column("ref_value", sa.Float),
        sa.Column("unit", sa.String(16), nullable=False),
        sa.Column("hangs", sa.Integer),
        sa.Column("runs", sa.Integer),
        sa.Column("ref_hangs", sa.Integer),
        sa.Column("ref_runs", sa.Integer))
    op.create_table(
        "build_failures",
        sa.Column("track_id", sa.Integer, sa.ForeignKey("tracks.id"), primary_key=True),
        sa.Column("sha", sa.String(40), primary_key=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("at", sa.String(32), nullable=False))
    op.create_table(
        "changes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("track_id", sa.Integer, sa.ForeignKey("tracks.id"), nullable=False),
        sa.Column("scenario", sa.String(200), nullable=False),
        sa.Column("series", sa.String(200), nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("before_sha", sa.String(40), nullable=False),
        sa.Column("after_sha", sa.String(40), nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("detect_p", sa.Float, nullable=False),
        sa.Column("magnitude", sa.Float, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("found_at", sa.String(32), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("ab", sa.Text, nullable=False),
        sa.Column("culprit", sa.String(40)),
        sa.Column("culprit_subject", sa.Text),
        sa.Column("bisect", sa.Text, nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.UniqueConstraint("track_id", "scenario", "series", "metric", "before_sha",
                            "after_sha", name="uq_changes_candidate"))


def downgrade() -> None:
    for table in ("changes", "build_failures", "point_values", "points", "runs", "commits",
                  "tracks"):
        op.drop_table(table)
