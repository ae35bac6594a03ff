"""Idempotency records on SQLite and PostgreSQL: a replay changes nothing and answers
what the first request wrote, the same key with another body is refused, a record
keeps the digest and the id (not the answer), and keys expire after the window."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from agentfolio.app.registry import (
    AgentCreate,
    AgentDelete,
    AgentUpdate,
    BulkItem,
    IdempotencyKeyReused,
    InstanceRegister,
    Principal,
    RegistryService,
    SpanCreate,
    SpanList,
)
from agentfolio.settings import Settings
from agentfolio.store import Store
from agentfolio.store.registry_tables import registry_idempotency, registry_spans

WINDOW = 3600


@pytest.fixture
def windowed(settings: Settings) -> Store:
    opened = Store.open(settings.with_(idempotency_window=WINDOW))
    yield opened
    opened.close()


def _instance(service: RegistryService, principal: Principal) -> str:
    agent = service.create_agent(principal, AgentCreate(name="a")).id
    return service.register_instance(principal, InstanceRegister(agent_id=agent, agent_version={})).id


def _spans(instance: str, count: int, *, start: int = 0, marker: str = "x") -> list[BulkItem]:
    return [BulkItem(f"span-{i:05d}", SpanCreate(agent_instance_id=instance, schema_name="step", status="complete",
                                                  payload={"n": i, "marker": marker}, result_payload={}))
            for i in range(start, start + count)]


def _stored_spans(store: Store) -> int:
    with store.engine.connect() as connection:
        return connection.execute(sa.select(sa.func.count()).select_from(registry_spans)).scalar_one()


def _age_records(store: Store, seconds: int) -> None:
    with store.engine.begin() as connection:
        connection.execute(sa.update(registry_idempotency).values(
            inserted_at=registry_idempotency.c.inserted_at - seconds * 1_000_000))


def test_a_replayed_bulk_request_adds_nothing_and_answers_the_same(windowed: Store) -> None:
    service = RegistryService(windowed)
    principal = Principal(windowed.accounts.ensure("acme"))
    items = _spans(_instance(service, principal), 40)
    first = service.bulk(principal, items)
    again = service.bulk(principal, list(reversed(items)))
    assert _stored_spans(windowed) == 40
    assert {a.key: a.answer for a in again} == {a.key: a.answer for a in first}
    # What is kept: the digest and the span's id, not the answer.
    with windowed.engine.connect() as connection:
        rows = connection.execute(sa.select(registry_idempotency.c.key, registry_idempotency.c.response,
                                            registry_idempotency.c.resource_id, registry_idempotency.c.body_hash)
                                  .where(registry_idempotency.c.operation == "agent_spans/create")).all()
    ids = {a.key: a.answer.span.id for a in first}  # type: ignore[union-attr]
    assert {row.key: row.resource_id for row in rows} == ids
    assert all(row.response is None and len(row.body_hash) == 64 for row in rows)


def test_a_replay_answers_the_object_as_it_is_now(windowed: Store) -> None:
    service = RegistryService(windowed)
    principal = Principal(windowed.accounts.ensure("acme"))
    made = service.create_agent(principal, AgentCreate(name="first"), key="make-1")
    service.update_agent(principal, AgentUpdate(agent_id=made.id, name="renamed"))
    replay = service.create_agent(principal, AgentCreate(name="first"), key="make-1")
    assert replay.id == made.id and replay.name == "renamed"


def test_a_deletion_replays_its_kept_answer(windowed: Store) -> None:
    service = RegistryService(windowed)
    principal = Principal(windowed.accounts.ensure("acme"))
    agent = service.create_agent(principal, AgentCreate(name="doomed")).id
    gone = service.run(principal, AgentDelete(agent_id=agent), key="delete-1")
    assert service.run(principal, AgentDelete(agent_id=agent), key="delete-1") == gone


def test_the_same_key_with_another_body_is_refused_and_changes_nothing(windowed: Store) -> None:
    service = RegistryService(windowed)
    principal = Principal(windowed.accounts.ensure("acme"))
    instance = _instance(service, principal)
    service.bulk(principal, _spans(instance, 5))
    changed = service.bulk(principal, _spans(instance, 5, marker="other"))
    assert isinstance(changed[0].answer, IdempotencyKeyReused) and len(changed) == 1
    with pytest.raises(IdempotencyKeyReused):
        service.create_span(principal, SpanCreate(agent_instance_id=instance, schema_name="other"), key="span-00003")
    service.create_agent(principal, AgentCreate(name="one"), key="agent-1")
    with pytest.raises(IdempotencyKeyReused):
        service.create_agent(principal, AgentCreate(name="two"), key="agent-1")
    assert _stored_spans(windowed) == 5
    assert [s.payload["marker"] for s in service.list_spans(principal, SpanList()).items] == ["x"] * 5


def test_an_expired_key_is_free_again(windowed: Store) -> None:
    """Past the window a key is remembered no more: the request runs as new (another
    object), and a different body with that key is no longer refused."""
    service = RegistryService(windowed)
    principal = Principal(windowed.accounts.ensure("acme"))
    instance = _instance(service, principal)
    first = service.bulk(principal, _spans(instance, 3))
    agent = service.create_agent(principal, AgentCreate(name="one"), key="agent-1")
    _age_records(windowed, WINDOW - 60)  # still inside the window: replays
    assert service.create_agent(principal, AgentCreate(name="one"), key="agent-1").id == agent.id
    _age_records(windowed, 120)  # now past it
    second = service.bulk(principal, _spans(instance, 3))
    assert {a.answer.span.id for a in second}.isdisjoint({a.answer.span.id for a in first})  # type: ignore[union-attr]
    assert _stored_spans(windowed) == 6
    other = service.create_agent(principal, AgentCreate(name="two"), key="agent-1")
    assert other.id != agent.id and other.name == "two"
    # The new records hold the key now, inside a fresh window.
    assert service.create_agent(principal, AgentCreate(name="two"), key="agent-1").id == other.id
    assert [a.answer for a in service.bulk(principal, _spans(instance, 3))] == [a.answer for a in second]


def test_expiry_removes_only_records_past_the_window(windowed: Store) -> None:
    service = RegistryService(windowed)
    principal = Principal(windowed.accounts.ensure("acme"))
    instance = _instance(service, principal)
    service.bulk(principal, _spans(instance, 4))
    _age_records(windowed, WINDOW + 10)
    service.bulk(principal, _spans(instance, 2, start=100))
    assert windowed.registry.expire_idempotency() == 4
    with windowed.engine.connect() as connection:
        left = connection.execute(sa.select(registry_idempotency.c.key)).scalars().all()
    assert sorted(left) == ["span-00100", "span-00101"]


def test_a_window_of_zero_remembers_keys_forever(store: Store) -> None:
    assert store.registry.idempotency_window == 86400  # the default: one day
    forever = Store.open(store.settings.with_(idempotency_window=0))
    try:
        service = RegistryService(forever)
        principal = Principal(forever.accounts.ensure("acme"))
        made = service.create_agent(principal, AgentCreate(name="one"), key="agent-1")
        _age_records(forever, 10 * 365 * 86400)
        assert forever.registry.expire_idempotency() == 0
        assert service.create_agent(principal, AgentCreate(name="one"), key="agent-1").id == made.id
    finally:
        forever.close()
