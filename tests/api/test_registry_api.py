"""The Prefactor-compatible registry API through a real uvicorn, on SQLite and PostgreSQL:
the contract details of docs/prefactor-api.md that the SDK end-to-end test does not reach."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from agentfolio.app.registry import Principal, RegistryService
from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.storage import LiveServer, settings_env

SCHEMA = {
    "external_identifier": "v1",
    "span_type_schemas": [
        {"name": "llm", "title": "LLM", "template": "{{model}} → {{response}}",
         "params_schema": {"type": "object", "required": ["model"], "properties": {"model": {"type": "string"}}},
         "data_risk": {"action_profile": {"read_data": "allowed", "external_communication": "allowed"},
                       "params_data_categories": {"health_and_medical": "included"}}},
        {"name": "broken", "params_schema": {"type": "objekt"}, "template": "{% if %}"},
    ],
    "span_result_schemas": {"llm": {"type": "object", "properties": {"response": {"type": "string"}}}},
    "span_schemas": {"legacy": {"type": "object", "required": ["q"]}},
}


def error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == "error" and body["code"] == code and body["message"], body
    return body


def ok(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "success", body
    return body.get("details", body)


@pytest.fixture
def api(live: LiveServer, store: Store):
    alice, _ = store.accounts.create_token("alice")
    bob, _ = store.accounts.create_token("bob")
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {alice}"}, timeout=30) as a, \
            httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {bob}"}, timeout=30) as b:
        yield a, b


def setup_instance(client: httpx.Client) -> tuple[str, str]:
    agent = ok(client.post("/api/v1/agent", json={"details": {"name": "bot", "external_identifier": "bot-1"}}))["id"]
    instance = ok(client.post("/api/v1/agent_instance/register", json={
        "agent_id": agent, "agent_version": {"name": "bot"}, "agent_schema_version": SCHEMA,
        "idempotency_key": "register-0001"}))
    assert instance["status"] == "pending" and instance["agent_deployment_id"] and instance["environment_id"]
    return agent, instance["id"]


def test_auth_and_isolation(api, live: LiveServer, store: Store) -> None:
    alice, bob = api
    error(httpx.get(live.url + "/api/v1/ping"), 401, "not_authenticated")
    error(httpx.get(live.url + "/api/v1/ping", headers={"Authorization": "Bearer nope"}), 401, "bad_authtoken")
    assert ok(alice.get("/api/v1/ping"))["token_scope"] == "account"
    agent, instance = setup_instance(alice)
    error(bob.get(f"/api/v1/agent/{agent}"), 404, "not_found")
    error(bob.get(f"/api/v1/agent_instance/{instance}"), 404, "not_found")
    error(alice.get("/api/v1/agent/my-agent"), 404, "not_found")  # not an ID: names no agent
    error(bob.post("/api/v1/agent_instance/register", json={"agent_id": agent, "agent_version": {}}), 404,
          "not_found")

    made = RegistryService(store).create_deployment_token(Principal(store.accounts.require("alice")), agent)
    token, where = made.token, made.model_dump()
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as deployed:
        assert ok(deployed.get("/api/v1/ping"))["token_scope"] == "deployment"
        registered = ok(deployed.post("/api/v1/agent_instance/register", json={"agent_version": {"name": "bot"}}))
        assert registered["agent_id"] == agent and registered["environment_id"] == where["environment_id"]
        error(deployed.post("/api/v1/agent", json={"details": {"name": "other"}}), 403, "not_permitted")
    # Unknown routes answer JSON too.
    error(alice.get("/api/v1/nothing-here"), 404, "not_found")


def test_idempotency(api) -> None:
    alice, bob = api
    body = {"details": {"name": "same"}, "idempotency_key": "agent-key-0001"}
    first = ok(alice.post("/api/v1/agent", json=body))
    assert ok(alice.post("/api/v1/agent", json=body))["id"] == first["id"]
    assert ok(bob.post("/api/v1/agent", json=body))["id"] != first["id"]  # keys are per account
    error(alice.post("/api/v1/agent", json={"details": {"name": "other"}, "idempotency_key": "agent-key-0001"}),
          409, "idempotency_key_already_used")
    error(alice.post("/api/v1/agent", json={"details": {"name": "x"}, "idempotency_key": "k" * 65}), 422,
          "invalid_value")
    listed = alice.get("/api/v1/agent").json()
    assert listed["pagination"]["item_count"] == 1 and listed["sorting"] == {"field": "id", "direction": "asc"}

    _, instance = setup_instance(alice)
    span_body = {"details": {"agent_instance_id": instance, "schema_name": "llm", "status": "active",
                             "payload": {"model": "m"}, "idempotency_key": "span-key-0001"}}
    span = ok(alice.post("/api/v1/agent_spans", json=span_body))
    assert ok(alice.post("/api/v1/agent_spans", json=span_body))["id"] == span["id"]  # key inside details
    finish = {"status": "complete", "result_payload": {"response": "r"}, "idempotency_key": "finish-0001"}
    done = ok(alice.post(f"/api/v1/agent_spans/{span['id']}/finish", json=finish))
    assert done["status"] == "complete" and done["validation"]["status"] == "valid"
    assert ok(alice.post(f"/api/v1/agent_spans/{span['id']}/finish", json=finish)) == done  # replay
    error(alice.post(f"/api/v1/agent_spans/{span['id']}/finish", json={"status": "failed"}), 409, "invalid_action")
    ok(alice.post(f"/api/v1/agent_instance/{instance}/start", json={"timestamp": None, "idempotency_key": "s-0001"}))
    ok(alice.post(f"/api/v1/agent_instance/{instance}/finish", json={"status": "complete"}))
    error(alice.post(f"/api/v1/agent_instance/{instance}/finish", json={}), 409, "invalid_action")


def test_a_start_that_arrives_after_the_finish_keeps_the_finish(api) -> None:
    # The Prefactor SDKs send start and finish from concurrent queue workers: they can cross.
    alice, _ = api
    _, instance = setup_instance(alice)
    finished = ok(alice.post(f"/api/v1/agent_instance/{instance}/finish",
                             json={"status": "complete", "timestamp": "2026-05-01T10:00:05Z"}))
    assert finished["started_at"] == finished["finished_at"]  # no start known yet: the finish's time
    late = ok(alice.post(f"/api/v1/agent_instance/{instance}/start", json={"timestamp": "2026-05-01T10:00:00Z"}))
    assert late["status"] == "complete" and late["finished_at"] == finished["finished_at"]
    assert late["started_at"].startswith("2026-05-01T10:00:00")  # the run began when the start says
    again = ok(alice.post(f"/api/v1/agent_instance/{instance}/start", json={"timestamp": "2026-05-01T10:00:03Z"}))
    assert again["started_at"] == late["started_at"]  # a later start time never moves it
    error(alice.post(f"/api/v1/agent_instance/{instance}/finish", json={}), 409, "invalid_action")


def test_schema_versions_and_flagged_spans(api) -> None:
    alice, _ = api
    agent, instance = setup_instance(alice)
    version = ok(alice.post("/api/v1/agent_schema_version", json={"details": {"agent_id": agent, **SCHEMA}}))
    types = version["span_type_schemas"]
    assert set(types) == {"llm", "broken", "legacy"}
    assert types["llm"]["result_schema"]["properties"]["response"] == {"type": "string"}
    assert types["legacy"]["result_schema"] == {} and types["legacy"]["title"] == "legacy"
    assert types["broken"]["params_schema_validation"]["status"] == "error"
    assert "objekt" in types["broken"]["params_schema_validation"]["message"]
    assert types["broken"]["template_validation"]["status"] == "error"
    assert types["llm"]["data_risk"]["action_profile"]["destroy_data"] == "unknown"
    assert version["external_identifier_repeats"] == 2  # the inline one at registration, and this one
    bad = error(alice.post("/api/v1/agent_schema_version", json={"details": {
        "agent_id": agent, "span_type_schemas": [{"name": "x", "params_schema": {},
                                                  "data_risk": {"action_profile": {"read_data": "yes"}}}]}}),
        422, "invalid_value")
    assert "span_type_schemas[0].data_risk.action_profile.read_data" in bad["message"]

    def create(**details):
        return ok(alice.post("/api/v1/agent_spans", json={"details": {
            "agent_instance_id": instance, "status": "active", "payload": {}, **details}}))

    wrong = create(schema_name="llm", payload={"model": 7})
    assert wrong["validation"]["status"] == "invalid" and wrong["payload"] == {"model": 7}
    assert wrong["validation"]["problems"][0]["pointer"] == "/model"
    undeclared = create(schema_name="nope")
    assert undeclared["validation"]["problems"][0]["part"] == "schema_name"
    unchecked = create(schema_name="broken", payload={"a": 1})
    assert unchecked["validation"]["status"] == "unchecked"
    orphan = create(schema_name="llm", payload={"model": "m"}, parent_span_id="3c1b1e4c-temporary-local-key")
    assert orphan["validation"]["status"] == "invalid" and orphan["parent_span_id"] == "3c1b1e4c-temporary-local-key"
    assert "parent_span_id" in orphan["validation"]["note"]
    child = create(schema_name="llm", payload={"model": "m"}, parent_span_id=wrong["id"])
    assert child["validation"]["status"] == "valid"

    flagged = alice.get("/api/v1/agent_spans", params={"agent_instance_id": instance,
                                                       "validation_status": "invalid"}).json()
    assert flagged["pagination"]["item_count"] == 3
    risky = alice.get("/api/v1/agent_spans", params={"agent_instance_id": instance, "include_risk_level": "true",
                                                     "sorting": "-id", "pagination[page_size]": "2"}).json()
    assert [s["id"] for s in risky["summaries"]] == [child["id"], orphan["id"]]
    assert risky["summaries"][0]["risk_score"] == 9 * 1.0 + 9 * 2.0  # health × (read, external communication)
    assert risky["pagination"]["next_page_offset"] == 2
    error(alice.get("/api/v1/agent_spans", params={"pagination[page_size]": "101"}), 422, "invalid_value")

    shown = ok(alice.get("/api/v1/agent/show", params={"external_identifier": "bot-1",
                                                      "include_risk_rollup": "true"}))
    codes = {flag["code"] for flag in shown["risk_rollup"]["flags"]}
    assert "external_communication_with_sensitive_data" in codes
    assert ok(alice.get(f"/api/v1/agent_instance/{instance}", params={"include_risk_level": "true"}))["risk_level"]


def test_bulk_semantics_and_termination(api) -> None:
    alice, _ = api
    _, instance = setup_instance(alice)
    answer = alice.post("/api/v1/bulk", json={"items": [
        {"_type": "agent_spans/create", "idempotency_key": "bulk-0001", "agent_instance_id": instance,
         "schema_name": "llm", "status": "active", "payload": {"model": "flat"}},
        {"_type": "agents/nonsense", "idempotency_key": "bulk-0002"},
        {"_type": "agent_spans/create", "idempotency_key": "bulk-0003", "agent_instance_id": instance,
         "schema_name": "llm", "status": "active"},
    ]})
    assert answer.status_code == 200, answer.text
    outputs = answer.json()["outputs"]
    assert list(outputs) == ["bulk-0001", "bulk-0002"]  # stops at the first error; later items absent
    assert outputs["bulk-0001"]["details"]["payload"] == {"model": "flat"}
    assert outputs["bulk-0002"]["status"] == "error" and outputs["bulk-0002"]["code"] == "bad_request"
    error(alice.post("/api/v1/bulk", json={"items": []}), 422, "invalid_value")
    error(alice.post("/api/v1/bulk", json={"items": [{"_type": "agents/list", "idempotency_key": "same-key"},
                                                     {"_type": "agents/list", "idempotency_key": "same-key"}]}),
          409, "idempotency_key_already_used")
    # A failing register inside bulk leaves the items before it stored.
    answer = alice.post("/api/v1/bulk", json={"items": [
        {"_type": "agent_spans/create", "idempotency_key": "bulk-0004",
         "details": {"agent_instance_id": instance, "schema_name": "llm", "status": "active"}},
        {"_type": "agent_instances/register", "idempotency_key": "bulk-0005", "agent_id": "0" * 32},
    ]}).json()["outputs"]
    assert answer["bulk-0005"]["code"] == "not_found"
    span_id = answer["bulk-0004"]["details"]["id"]
    assert ok(alice.get(f"/api/v1/agent_spans/{span_id}"))["id"] == span_id

    ok(alice.post(f"/api/v1/agent_instance/{instance}/terminate", json={"reason": "budget exceeded"}))
    finished = alice.post(f"/api/v1/agent_spans/{span_id}/finish", json={"status": "complete"}).json()
    assert finished["control"] == {"terminate": True, "reason": "budget exceeded"}
    polled = ok(alice.get(f"/api/v1/agent_instance/{instance}"))
    assert polled["status"] == "terminated" and polled["termination_reason"] == "budget exceeded"


def test_agents_cli(api, settings: Settings) -> None:
    alice, _ = api
    agent, _ = setup_instance(alice)
    env = settings_env(settings)
    risk = subprocess.run([sys.executable, "-m", "agentfolio.cli", "agents", "risk", "bot-1", "--account", "alice"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert risk.returncode == 0, risk.stderr
    assert "external_communication_with_sensitive_data" in risk.stdout and agent in risk.stdout
    listed = subprocess.run([sys.executable, "-m", "agentfolio.cli", "agents", "ls", "--account", "alice"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and agent in listed.stdout, listed.stderr
    missing = subprocess.run([sys.executable, "-m", "agentfolio.cli", "agents", "risk", "nobody",
                              "--account", "alice"], env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and "error:" in missing.stderr


def test_record_quality_is_validated_summarised_and_removable(api) -> None:
    alice, bob = api
    agent = ok(alice.post("/api/v1/agent", json={"details": {"name": "judge", "external_identifier": "judge-1"}}))["id"]
    schema = {**SCHEMA, "external_identifier": "v-quality", "quality_schemas": [
        {"name": "helpfulness", "template": "scored {{score}}",
         "schema": {"type": "object", "required": ["score"], "properties": {"score": {"type": "number"}}}}]}
    instance = ok(alice.post("/api/v1/agent_instance/register", json={
        "agent_id": agent, "agent_version": {"name": "judge"}, "agent_schema_version": schema,
        "idempotency_key": "register-quality-1"}))["id"]
    path = f"/api/v1/agent_instance/{instance}/record_quality"

    recorded = ok(alice.post(path, json={"name": "helpfulness", "payload": {"score": 0.9},
                                         "idempotency_key": "quality-0001"}))
    assert recorded["quality_payloads"] == {"helpfulness": {"score": 0.9}}
    assert recorded["quality_summaries"] == {"helpfulness": "scored 0.9"}
    assert recorded["quality_validation"]["helpfulness"]["status"] == "valid"
    # A replay answers as the first time; the same key with another body is refused.
    assert ok(alice.post(path, json={"name": "helpfulness", "payload": {"score": 0.9},
                                     "idempotency_key": "quality-0001"})) == recorded
    error(alice.post(path, json={"name": "helpfulness", "payload": {"score": 0.1},
                                 "idempotency_key": "quality-0001"}), 409, "idempotency_key_already_used")

    # Kept even when it breaks its schema or names no declared quality: flagged, not refused.
    flagged = ok(alice.post(path, json={"name": "helpfulness", "payload": {"score": "high"}}))
    assert flagged["quality_payloads"]["helpfulness"] == {"score": "high"}
    assert flagged["quality_validation"]["helpfulness"]["status"] == "invalid"
    undeclared = ok(alice.post(path, json={"name": "tone", "payload": {"ok": True}}))
    assert undeclared["quality_payloads"]["tone"] == {"ok": True}
    assert undeclared["quality_validation"]["tone"]["status"] == "invalid"

    removed = ok(alice.post(path, json={"name": "tone", "payload": None}))
    assert "tone" not in removed["quality_payloads"] and "tone" not in removed["quality_validation"]
    assert ok(alice.get(f"/api/v1/agent_instance/{instance}"))["quality_payloads"] == removed["quality_payloads"]
    error(bob.post(path, json={"name": "helpfulness", "payload": {"score": 1}}), 404, "not_found")
