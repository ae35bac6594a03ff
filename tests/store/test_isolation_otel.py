"""Account isolation of OTel ingest, on SQLite and PostgreSQL.

Two accounts send the same OTLP spans (equal trace ids, span ids, agent and service
names).  Every statement of :class:`agentfolio.store.otel_spans.OtelRows`, run in a unit
of account B with A's ids and names, must find nothing and change nothing of A's; and
B's ingest of the same trace leaves A's rows as they were.

``scripts/mutate_scope.py`` runs this file (with the other isolation suites) once per
``AccountScope`` call of the store with that one call unscoped: each run must fail.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa

from agentfolio.otel.decode import OtelSpan
from agentfolio.otel.mapping import map_spans
from agentfolio.store import Store
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.otel_queue import ConversationQueue, QueueRows
from agentfolio.store.otel_spans import ConversationRecord, OtelRows, OtelSpans
from agentfolio.store.registry_tables import (
    otel_conversations,
    otel_work,
    otel_work_spans,
    registry_agent_versions,
    registry_agents,
    registry_deployments,
    registry_instances,
    registry_schema_versions,
    registry_spans,
)
from agentfolio.store.scope import AccountScope

TRACE = "ab" * 16
LONELY_TRACE = "cd" * 16
START = 1_700_000_000 * 10**9
EMPTY = (None, 0, [], {}, set())


def _span(index: int, parent: int | None, *, trace: str = TRACE, service: str = "svc",
          attributes: dict[str, Any] | None = None) -> OtelSpan:
    return OtelSpan(trace_id=trace, span_id=f"{index + 1:016x}",
                    parent_span_id=None if parent is None else f"{parent + 1:016x}", name=f"step {index}",
                    kind="INTERNAL", start_ns=START + index, end_ns=START + 100 + index, status_code="UNSET",
                    status_message="", attributes=attributes or {}, events=[], links=[],
                    resource={"attributes": {"service.name": service}}, scope={"name": "tests"})


def _request(name: str) -> list[OtelSpan]:
    """A named agent's trace with an LLM span, and a child whose parent never comes."""
    return [
        _span(0, None, attributes={"gen_ai.agent.name": "Planner", "gen_ai.operation.name": "invoke_agent"}),
        _span(1, 0, attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                                "gen_ai.conversation.id": f"talk-{name}",
                                "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", '
                                                         '"content": "hi"}]}]'}),
        _span(2, 9, attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}),
        _span(3, None, trace=LONELY_TRACE, service=f"lonely-{name}"),
    ]


@dataclass
class Holdings:
    account_pk: int
    agent: str
    named_agent: str
    agent_version: str
    agent_version_fingerprint: str
    version: str
    version_fingerprint: str
    deployment: str
    instance: str
    spans: list[str]
    orphan_parent: str
    conversation: str
    bare_agent: str


def _populate(store: Store, name: str) -> Holdings:
    account = store.accounts.ensure(name)
    OtelSpans(store.registry).write(account, map_spans(_request(name)))
    pk = account.pk
    with write_transaction(store.engine) as connection:
        rows = OtelRows(connection, AccountScope(pk))
        bare = f"bare-{name}-agent-id".ljust(32, "0")[:32]
        rows.insert_agent(id=bare, name=f"only-{name}", external_identifier=f"only-{name}", description=None,
                          status="active", inserted_at=0, updated_at=0)
        rows.keep_conversations({f"otel:talk-{name}": ConversationRecord(name.encode(), 1, 1)})
    with read_transaction(store.engine) as connection:
        def one(query: Any) -> Any:
            return connection.execute(query).one()

        agent = one(sa.select(registry_agents).where(registry_agents.c.account_pk == pk,
                                                     registry_agents.c.external_identifier == "Planner"))
        version = one(sa.select(registry_schema_versions).where(registry_schema_versions.c.id
                                                                 == agent.current_schema_version_id))
        agent_version = one(sa.select(registry_agent_versions).where(registry_agent_versions.c.id
                                                                      == agent.current_version_id))
        deployment = one(sa.select(registry_deployments.c.id).where(registry_deployments.c.agent_id == agent.id))
        instance = one(sa.select(registry_instances.c.id).where(registry_instances.c.agent_id == agent.id))
        spans = connection.execute(sa.select(registry_spans.c.id, registry_spans.c.parent_span_id,
                                             registry_spans.c.parent_found)
                                   .where(registry_spans.c.account_pk == pk)).all()
    orphan = next(row.parent_span_id for row in spans if row.parent_found is False)
    return Holdings(pk, agent.id, "Planner", agent_version.id, agent_version.fingerprint, version.id,
                    version.fingerprint, deployment.id, instance.id, sorted(row.id for row in spans), orphan,
                    f"otel:talk-{name}", bare)


