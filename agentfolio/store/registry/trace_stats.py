"""Per-trace counts kept by the code that writes spans, a batch at a time.

``registry_trace_stats`` holds, per instance, how many spans it has, how many failed and
how many fail validation, and the bounds of its timeline (first start, last end).  Every
statement that inserts spans, or changes a span's trace, status, validation or times,
goes through this module, which adds up what the statement changed per trace and then
writes it with one ``INSERT … ON CONFLICT DO UPDATE`` per trace, adding to what is
stored — so batches writing to the same trace at the same time (several server processes
on one PostgreSQL) each add their own share, in their own transaction, and none is lost.

The rules are those the database triggers of ``0005_trace_pages`` kept: a span counts
in the trace it is in; the bounds only widen, with every start and end (the finish, else
the start) a span of the trace has had, so a span moved out of a trace may leave it a
little wider than its spans.  Deleting spans is always deleting their instance, whose
stats row goes with it (a foreign key with ``ON DELETE CASCADE``) — except for retention,
which removes a trace's oldest spans and computes its stats again (:func:`recompute`).

A row per trace per batch instead of a trigger per row: the triggers made inserting a
span two to three times dearer.

:class:`TraceCounts` also adds up what the same writes change in the account's span
counts (:mod:`agentfolio.store.registry.span_counts`) and writes those first, so every
writer of spans keeps both through the one object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from agentfolio.store.registry.base import among
from agentfolio.store.registry.bulk import execute_many
from agentfolio.store.registry.span_counts import SpanTotals
from agentfolio.store.registry_tables import registry_spans as t_spans
from agentfolio.store.registry_tables import registry_trace_stats as t_stats
from agentfolio.store.scope import AccountScope

__all__ = ["COUNTED", "TraceCounts", "recompute", "trace_count", "update_each_span", "update_spans"]

#: The span columns the stats and span counts depend on: an update setting none of them
#: changes neither.
COUNTED = frozenset({"instance_id", "agent_id", "status", "validation_status", "started_at", "finished_at"})
#: The old values an update reads (under a row lock on PostgreSQL) to take them off.
_OLD = (t_spans.c.id, t_spans.c.account_pk, t_spans.c.instance_id, t_spans.c.agent_id, t_spans.c.status,
        t_spans.c.validation_status, t_spans.c.started_at, t_spans.c.finished_at)
_CHUNK = 500


def _upsert(dialect: sa.Dialect) -> Any:
    """``INSERT … ON CONFLICT (instance_id) DO UPDATE`` adding the batch's counts to the
    stored ones and widening the bounds (``least``/``greatest`` on PostgreSQL, which skip
    NULLs; SQLite's ``min``/``max`` of several values are NULL if any is, hence the
    ``coalesce``)."""
    insert = postgresql.insert if dialect.name == "postgresql" else sqlite.insert
    least, greatest = (sa.func.least, sa.func.greatest) if dialect.name == "postgresql" else (sa.func.min, sa.func.max)
    statement = insert(t_stats)
    new = statement.excluded
    return statement.on_conflict_do_update(index_elements=[t_stats.c.instance_id], set_={
        "span_count": t_stats.c.span_count + new.span_count,
        "failed_count": t_stats.c.failed_count + new.failed_count,
        "invalid_count": t_stats.c.invalid_count + new.invalid_count,
        "first_start": sa.func.coalesce(least(t_stats.c.first_start, new.first_start), t_stats.c.first_start,
                                        new.first_start),
        "last_end": sa.func.coalesce(greatest(t_stats.c.last_end, new.last_end), t_stats.c.last_end,
                                     new.last_end)})


_UPSERTS: dict[str, Any] = {}


class TraceCounts:
    """What a batch of span writes changes in each trace's stats and in the account's
    span counts, not written yet.

    ``add`` a span as it is after a write, ``remove`` it as it was before one (an update
    is both; rows hold ``account_pk``); :meth:`apply` writes the span counts, then the
    sums per trace, one row per trace, in instance order (so concurrent batches lock the
    stats rows they share in the same order)."""

    __slots__ = ("account_pk", "changes", "totals")

    def __init__(self, account_pk: int) -> None:
        self.account_pk = account_pk
        #: instance id → [spans, failed, invalid, first start, last end]
        self.changes: dict[str, list[Any]] = {}
        self.totals = SpanTotals()

    def add(self, row: Mapping[str, Any]) -> None:
        self.totals.add(row)
        change = self._change(row["instance_id"])
        change[0] += 1
        change[1] += row["status"] == "failed"
        change[2] += row["validation_status"] == "invalid"
        started = row["started_at"]
        ended = row["finished_at"] if row["finished_at"] is not None else started
        if started is not None and (change[3] is None or started < change[3]):
            change[3] = started
        if ended is not None and (change[4] is None or ended > change[4]):
            change[4] = ended

    def add_all(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.add(row)

    def remove(self, row: Mapping[str, Any]) -> None:
        self.totals.remove(row)
        change = self._change(row["instance_id"])
        change[0] -= 1
        change[1] -= row["status"] == "failed"
        change[2] -= row["validation_status"] == "invalid"

    def _change(self, instance_id: str) -> list[Any]:
        found = self.changes.get(instance_id)
        if found is None:
            found = self.changes[instance_id] = [0, 0, 0, None, None]
        return found

    def apply(self, connection: Connection) -> None:
        """Write what was added up, in the caller's transaction, and start again from nothing."""
        # The span counts first: at its first write of counts, a transaction that waits
        # for another's count row holds no stats row that other one may be waiting for.
        self.totals.apply(connection)
        if not self.changes:
            return
        dialect = connection.dialect
        statement = _UPSERTS.get(dialect.name)
        if statement is None:
            statement = _UPSERTS[dialect.name] = _upsert(dialect)
        rows = [{"instance_id": instance_id, "account_pk": self.account_pk, "span_count": change[0],
                 "failed_count": change[1], "invalid_count": change[2], "first_start": change[3],
                 "last_end": change[4]}
                for instance_id, change in sorted(self.changes.items()) if change != [0, 0, 0, None, None]]
        self.changes.clear()
        if rows:
            execute_many(connection, statement, rows)

    def discard(self) -> None:
        """Forget what was added up (its writes were rolled back)."""
        self.changes.clear()
        self.totals.discard()


