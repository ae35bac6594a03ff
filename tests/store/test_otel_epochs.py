"""OTel span ids in time order, on SQLite and PostgreSQL: a trace's spans take the moment
the trace was first seen as their ids' time part, whenever they arrive, so re-sent spans
are recognised and parents named before they arrive are found; a newer trace's ids sort
after an older one's; traces stored before epochs existed keep their ids and are
extended; writers naming a new trace at the same moment agree on one epoch."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from agentfolio.otel.mapping import map_spans, registry_span_id
from agentfolio.registry import ids
from agentfolio.store import Store
from agentfolio.store import otel_spans as otel_spans_module
from agentfolio.store.engine import WRITE, alembic_config, read_transaction, write_transaction
from agentfolio.store.otel_epochs import TraceEpochs
from agentfolio.store.otel_spans import OtelSpans
from agentfolio.store.registry.span_counts import SpanTotals
from agentfolio.store.registry_tables import otel_trace_epochs, registry_spans
from agentfolio.store.scope import AccountScope
from tests.store.test_otel_spans import rows, span

DAY_US = 86_400 * 10**6
NAMED = {"gen_ai.agent.name": "Planner", "gen_ai.operation.name": "invoke_agent"}


@contextmanager
def clock_at(monkeypatch: pytest.MonkeyPatch, micros: int) -> Iterator[None]:
    """The writer's clock (the epoch of the traces it sees first) stopped at ``micros``."""
    with monkeypatch.context() as patched:
        patched.setattr(otel_spans_module, "now_us", lambda: micros)
        yield


def times(stored: list[Any]) -> set[int]:
    return {ids.decode(row.id).timestamp_ms for row in stored}


def epochs(store: Store, account_pk: int) -> dict[str, tuple[int, bool]]:
    with read_transaction(store.engine) as connection:
        return {row.trace_id: (row.epoch_ms, row.legacy_ids) for row in connection.execute(
            sa.select(otel_trace_epochs).where(otel_trace_epochs.c.account_pk == account_pk))}