@pytest.fixture
def two(store: Store) -> tuple[Holdings, Holdings]:
    return _populate(store, "alice"), _populate(store, "bob")


def _in_unit(store: Store, holdings: Holdings, work: Callable[[OtelRows], Any]) -> Any:
    with write_transaction(store.engine) as connection:
        return work(OtelRows(connection, AccountScope(holdings.account_pk)))


#: (what, run in B's unit with A's holdings) → must find nothing
READS: list[tuple[str, Callable[[OtelRows, Holdings], Any]]] = [
    ("stored", lambda r, a: r.stored(a.spans)),
    ("agents_of_spans", lambda r, a: r.agents_of_spans(a.spans)),
    ("instances_of_spans", lambda r, a: r.instances_of_spans(a.spans)),
    ("agents_named", lambda r, a: r.agents_named([f"only-{_name(a)}"])),
    ("current_schema_version", lambda r, a: r.current_schema_version(a.agent)),
    ("newest_schema_version", lambda r, a: r.newest_schema_version(a.agent)),
    ("schema_version_with", lambda r, a: r.schema_version_with(a.agent, a.version_fingerprint)),
    ("agent_version_with", lambda r, a: r.agent_version_with(a.agent, a.agent_version_fingerprint)),
    ("instances_of_traces", lambda r, a: r.instances_of_traces(a.agent, [TRACE])),
    ("service_instances", lambda r, a: r.service_instances([f"lonely-{_name(a)}"], [LONELY_TRACE])),
    ("span_trees", lambda r, a: r.span_trees([a.instance])),
    ("waiting_for", lambda r, a: r.waiting_for([a.orphan_parent])),
    ("session_spans", lambda r, a: r.session_spans(a.conversation, 100)),
    ("session_span_counts", lambda r, a: r.session_span_counts([a.conversation])),
    ("conversations", lambda r, a: r.conversations([a.conversation])),
    ("queue_waiting", lambda r, a: QueueRows(r.conn, r.scope).waiting([a.conversation], 100)),
    ("queue_counts", lambda r, a: QueueRows(r.conn, r.scope).counts([a.conversation])),
    ("queue_waiting_ids", lambda r, a: QueueRows(r.conn, r.scope).waiting_ids(a.conversation)),
]


def _name(holdings: Holdings) -> str:
    return "alice" if holdings.conversation.endswith("alice") else "bob"


def test_a_unit_finds_nothing_of_another_account(two: tuple[Holdings, Holdings], store: Store) -> None:
    alice, bob = two
    unseen = [what for what, read in READS if _in_unit(store, alice, lambda r, read=read: read(r, alice)) in EMPTY]
    assert unseen == [], "each read must find alice's rows in alice's own unit"
    leaks = {what: found for what, read in READS
             if (found := _in_unit(store, bob, lambda r, read=read: read(r, alice))) not in EMPTY}
    assert leaks == {}, "reads in bob's unit found alice's rows"


def _snapshot(store: Store, pk: int) -> dict[str, list[Any]]:
    with read_transaction(store.engine) as connection:
        return {table.name: sorted(tuple(row) for row in connection.execute(
                    sa.select(table).where(table.c.account_pk == pk)))
                for table in (registry_agents, registry_agent_versions, registry_schema_versions,
                              registry_deployments, registry_instances, registry_spans, otel_conversations,
                              otel_work, otel_work_spans)}