def update_spans(connection: Connection, scope: AccountScope, span_ids: list[str], counts: TraceCounts,
                 **changes: Any) -> list[dict[str, Any]]:
    """``UPDATE`` these spans of the account with ``changes`` (plain values), adding to
    ``counts`` what that changes in their traces' stats; the spans' counted columns as
    they were before (empty when ``changes`` sets none of them)."""
    if not changes.keys() & COUNTED:
        for start in range(0, len(span_ids), _CHUNK):
            chosen = among(connection.dialect, t_spans.c.id, span_ids[start:start + _CHUNK])
            connection.execute(scope.update(t_spans).where(chosen).values(**changes))
        return []
    before: list[dict[str, Any]] = []
    for start in range(0, len(span_ids), _CHUNK):
        chunk = span_ids[start:start + _CHUNK]
        if connection.dialect.name == "postgresql":
            before += _update_returning_old(connection, scope, chunk, changes)
        else:  # one writer at a time (BEGIN IMMEDIATE): what this transaction reads stays so
            before += _counted_now(connection, scope, chunk)
            connection.execute(scope.update(t_spans).where(among(connection.dialect, t_spans.c.id, chunk))
                               .values(**changes))
    for row in before:
        counts.remove(row)
        counts.add({**row, **changes})
    return before


