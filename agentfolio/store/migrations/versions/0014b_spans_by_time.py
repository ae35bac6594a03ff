"""Spans by time: on PostgreSQL ``registry_spans`` becomes ``PARTITION BY RANGE (id)``
(see ``agentfolio.store.span_partitions``), so retention drops whole partitions; on both
backends the trace epochs get an index by time, so retention finds the traces first seen
before its window.

The table is rebuilt: a partitioned table with the same columns, its partitions (one
for every id before the current period, one per period from it to two periods ahead, a
default one), every row copied in, the old table dropped, then its primary key, foreign
keys and indexes (partial ones too) made again on the new one exactly as the database
describes them (``pg_get_constraintdef`` / ``pg_indexes``), whatever migrations added
them.  The downgrade copies the rows back into a plain table the same way.  Both take
an exclusive lock on the spans for as long as the copy takes: a large table is converted
in a maintenance window (docs/deploy.md).

Revision ID: 0014b_spans_by_time
Revises: 0014_otel_trace_epochs
Create Date: 2026-11-28
"""

from __future__ import annotations

import time

from alembic import op
from sqlalchemy.engine import Connection

from agentfolio.registry import ids
from agentfolio.settings import Settings

revision = "0014b_spans_by_time"
down_revision = "0014_otel_trace_epochs"
branch_labels = None
depends_on = None

_DAY_MS = 86_400_000
_PERIODS_AHEAD = 2


def upgrade() -> None:
    op.create_index("ix_otel_trace_epochs_epoch", "otel_trace_epochs", ["epoch_ms"])
    connection = op.get_bind()
    if connection.dialect.name != "postgresql":
        return
    definitions = _definitions(connection)
    op.execute("CREATE TABLE registry_spans_new (LIKE registry_spans INCLUDING DEFAULTS) PARTITION BY RANGE (id)")
    days = Settings.from_env().span_partition_days
    length = days * _DAY_MS
    start = time.time_ns() // 1_000_000 // length * length
    op.execute(f"CREATE TABLE registry_spans_before PARTITION OF registry_spans_new "
               f"FOR VALUES FROM (MINVALUE) TO ('{_bound(start)}')")
    for period in range(_PERIODS_AHEAD + 1):
        lower = start + period * length
        name = f"registry_spans_p{time.strftime('%Y%m%d', time.gmtime(lower / 1000))}"
        op.execute(f"CREATE TABLE {name} PARTITION OF registry_spans_new "
                   f"FOR VALUES FROM ('{_bound(lower)}') TO ('{_bound(lower + length)}')")
    op.execute("CREATE TABLE registry_spans_default PARTITION OF registry_spans_new DEFAULT")
    _move(connection, "registry_spans_new", definitions)


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        definitions = _definitions(connection)
        op.execute("CREATE TABLE registry_spans_new (LIKE registry_spans INCLUDING DEFAULTS)")
        _move(connection, "registry_spans_new", definitions)
    op.drop_index("ix_otel_trace_epochs_epoch", table_name="otel_trace_epochs")


def _bound(ms: int) -> str:
    return ids.encode(ms, 0, 0)


def _definitions(connection: Connection) -> tuple[list[tuple[str, str]], list[str]]:
    """The spans table's constraints (name, definition) and the statements making its
    other indexes, as the database has them."""
    constraints = [(name, definition) for name, definition in connection.exec_driver_sql(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = to_regclass('registry_spans') AND contype IN ('p', 'u', 'f', 'c') "
        "ORDER BY contype DESC, conname")]  # keys ('u', 'p') before foreign keys and checks
    owned = {name for name, _ in constraints}
    indexes = [definition for name, definition in connection.exec_driver_sql(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
        "AND tablename = 'registry_spans' ORDER BY indexname") if name not in owned]
    return constraints, indexes


def _move(connection: Connection, new: str, definitions: tuple[list[tuple[str, str]], list[str]]) -> None:
    """Every row into ``new``, which then takes the spans table's place, keys and indexes."""
    constraints, indexes = definitions
    connection.exec_driver_sql("LOCK TABLE registry_spans IN ACCESS EXCLUSIVE MODE")
    connection.exec_driver_sql(f"INSERT INTO {new} SELECT * FROM registry_spans")
    connection.exec_driver_sql("DROP TABLE registry_spans")
    connection.exec_driver_sql(f"ALTER TABLE {new} RENAME TO registry_spans")
    for name, definition in constraints:
        connection.exec_driver_sql(f"ALTER TABLE registry_spans ADD CONSTRAINT {name} {definition}")
    for statement in indexes:
        connection.exec_driver_sql(statement)
    connection.exec_driver_sql("ANALYZE registry_spans")
