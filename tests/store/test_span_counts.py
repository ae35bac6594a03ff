"""The per-account span counts the span writers keep, on SQLite and PostgreSQL: after any
mix of Prefactor bulk and single writes, re-sent batches, finishes, OTLP spans arriving
children first (moved between traces and agents when their agent's span arrives, late
parents turning their children valid), re-sent OTLP batches and agent deletions, and
with several writers at once, every count is the spans' own ``COUNT(*)``; the span list
answers them as ``item_count`` without counting spans; and the migration computes them
from what is stored, both ways.  (Retention keeps them too: ``test_spans_by_time``.)
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import sqlalchemy as sa
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfolio.app import registry as app
from agentfolio.registry import ids
from agentfolio.store import Store
from agentfolio.store.engine import alembic_config, read_transaction, write_transaction
from agentfolio.store.registry import span_counts
from agentfolio.store.registry.bulk import insert_many
from agentfolio.store.registry.runs import Spans
from agentfolio.store.registry.trace_stats import TraceCounts
from agentfolio.store.registry_tables import registry_span_counts, registry_spans
from agentfolio.store.scope import AccountScope
from tests.store.test_trace_stats import World, _copy_a_span, operations

DIMENSIONS = span_counts.DIMENSIONS


def kept_counts(store: Store, account_pk: int) -> dict[tuple[str, ...], int]:
    """Every key's count as kept (its shards summed; a count of zero is no count)."""
    table = registry_span_counts
    columns = [table.c[name] for name in DIMENSIONS]
    with read_transaction(store.engine) as connection:
        return {tuple(row[:3]): row[3] for row in connection.execute(
            sa.select(*columns, sa.func.sum(table.c.spans)).where(table.c.account_pk == account_pk)
            .group_by(*columns)) if row[3]}


def counted(store: Store, account_pk: int) -> dict[tuple[str, ...], int]:
    """The same keys counted from the spans (``COUNT(*)`` per grouping): the oracle."""
    found: dict[tuple[str, ...], int] = {}
    with read_transaction(store.engine) as connection:
        for kept in itertools.product((True, False), repeat=3):
            grouped = [registry_spans.c[name] for name, keep in zip(DIMENSIONS, kept, strict=True) if keep]
            for row in connection.execute(sa.select(*grouped, sa.func.count())
                                          .where(registry_spans.c.account_pk == account_pk).group_by(*grouped)):
                if not row[-1]:
                    continue  # no spans at all: the ungrouped count's row of zero
                values = iter(row[:-1])
                found[tuple(next(values) if keep else span_counts.ANY for keep in kept)] = row[-1]
    return found


def listed_count(world: World, **filters: str) -> int:
    page = world.service.list_spans(world.principal, app.SpanList(page=app.PageRequest(0, 1, app.Sorting("id", "desc")),
                                                                  **filters))
    return int(page.pagination["item_count"])


def true_count(store: Store, account_pk: int, **filters: str) -> int:
    columns = {"agent_instance_id": "instance_id"}
    with read_transaction(store.engine) as connection:
        return int(connection.execute(sa.select(sa.func.count()).select_from(registry_spans).where(
            registry_spans.c.account_pk == account_pk,
            *(registry_spans.c[columns.get(key, key)] == value for key, value in filters.items()))).scalar_one())


def check(world: World) -> None:
    store, pk = world.store, world.principal.account.pk
    assert kept_counts(store, pk) == counted(store, pk)
    with read_transaction(store.engine) as connection:
        spans = connection.execute(sa.select(registry_spans.c.agent_id, registry_spans.c.instance_id)
                                   .where(registry_spans.c.account_pk == pk).limit(1)).first()
    # What the span list answers, for filters the counts serve and for one they do not.
    choices: list[dict[str, str]] = [{}, {"status": "failed"}, {"validation_status": "invalid"},
                                     {"status": "active", "validation_status": "valid"}, {"schema_name": "step"}]
    if spans is not None:
        choices += [{"agent_id": spans.agent_id}, {"agent_id": spans.agent_id, "status": "complete"},
                    {"agent_instance_id": spans.instance_id},
                    {"agent_instance_id": spans.instance_id, "status": "failed"}]
    for filters in choices:
        assert listed_count(world, **filters) == true_count(store, pk, **filters), filters


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(operations, min_size=1, max_size=12))
def test_writers_keep_the_counts_of_the_spans(store: Store, plan: list[tuple[Any, ...]]) -> None:
    world = World(store)
    for name, *arguments in plan:
        getattr(world, name)(*arguments)
    check(world)


def test_the_list_answers_kept_counts_without_counting_spans(store: Store) -> None:
    world = World(store)
    world.bulk(1, [0, 1, 2, 3, 3, 5], finish_some=False)
    world.otlp(0, [1, 2, 0, 3, 4], 2, 2)
    counts: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *rest: object) -> None:
        if "count(" in statement.lower():
            counts.append(statement)

    agent = world.agents[0]
    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        for filters in ({}, {"status": "failed"}, {"validation_status": "invalid"}, {"agent_id": agent},
                        {"agent_id": agent, "status": "active", "validation_status": "valid"},
                        {"agent_instance_id": world.instances[0]}):
            listed_count(world, **filters)
        assert counts == []  # the counts were read, not counted
        listed_count(world, schema_name="step")  # a filter no count is kept for: counted in a window
        assert len(counts) == 1 and "registry_spans" in counts[0]
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)


