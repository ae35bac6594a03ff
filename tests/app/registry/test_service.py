"""The registry service on SQLite and PostgreSQL: dedup, bulk units of work, idempotency
records, the session link, and what a span keeps."""

from __future__ import annotations

import pytest

from agentfolio.app.registry import (
    AgentCreate,
    AgentDelete,
    AgentGet,
    AgentUpdate,
    BulkItem,
    IdempotencyKeyReused,
    InstanceGet,
    InstanceRegister,
    InvalidValue,
    NotFound,
    PageRequest,
    Principal,
    RegistryService,
    Sorting,
    SpanCreate,
    SpanList,
)
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.store import Store

VERSION = {"external_identifier": "auto-1", "span_type_schemas": [
    {"name": "step", "params_schema": {"type": "object", "required": ["n"]}, "template": "step {{n}}"}]}


def draft(raw: dict) -> object:
    return schema_version_draft(raw, "agent_schema_version")


def setup(store: Store) -> tuple[RegistryService, Principal, str]:
    service = RegistryService(store)
    principal = Principal(store.accounts.ensure("acme"))
    return service, principal, service.create_agent(principal, AgentCreate(name="a")).id


def test_schema_versions_deduplicate_by_content(store: Store) -> None:
    service, principal, agent = setup(store)
    first = service.register_instance(principal, InstanceRegister(
        agent_id=agent, agent_version={"name": "a"}, agent_schema_version=draft(VERSION)))
    second = service.register_instance(principal, InstanceRegister(
        agent_id=agent, agent_version={"name": "a"},
        agent_schema_version=draft({**VERSION, "external_identifier": "auto-2"})))
    assert second.agent_schema_version_id == first.agent_schema_version_id
    assert second.agent_version_id == first.agent_version_id
    changed = service.register_instance(principal, InstanceRegister(
        agent_id=agent, agent_version={"name": "a"}, agent_schema_version=draft({"span_schemas": {"other": {}}})))
    assert changed.agent_schema_version_id != first.agent_schema_version_id


def test_bulk_keeps_items_before_a_failure_and_replays(store: Store) -> None:
    service, principal, agent = setup(store)
    instance = service.register_instance(principal, InstanceRegister(
        agent_id=agent, agent_version={}, agent_schema_version=draft(VERSION), session_id="session-7")).id
    items = [BulkItem(f"key-{i:04d}", SpanCreate(agent_instance_id=instance, schema_name="step", status="complete",
                                                 payload={"n": i} if i % 2 else {}, result_payload={}))
             for i in range(4)]
    items.insert(2, BulkItem("update-1", AgentUpdate(agent_id=agent, name="renamed")))
    with pytest.raises(InvalidValue):
        AgentUpdate(agent_id=agent, name="")
    items.insert(3, BulkItem("update-2", AgentUpdate(agent_id="0" * 32, name="other")))
    answers = service.bulk(principal, items)
    assert [answer.key for answer in answers] == ["key-0000", "key-0001", "update-1", "update-2"]
    assert isinstance(answers[3].answer, NotFound)
    assert service.get_agent(principal, AgentGet(agent)).name == "renamed"
    spans = service.list_spans(principal, SpanList(session_id="session-7", include_summaries=True)).items
    assert [s.summary for s in spans] == ["step", "step 1"]
    assert [s.validation["status"] for s in spans] == ["invalid", "valid"]
    assert all(s.session_id == "session-7" for s in spans)
    again = service.bulk(principal, items[:2])
    assert [answer.answer for answer in again] == [answer.answer for answer in answers[:2]]
    changed = service.bulk(principal, [BulkItem("key-0000", SpanCreate(agent_instance_id=instance,
                                                                       schema_name="other"))])
    assert isinstance(changed[0].answer, IdempotencyKeyReused)
    counts = service.get_instance(principal, InstanceGet(agent_instance_id=instance)).span_counts
    assert counts == {"total": 2, "pending": 0, "active": 0, "complete": 2, "failed": 0, "cancelled": 0,
                      "finished": 2}


