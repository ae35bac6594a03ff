"""The epochs of an account's OTel traces: the moment each trace was first seen, which is
the time part of its spans' registry ids (:func:`agentfolio.otel.mapping.registry_span_id`).

A trace's epoch is fixed once, by the first transaction that names the trace: every
request inserts the epochs of its traces if absent, then reads back what is stored.  Two
servers writing the first spans of one trace at once agree: on PostgreSQL the second
insert waits for the first transaction and then finds its row (a new statement sees
what committed before it, at READ COMMITTED); on SQLite the write lock orders them.  A
transaction that rolls back takes its epochs with it, as it takes its spans.

Reading an epoch on PostgreSQL also locks it (``FOR NO KEY UPDATE``) until the request
commits: the requests writing one trace take turns (as SQLite's write lock makes every
request do).  One request may move a trace's spans out of the instance another is adding
spans to and delete it (spans filed under their service until the span naming their agent
arrives): one at a time, the second sees what the first did.  Everybody locks epochs in
one order (sorted trace ids), so two requests never wait for each other in a circle on
them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from agentfolio.store.errors import StoreUnavailable
from agentfolio.store.registry.base import Rows
from agentfolio.store.registry.bulk import execute_many
from agentfolio.store.registry_tables import otel_trace_epochs as t_epochs

__all__ = ["TraceEpoch", "TraceEpochs"]

_CHUNK = 500
_ATTEMPTS = 3

#: The epoch a trace's span ids are derived with: milliseconds, or ``None`` for a trace
#: stored before epochs existed (its ids keep the hash-derived time part).
TraceEpoch = int | None


class TraceEpochs(Rows):
    """The epoch statements for one account, in the caller's transaction."""

    def fix(self, trace_ids: Iterable[str], now_ms: int) -> dict[str, TraceEpoch]:
        """Each trace's epoch: the stored one, else ``now_ms`` (stored now)."""
        wanted = sorted(set(trace_ids))
        found: dict[str, TraceEpoch] = {}
        for start in range(0, len(wanted), _CHUNK):
            missing = wanted[start:start + _CHUNK]
            # An epoch deleted between the insert and the read (a trace past the retention
            # window) is inserted again: the trace starts afresh.
            for _attempt in range(_ATTEMPTS):
                execute_many(self.conn, _insert_if_absent(self.conn.dialect.name), self.scope.rows(
                    {"trace_id": trace_id, "epoch_ms": now_ms, "legacy_ids": False} for trace_id in missing))
                for trace_id, epoch_ms, legacy in self.conn.execute(
                        self.scope.select(t_epochs, t_epochs.c.trace_id, t_epochs.c.epoch_ms, t_epochs.c.legacy_ids)
                        .where(t_epochs.c.trace_id.in_(missing)).order_by(t_epochs.c.trace_id)
                        .with_for_update(key_share=True)):
                    found[trace_id] = None if legacy else epoch_ms
                missing = [trace_id for trace_id in missing if trace_id not in found]
                if not missing:
                    break
            else:
                raise StoreUnavailable("the epochs of these traces keep being deleted")
        return found


@functools.cache  # one statement per dialect: execute_many compiles it once
def _insert_if_absent(dialect: str) -> sa.Insert:
    insert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(t_epochs)
    return insert.on_conflict_do_nothing(index_elements=[t_epochs.c.account_pk, t_epochs.c.trace_id])
