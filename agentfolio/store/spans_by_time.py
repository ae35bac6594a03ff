"""Spans by time: retention (``AGENTFOLIO_SPAN_RETENTION_DAYS``) and, on PostgreSQL, the
partitions of the spans table made ahead of time (:mod:`agentfolio.store.span_partitions`).

A span's age is the time in its id: when it was created, or for a span received over
OTLP, when its trace's first span arrived (``agentfolio.store.otel_epochs``), so an OTLP
trace is kept or removed whole.  One run of :meth:`SpansByTime.expire` removes, in this
order, each step in bounded transactions:

1. the traces received over OTLP before epochs existed (their ids' time comes from a
   hash) whose first span is older than the window: every span of the trace;
2. the epochs of traces first seen before the window (a span of such a trace arriving
   later starts it afresh, with an epoch of its own);
3. on PostgreSQL, every partition wholly before the window: dropped, not deleted row by
   row (so a span outlives the window by up to one partition's length);
4. the spans left with ids before the window, a batch at a time: on SQLite all of them,
   on PostgreSQL those of the default partition.

With every removal, in its transaction: the conversation queue's rows for those spans go,
the spans are taken off their account's span counts
(:mod:`agentfolio.store.registry.span_counts`), each trace that lost spans gets its
stats computed again from the spans it has left, and a trace left without spans goes
(its stats row with it).

Every server asks now and then; the job's lease (``agentfolio.store.jobs``) gives a
period's run to one of them, and on PostgreSQL a run also holds an advisory lock for
its whole length, so a run that outlasts its lease never runs beside the next one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from agentfolio.store import span_partitions
from agentfolio.store.engine import write_transaction
from agentfolio.store.registry.span_counts import delete_spans, take_off
from agentfolio.store.registry.trace_stats import recompute
from agentfolio.store.registry_tables import otel_trace_epochs as t_epochs
from agentfolio.store.registry_tables import otel_work_spans as t_waiting
from agentfolio.store.registry_tables import registry_agents as t_agents
from agentfolio.store.registry_tables import registry_instances as t_instances
from agentfolio.store.registry_tables import registry_spans as t_spans
from agentfolio.store.span_partitions import DAY_MS, bound

__all__ = ["BATCH", "Removed", "SpansByTime"]

#: Spans (or traces) one transaction removes at most.
BATCH = 2_000
#: pg_advisory_lock key: one process keeps the spans by time at a time.
LOCK_KEY = 7208921502
_CHUNK = 500
_DEFAULT_PARTITION = sa.table(span_partitions.DEFAULT, *(sa.column(column.name) for column in t_spans.c))


@dataclass(slots=True)
class Removed:
    spans: int = 0
    traces: int = 0
    partitions: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.spans or self.traces or self.partitions)


class SpansByTime:
    def __init__(self, engine: Engine, *, batch: int = BATCH) -> None:
        self.engine = engine
        self.batch = batch

    def make_partitions(self, now_ms: int, days: int) -> list[str] | None:
        """PostgreSQL: the partitions for the coming periods that are missing, made (their
        names); ``None`` when another process holds the lock or the table is not partitioned."""
        with self._alone() as alone:
            if not alone:
                return None
            with write_transaction(self.engine) as connection:
                if not span_partitions.is_partitioned(connection):
                    return None
                return span_partitions.ensure_ahead(connection, now_ms, days)

    def expire(self, now_ms: int, days: int) -> Removed | None:
        """Remove the spans older than ``days`` days at ``now_ms`` (see the module);
        ``None`` when another process is at it."""
        cutoff_ms = now_ms - days * DAY_MS
        removed = Removed()
        with self._alone() as alone:
            if not alone:
                return None
            while self._legacy_traces(cutoff_ms, removed):
                pass
            while self._epochs(cutoff_ms):
                pass
            with self.engine.connect() as connection:
                partitioned = span_partitions.is_partitioned(connection)
                expired = [part for part in span_partitions.partitions(connection)
                           if part.upper_ms is not None and part.upper_ms <= cutoff_ms] if partitioned else []
            for part in expired:
                self._drop(part, removed)
            source = _DEFAULT_PARTITION if partitioned else t_spans
            while self._oldest(source, cutoff_ms, removed):
                pass
        return removed

    @contextmanager
    def _alone(self) -> Iterator[bool]:
        """Whether this process may run (PostgreSQL: holds a session advisory lock till the end)."""
        if self.engine.dialect.name != "postgresql":
            yield True
            return
        with self.engine.connect() as guard:
            taken = bool(guard.exec_driver_sql(f"SELECT pg_try_advisory_lock({LOCK_KEY})").scalar())
            guard.commit()
            try:
                yield taken
            finally:
                if taken:
                    guard.exec_driver_sql(f"SELECT pg_advisory_unlock({LOCK_KEY})")
                    guard.commit()

    def _legacy_traces(self, cutoff_ms: int, removed: Removed) -> bool:
        with write_transaction(self.engine) as connection:
            traces = connection.execute(
                sa.select(t_epochs.c.account_pk, t_epochs.c.trace_id)
                .where(t_epochs.c.legacy_ids == sa.true(), t_epochs.c.epoch_ms < cutoff_ms)
                .order_by(t_epochs.c.epoch_ms).limit(max(1, self.batch // 10))).all()
            if not traces:
                return False
            by_account: dict[int, list[str]] = defaultdict(list)
            for account_pk, trace_id in traces:
                by_account[account_pk].append(trace_id)
            instance_ids: list[str] = []
            for account_pk, trace_ids in by_account.items():
                # Through the account's agents: each agent's (agent, external identifier) index finds its traces.
                instance_ids += connection.execute(
                    sa.select(t_instances.c.id).select_from(t_agents)
                    .join(t_instances, sa.and_(t_instances.c.agent_id == t_agents.c.id,
                                               t_instances.c.external_identifier.in_(trace_ids)))
                    .where(t_agents.c.account_pk == account_pk)).scalars()
            rows = _spans_where(connection, t_spans, t_spans.c.instance_id.in_(instance_ids)) if instance_ids else []
            removed.traces += _remove(connection, t_spans, rows, instance_ids)
            removed.spans += len(rows)
            _delete_epochs(connection, [tuple(trace) for trace in traces])
        return True

    def _epochs(self, cutoff_ms: int) -> bool:
        with write_transaction(self.engine) as connection:
            traces = connection.execute(sa.select(t_epochs.c.account_pk, t_epochs.c.trace_id)
                                        .where(t_epochs.c.epoch_ms < cutoff_ms).limit(self.batch)).all()
            _delete_epochs(connection, [tuple(trace) for trace in traces])
        return bool(traces)

    def _drop(self, part: span_partitions.Partition, removed: Removed) -> None:
        """Drop a partition wholly before the window with what depends on its spans.

        The spans table is locked first (dropping a partition locks it anyway; taking the
        partition's lock first could wait in a circle with a reader holding the table's),
        so no span is written into the partition after its traces are read: span reads
        and writes wait for this transaction, which reads the partition's traces and
        computes their stats again."""
        with write_transaction(self.engine) as connection:
            connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{span_partitions.LOCK_TIMEOUT}'")
            connection.exec_driver_sql(f"LOCK TABLE {span_partitions.TABLE} IN ACCESS EXCLUSIVE MODE")
            counted = _uncount(connection, part.name)
            instance_ids = list(connection.exec_driver_sql(
                f"SELECT DISTINCT instance_id FROM {part.name}").scalars())
            within = [t_waiting.c.span_id < part.upper] + ([t_waiting.c.span_id >= part.lower] if part.lower else [])
            connection.execute(sa.delete(t_waiting).where(*within))
            connection.exec_driver_sql(f"DROP TABLE {part.name}")
            removed.traces += _settle(connection, instance_ids)
            removed.spans += counted
            removed.partitions.append(part.name)

    def _oldest(self, source: Any, cutoff_ms: int, removed: Removed) -> bool:
        with write_transaction(self.engine) as connection:
            rows = _spans_where(connection, source, source.c.id < bound(cutoff_ms), limit=self.batch)
            if not rows:
                return False
            removed.traces += _remove(connection, source, rows, sorted({row.instance_id for row in rows}))
            removed.spans += len(rows)
        return True


def _spans_where(connection: Connection, source: Any, condition: Any, *, limit: int | None = None) -> list[Any]:
    statement = sa.select(source.c.id, source.c.account_pk, source.c.session_id, source.c.instance_id) \
        .where(condition).order_by(source.c.id)
    return list(connection.execute(statement if limit is None else statement.limit(limit)))


def _remove(connection: Connection, source: Any, rows: list[Any], instance_ids: list[str]) -> int:
    """Delete these spans, their rows in the conversation queue, and settle their traces;
    how many traces were left without spans."""
    span_ids = [row.id for row in rows]
    deleted: list[Any] = []
    for start in range(0, len(span_ids), _CHUNK):
        deleted += delete_spans(connection, sa.delete(source).where(source.c.id.in_(span_ids[start:start + _CHUNK])),
                                source.c.id, source.c.session_id)
    waiting = [(row.account_pk, row.session_id, row.id) for row in deleted if row.session_id is not None]
    for start in range(0, len(waiting), _CHUNK):
        connection.execute(sa.delete(t_waiting).where(sa.tuple_(
            t_waiting.c.account_pk, t_waiting.c.session_id, t_waiting.c.span_id).in_(waiting[start:start + _CHUNK])))
    return _settle(connection, sorted(set(instance_ids)))


def _uncount(connection: Connection, partition: str) -> int:
    """Take a partition's spans off the account span counts (under the table's lock, so
    they are all of its spans); how many it holds."""
    return take_off(connection, connection.exec_driver_sql(
        f"SELECT account_pk, agent_id, status, validation_status, count(*) FROM {partition} "
        "GROUP BY account_pk, agent_id, status, validation_status").all())


def _settle(connection: Connection, instance_ids: list[str]) -> int:
    """Traces that lost spans: removed when none are left, else their stats computed again;
    how many were removed."""
    gone = 0
    for start in range(0, len(instance_ids), _CHUNK):
        chunk = instance_ids[start:start + _CHUNK]
        gone += connection.execute(sa.delete(t_instances).where(
            t_instances.c.id.in_(chunk), ~sa.exists().where(t_spans.c.instance_id == t_instances.c.id))).rowcount
    recompute(connection, instance_ids)
    return gone


def _delete_epochs(connection: Connection, traces: list[tuple[Any, ...]]) -> None:
    for start in range(0, len(traces), _CHUNK):
        connection.execute(sa.delete(t_epochs).where(
            sa.tuple_(t_epochs.c.account_pk, t_epochs.c.trace_id).in_(traces[start:start + _CHUNK])))