def test_deleting_an_agent_removes_its_runs(store: Store) -> None:
    service, principal, agent = setup(store)
    instance = service.register_instance(principal, InstanceRegister(agent_id=agent, agent_version={})).id
    service.create_span(principal, SpanCreate(agent_instance_id=instance, schema_name="x", status="active"))
    assert service.run(principal, AgentDelete(agent)).id == agent
    with pytest.raises(NotFound):
        service.get_instance(principal, InstanceGet(agent_instance_id=instance))
    listed = service.list_spans(principal, SpanList(page=PageRequest(0, 25, Sorting("id", "asc"))))
    assert listed.pagination["item_count"] == 0


def test_extras_appear_only_when_asked_for(store: Store) -> None:
    from agentfolio.app.registry import AgentList, AgentShow, SpanGet

    service, principal, agent = setup(store)
    instance = service.register_instance(principal, InstanceRegister(agent_id=agent, agent_version={})).id
    span = service.create_span(principal, SpanCreate(agent_instance_id=instance, schema_name="x")).span
    listed = service.list_agents(principal, AgentList()).items[0].model_dump(mode="json")
    assert "instance_counts" not in listed and "risk_rollup" not in listed
    shown = service.show_agent(principal, AgentShow(agent_id=agent)).model_dump(mode="json")
    assert shown["instance_counts"]["total"] == 1 and "risk_rollup" not in shown
    assert "risk_rollup" in service.show_agent(principal, AgentShow(agent_id=agent, include_risk_rollup=True)) \
        .model_dump(mode="json")
    plain = service.get_span(principal, SpanGet(agent_span_id=span.id)).model_dump(mode="json")
    assert "risk_score" not in plain and plain["summary"] is None
    assert plain["inserted_at"].endswith("Z") and len(plain["inserted_at"]) == len("2026-01-01T00:00:00.000000Z")
    risky = service.get_span(principal, SpanGet(agent_span_id=span.id, include_risk_level=True))
    assert "risk_score" in risky.model_dump(mode="json")
    got = service.get_instance(principal, InstanceGet(agent_instance_id=instance)).model_dump(mode="json")
    assert "risk_level" not in got


def test_an_account_token_registers_a_run_by_the_agent_version_name(store: Store) -> None:
    """The SDK quickstart with nothing but an account token: no agent_id, the agent is found
    (or made, once) by agent_version.name, and agent_id may be that name too."""
    service = RegistryService(store)
    principal = Principal(store.accounts.ensure("quickstart"))
    first = service.register_instance(principal, InstanceRegister(agent_version={"name": "my-agent",
                                                                                  "external_identifier": "1.0"}))
    second = service.register_instance(principal, InstanceRegister(agent_version={"name": "my-agent"}))
    by_name = service.register_instance(principal, InstanceRegister(agent_id="my-agent"))
    assert first.agent_id == second.agent_id == by_name.agent_id
    agent = service.get_agent(principal, AgentGet(agent_id=first.agent_id))
    assert (agent.name, agent.external_identifier) == ("my-agent", "my-agent")
    with pytest.raises(InvalidValue, match="agent_version.name"):
        service.register_instance(principal, InstanceRegister())
    # The SDK README's agent_id="my-agent": a name, not an ID, so the agent is made once under it.
    readme = service.register_instance(principal, InstanceRegister(
        agent_id="readme-agent", agent_version={"name": "My Agent", "external_identifier": "v1.0.0"}))
    again = service.register_instance(principal, InstanceRegister(agent_id="readme-agent"))
    assert readme.agent_id == again.agent_id != first.agent_id
    made = service.get_agent(principal, AgentGet(agent_id=readme.agent_id))
    assert (made.name, made.external_identifier) == ("My Agent", "readme-agent")
    # An ID is never made up: one that names no agent of the account is not found.
    with pytest.raises(NotFound):
        service.register_instance(principal, InstanceRegister(agent_id=first.agent_id[:-1] + (
            "0" if first.agent_id[-1] != "0" else "1")))
    # Another account's name is another agent.
    other = Principal(store.accounts.ensure("elsewhere"))
    assert service.register_instance(other, InstanceRegister(agent_version={"name": "my-agent"})).agent_id \
        != first.agent_id
