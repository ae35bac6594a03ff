"""Spans by time, on SQLite and PostgreSQL: retention removes exactly the spans older than
its window (OTLP traces whole, the traces stored before epochs existed by their first
arrival), with their rows in the conversation queue, and leaves every trace's stats and
the account's span counts exact (a trace left without spans goes); two processes running
it at once remove each span once; on PostgreSQL the spans table's partitions are made
ahead (taking the rows of their range out of the default partition) and the migration
carries the rows both ways."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from agentfolio.app import registry as app
from agentfolio.otel.mapping import map_spans
from agentfolio.registry import ids
from agentfolio.store import Store, span_partitions
from agentfolio.store.engine import WRITE, alembic_config, read_transaction, write_transaction
from agentfolio.store.otel_epochs import TraceEpochs
from agentfolio.store.otel_spans import OtelSpans
from agentfolio.store.registry_tables import (
    otel_trace_epochs,
    otel_work_spans,
    registry_instances,
    registry_spans,
)
from agentfolio.store.spans_by_time import SpansByTime
from tests.store.test_otel_epochs import NAMED, clock_at
from tests.store.test_otel_spans import span
from tests.store.test_span_counts import counted, kept_counts
from tests.store.test_trace_stats import World, bounds_of, counted_stats, counts_of, stats_of

DAY_MS = span_partitions.DAY_MS
NOW_MS = time.time_ns() // 1_000_000
#: The runs below happen 60 days from now with a 30-day window: the cut is 30 days ahead,
#: old spans are from now (before it), new ones 45 days ahead (after it, and outside any
#: partition that ends before it).
LATER_MS, DAYS = NOW_MS + 60 * DAY_MS, 30
OLD_MS, NEW_MS = NOW_MS - 5 * DAY_MS, NOW_MS + 45 * DAY_MS


def span_ids(store: Store, table: Any = registry_spans) -> set[str]:
    with read_transaction(store.engine) as connection:
        return set(connection.execute(sa.select(table.c.span_id if table is otel_work_spans else table.c.id))
                   .scalars())


def instance_ids(store: Store) -> set[str]:
    with read_transaction(store.engine) as connection:
        return set(connection.execute(sa.select(registry_instances.c.id)).scalars())


class Stored:
    """An account holding old and new spans of every kind; what retention must leave."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        world = self.world = World(store)
        account = world.principal.account
        writer = OtelSpans(store.registry)

        def otlp(trace: str, at_ms: int) -> set[str]:
            before = span_ids(store)
            with clock_at(monkeypatch, at_ms * 1000):
                writer.write(account, map_spans([span(i, None if i == 0 else 0, trace=trace,
                                                      attributes=NAMED if i == 0 else None) for i in range(3)]))
            return span_ids(store) - before

        old_trace, self.new_otel = otlp("a" * 32, OLD_MS), otlp("b" * 32, NEW_MS)
        # A trace stored before epochs existed (hash-derived ids, first seen long ago).
        before = span_ids(store)
        with monkeypatch.context() as patched:
            patched.setattr(TraceEpochs, "fix", lambda self, trace_ids, now_ms: dict.fromkeys(trace_ids))
            writer.write(account, map_spans([span(i, None if i == 0 else 0, trace="c" * 32) for i in range(4)]))
        legacy = span_ids(store) - before
        with write_transaction(store.engine) as connection:
            connection.execute(sa.insert(otel_trace_epochs).values(account_pk=account.pk, trace_id="c" * 32,
                                                                   epoch_ms=OLD_MS, legacy_ids=True))
        # Prefactor API traces: one wholly old, one with old and new spans.
        mixed, all_old = world.instance(1), world.instance(2)
        self.new_api = self.api(mixed, [NEW_MS, NEW_MS + 1])
        old_api = self.api(mixed, [OLD_MS, OLD_MS + 1]) | self.api(all_old, [OLD_MS + 2])
        self.kept_instances = {mixed, *self.instances_of(store, self.new_otel)}
        self.gone_instances = {all_old, *self.instances_of(store, old_trace | legacy)}
        self.old = old_trace | legacy | old_api
        self.new = self.new_otel | self.new_api
        assert span_ids(store) == self.old | self.new and span_ids(store, otel_work_spans) >= old_trace | self.new_otel

    def api(self, instance: str, times: list[int]) -> set[str]:
        made = {ids.encode(at, self.world.partition, number + 1) for number, at in enumerate(times)}
        self.world.service.bulk(self.world.principal, [app.BulkItem(f"create-{span_id}", app.SpanCreate(
            agent_instance_id=instance, schema_name="step", status="failed" if number % 2 else "complete",
            id=span_id, payload={"n": number})) for number, span_id in enumerate(sorted(made))])
        return made

    @staticmethod
    def instances_of(store: Store, spans: set[str]) -> set[str]:
        with read_transaction(store.engine) as connection:
            return set(connection.execute(sa.select(registry_spans.c.instance_id)
                                          .where(registry_spans.c.id.in_(spans))).scalars())

    def check(self, store: Store) -> None:
        pk = self.world.principal.account.pk
        assert span_ids(store) == self.new
        assert span_ids(store, otel_work_spans) == self.new_otel
        assert instance_ids(store) >= self.kept_instances and not instance_ids(store) & self.gone_instances
        assert counted_stats(store, pk) == counts_of(store, pk)
        assert kept_counts(store, pk) == counted(store, pk)
        assert {instance: row[3:] for instance, row in stats_of(store, pk).items()} == bounds_of(store, pk)
        with read_transaction(store.engine) as connection:
            assert set(connection.execute(sa.select(otel_trace_epochs.c.trace_id)).scalars()) == {"b" * 32}


