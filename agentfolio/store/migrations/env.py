"""Alembic environment: runs on the connection the store hands over (see store.engine.migrate)."""

from __future__ import annotations

from alembic import context

from agentfolio.store.tables import every_table

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only `alembic` run by hand
    from sqlalchemy import create_engine

    from agentfolio.settings import Settings

    engine = create_engine(Settings.from_env().effective_database_url)
    connection = engine.connect()

context.configure(connection=connection, target_metadata=every_table(), render_as_batch=True,
                  compare_type=True)
with context.begin_transaction():
    context.run_migrations()
