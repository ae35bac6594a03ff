"""The per-trace stats the span writers keep, on SQLite and PostgreSQL: after any mix of
Prefactor bulk and single writes, re-sent batches, finishes, OTLP spans arriving children
first (moved between traces when their agent's span arrives), re-sent OTLP batches and
agent deletions, they are exactly what the database triggers they replace kept (run here
beside them, into a shadow table), and their counts are the spans' own; and the
migration that replaced the triggers computes them again from what is stored, both ways.
"""

from __future__ import annotations

import importlib
import itertools
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfolio.app import registry as app
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.otel.decode import OtelSpan
from agentfolio.otel.mapping import map_spans
from agentfolio.registry import ids
from agentfolio.store import Store
from agentfolio.store.engine import alembic_config, read_transaction
from agentfolio.store.otel_spans import OtelSpans
from agentfolio.store.registry_tables import registry_spans, registry_trace_stats

BASE = datetime(2026, 1, 1, tzinfo=UTC)
VERSION = {"external_identifier": "v1", "span_type_schemas": [
    {"name": "step", "params_schema": {"type": "object", "required": ["n"]}}]}
_accounts = itertools.count()
_TRIGGERS = importlib.import_module("agentfolio.store.migrations.versions.0005_trace_pages")
_COLUMNS = ("span_count", "failed_count", "invalid_count", "first_start", "last_end")


def install_shadow(store: Store) -> None:
    """The triggers of ``0005_trace_pages``, writing into ``shadow_trace_stats``: the oracle."""
    with store.engine.begin() as connection:
        if sa.inspect(connection).has_table("shadow_trace_stats"):
            return
        connection.exec_driver_sql("""CREATE TABLE shadow_trace_stats (
            instance_id VARCHAR(32) PRIMARY KEY REFERENCES registry_instances (id) ON DELETE CASCADE,
            account_pk BIGINT NOT NULL, span_count BIGINT NOT NULL DEFAULT 0,
            failed_count BIGINT NOT NULL DEFAULT 0, invalid_count BIGINT NOT NULL DEFAULT 0,
            first_start BIGINT, last_end BIGINT)""")
        if connection.dialect.name == "postgresql":
            statements = (_TRIGGERS._POSTGRES_FUNCTION, *_TRIGGERS._POSTGRES_TRIGGERS)
        else:
            statements = _TRIGGERS._SQLITE_TRIGGERS
        for statement in statements:
            connection.exec_driver_sql(statement.replace("registry_trace_stats", "shadow_trace_stats"))


_SHADOW = sa.table("shadow_trace_stats", sa.column("instance_id"), sa.column("account_pk"),
                   *(sa.column(name) for name in _COLUMNS))


def stats_of(store: Store, account_pk: int, table: Any = registry_trace_stats) -> dict[str, tuple]:
    """The stats rows of the account per instance (a row of zeros and no bounds is no row)."""
    with read_transaction(store.engine) as connection:
        return {row[0]: tuple(row[1:]) for row in connection.execute(
            sa.select(table.c.instance_id, *(table.c[name] for name in _COLUMNS))
            .where(table.c.account_pk == account_pk)) if tuple(row[1:]) != (0, 0, 0, None, None)}


def counts_of(store: Store, account_pk: int) -> dict[str, tuple]:
    """(spans, failed, invalid) per instance, counted from the spans."""
    failed = sa.func.sum(sa.case((registry_spans.c.status == "failed", 1), else_=0))
    invalid = sa.func.sum(sa.case((registry_spans.c.validation_status == "invalid", 1), else_=0))
    with read_transaction(store.engine) as connection:
        return {row[0]: (row[1], row[2], row[3]) for row in connection.execute(
            sa.select(registry_spans.c.instance_id, sa.func.count(), failed, invalid)
            .where(registry_spans.c.account_pk == account_pk).group_by(registry_spans.c.instance_id))}


def bounds_of(store: Store, account_pk: int) -> dict[str, tuple]:
    """(first start, last end) per instance, from the spans."""
    with read_transaction(store.engine) as connection:
        return {row[0]: (row[1], row[2]) for row in connection.execute(sa.select(
            registry_spans.c.instance_id, sa.func.min(registry_spans.c.started_at),
            sa.func.max(sa.func.coalesce(registry_spans.c.finished_at, registry_spans.c.started_at)))
            .where(registry_spans.c.account_pk == account_pk).group_by(registry_spans.c.instance_id))}


def counted_stats(store: Store, account_pk: int) -> dict[str, tuple]:
    return {instance: row[:3] for instance, row in stats_of(store, account_pk).items() if row[0]}


def otel(trace: int, index: int, parent: int | None, *, agent: str | None, failed: bool) -> OtelSpan:
    return OtelSpan(trace_id=f"{trace + 1:032x}", span_id=f"{index + 1:016x}",
                    parent_span_id=None if parent is None else f"{parent + 1:016x}", name=f"step {index}",
                    kind="INTERNAL", start_ns=1_700_000_000 * 10**9 + index * 1000 + trace,
                    end_ns=1_700_000_000 * 10**9 + 5000 + index, status_code="ERROR" if failed else "UNSET",
                    status_message="", attributes={} if agent is None else {"gen_ai.agent.name": agent},
                    events=[], links=[], resource={"attributes": {"service.name": "svc"}}, scope={"name": "tests"})