def test_retention_removes_exactly_the_old_spans_and_keeps_the_stats_exact(store: Store,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    stored = Stored(store, monkeypatch)
    removed = SpansByTime(store.engine, batch=2).expire(LATER_MS, DAYS)  # many small transactions
    assert removed is not None and removed.spans == len(stored.old)
    # PostgreSQL drops the partitions wholly before the cut (the one before the first period among them).
    assert ("registry_spans_before" in removed.partitions) == (store.engine.dialect.name == "postgresql")
    stored.check(store)
    assert not SpansByTime(store.engine).expire(LATER_MS, DAYS)  # nothing more to do


_RUN = """
import json, sys
from pathlib import Path
from agentfolio.settings import Settings
from agentfolio.store import Store
with Store.open(Settings(data_dir=Path(sys.argv[1]), database_url=sys.argv[2]), run_migrations=False) as store:
    print("ready", flush=True)
    removed = store.spans_by_time.expire(int(sys.argv[3]), int(sys.argv[4]))
print(json.dumps(None if removed is None else removed.spans))
"""


def test_two_processes_at_once_remove_each_span_once(store: Store, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Any) -> None:
    stored = Stored(store, monkeypatch)
    url = store.settings.effective_database_url
    # Both start while this test holds the epochs (PostgreSQL) or the write lock (SQLite),
    # so both are under way when it lets go.
    with store.engine.connect() as holding:
        holding.execution_options(**{WRITE: True})
        transaction = holding.begin()
        if holding.dialect.name == "postgresql":
            holding.exec_driver_sql("LOCK TABLE otel_trace_epochs IN SHARE MODE")
        runs = [subprocess.Popen([sys.executable, "-c", _RUN, str(tmp_path / f"p{number}"), url, str(LATER_MS),
                                  str(DAYS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for number in range(2)]
        for run in runs:
            assert run.stdout is not None and run.stdout.readline().strip() == b"ready"
        time.sleep(2)
        transaction.rollback()
    answers = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err.decode()[-2000:]
        answers.append(json.loads(out))
    assert sum(answer or 0 for answer in answers) == len(stored.old), answers
    stored.check(store)


def _postgresql(store: Store) -> None:
    if store.engine.dialect.name != "postgresql":
        pytest.skip("the spans table is partitioned on PostgreSQL only")


def _partition_of(store: Store, span_id: str) -> str:
    with read_transaction(store.engine) as connection:
        return str(connection.execute(sa.text("SELECT tableoid::regclass::text FROM registry_spans WHERE id = :id"),
                                      {"id": span_id}).scalar_one())


def test_partitions_are_made_ahead_taking_their_rows_from_the_default(store: Store) -> None:
    _postgresql(store)
    world = World(store)
    instance = world.instance(1)
    far = ids.encode(NOW_MS + 100 * DAY_MS, world.partition, 7)  # an id a client chose, dated ahead
    world.service.bulk(world.principal, [app.BulkItem("far", app.SpanCreate(
        agent_instance_id=instance, schema_name="step", status="complete", id=far, payload={"n": 1}))])
    assert _partition_of(store, far).endswith(span_partitions.DEFAULT)
    spans = SpansByTime(store.engine)
    assert spans.make_partitions(NOW_MS, DAYS) == []  # the migration made this period and two ahead
    with read_transaction(store.engine) as connection:
        before = span_partitions.partitions(connection)
    made = spans.make_partitions(NOW_MS + 70 * DAY_MS, DAYS)
    assert made and spans.make_partitions(NOW_MS + 70 * DAY_MS, DAYS) == []
    with read_transaction(store.engine) as connection:
        after = span_partitions.partitions(connection)
    assert [part.name for part in after] == [part.name for part in before] + made
    assert all(lower.upper == upper.lower for lower, upper in itertools.pairwise(after))  # no gap
    assert after[-1].upper_ms is not None and after[-1].upper_ms > NOW_MS + 70 * DAY_MS + 2 * DAYS * DAY_MS
    holder = next(part for part in after if part.lower and part.upper and part.lower <= far < part.upper)
    assert _partition_of(store, far).endswith(holder.name)
    assert span_ids(store) >= {far}


def test_the_migration_carries_the_spans_over_both_ways(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    Stored(store, monkeypatch)

    def snapshot() -> tuple[set[tuple[Any, ...]], set[str]]:
        with read_transaction(store.engine) as connection:
            rows = {tuple(row) for row in connection.execute(sa.select(registry_spans))}
            indexes = {index["name"] for index in sa.inspect(connection).get_indexes("registry_spans")}
        return rows, indexes

    def partitioned() -> bool:
        with read_transaction(store.engine) as connection:
            return span_partitions.is_partitioned(connection)

    rows, indexes = snapshot()
    assert partitioned() == (store.engine.dialect.name == "postgresql")
    config = alembic_config()
    with store.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0014_otel_trace_epochs")
    assert snapshot() == (rows, indexes) and not partitioned()
    with store.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    assert snapshot() == (rows, indexes)
    assert partitioned() == (store.engine.dialect.name == "postgresql")
