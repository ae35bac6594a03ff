"""Rows of agent runs: instances and their spans.

New spans are buffered and inserted with one ``executemany`` when the unit flushes
(before any read of spans, and at commit), so a bulk request of thousands of spans
costs one round trip instead of thousands; what they (and updates of stored spans)
change in their traces' stats is written at the same flush, one row per trace
(:mod:`agentfolio.store.registry.trace_stats`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Row

from agentfolio.registry.listing import PageRequest
from agentfolio.store.registry.base import Rows, eq
from agentfolio.store.registry.bulk import insert_many
from agentfolio.store.registry.span_counts import kept_count
from agentfolio.store.registry.trace_stats import TraceCounts, trace_count, update_spans
from agentfolio.store.registry_tables import (
    registry_instances as t_instances,
)
from agentfolio.store.registry_tables import (
    registry_spans as t_spans,
)

INSTANCE_SORT = {"id": t_instances.c.id, "status": t_instances.c.status, "inserted_at": t_instances.c.inserted_at,
                 "updated_at": t_instances.c.updated_at, "started_at": t_instances.c.started_at,
                 "finished_at": t_instances.c.finished_at}
SPAN_SORT = {"id": t_spans.c.id, "status": t_spans.c.status, "schema_name": t_spans.c.schema_name,
             "inserted_at": t_spans.c.inserted_at, "updated_at": t_spans.c.updated_at,
             "started_at": t_spans.c.started_at, "finished_at": t_spans.c.finished_at}
INSTANCE_FILTERS = {"agent_id": t_instances.c.agent_id, "status": t_instances.c.status,
                    "environment_id": t_instances.c.environment_id, "session_id": t_instances.c.session_id}
SPAN_FILTERS = {"agent_id": t_spans.c.agent_id, "agent_instance_id": t_spans.c.instance_id,
                "status": t_spans.c.status, "schema_name": t_spans.c.schema_name,
                "validation_status": t_spans.c.validation_status, "parent_span_id": t_spans.c.parent_span_id,
                "session_id": t_spans.c.session_id}


def _counts(rows: Iterable[Any]) -> dict[str, int]:
    return dict(tuple(row) for row in rows)  # a Result has keys(): dict() would read it as a mapping


class Instances(Rows):
    def get(self, instance_id: str) -> Row[Any] | None:
        return self.conn.execute(self.scope.select(t_instances).where(t_instances.c.id == instance_id)).first()

    def exists(self, instance_id: str) -> bool:
        return self.conn.execute(self.scope.select(t_instances, t_instances.c.id)
                                 .where(t_instances.c.id == instance_id)).first() is not None

    def external_identifier_used(self, agent_id: str, external: str) -> bool:
        return self.conn.execute(self.scope.select(t_instances, t_instances.c.id).where(
            t_instances.c.agent_id == agent_id, t_instances.c.external_identifier == external)).first() is not None

    def any_of_agent(self, agent_id: str) -> bool:
        return self.conn.execute(self.scope.select(t_instances, t_instances.c.id)
                                 .where(t_instances.c.agent_id == agent_id).limit(1)).first() is not None

    def status_counts(self, agent_id: str) -> dict[str, int]:
        """How many instances of the agent are in each status."""
        return _counts(self.conn.execute(self.scope.select(t_instances, t_instances.c.status, sa.func.count())
                                         .where(t_instances.c.agent_id == agent_id)
                                         .group_by(t_instances.c.status)))

    def insert(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_instances).values(**values))

    def update(self, instance_id: str, **changes: Any) -> None:
        self.conn.execute(self.scope.update(t_instances).where(t_instances.c.id == instance_id).values(**changes))

    def page(self, page: PageRequest, *, agent_of_token: str | None = None,
             **filters: str) -> tuple[list[Row[Any]], int]:
        where = [eq(INSTANCE_FILTERS[key], value) for key, value in filters.items()]
        if agent_of_token is not None:
            where.append(t_instances.c.agent_id == agent_of_token)
        return self._page(t_instances, where, page, INSTANCE_SORT)


class Spans(Rows):
    __slots__ = ("counts", "loaded", "pending")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        #: what the writes not flushed yet change in their traces' stats
        self.counts = TraceCounts(self.scope.account_pk)
        #: span id → row not inserted yet (without ``account_pk``: the scope adds it)
        self.pending: dict[str, dict[str, Any]] = {}
        #: span id → stored row read ahead by :meth:`preload` (kept current by :meth:`update`)
        self.loaded: dict[str, dict[str, Any]] = {}

    def get(self, span_id: str) -> dict[str, Any] | None:
        found = self.pending.get(span_id) or self.loaded.get(span_id)
        if found is not None:
            return found
        row = self.conn.execute(self.scope.select(t_spans).where(t_spans.c.id == span_id)).first()
        return None if row is None else dict(row._mapping)

    def preload(self, span_ids: Iterable[str]) -> None:
        """Read these spans in a few statements ahead of :meth:`get` (a replayed bulk request)."""
        wanted = sorted(set(span_ids) - self.pending.keys() - self.loaded.keys())
        for start in range(0, len(wanted), 500):
            for row in self.conn.execute(self.scope.select(t_spans)
                                         .where(t_spans.c.id.in_(wanted[start:start + 500]))):
                self.loaded[row.id] = dict(row._mapping)

    def exists(self, span_id: str) -> bool:
        return span_id in self.pending or self.conn.execute(
            self.scope.select(t_spans, t_spans.c.id).where(t_spans.c.id == span_id)).first() is not None

    def instance_of(self, span_id: str) -> str | None:
        found = self.pending.get(span_id)
        if found is not None:
            return str(found["instance_id"])
        instance_id: str | None = self.conn.execute(self.scope.select(t_spans, t_spans.c.instance_id)
                                                    .where(t_spans.c.id == span_id)).scalar()
        return instance_id

    def status_counts(self, instance_id: str) -> dict[str, int]:
        self.flush()
        return _counts(self.conn.execute(self.scope.select_by_key(t_spans, t_spans.c.status, sa.func.count())
                                         .where(t_spans.c.instance_id == instance_id)
                                         .group_by(t_spans.c.status)))

    def schema_name_counts(self, instance_id: str) -> dict[str, int]:
        self.flush()
        return _counts(self.conn.execute(self.scope.select_by_key(t_spans, t_spans.c.schema_name,
                                                                  sa.func.count())
                                         .where(t_spans.c.instance_id == instance_id)
                                         .group_by(t_spans.c.schema_name)))

    def add(self, row: dict[str, Any]) -> None:
        """Buffer a new span (inserted at the next :meth:`flush`)."""
        self.pending[row["id"]] = row

    def update(self, span_id: str, **changes: Any) -> None:
        pending = self.pending.get(span_id)
        if pending is not None:
            pending.update(changes)
            return
        if span_id in self.loaded:
            self.loaded[span_id].update(changes)
        update_spans(self.conn, self.scope, [span_id], self.counts, **changes)

    def page(self, page: PageRequest, *, agent_of_token: str | None = None,
             **filters: str) -> tuple[list[Row[Any]], int]:
        self.flush()
        where = [eq(SPAN_FILTERS[key], value) for key, value in filters.items()]
        if agent_of_token is not None:
            where.append(t_spans.c.agent_id == agent_of_token)
        return self._page(t_spans, where, page, SPAN_SORT, count=self._kept_count(filters, agent_of_token))

    def _kept_count(self, filters: dict[str, str], agent_of_token: str | None) -> int | None:
        """How many spans match, from the counts the writers keep (the account's span
        counts, or the trace's stats), when the filters are ones they are kept for."""
        if agent_of_token is not None:
            if filters.get("agent_id", agent_of_token) != agent_of_token:
                return 0  # two different agents at once
            filters = {**filters, "agent_id": agent_of_token}
        counted = {SPAN_FILTERS[key].name: value for key, value in filters.items()}
        kept = kept_count(self.conn, self.scope, counted)
        if kept is None and counted.keys() == {"instance_id"} | (counted.keys() & {"status", "validation_status"}):
            kept = trace_count(self.conn, self.scope, counted)
        return kept

    def flush(self) -> None:
        if self.pending:
            rows = self.scope.rows(self.pending.values())
            insert_many(self.conn, t_spans, rows)
            self.counts.add_all(rows)
            self.pending.clear()
        self.counts.apply(self.conn)
