"""The track database's migrations, oldest first (Alembic revisions)."""
