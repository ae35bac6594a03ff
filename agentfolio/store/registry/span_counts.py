"""Per-account span counts kept by the code that writes spans, a batch at a time.

``registry_span_counts`` holds how many spans an account has per (agent, status,
validation status) and per every coarser grouping of the three — the account's total,
per status, per agent, per agent and status, and so on, ``''`` standing for "any" — so
the span list answers ``item_count`` for a filter on any of them from a few rows, the
same work at ten spans or ten million.

Every statement that inserts spans, changes a span's agent, status or validation, or
deletes spans feeds this module what it changed (:class:`SpanTotals`): inserts and
updates through :class:`agentfolio.store.registry.trace_stats.TraceCounts`, which keeps
the per-trace stats beside these; deletions (an agent's, retention's) from the rows
their ``DELETE … RETURNING`` answers, or on PostgreSQL from the partition they drop.
The changes are added up per key and written with one ``INSERT … ON CONFLICT DO
UPDATE`` per key, adding to what is stored, in the writer's transaction: a batch rolled
back takes its counts with it, and concurrent batches each add their own share.

On PostgreSQL every writer of one account would queue on its total's row from its first
write of counts to its commit; instead each :class:`SpanTotals` adds to one of
:data:`SHARDS` rows of every key, picked at random, and a count sums a key's shards.
SQLite has one writer at a time: one row per key there.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import product
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Row

from agentfolio.store.registry_tables import registry_span_counts as t_counts
from agentfolio.store.scope import AccountScope

__all__ = ["ANY", "DIMENSIONS", "SHARDS", "SpanTotals", "delete_spans", "delete_spans_counted_in_sql", "kept_count",
           "take_off"]

#: A key's value standing for every value of its column (no span has it: ids, statuses
#: and validation statuses are never empty).
ANY = ""
#: The span columns a count is kept for, in the table's key order.
DIMENSIONS = ("agent_id", "status", "validation_status")
#: Rows per key on PostgreSQL (a writer adds to one of them).
SHARDS = 16

_KEY = [t_counts.c.account_pk, t_counts.c.agent_id, t_counts.c.status, t_counts.c.validation_status,
        t_counts.c.shard]
_UPSERTS: dict[str, Any] = {}


def _upsert(dialect: sa.Dialect) -> Any:
    insert = postgresql.insert if dialect.name == "postgresql" else sqlite.insert
    statement = insert(t_counts)
    return statement.on_conflict_do_update(index_elements=_KEY,
                                           set_={"spans": t_counts.c.spans + statement.excluded.spans})


def _groupings(agent_id: str, status: str, validation_status: str) -> Iterable[tuple[str, str, str]]:
    """The keys a span of this agent, status and validation counts under: each of the
    three either as it is or ``ANY`` (eight keys)."""
    return product((agent_id, ANY), (status, ANY), (validation_status, ANY))


class SpanTotals:
    """What a batch of span writes changes in the span counts, not written yet.

    ``add`` a span as it is after a write, ``remove`` it as it was before one (an update
    is both; a deletion is a removal).  Spans are added up by their own (account, agent,
    status, validation) — one dictionary entry per span — and spread over the coarser
    keys only when written."""

    __slots__ = ("changes", "shard")

    def __init__(self) -> None:
        #: (account pk, agent id, status, validation status) → spans added (negative: removed)
        self.changes: Counter[tuple[int, str, str, str]] = Counter()
        self.shard = random.randrange(SHARDS)

    def add(self, row: Mapping[Any, Any], spans: int = 1) -> None:
        """A span as it is after a write (``row`` holds ``account_pk`` and the :data:`DIMENSIONS`)."""
        self.changes[(row["account_pk"], row["agent_id"], row["status"], row["validation_status"])] += spans

    def remove(self, row: Mapping[Any, Any], spans: int = 1) -> None:
        """A span as it was before a write (or a deletion)."""
        self.add(row, -spans)

    def apply(self, connection: Connection) -> None:
        """Write what was added up, in the caller's transaction, and start again from nothing.

        Keys are written in order, so two transactions never lock the rows they share in
        opposite orders."""
        if not self.changes:
            return
        spread: Counter[tuple[int, str, str, str]] = Counter()
        for (account_pk, *values), spans in self.changes.items():
            if spans:
                for key in _groupings(*values):
                    spread[(account_pk, *key)] += spans
        self.changes.clear()
        shard = self.shard if connection.dialect.name == "postgresql" else 0
        rows = [{"account_pk": key[0], "agent_id": key[1], "status": key[2], "validation_status": key[3],
                 "shard": shard, "spans": spans} for key, spans in sorted(spread.items()) if spans]
        if not rows:
            return
        statement = _UPSERTS.get(connection.dialect.name)
        if statement is None:
            statement = _UPSERTS[connection.dialect.name] = _upsert(connection.dialect)
        connection.execute(statement, rows)

    def discard(self) -> None:
        """Forget what was added up (its writes were rolled back)."""
        self.changes.clear()


def kept_count(connection: Connection, scope: AccountScope, filters: Mapping[str, str]) -> int | None:
    """How many of the account's spans match ``filters`` (span column → value), when
    every filter is one of :data:`DIMENSIONS` (else ``None``: not kept)."""
    if not filters.keys() <= set(DIMENSIONS):
        return None
    if any(value == ANY for value in filters.values()):
        return None  # a value no span has; the key would read as "any"
    if any("\x00" in value for value in filters.values()):
        return 0  # no stored text holds it (and PostgreSQL refuses it as a parameter)
    key = [filters.get(name, ANY) for name in DIMENSIONS]
    total = connection.execute(scope.select(t_counts, sa.func.sum(t_counts.c.spans)).where(
        t_counts.c.agent_id == key[0], t_counts.c.status == key[1],
        t_counts.c.validation_status == key[2])).scalar()
    return int(total or 0)


def delete_spans(connection: Connection, statement: sa.Delete, *returning: Any) -> list[Row[Any]]:
    """Run ``statement``, a ``DELETE`` of span rows (of the spans table or one of its
    partitions), and take the spans it deleted off the counts, in the same transaction;
    the ``returning`` columns of the spans deleted.  The counts come from the rows the
    ``DELETE`` answers, so a span changed by a concurrent writer just before is taken
    off as it was when deleted.  For batches: every deleted row comes back to Python."""
    table = statement.table
    columns = [table.c.account_pk, *(table.c[name] for name in DIMENSIONS)]
    rows = list(connection.execute(statement.returning(*columns, *returning)).all())
    totals = SpanTotals()
    for row in rows:
        totals.remove(row._mapping)
    totals.apply(connection)
    return rows


def delete_spans_counted_in_sql(connection: Connection, table: sa.Table, condition: Any) -> int:
    """Delete the spans of ``table`` matching ``condition``, however many, taking them off
    the counts (added up in the database, a row per key); how many were deleted.

    PostgreSQL deletes and adds up in one statement (the rows a ``DELETE`` answers, as in
    :func:`delete_spans`); SQLite, whose one writer at a time is this transaction, adds
    up what it is about to delete, then deletes it."""
    keys = [table.c.account_pk, *(table.c[name] for name in DIMENSIONS)]
    if connection.dialect.name == "postgresql":
        gone = sa.delete(table).where(condition).returning(*keys).cte("gone")
        grouped = sa.select(*gone.c, sa.func.count()).group_by(*gone.c)
    else:
        grouped = sa.select(*keys, sa.func.count()).where(condition).group_by(*keys)
    counted = connection.execute(grouped).all()
    if connection.dialect.name != "postgresql":
        connection.execute(sa.delete(table).where(condition))
    return take_off(connection, counted)


def take_off(connection: Connection, grouped: Iterable[Sequence[Any]]) -> int:
    """Take spans gone from the database off the counts: ``grouped`` holds (account pk,
    agent id, status, validation status, how many spans) rows; how many in all."""
    totals = SpanTotals()
    gone = 0
    for *key, spans in grouped:
        totals.remove(dict(zip(("account_pk", *DIMENSIONS), key, strict=True)), spans)
        gone += spans
    totals.apply(connection)
    return gone