def test_a_unit_changes_nothing_of_another_account(two: tuple[Holdings, Holdings], store: Store) -> None:
    alice, bob = two
    before = _snapshot(store, alice.account_pk)

    def vandalise(rows: OtelRows) -> None:
        rows.update_instance(alice.instance, status="failed")
        rows.run_schema_version(alice.agent, bob.version, 1)
        rows.insert_agent_version(alice.bare_agent, id="0" * 31 + "1", name="x", fingerprint="f" * 64,
                                  inserted_at=0)
        rows.update_spans(alice.spans, agent_id=bob.agent, instance_id=bob.instance)
        rows.update_spans(alice.spans[:1], status="failed")
        rows.keep_conversations({alice.conversation: ConversationRecord(b"bob", 7, 7)})
        QueueRows(rows.conn, rows.scope).enqueue({alice.conversation: [(alice.spans[0], True)]})
        rows.delete_instances_if_empty([alice.instance])

    _in_unit(store, bob, vandalise)
    after = _snapshot(store, alice.account_pk)
    assert after == before


def test_waiting_work_is_counted_per_account(two: tuple[Holdings, Holdings], store: Store) -> None:
    alice, bob = two
    _in_unit(store, alice, lambda rows: QueueRows(rows.conn, rows.scope).enqueue(
        {alice.conversation + "-more": [(alice.spans[0], True)]}))
    with read_transaction(store.engine) as connection:
        stored = dict(connection.execute(sa.select(otel_work.c.account_pk, sa.func.count())
                                         .group_by(otel_work.c.account_pk)).all())
    accounts = {account.pk: account for account in store.accounts.list()}
    queue = ConversationQueue(store.engine)
    assert {holder.account_pk: queue.pending(accounts[holder.account_pk]) for holder in two} == stored
    assert stored[alice.account_pk] == stored[bob.account_pk] + 1


def test_a_service_instance_emptied_in_another_account_stays(two: tuple[Holdings, Holdings], store: Store) -> None:
    alice, bob = two
    with write_transaction(store.engine) as connection:
        connection.execute(sa.delete(registry_spans).where(registry_spans.c.account_pk == alice.account_pk))
    _in_unit(store, bob, lambda rows: rows.delete_instances_if_empty([alice.instance]))
    with read_transaction(store.engine) as connection:
        assert connection.execute(sa.select(registry_instances.c.id)
                                  .where(registry_instances.c.id == alice.instance)).first() is not None


def test_inserted_rows_belong_to_the_unit_account(two: tuple[Holdings, Holdings], store: Store) -> None:
    alice, bob = two
    for holdings in (alice, bob):
        counts = {name: len(rows) for name, rows in _snapshot(store, holdings.account_pk).items()}
        assert all(counts.values()), counts
    with read_transaction(store.engine) as connection:
        owners = connection.execute(sa.select(registry_spans.c.account_pk).distinct()).scalars().all()
    assert sorted(owners) == sorted([alice.account_pk, bob.account_pk])


def test_the_same_trace_in_two_accounts_is_two_traces(two: tuple[Holdings, Holdings], store: Store) -> None:
    alice, bob = two
    before = _snapshot(store, alice.account_pk)
    writer = OtelSpans(store.registry)
    bob_account = store.accounts.ensure("bob")
    again = writer.write(bob_account, map_spans(_request("bob")))
    assert again.inserted == 0 and again.duplicates == 4
    parent = _span(9, None, attributes={"gen_ai.agent.name": "Planner", "gen_ai.operation.name": "invoke_agent"})
    assert writer.write(bob_account, map_spans([parent])).inserted == 1
    assert _snapshot(store, alice.account_pk) == before
    assert set(alice.spans).isdisjoint(bob.spans)
    with writer.reading(store.accounts.ensure("alice")) as reads:
        payloads, agent = reads.session_spans(alice.conversation)
    assert len(payloads) == 1 and agent == "Planner"
    with writer.reading(bob_account) as reads:
        assert reads.session_spans(alice.conversation) == ([], None)