def test_a_trace_keeps_its_first_moment_across_requests_a_day_apart(store: Store,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    account = store.accounts.ensure("apart")
    writer = OtelSpans(store.registry)
    first = time.time_ns() // 1000 - 2 * DAY_US
    built = [span(0, None, attributes=NAMED), span(1, 0), span(2, 1), span(3, 0)]
    with clock_at(monkeypatch, first):
        assert writer.write(account, map_spans([built[2], built[3]])).inserted == 2  # children first
    with clock_at(monkeypatch, first + DAY_US):
        again = writer.write(account, map_spans(built))  # the rest, and the first two sent again
    assert (again.inserted, again.duplicates) == (2, 2)
    stored = rows(store, account.pk)
    assert len(stored) == 4 and times(stored) == {first // 1000}
    assert all(row.parent_found is not False for row in stored), [(row.schema_name, row.parent_found)
                                                                  for row in stored]
    assert len({row.instance_id for row in stored}) == 1
    assert epochs(store, account.pk) == {"ab" * 16: (first // 1000, False)}


def test_a_newer_trace_sorts_after_an_older_one(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    account = store.accounts.ensure("order")
    writer = OtelSpans(store.registry)
    now = time.time_ns() // 1000
    # The newer trace's id sorts first in the old derivation's random order, and its spans started earlier.
    older, newer = "f" * 32, "0" * 31 + "1"
    with clock_at(monkeypatch, now - 1000):
        writer.write(account, map_spans([span(i, None if i == 0 else 0, trace=older) for i in range(6)]))
    with clock_at(monkeypatch, now):
        writer.write(account, map_spans([span(i, None if i == 0 else 0, trace=newer) for i in range(6)]))
    by_trace: dict[str, list[str]] = {older: [], newer: []}
    for row in rows(store, account.pk):
        by_trace[row.payload and _trace_of(row)].append(row.id)
    assert max(by_trace[older]) < min(by_trace[newer])
    with read_transaction(store.engine) as connection:
        newest = connection.execute(sa.select(registry_spans.c.id).where(registry_spans.c.account_pk == account.pk)
                                    .order_by(registry_spans.c.id.desc()).limit(6)).scalars().all()
    assert set(newest) == set(by_trace[newer])


def _trace_of(row: Any) -> str:
    from agentfolio.registry.sensitive import load_masked

    return str(load_masked(row.payload)["trace_id"])


def test_a_trace_stored_before_epochs_keeps_its_ids_and_grows(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    account = store.accounts.ensure("legacy")
    partition = store.registry.account(account.pk).partition
    config = alembic_config()
    with store.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0013_trace_stats_by_writers")
    old, new = "c" * 32, "d" * 32
    built = [span(0, None, trace=old, attributes=NAMED), span(1, 0, trace=old), span(2, 1, trace=old)]
    with monkeypatch.context() as patched:  # the code before epochs: every id derived the old way
        patched.setattr(TraceEpochs, "fix", lambda self, trace_ids, now_ms: dict.fromkeys(trace_ids))
        # and no span counts kept (a later migration computes them from the stored spans)
        patched.setattr(SpanTotals, "apply", lambda self, connection: self.changes.clear())
        OtelSpans(store.registry).write(account, map_spans(built[:2]))
    legacy = {registry_span_id(partition, account.pk, old, item.span_id) for item in built}
    assert {row.id for row in rows(store, account.pk)} < legacy
    with Store.open(store.settings) as upgraded:  # opening migrates to the newest schema
        assert epochs(upgraded, account.pk)[old][1] is True
        writer = OtelSpans(upgraded.registry)
        again = writer.write(account, map_spans(built[1:]))  # one stored span sent again, one new
        assert (again.inserted, again.duplicates) == (1, 1)
        writer.write(account, map_spans([span(0, None, trace=new, attributes=NAMED), span(1, 0, trace=new)]))
        stored = rows(upgraded, account.pk)
    assert {row.id for row in stored if _trace_of(row) == old} == legacy
    assert all(row.parent_found is not False for row in stored)
    fresh = [row.id for row in stored if _trace_of(row) == new]
    assert len(fresh) == 2 and not set(fresh) & legacy
    assert times([row for row in stored if _trace_of(row) == new]) == {epochs(store, account.pk)[new][0]}


def test_a_second_writer_naming_a_new_trace_takes_the_first_one_s_epoch(store: Store) -> None:
    """The first transaction fixes the epoch; one naming the trace meanwhile waits for it
    and reads that epoch; a transaction that rolled back fixed nothing."""
    account = store.accounts.ensure("race")
    scope = AccountScope(account.pk)
    seen: dict[str, Any] = {}

    def second(label: str, now_ms: int) -> None:
        with write_transaction(store.engine) as connection:
            seen[label] = TraceEpochs(connection, scope).fix(["e" * 32, "f" * 32], now_ms)

    for outcome, expected in (("rollback", 3_000), ("commit", 1_000)):
        with store.engine.connect() as connection:
            connection.execution_options(**{WRITE: True})
            transaction = connection.begin()
            TraceEpochs(connection, scope).fix(["f" * 32, "e" * 32], 1_000)
            waiting = threading.Thread(target=second, args=(outcome, expected if outcome == "rollback" else 2_000))
            waiting.start()
            waiting.join(1.0)
            assert waiting.is_alive()  # it waits for the first transaction
            (transaction.rollback if outcome == "rollback" else transaction.commit)()
        waiting.join(60)
        if outcome == "rollback":
            assert seen["rollback"] == {"e" * 32: 3_000, "f" * 32: 3_000}
            with write_transaction(store.engine) as connection:  # start again from no epoch
                connection.execute(sa.delete(otel_trace_epochs))
        else:
            assert seen["commit"] == {"e" * 32: 1_000, "f" * 32: 1_000}


def test_writers_at_once_on_new_traces_agree_and_find_every_parent(store: Store) -> None:
    account = store.accounts.ensure("at-once")
    writer = OtelSpans(store.registry)
    traces = [f"{number:032x}" for number in range(1, 7)]
    senders = 4
    barrier = threading.Barrier(senders)
    failures: list[BaseException] = []

    def send(number: int) -> None:
        try:
            for trace in traces:
                barrier.wait(60)
                # A binary tree: sender 0 sends the root and its children, the others their descendants.
                mine = [span(index, None if index == 0 else (index - 1) // 2, trace=trace,
                             attributes=NAMED if index == 0 else None) for index in range(number * 3, number * 3 + 3)]
                writer.write(account, map_spans(mine))
        except BaseException as error:  # reported below, with the thread's own traceback
            failures.append(error)

    threads = [threading.Thread(target=send, args=(number,)) for number in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    stored = rows(store, account.pk)
    assert len(stored) == len(traces) * senders * 3
    fixed = epochs(store, account.pk)
    for trace in traces:
        assert times([row for row in stored if _trace_of(row) == trace]) == {fixed[trace][0]}
    assert all(row.parent_found is not False for row in stored), sum(row.parent_found is False for row in stored)