class World:
    """One account's registry driven through the real writers."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.service = app.RegistryService(store)
        self.principal = app.Principal(store.accounts.ensure(f"stats-{next(_accounts)}"))
        self.partition = store.registry.account(self.principal.account.pk).partition
        self.agents: list[str] = []
        self.instances: list[str] = []
        self.agent_of: dict[str, str] = {}
        self.open_spans: list[str] = []
        self.batches: list[list[app.BulkItem]] = []
        self.otel_batches: list[list[OtelSpan]] = []
        self.writer = OtelSpans(store.registry)

    def agent(self) -> str:
        agent = self.service.create_agent(self.principal, app.AgentCreate(name=f"agent {len(self.agents)}")).id
        self.agents.append(agent)
        return agent

    def instance(self, pick: int) -> str:
        if not self.agents or pick % 3 == 0:
            self.agent()
        agent = self.agents[pick % len(self.agents)]
        instance = self.service.register_instance(self.principal, app.InstanceRegister(
            agent_id=agent, agent_version={"name": "a"},
            agent_schema_version=schema_version_draft(VERSION, "agent_schema_version"))).id
        self.instances.append(instance)
        self.agent_of[instance] = agent
        return instance

    def concurrent_round(self, spans: list[str], number: int, round_: int) -> None:
        """One round of a concurrent sender: four OTLP spans into trace 9, then every one of
        ``spans`` finished (sender ``number``'s status for them)."""
        first = 1 + (number * 3 + round_) * 4
        self.writer.write(self.principal.account, map_spans(
            [otel(9, index, 0, agent="planner", failed=index % 2 == 0) for index in range(first, first + 4)]))
        self.service.bulk(self.principal, [app.BulkItem(f"{span_id}-{number}-{round_}", app.SpanFinish(
            agent_span_id=span_id, status="failed" if number % 2 else "complete")) for span_id in spans])

    def bulk(self, pick: int, kinds: list[int], finish_some: bool) -> None:
        instance = self.instance(pick) if not self.instances or pick % 2 else self.instances[
            pick % len(self.instances)]
        items = []
        for kind in kinds:  # 0 pending, 1 active, 2 complete, 3 failed; odd kinds break the schema
            span_id = ids.new_id(self.partition)
            status = ("pending", "active", "complete", "failed")[kind % 4]
            started = None if status == "pending" else BASE + timedelta(seconds=kind * 7 + len(self.batches))
            finished = started + timedelta(seconds=kind) if status in ("complete", "failed") and started else None
            items.append(app.BulkItem(f"{span_id}-create", app.SpanCreate(
                agent_instance_id=instance, schema_name="step", status=status, id=span_id,
                payload={} if kind % 2 else {"n": kind}, result_payload={} if finished else None,
                started_at=started, finished_at=finished)))
            if status in ("pending", "active"):
                if finish_some and kind % 3 == 0:  # created and finished in one request
                    items.append(app.BulkItem(f"{span_id}-finish", app.SpanFinish(agent_span_id=span_id, status="failed")))
                else:
                    self.open_spans.append(span_id)
        self.batches.append(items)
        self.service.bulk(self.principal, items)

    def resend(self, pick: int) -> None:
        if self.batches:
            self.service.bulk(self.principal, self.batches[pick % len(self.batches)])

    def finish(self, pick: int, failed: bool) -> None:
        if self.open_spans:
            span_id = self.open_spans.pop(pick % len(self.open_spans))
            self.service.bulk(self.principal, [app.BulkItem(f"{span_id}-finish-later", app.SpanFinish(
                agent_span_id=span_id, status="failed" if failed else "complete", timestamp=BASE + timedelta(
                    days=pick)))])

    def single(self, pick: int) -> None:
        instance = self.instance(pick) if not self.instances else self.instances[pick % len(self.instances)]
        self.service.create_span(self.principal, app.SpanCreate(
            agent_instance_id=instance, schema_name="step", status="active", payload={"n": pick},
            started_at=BASE - timedelta(seconds=pick)))

    def otlp(self, trace: int, order: list[int], cut: int, failed: int) -> None:
        """A root naming its agent and its children; sent in ``order`` split at ``cut``:
        children sent before the root are filed under the service, then moved."""
        parents = [None, 0, 1, 0, 3]
        spans = [otel(trace, index, parents[index], agent="planner" if index == 0 else None,
                      failed=index == failed) for index in range(len(parents))]
        ordered = [spans[index] for index in order]
        for batch in (ordered[:cut], ordered[cut:]):
            if batch:
                self.otel_batches.append(batch)
                self.writer.write(self.principal.account, map_spans(batch))

    def otlp_resend(self, pick: int) -> None:
        if self.otel_batches:
            self.writer.write(self.principal.account, map_spans(self.otel_batches[pick % len(self.otel_batches)]))

    def delete_agent(self, pick: int) -> None:
        if self.agents:
            agent = self.agents.pop(pick % len(self.agents))
            self.service.run(self.principal, app.AgentDelete(agent_id=agent))
            self.instances = [instance for instance in self.instances if self.agent_of[instance] != agent]


operations = st.one_of(
    st.tuples(st.just("bulk"), st.integers(0, 50), st.lists(st.integers(0, 7), min_size=1, max_size=6),
              st.booleans()),
    st.tuples(st.just("resend"), st.integers(0, 50)),
    st.tuples(st.just("finish"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("single"), st.integers(0, 50)),
    st.tuples(st.just("otlp"), st.integers(0, 3), st.permutations(range(5)), st.integers(0, 5),
              st.integers(-1, 4)),
    st.tuples(st.just("otlp_resend"), st.integers(0, 50)),
    st.tuples(st.just("delete_agent"), st.integers(0, 50)),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(operations, min_size=1, max_size=12))
def test_writers_keep_the_stats_the_triggers_kept(store: Store, plan: list[tuple[Any, ...]]) -> None:
    install_shadow(store)
    world = World(store)
    for name, *arguments in plan:
        getattr(world, name)(*arguments)
    pk = world.principal.account.pk
    assert stats_of(store, pk) == stats_of(store, pk, _SHADOW)
    assert counted_stats(store, pk) == counts_of(store, pk)


def _copy_a_span(store: Store, span_id: str, copy_id: str) -> None:
    """A span row written past the application (as an older server would): only a trigger counts it."""
    with store.engine.begin() as connection:
        row = dict(connection.execute(sa.select(registry_spans).where(registry_spans.c.id == span_id)).one()._mapping)
        connection.execute(sa.insert(registry_spans).values({**row, "id": copy_id}))


def test_the_migration_computes_the_stats_again_both_ways(store: Store) -> None:
    world = World(store)
    world.bulk(1, [1, 2, 3, 5], finish_some=False)
    world.otlp(0, [1, 2, 0, 3, 4], 2, 2)
    world.finish(0, failed=True)
    pk = world.principal.account.pk
    config = alembic_config()
    with store.engine.begin() as connection:
        config.attributes["connection"] = connection
        connection.execute(sa.update(registry_trace_stats).values(span_count=99, first_start=None))  # spoil them
        command.downgrade(config, "0012_conversation_queue")
    with store.engine.connect() as connection:
        assert "ix_registry_spans_instance_id_id" in {
            index["name"] for index in sa.inspect(connection).get_indexes("registry_spans")}
    assert counted_stats(store, pk) == counts_of(store, pk)  # computed again
    with read_transaction(store.engine) as connection:
        some_span = connection.execute(sa.select(registry_spans.c.id, registry_spans.c.instance_id)
                                       .where(registry_spans.c.account_pk == pk).limit(1)).one()
    before = counted_stats(store, pk)[some_span.instance_id][0]
    _copy_a_span(store, some_span.id, ids.new_id(world.partition))
    assert counted_stats(store, pk)[some_span.instance_id][0] == before + 1  # the triggers are back
    with store.engine.begin() as connection:
        connection.execute(sa.update(registry_trace_stats).values(span_count=99, first_start=None))
    with Store.open(store.settings) as upgraded:  # opening migrates to the newest schema
        assert counted_stats(upgraded, pk) == counts_of(upgraded, pk)
        assert {instance: row[3:] for instance, row in stats_of(upgraded, pk).items()} == bounds_of(upgraded, pk)
        with upgraded.engine.connect() as connection:
            names = {index["name"] for index in sa.inspect(connection).get_indexes("registry_spans")}
        assert "ix_registry_spans_instance_id_id" not in names and "ix_registry_spans_tree" in names
        _copy_a_span(upgraded, some_span.id, ids.new_id(world.partition))
        assert counted_stats(upgraded, pk)[some_span.instance_id][0] == before + 1  # no trigger counts it


def test_concurrent_batches_to_one_trace_keep_exact_counts(store: Store) -> None:
    """Batches adding spans to one trace and finishing the same spans at once, from
    several threads (each its own transaction, as several servers would)."""
    world = World(store)
    world.bulk(1, [1] * 12, finish_some=False)  # twelve active spans in one trace
    spans = list(world.open_spans)
    pk = world.principal.account.pk
    barrier = threading.Barrier(4)
    failures: list[BaseException] = []

    def sender(number: int) -> None:
        try:
            barrier.wait()
            for round_ in range(3):
                world.concurrent_round(spans, number, round_)
        except BaseException as error:  # reported below, with the thread's own traceback
            failures.append(error)

    threads = [threading.Thread(target=sender, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    counted = counts_of(store, pk)
    assert sum(spans for spans, _, _ in counted.values()) == 12 + 4 * 3 * 4
    assert counted_stats(store, pk) == counted
