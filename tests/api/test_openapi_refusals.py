"""Requests the served OpenAPI document calls valid are taken, and those the server
refuses are refused as the document says (a required header, a documented status, an
alternative of parameters), each with a clear error in the envelope."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.store import Store

EMPTY = {"schemaVersion": "1.0.0", "data": {"conversationHistory": []}}
TURN = {"$type": "request", "createdAt": "2025-11-04T19:40:00Z",
        "messages": [{"role": "user", "contents": [{"$type": "text", "text": "hi"}]}]}


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    token, _ = store.accounts.create_token("refusals")
    with TestClient(create_server(folio=Agentfolio(store, owned=False), viewer=False)) as served:
        served.headers["Authorization"] = f"Bearer {token}"
        yield served


def refused(answer: Any, status: int, code: str) -> str:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == "error" and body["code"] == code, body
    return str(body["message"])


def operation(client: TestClient, path: str, method: str) -> dict[str, Any]:
    document: dict[str, Any] = client.get("/openapi.json").json()
    return document["paths"][path][method]  # type: ignore[no-any-return]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_empty_page_size_or_offset_is_refused_naming_it(client: TestClient) -> None:
    for parameter in ("pagination[page_size]", "pagination[offset]"):
        for path in ("/api/v1/agent", "/api/v1/risk_profile", "/api/v1/alerts"):
            message = refused(client.get(path, params={parameter: ""}), 422, "invalid_value")
            assert parameter in message and "empty" in message
    assert client.get("/api/v1/agent", params={"pagination[page_size]": "5"}).status_code == 200


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_idempotency_key_given_as_null_is_refused(client: TestClient) -> None:
    for path, body in (("/api/v1/agent", {"details": {"name": "a"}, "idempotency_key": None}),
                       ("/api/v1/agent", {"details": {"name": "a", "idempotency_key": None}}),
                       ("/api/v1/risk_profile", {"details": {"name": "p"}, "idempotency_key": None}),
                       ("/api/v1/alerts/acknowledge", {"all": True, "idempotency_key": None}),
                       ("/api/v1/agent_spans", {"details": {"agent_instance_id": "0", "schema_name": "s",
                                                            "idempotency_key": None}}),
                       ("/api/v1/agent_instance/register", {"agent_id": "a", "idempotency_key": None})):
        message = refused(client.post(path, json=body), 422, "invalid_value")
        assert "idempotency_key" in message and "null" in message
    for path, schema in (("/api/v1/agent_spans", _details(client, "/api/v1/agent_spans", "post")),
                         ("/api/v1/agent_instance/register", operation(client, "/api/v1/agent_instance/register", "post")
                          ["requestBody"]["content"]["application/json"]["schema"])):
        assert schema["properties"]["idempotency_key"]["type"] == "string", path  # null is not documented
    assert client.post("/api/v1/agent", json={"details": {"name": "a"}}).status_code == 200


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_risk_profile_name_already_taken_is_a_conflict(client: TestClient) -> None:
    assert client.post("/api/v1/risk_profile", json={"details": {"name": "strict"}}).status_code == 200
    message = refused(client.post("/api/v1/risk_profile", json={"details": {"name": "strict"}}), 409, "conflict")
    assert "already the name" in message
    assert "409" in operation(client, "/api/v1/risk_profile", "post")["responses"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_bulk_items_sharing_a_key_are_a_conflict(client: TestClient) -> None:
    items = [{"_type": "agents/list", "idempotency_key": "same-key-1"},
             {"_type": "agents/list", "idempotency_key": "same-key-1"}]
    message = refused(client.post("/api/v1/bulk", json={"items": items}), 409, "idempotency_key_already_used")
    assert "items[1].idempotency_key" in message
    # An unknown operation is that item's error, as the document describes it (no enum).
    unknown = client.post("/api/v1/bulk", json={"items": [{"_type": "nope/nope", "idempotency_key": "key-0001"}]})
    assert unknown.status_code == 200 and unknown.json()["outputs"]["key-0001"]["code"] == "bad_request"
    item = operation(client, "/api/v1/bulk", "post")["requestBody"]["content"]["application/json"]["schema"]
    assert "enum" not in item["properties"]["items"]["items"]["properties"]["_type"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_empty_session_as_an_envelope_is_a_conflict_until_it_has_a_message(client: TestClient) -> None:
    assert client.post("/api/v1/sessions", params={"id": "s"}, json=EMPTY).status_code == 201
    message = refused(client.get("/api/v1/sessions/s", params={"format": "envelope"}), 409, "not_representable")
    assert "at least one message" in message
    assert "409" in operation(client, "/api/v1/sessions/{session_id}", "get")["responses"]
    appended = client.post("/api/v1/sessions/s/entries", json=TURN, headers={"If-Match": "*"})
    assert appended.status_code == 201, appended.text
    assert client.get("/api/v1/sessions/s", params={"format": "envelope"}).json()["messages"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_appending_documents_if_match_as_required_and_412_for_a_stale_one(client: TestClient) -> None:
    assert client.post("/api/v1/sessions", params={"id": "s"}, json=EMPTY).status_code == 201
    refused(client.post("/api/v1/sessions/s/entries", json=TURN), 428, "required_value")
    refused(client.post("/api/v1/sessions/s/entries", json=TURN, headers={"If-Match": '"9"'}), 412,
            "version_conflict")
    refused(client.post("/api/v1/sessions/s/entries", json=TURN, headers={"If-Match": " " * 101 + "1"}), 400,
            "invalid_value")
    documented = operation(client, "/api/v1/sessions/{session_id}/entries", "post")
    headers = [p for p in documented["parameters"] if p["in"] == "header" and p["name"] == "If-Match"]
    assert len(headers) == 1 and headers[0]["required"] is True
    assert {"412", "428"} <= set(documented["responses"])


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_agent_show_documents_exactly_one_of_its_two_selectors(client: TestClient) -> None:
    made = client.post("/api/v1/agent", json={"details": {"name": "a", "external_identifier": "ext-1"}}).json()
    assert client.get("/api/v1/agent/show", params={"external_identifier": "ext-1"}).json()["details"]["id"] == \
        made["details"]["id"]
    refused(client.get("/api/v1/agent/show"), 422, "invalid_value")
    refused(client.get("/api/v1/agent/show", params={"agent_id": made["details"]["id"],
                                                     "external_identifier": "ext-1"}), 422, "invalid_value")
    which = [p for p in operation(client, "/api/v1/agent/show", "get")["parameters"] if p["in"] == "query"
             and p["schema"].get("type") == "object"]
    assert len(which) == 1 and which[0]["required"] and which[0]["style"] == "form" and which[0]["explode"]
    schema = which[0]["schema"]
    assert set(schema["properties"]) == {"agent_id", "external_identifier"}
    assert schema["minProperties"] == schema["maxProperties"] == 1 and schema["additionalProperties"] is False


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_render_reports_an_unreadable_document_unless_strict(client: TestClient) -> None:
    report = client.post("/api/v1/render", params={"from": "durable-state"}, json={})
    assert report.status_code == 200, report.text
    details = report.json()["details"]
    assert details["valid"] is False and details["from"] == "durable-state"
    assert details["problems"][0]["pointer"] == "/schemaVersion"
    refused(client.post("/api/v1/render", params={"from": "durable-state", "strict": "true"}, json={}), 400,
            "invalid_value")


def _details(client: TestClient, path: str, method: str) -> dict[str, Any]:
    body = operation(client, path, method)["requestBody"]["content"]["application/json"]["schema"]
    if "anyOf" in body:
        return body["anyOf"][0]["properties"]["details"]  # type: ignore[no-any-return]
    return body["properties"]["details"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_create_and_update_bodies_document_each_field_as_the_server_checks_it(client: TestClient) -> None:
    """Each documented bound is one the server enforces: just inside is taken, just outside refused."""
    created = _details(client, "/api/v1/agent", "post")
    assert created["required"] == ["name"]
    name = created["properties"]["name"]
    assert (name["type"], name["minLength"], name["maxLength"]) == ("string", 1, 255)
    description = created["properties"]["description"]["anyOf"][0]
    assert description["maxLength"] == 10_000
    assert created["properties"]["team_id"]["anyOf"][0]["maxLength"] == 64
    assert "pattern" in created["properties"]["id"]["anyOf"][0]
    updated = _details(client, "/api/v1/agent/{agent_id}", "put")
    assert "required" not in updated and updated["properties"]["name"]["maxLength"] == 255
    profile = _details(client, "/api/v1/risk_profile", "post")
    assert profile["properties"]["template"]["anyOf"][0]["enum"] == ["default", "empty"]

    def agent(**fields: Any) -> Any:
        return client.post("/api/v1/agent", json={"details": {"name": "a", **fields}})

    assert agent(name="n" * 255, description="d" * 10_000, team_id="t" * 64).status_code == 200
    for fields in ({"name": "n" * 256}, {"description": "d" * 10_001}, {"team_id": "t" * 65}, {"name": " "},
                   {"id": "not-an-id"}, {"name": 7}):
        refused(agent(**fields), 422, "invalid_value")
    for template in ("", "strict"):
        refused(client.post("/api/v1/risk_profile", json={"details": {"name": f"p{template}", "template": template}}),
                422, "invalid_value")
    assert client.post("/api/v1/risk_profile", json={"details": {"name": "q", "template": None}}).status_code == 200


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_render_takes_an_object_or_an_array_and_refuses_a_scalar(client: TestClient) -> None:
    assert client.post("/api/v1/render", json=[]).json()["details"]["valid"] is False
    refused(client.post("/api/v1/render", params={"to": "a2a"}, json="text"), 400, "invalid_value")
    body = operation(client, "/api/v1/render", "post")["requestBody"]["content"]["application/json"]["schema"]
    assert body["type"] == ["object", "array"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_what_the_server_ignores_or_reads_as_absent_is_documented_so(client: TestClient) -> None:
    """Bulk reads each item's key, not the body's: the document names no body key (so a key
    with NUL there is not "invalid yet accepted"); ``alert_ids: null`` is read as no ids."""
    bulk = operation(client, "/api/v1/bulk", "post")["requestBody"]["content"]["application/json"]["schema"]
    assert "idempotency_key" not in bulk["properties"]
    answer = client.post("/api/v1/bulk", json={"idempotency_key": "a\x00b",
                                               "items": [{"_type": "agents/list", "idempotency_key": "list-0001"}]})
    assert answer.status_code == 200, answer.text
    acknowledge = operation(client, "/api/v1/alerts/acknowledge", "post")
    schema = acknowledge["requestBody"]["content"]["application/json"]["schema"]
    assert "null" in schema["properties"]["alert_ids"]["type"]
    assert schema["properties"]["alert_ids"]["items"]["maxLength"] == 64  # as the service checks an id
    refused(client.post("/api/v1/alerts/acknowledge", json={"alert_ids": ["0" * 65]}), 422, "invalid_value")
    assert client.post("/api/v1/alerts/acknowledge", json={"alert_ids": ["0" * 64]}).status_code == 404  # no such alert
    assert client.post("/api/v1/alerts/acknowledge", json={"alert_ids": None, "all": True}).status_code == 200
    refused(client.post("/api/v1/alerts/acknowledge", json={"alert_ids": None}), 422, "required_value")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_register_refuses_what_names_no_agent_instead_of_making_one(client: TestClient) -> None:
    """``agent_id`` names an agent by id or external identifier: a number, an object or
    blank text is refused (it used to become the name of a new agent); so are a purpose
    or an environment that is not text, instead of reading as the default."""
    before = client.get("/api/v1/agent").json()["summaries"]
    for fields in ({"agent_id": {}}, {"agent_id": 7}, {"agent_id": ["a"]}, {"agent_id": True}, {"agent_id": " "},
                   {"agent_id": "a", "purpose": 0}, {"agent_id": "a", "purpose": ""}, {"agent_id": "a", "purpose": {}},
                   {"agent_id": "a", "environment_id": {}}, {"agent_id": "a", "environment_id": 0},
                   {"agent_id": "a", "environment_id": False}):
        message = refused(client.post("/api/v1/agent_instance/register", json={"agent_version": {"name": "v"},
                                                                               **fields}), 422, "invalid_value")
        assert next(iter(fields.keys() - {"agent_id"}), "agent_id") in message, (fields, message)
    assert client.get("/api/v1/agent").json()["summaries"] == before
    made = client.post("/api/v1/agent_instance/register", json={"agent_id": "my-agent", "purpose": None,
                                                                  "environment_id": "", "agent_version": {}})
    assert made.status_code == 200, made.text
    assert made.json()["details"]["purpose"] == "live"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_span_and_schema_version_bodies_name_their_instance_and_agent_as_text(client: TestClient) -> None:
    instance = client.post("/api/v1/agent_instance/register", json={"agent_id": "spans", "agent_version": {}})
    agent_id = instance.json()["details"]["agent_id"]
    for value in (7, {}, None):
        message = refused(client.post("/api/v1/agent_spans", json={"details": {
            "agent_instance_id": value, "schema_name": "s", "status": "active"}}), 422,
            "required_value" if value is None else "invalid_value")
        assert "agent_instance_id" in message
    refused(client.post("/api/v1/agent_schema_version", json={"details": {"agent_id": {}}}), 422, "invalid_value")
    # A moment out of range in UTC is a refusal, not a server error.
    message = refused(client.post("/api/v1/agent_spans", json={"details": {
        "agent_instance_id": instance.json()["details"]["id"], "schema_name": "s", "status": "active",
        "started_at": "0001-01-01T00:00:00+01:00"}}), 422, "invalid_value")
    assert "started_at" in message and "out of range" in message
    assert client.post("/api/v1/agent_schema_version", json={"details": {"agent_id": agent_id}}).status_code == 200
