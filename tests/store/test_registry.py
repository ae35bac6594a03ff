"""The registry repository on SQLite and PostgreSQL: dedup, bulk transactions, idempotency
records, the session link, and what a span keeps."""

from __future__ import annotations

from agentfolio.store import Store
from agentfolio.store.registry import Principal

VERSION = {"external_identifier": "auto-1", "span_type_schemas": [
    {"name": "step", "params_schema": {"type": "object", "required": ["n"]}, "template": "step {{n}}"}]}


def setup(store: Store) -> tuple[Principal, str]:
    principal = Principal(store.accounts.ensure("acme"))
    agent = store.registry.execute(principal, "agents/create", {"name": "a"}).body["details"]["id"]
    return principal, agent


def test_schema_versions_deduplicate_by_content(store: Store) -> None:
    principal, agent = setup(store)
    first = store.registry.execute(principal, "agent_instances/register",
                                   {"agent_id": agent, "agent_version": {"name": "a"},
                                    "agent_schema_version": VERSION}).body["details"]
    second = store.registry.execute(principal, "agent_instances/register",
                                    {"agent_id": agent, "agent_version": {"name": "a"},
                                     "agent_schema_version": {**VERSION, "external_identifier": "auto-2"}}).body
    assert second["details"]["agent_schema_version_id"] == first["agent_schema_version_id"]
    assert second["details"]["agent_version_id"] == first["agent_version_id"]
    changed = store.registry.execute(principal, "agent_instances/register", {
        "agent_id": agent, "agent_version": {"name": "a"},
        "agent_schema_version": {"span_schemas": {"other": {}}}}).body["details"]
    assert changed["agent_schema_version_id"] != first["agent_schema_version_id"]


def test_bulk_keeps_items_before_a_failure_and_replays(store: Store) -> None:
    principal, agent = setup(store)
    instance = store.registry.execute(principal, "agent_instances/register", {
        "agent_id": agent, "agent_version": {}, "agent_schema_version": VERSION,
        "session_id": "session-7"}).body["details"]["id"]
    items = [{"_type": "agent_spans/create", "idempotency_key": f"key-{i:04d}",
              "details": {"agent_instance_id": instance, "schema_name": "step", "status": "complete",
                          "payload": {"n": i} if i % 2 else {}, "result_payload": {}}} for i in range(4)]
    items.insert(2, {"_type": "agents/update", "idempotency_key": "update-1", "agent_id": agent,
                     "details": {"name": "renamed"}})
    items.insert(3, {"_type": "agents/update", "idempotency_key": "update-2", "agent_id": agent,
                     "details": {"name": ""}})
    outputs = store.registry.execute_bulk(principal, {"items": items}).body["outputs"]
    assert list(outputs) == ["key-0000", "key-0001", "update-1", "update-2"]
    assert outputs["update-2"]["code"] == "invalid_value"
    assert store.registry.execute(principal, "agents/get", {"agent_id": agent}).body["details"]["name"] == "renamed"
    spans = store.registry.execute(principal, "agent_spans/list", {"session_id": "session-7",
                                                                   "include_summaries": "true"}).body
    assert [s["summary"] for s in spans["summaries"]] == ["step", "step 1"]
    assert [s["validation"]["status"] for s in spans["summaries"]] == ["invalid", "valid"]
    assert all(s["session_id"] == "session-7" for s in spans["summaries"])
    again = store.registry.execute_bulk(principal, {"items": items[:2]}).body["outputs"]
    assert again == {key: outputs[key] for key in ("key-0000", "key-0001")}
    count = store.registry.execute(principal, "agent_instances/get", {"agent_instance_id": instance}).body
    assert count["details"]["span_counts"] == {"total": 2, "pending": 0, "active": 0, "complete": 2, "failed": 0,
                                               "cancelled": 0, "finished": 2}


def test_deleting_an_agent_removes_its_runs(store: Store) -> None:
    principal, agent = setup(store)
    instance = store.registry.execute(principal, "agent_instances/register",
                                      {"agent_id": agent, "agent_version": {}}).body["details"]["id"]
    store.registry.execute(principal, "agent_spans/create", {"agent_instance_id": instance, "schema_name": "x",
                                                             "status": "active"})
    assert store.registry.execute(principal, "agents/delete", {"agent_id": agent}).status == 200
    assert store.registry.execute(principal, "agent_instances/get", {"agent_instance_id": instance}).status == 404
    assert store.registry.execute(principal, "agent_spans/list", {}).body["pagination"]["item_count"] == 0