def update_each_span(connection: Connection, scope: AccountScope, changes: Mapping[str, Mapping[str, Any]],
                     counts: TraceCounts) -> None:
    """Set on each span (key: its id) its own values (the same columns for all), adding to
    ``counts`` what that changes in their traces' stats: spans moving to traces of their
    own, say.  Two statements for any number of spans: one reads (on PostgreSQL, locks)
    the rows as they are, one updates them through the driver's ``executemany``."""
    if not changes:
        return
    columns = sorted(next(iter(changes.values())).keys())
    span_ids = list(changes)
    before: list[dict[str, Any]] = []
    if COUNTED & set(columns):
        for start in range(0, len(span_ids), _CHUNK):
            before += _counted_now(connection, scope, span_ids[start:start + _CHUNK], lock=True)
    # Bound names apart from the columns': SQLAlchemy keeps those for the values it sets.
    statement = scope.update(t_spans).where(t_spans.c.id == sa.bindparam("span_id")).values(
        {column: sa.bindparam(f"new_{column}") for column in columns})
    connection.execute(statement, [{"span_id": span_id, **{f"new_{column}": values[column] for column in columns}}
                                   for span_id, values in changes.items()])
    for row in before:
        counts.remove(row)
        counts.add({**row, **changes[row["id"]]})


def _counted_now(connection: Connection, scope: AccountScope, span_ids: list[str], *,
                 lock: bool = False) -> list[dict[str, Any]]:
    """The counted columns of these spans as they are (``lock``: locked on PostgreSQL until
    the transaction ends, so a concurrent writer cannot change them meanwhile)."""
    query = scope.select(t_spans, *_OLD).where(among(connection.dialect, t_spans.c.id, span_ids))
    if lock and connection.dialect.name == "postgresql":
        query = query.with_for_update()
    return [dict(row._mapping) for row in connection.execute(query)]


def _update_returning_old(connection: Connection, scope: AccountScope, span_ids: list[str],
                          changes: dict[str, Any]) -> list[dict[str, Any]]:
    """One statement: lock the rows (``FOR UPDATE`` waits for a concurrent writer and then
    reads its version), update them, and return the values they had."""
    old = scope.select(t_spans, *_OLD).where(among(connection.dialect, t_spans.c.id, span_ids)) \
        .with_for_update().subquery("old")
    statement = (scope.update(t_spans).where(t_spans.c.id == old.c.id).values(**changes)
                 .returning(*(old.c[column.name] for column in _OLD)))
    return [dict(row._mapping) for row in connection.execute(statement)]


def trace_count(connection: Connection, scope: AccountScope, filters: Mapping[str, str]) -> int | None:
    """How many spans of one trace match ``filters`` (``instance_id``, and at most one of
    ``status`` failed or ``validation_status`` invalid), from its stats; ``None`` for
    any other filter."""
    column = {(): t_stats.c.span_count, (("status", "failed"),): t_stats.c.failed_count,
              (("validation_status", "invalid"),): t_stats.c.invalid_count}.get(
        tuple(sorted((key, value) for key, value in filters.items() if key != "instance_id")))
    if column is None or "instance_id" not in filters or "\x00" in filters["instance_id"]:
        return None
    found = connection.execute(scope.select(t_stats, column)
                               .where(t_stats.c.instance_id == filters["instance_id"])).scalar()
    return int(found or 0)


def recompute(connection: Connection, instance_ids: list[str]) -> None:
    """These traces' stats computed again from the spans they have now (a trace without
    spans has no stats row); its bounds are then its spans' own."""
    for start in range(0, len(instance_ids), _CHUNK):
        chunk = instance_ids[start:start + _CHUNK]
        connection.execute(sa.delete(t_stats).where(t_stats.c.instance_id.in_(chunk)))
        connection.execute(sa.insert(t_stats).from_select(
            ["instance_id", "account_pk", "span_count", "failed_count", "invalid_count", "first_start", "last_end"],
            sa.select(t_spans.c.instance_id, sa.func.min(t_spans.c.account_pk), sa.func.count(),
                      sa.func.sum(sa.case((t_spans.c.status == "failed", 1), else_=0)),
                      sa.func.sum(sa.case((t_spans.c.validation_status == "invalid", 1), else_=0)),
                      sa.func.min(t_spans.c.started_at),
                      sa.func.max(sa.func.coalesce(t_spans.c.finished_at, t_spans.c.started_at)))
            .where(t_spans.c.instance_id.in_(chunk)).group_by(t_spans.c.instance_id)))
