"""Alembic's script directory for the track database (env.py, versions/): the schema's history,
applied by patchbench.track.database when a database is opened."""
