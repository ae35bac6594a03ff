"""``/api/v1/risk_profile`` and ``/api/v1/alerts`` over HTTP: the shapes the open
dashboard reads (``summaries[].{id,name}``, a top-level ``count``), paging with
``next_page_offset``, assignment through ``PUT /api/v1/agent``, acknowledgement, and
every one of them scoped to its account."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agentfolio.app import Agentfolio
from agentfolio.store import Store
from tests.api.test_registry_api import error, ok
from tests.storage import LiveServer

SCHEMA = {"span_type_schemas": [
    {"name": "lookup", "params_schema": {"type": "object", "required": ["q"]},
     "data_risk": {"action_profile": {"read_data": "allowed"},
                   "params_data_categories": {"personal_identifiers": "included"}}}]}


@pytest.fixture
def clients(live: LiveServer, store: Store) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    accounts = Agentfolio(store, owned=False).accounts
    alice, _ = accounts.create_token("alice")
    bob, _ = accounts.create_token("bob")
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {alice}"}, timeout=30) as a, \
            httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {bob}"}, timeout=30) as b:
        yield a, b


def test_risk_profiles_listed_created_and_assigned(clients: tuple[httpx.Client, httpx.Client]) -> None:
    alice, bob = clients
    account_id = ok(alice.get("/api/v1/account"))["id"]
    assert ok(alice.get("/api/v1/risk_profile", params={"account_id": account_id}))["summaries"] == []
    made = [ok(alice.post("/api/v1/risk_profile", json={"details": {"name": f"p{n}", "thresholds": {
        "medium": 2, "high": 4, "critical": 8}}, "idempotency_key": f"profile-{n}"})) for n in range(3)]
    again = ok(alice.post("/api/v1/risk_profile", json={"details": {"name": "p0", "thresholds": {
        "medium": 2, "high": 4, "critical": 8}}, "idempotency_key": "profile-0"}))
    assert again["id"] == made[0]["id"]  # a replay, not a second profile
    first = alice.get("/api/v1/risk_profile", params={"account_id": account_id, "pagination[page_size]": "2",
                                                      "sorting[field]": "id", "sorting[direction]": "desc"}).json()
    assert [p["id"] for p in first["summaries"]] == [made[2]["id"], made[1]["id"]]
    assert set(first["summaries"][0]) >= {"id", "name"} and first["pagination"]["next_page_offset"] == 2
    error(bob.get("/api/v1/risk_profile", params={"account_id": account_id}), 404, "not_found")
    error(bob.get(f"/api/v1/risk_profile/{made[0]['id']}"), 404, "not_found")
    assert ok(bob.get("/api/v1/risk_profile/default"))["is_default"]
    error(alice.post("/api/v1/risk_profile", json={"details": {"name": "bad", "categories": {
        "health_and_medical": {"weight": 11}}}}), 422, "invalid_value")

    agent = ok(alice.post("/api/v1/agent", json={"details": {"name": "bot", "risk_profile_id": made[1]["id"]}}))
    assert agent["risk_profile_id"] == made[1]["id"]
    assert ok(alice.get(f"/api/v1/risk_profile/{made[1]['id']}"))["agent_count"] == 1
    error(bob.post("/api/v1/agent", json={"details": {"name": "bot", "risk_profile_id": made[1]["id"]}}), 422,
          "invalid_value")
    moved = ok(alice.put(f"/api/v1/agent/{agent['id']}", json={"details": {"risk_profile_id": made[2]["id"]}}))
    assert moved["risk_profile_id"] == made[2]["id"]
    listed = ok(alice.get("/api/v1/agent", params={"risk_profile_id": made[2]["id"]}))["summaries"]
    assert [a["id"] for a in listed] == [agent["id"]]


def test_alerts_counted_listed_and_acknowledged(clients: tuple[httpx.Client, httpx.Client]) -> None:
    alice, bob = clients
    agent = ok(alice.post("/api/v1/agent", json={"details": {"name": "bot"}}))["id"]
    run = ok(alice.post("/api/v1/agent_instance/register", json={
        "agent_id": agent, "agent_version": {"name": "bot"}, "agent_schema_version": SCHEMA}))["id"]
    for n in range(3):  # payloads that break the schema: stored, flagged, and alerted
        ok(alice.post("/api/v1/agent_spans", json={"details": {"agent_instance_id": run, "schema_name": "lookup",
                                                               "payload": {"n": n}}}))
    ok(alice.post(f"/api/v1/agent_instance/{run}/terminate", json={"reason": "stop"}))
    counted = alice.get("/api/v1/alerts/count").json()
    assert counted == {"status": "success", "count": 4, "details": {"count": 4}}
    assert bob.get("/api/v1/alerts/count").json()["count"] == 0

    page = alice.get("/api/v1/alerts", params={"pagination[page_size]": "3", "sorting[field]": "id",
                                               "sorting[direction]": "desc"}).json()
    assert page["summaries"][0]["kind"] == "terminated_instance" and page["pagination"]["next_page_offset"] == 3
    alert = page["summaries"][1]
    assert alert["kind"] == "schema_breaking_span" and alert["agent_instance_id"] == run and alert["agent_span_id"]
    error(bob.get(f"/api/v1/alerts/{alert['id']}"), 404, "not_found")
    error(bob.post(f"/api/v1/alerts/{alert['id']}/acknowledge"), 404, "not_found")
    done = ok(alice.post(f"/api/v1/alerts/{alert['id']}/acknowledge"))
    assert done == {"count": 3, "acknowledged": 1}
    assert ok(alice.get(f"/api/v1/alerts/{alert['id']}"))["acknowledged"]
    assert len(alice.get("/api/v1/alerts", params={"acknowledged": "true"}).json()["summaries"]) == 1
    assert len(alice.get("/api/v1/alerts", params={"acknowledged": "all"}).json()["summaries"]) == 4
    error(alice.post("/api/v1/alerts/acknowledge", json={}), 422, "required_value")
    swept = ok(alice.post("/api/v1/alerts/acknowledge", json={"all": True, "kind": "schema_breaking_span"}))
    assert swept == {"count": 1, "acknowledged": 2}
    assert alice.get("/api/v1/alerts/count").json()["count"] == 1