def test_a_deployed_agent_lists_its_own_count(store: Store) -> None:
    world = World(store)
    world.bulk(1, [0, 1, 2], finish_some=False)
    world.bulk(3, [2, 3], finish_some=False)  # pick 3: a second agent
    mine, other = world.agents[0], world.agents[-1]
    assert mine != other
    pk = world.principal.account.pk
    with read_transaction(store.engine) as connection:
        spans = Spans(connection, AccountScope(pk))
        page = app.PageRequest(0, 10, app.Sorting("id", "asc"))
        _, total = spans.page(page, agent_of_token=mine)
        assert total == true_count(store, pk, agent_id=mine) > 0
        assert spans.page(page, agent_of_token=mine, agent_id=other) == ([], 0)
        _, total = spans.page(page, agent_of_token=mine, status="failed")
        assert total == true_count(store, pk, agent_id=mine, status="failed")
        assert spans.page(page, status="nul\x00")[1] == 0 and spans.page(page, status="")[1] == 0


def test_concurrent_writers_and_an_agent_deletion_keep_exact_counts(store: Store) -> None:
    """OTLP batches, bulk creates and finishes from several threads (each its own
    transaction, as several servers would), one of them deleting an agent whose spans
    others are writing."""
    world = World(store)
    world.bulk(1, [1] * 12, finish_some=False)  # twelve active spans in one trace
    doomed = world.instance(3)  # an agent of its own
    world.service.bulk(world.principal, [app.BulkItem(f"doomed-{n}", app.SpanCreate(
        agent_instance_id=doomed, schema_name="step", status="active", payload={"n": n})) for n in range(6)])
    spans = list(world.open_spans)
    barrier = threading.Barrier(5)
    failures: list[BaseException] = []

    def sender(number: int) -> None:
        try:
            barrier.wait()
            for round_ in range(3):
                world.concurrent_round(spans, number, round_)
                world.service.bulk(world.principal, [app.BulkItem(f"d-{number}-{round_}", app.SpanCreate(
                    agent_instance_id=doomed, schema_name="step", status="active", payload={"n": number}))])
        except BaseException as error:  # reported below, with the thread's own traceback
            failures.append(error)

    def deleter() -> None:
        try:
            barrier.wait()
            world.service.run(world.principal, app.AgentDelete(agent_id=world.agent_of[doomed]))
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=sender, args=(number,)) for number in range(4)]
    threads.append(threading.Thread(target=deleter))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # A create for the deleted agent's trace after the deletion is refused (not found): expected.
    unexpected = [error for error in failures if "not_found" not in repr(error) and "NotFound" not in repr(error)]
    assert not unexpected, unexpected
    pk = world.principal.account.pk
    assert true_count(store, pk) >= 12 + 4 * 3 * 4
    assert kept_counts(store, pk) == counted(store, pk)


def test_an_agent_deleted_while_a_writer_adds_to_its_trace_takes_that_span_off_too(store: Store) -> None:
    """A writer has added a span to the agent's trace and not committed when the agent's
    deletion starts: the deletion waits for it and takes its span off the counts too."""
    world = World(store)
    doomed = world.instance(3)
    world.service.bulk(world.principal, [app.BulkItem(f"doomed-{n}", app.SpanCreate(
        agent_instance_id=doomed, schema_name="step", status="active", payload={"n": n})) for n in range(3)])
    pk = world.principal.account.pk
    failures: list[BaseException] = []

    def delete() -> None:
        try:
            world.service.run(world.principal, app.AgentDelete(agent_id=world.agent_of[doomed]))
        except BaseException as error:  # reported below
            failures.append(error)

    deleting = threading.Thread(target=delete)
    with write_transaction(store.engine) as connection:  # a writer, as the store's writers count
        row = dict(connection.execute(sa.select(registry_spans).where(registry_spans.c.instance_id == doomed)
                                      .limit(1)).one()._mapping)
        row["id"] = ids.new_id(world.partition)
        insert_many(connection, registry_spans, [row])
        counts = TraceCounts(pk)
        counts.add(row)
        counts.apply(connection)
        deleting.start()
        time.sleep(1.5)  # the deletion is under way (SQLite: waiting for the write lock)
    deleting.join()
    assert not failures, failures
    assert true_count(store, pk, agent_instance_id=doomed) == 0
    assert kept_counts(store, pk) == counted(store, pk)


def test_the_migration_computes_the_counts_both_ways(store: Store) -> None:
    world = World(store)
    world.bulk(1, [1, 2, 3, 5], finish_some=False)
    world.otlp(0, [1, 2, 0, 3, 4], 2, 2)
    world.finish(0, failed=True)
    pk = world.principal.account.pk
    expected = counted(store, pk)
    assert kept_counts(store, pk) == expected
    config = alembic_config()
    with store.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0014b_spans_by_time")
    with store.engine.connect() as connection:
        assert "registry_span_counts" not in sa.inspect(connection).get_table_names()
    with read_transaction(store.engine) as connection:
        some_span = connection.execute(sa.select(registry_spans.c.id).where(registry_spans.c.account_pk == pk)
                                       .limit(1)).scalar_one()
    _copy_a_span(store, some_span, ids.new_id(world.partition))  # as the code before wrote it: nothing counts it
    with Store.open(store.settings) as upgraded:  # opening migrates to the newest schema
        assert kept_counts(upgraded, pk) == counted(upgraded, pk) != expected
        with read_transaction(upgraded.engine) as connection:
            shards = set(connection.execute(sa.select(registry_span_counts.c.shard)).scalars())
        assert shards == {0}
