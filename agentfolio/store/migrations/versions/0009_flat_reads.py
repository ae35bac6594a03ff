"""Reads that cost the same at any size: indexes for the span list's sorts and filters and
for one agent's sessions, and full-text search of message text.

PostgreSQL gets a GIN index on the words of ``entries.text`` (ASCII punctuation read as
spaces, so ``foo.bar/baz`` holds ``baz`` as SQLite's tokenizer sees it), SQLite a
contentless FTS5 table ``entries_fts`` holding every entry (rowid: session pk << 32 |
position) — or nothing, where SQLite was built without FTS5 (search then falls back to
a bounded ``LIKE``).  See ``agentfolio.store.search``.

On a large PostgreSQL database the GIN index takes a while to build and holds writes to
``entries`` meanwhile; to avoid that, create it beforehand with ``CREATE INDEX
CONCURRENTLY`` and the expression below (this migration then finds it and skips it).

Revision ID: 0009_flat_reads
Revises: 0008_risk_profiles_alerts
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_flat_reads"
down_revision = "0008_risk_profiles_alerts"
branch_labels = None
depends_on = None

# Frozen copies of agentfolio.store.search's expression and table (history does not move).
WORDS = r"""to_tsvector('simple', regexp_replace(text, '[!-/:-@\[-`{-~]+', ' ', 'g'))"""
_INDEXES = (
    ("ix_registry_spans_started", "registry_spans", ["account_pk", "started_at", "id"]),
    ("ix_registry_spans_status", "registry_spans", ["account_pk", "status", "id"]),
    ("ix_registry_spans_validation", "registry_spans", ["account_pk", "validation_status", "id"]),
    ("ix_sessions_agent", "sessions", ["account_pk", "agent", "updated_at"]),
)


def upgrade() -> None:
    connection = op.get_bind()
    for name, table, columns in _INDEXES:
        op.create_index(name, table, columns)
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"CREATE INDEX IF NOT EXISTS ix_entries_words ON entries USING gin ({WORDS})")
        return
    try:
        connection.exec_driver_sql("CREATE VIRTUAL TABLE entries_fts USING fts5("
                                   "text, content='', detail=none, tokenize='unicode61 remove_diacritics 0')")
    except sa.exc.OperationalError:  # SQLite without FTS5: search falls back to a bounded LIKE
        return
    connection.exec_driver_sql("INSERT INTO entries_fts(rowid, text) "
                               "SELECT (session_pk << 32) | position, text FROM entries")


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("DROP INDEX IF EXISTS ix_entries_words")
    else:
        connection.exec_driver_sql("DROP TABLE IF EXISTS entries_fts")
    for name, table, _ in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
