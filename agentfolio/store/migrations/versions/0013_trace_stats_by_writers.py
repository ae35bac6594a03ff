"""Span writes at ingest speed: the per-trace stats kept by the code that writes spans,
one row per trace per batch, instead of database triggers firing for every span row; and
the one secondary index of ``registry_spans`` no read needs dropped.

``registry_trace_stats`` keeps its meaning (see ``0005_trace_pages`` and
``agentfolio.store.registry.trace_stats``); the triggers go, and the stats are computed
again from the spans once, so a database written by any earlier version starts exact
(the bounds then are those of the spans stored now).

``ix_registry_spans_instance_id_id`` (instance, id) goes: every read by trace, and the
foreign key's cascade from ``registry_instances``, is served by the prefix of
``ix_registry_spans_tree`` (instance, parent, start, id); the span list filtered by one
trace and sorted by id sorts that trace's rows.  Each of the other indexes serves a
list, filter or sort that must stay flat as the account grows.

The downgrade puts the index and the triggers back (with the stats computed again).

Revision ID: 0013_trace_stats_by_writers
Revises: 0012_conversation_queue
Create Date: 2026-11-27
"""

from __future__ import annotations

import importlib

from alembic import op

revision = "0013_trace_stats_by_writers"
down_revision = "0012_conversation_queue"
branch_labels = None
depends_on = None

_TRIGGERS = ("registry_trace_stats_insert", "registry_trace_stats_update", "registry_trace_stats_delete")
_RECOMPUTE = """INSERT INTO registry_trace_stats
  (instance_id, account_pk, span_count, failed_count, invalid_count, first_start, last_end)
SELECT instance_id, min(account_pk), count(*), sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END),
       sum(CASE WHEN validation_status = 'invalid' THEN 1 ELSE 0 END), min(started_at),
       max(coalesce(finished_at, started_at))
FROM registry_spans GROUP BY instance_id"""


def _recompute() -> None:
    op.execute("DELETE FROM registry_trace_stats")
    op.execute(_RECOMPUTE)


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name in _TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON registry_spans" if postgresql
                   else f"DROP TRIGGER IF EXISTS {name}")
    if postgresql:
        op.execute("DROP FUNCTION IF EXISTS registry_trace_stats_apply()")
    _recompute()
    op.drop_index("ix_registry_spans_instance_id_id", table_name="registry_spans")


def downgrade() -> None:
    op.create_index("ix_registry_spans_instance_id_id", "registry_spans", ["instance_id", "id"])
    _recompute()
    # The triggers exactly as 0005 made them (a module name that starts with a digit).
    triggers = importlib.import_module("agentfolio.store.migrations.versions.0005_trace_pages")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(triggers._POSTGRES_FUNCTION)
        statements = triggers._POSTGRES_TRIGGERS
    else:
        statements = triggers._SQLITE_TRIGGERS
    for statement in statements:
        op.execute(statement)
