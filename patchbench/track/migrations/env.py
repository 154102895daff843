"""Alembic's environment for the track database: migrations run on the connection
patchbench.track.database hands over (``config.attributes["connection"]``), never on a URL of its
own, so that no credential passes through Alembic's configuration."""

from __future__ import annotations

from alembic import context

from patchbench.track import schema

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=schema.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
