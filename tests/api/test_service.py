"""The HTTP service through a real uvicorn on loopback, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest

from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.storage import LiveServer

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "agentfolio" / "samples" / "durable-agent-state.sample.json"


def entry(text: str) -> dict:
    return {"$type": "request", "createdAt": "2025-11-04T19:40:00Z",
            "messages": [{"role": "user", "contents": [{"$type": "text", "text": text}]}]}


def assert_error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == "error" and body["code"] == code and body["message"], body
    return body


@pytest.fixture
def clients(live: LiveServer, store: Store):
    alice, _ = store.accounts.create_token("alice")
    bob, _ = store.accounts.create_token("bob")
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {alice}"}, timeout=30) as a, \
            httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {bob}"}, timeout=30) as b:
        yield a, b


def test_session_lifecycle(clients) -> None:
    alice, _ = clients
    source = SAMPLE.read_bytes()
    created = alice.post("/api/v1/sessions", params={"id": "s1", "agent": "orchestrator"}, content=source,
                         headers={"Content-Type": "application/json"})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["status"] == "success" and body["details"]["session"]["version"] == 1
    assert created.headers["etag"] == '"1"' and created.headers["location"] == "/api/v1/sessions/s1"

    got = alice.get("/api/v1/sessions/s1")
    assert got.status_code == 200 and got.headers["etag"] == '"1"'
    assert got.content == orjson.dumps(orjson.loads(source))

    assert_error(alice.post("/api/v1/sessions/s1/entries", json=entry("no if-match")), 428, "required_value")
    appended = alice.post("/api/v1/sessions/s1/entries", json=entry("hello"), headers={"If-Match": '"1"'})
    assert appended.status_code == 201, appended.text
    assert appended.json()["details"]["position"] == 4 and appended.headers["etag"] == '"2"'
    stale = alice.post("/api/v1/sessions/s1/entries", json=entry("stale"), headers={"If-Match": '"1"'})
    assert_error(stale, 412, "version_conflict")
    assert stale.headers["etag"] == '"2"'
    assert_error(alice.post("/api/v1/sessions/s1/entries", json=entry("x"), headers={"If-Match": "soon"}),
                 400, "invalid_value")

    listed = alice.get("/api/v1/sessions", params={"q": "HELLO", "agent": "orchestrator"}).json()
    assert [s["id"] for s in listed["details"]["sessions"]] == ["s1"]
    assert alice.get("/api/v1/sessions", params={"q": "absent"}).json()["details"]["sessions"] == []
    assert_error(alice.get("/api/v1/sessions", params={"since": "yesterday"}), 400, "invalid_value")

    canonical = alice.get("/api/v1/sessions/s1", params={"format": "canonical"})
    assert canonical.status_code == 200 and canonical.json()["agentfolio"] == "1"
    assert_error(alice.get("/api/v1/sessions/s1", params={"format": "pdf"}), 400, "invalid_value")

    reset = alice.post("/api/v1/sessions/s1/reset", headers={"If-Match": '"2"'})
    assert reset.status_code == 200 and reset.json()["details"]["session"]["entryCount"] == 0
    assert_error(alice.delete("/api/v1/sessions/s1", headers={"If-Match": '"2"'}), 412, "version_conflict")
    assert alice.delete("/api/v1/sessions/s1").json() == {"status": "success",
                                                          "details": {"id": "s1", "deleted": True}}
    assert_error(alice.get("/api/v1/sessions/s1"), 404, "not_found")


def test_a_turn_posted_as_an_array_is_appended_as_one_write(clients) -> None:
    alice, _ = clients
    created = alice.post("/api/v1/sessions", params={"id": "turns"},
                         json={"schemaVersion": "1.2.0", "data": {"conversationHistory": []}})
    assert created.status_code == 201, created.text
    turn = [entry("question"), {**entry("answer"), "$type": "response"}]
    appended = alice.post("/api/v1/sessions/turns/entries", json=turn, headers={"If-Match": '"1"'})
    assert appended.status_code == 201, appended.text
    assert appended.headers["etag"] == '"2"' and appended.json()["details"]["position"] == 0
    assert appended.json()["details"]["session"]["entryCount"] == 2
    assert_error(alice.post("/api/v1/sessions/turns/entries", json=[], headers={"If-Match": "*"}), 400,
                 "invalid_value")
    assert_error(alice.post("/api/v1/sessions/turns/entries", json=[entry("ok"), 3], headers={"If-Match": "*"}),
                 400, "invalid_value")
    history = alice.get("/api/v1/sessions/turns").json()["data"]["conversationHistory"]
    assert history == turn


def test_duplicate_ids_conflict(clients) -> None:
    alice, _ = clients
    assert alice.post("/api/v1/sessions", params={"id": "dup"}, content=SAMPLE.read_bytes()).status_code == 201
    assert_error(alice.post("/api/v1/sessions", params={"id": "dup"}, content=SAMPLE.read_bytes()), 409,
                 "already_exists")


def test_authentication_and_isolation(live: LiveServer, clients) -> None:
    alice, bob = clients
    assert alice.post("/api/v1/sessions", params={"id": "private"}, content=SAMPLE.read_bytes()).status_code == 201
    assert_error(httpx.get(live.url + "/api/v1/sessions"), 401, "not_authenticated")
    assert_error(httpx.get(live.url + "/api/v1/sessions", headers={"Authorization": "Bearer afk_nope"}), 401,
                 "bad_authtoken")
    assert_error(httpx.get(live.url + "/api/v1/sessions", headers={"Authorization": "Basic eDp5"}), 401,
                 "bad_authtoken")
    assert_error(bob.get("/api/v1/sessions/private"), 404, "not_found")
    assert_error(bob.post("/api/v1/sessions/private/entries", json=entry("x"), headers={"If-Match": "*"}), 404,
                 "not_found")
    assert_error(bob.delete("/api/v1/sessions/private"), 404, "not_found")
    assert bob.get("/api/v1/sessions").json()["details"]["sessions"] == []
    assert [s["id"] for s in alice.get("/api/v1/sessions").json()["details"]["sessions"]] == ["private"]


def test_bad_bodies_get_the_error_envelope(clients) -> None:
    alice, _ = clients
    post = alice.post
    assert_error(post("/api/v1/sessions", content=b"{not json"), 400, "bad_request")
    assert_error(post("/api/v1/sessions", content=b""), 400, "required_value")
    assert_error(post("/api/v1/sessions", content=b"[1,2]"), 400, "invalid_value")
    assert_error(post("/api/v1/sessions", content=b'{"schemaVersion": 3, "data": {}}'), 400, "invalid_value")
    assert_error(post("/api/v1/sessions", content=b'{"schemaVersion": "7.0.0", "data": {}}'), 400, "invalid_value")
    assert_error(post("/api/v1/sessions", content=b"\xff\xfe"), 400, "bad_request")
    deep = b"[" * 200 + b"]" * 200
    assert_error(post("/api/v1/sessions", content=b'{"schemaVersion":"1.0.0","data":' + deep + b"}"), 400,
                 "invalid_value")
    assert_error(post("/api/v1/sessions", content=b"[" * 5000 + b"]" * 5000), 400, "bad_request")
    assert_error(post("/api/v1/sessions", params={"id": "../../etc"}, content=SAMPLE.read_bytes()), 400,
                 "invalid_value")
    assert_error(alice.get("/api/v1/sessions", params={"limit": "many"}), 400, "invalid_value")
    assert_error(alice.get("/api/v1/nowhere"), 404, "not_found")
    assert_error(alice.put("/api/v1/sessions"), 405, "bad_request")


def test_body_size_is_bounded(settings: Settings, store: Store) -> None:
    token, _ = store.accounts.create_token("alice")
    server = LiveServer(settings.with_(max_body_bytes=1000))
    try:
        headers = {"Authorization": f"Bearer {token}"}
        big = b'{"schemaVersion":"1.0.0","data":{"x":"' + b"a" * 2000 + b'"}}'
        assert_error(httpx.post(server.url + "/api/v1/sessions", content=big, headers=headers), 413,
                     "payload_too_large")

        def chunks():
            yield big[:600]
            yield big[600:]

        streamed = httpx.post(server.url + "/api/v1/sessions", content=chunks(), headers=headers)
        assert_error(streamed, 413, "payload_too_large")
    finally:
        server.stop()


def test_render_converts_without_storing(clients) -> None:
    alice, _ = clients
    rendered = alice.post("/api/v1/render", params={"to": "canonical"}, content=SAMPLE.read_bytes())
    assert rendered.status_code == 200, rendered.text
    details = rendered.json()["details"]
    assert details["from"] == "durable-state" and details["valid"] is True
    assert details["document"]["agentfolio"] == "1"
    checked = alice.post("/api/v1/render", json={"schemaVersion": "1.0.0", "data": {"conversationHistory": [
        {"$type": "request", "messages": [{"role": "wizard"}]}]}}).json()["details"]
    assert checked["valid"] is False and checked["problems"] and checked["document"] is None
    # A document in no known format is reported like one that breaks its schema, or refused when strict.
    unknown = alice.post("/api/v1/render", json={"what": "ever"}).json()["details"]
    assert unknown["valid"] is False and unknown["from"] is None and unknown["document"] is None
    assert "not a document agentfolio knows" in unknown["problems"][0]["message"]
    assert_error(alice.post("/api/v1/render", params={"strict": "true"}, json={"what": "ever"}), 400, "invalid_value")
    assert_error(alice.post("/api/v1/render", params={"from": "nope"}, json={"what": "ever"}), 400, "invalid_value")
    assert_error(alice.post("/api/v1/render", params={"to": "nope"}, content=SAMPLE.read_bytes()), 400,
                 "invalid_value")
    assert alice.get("/api/v1/sessions").json()["details"]["sessions"] == []


def test_openapi_is_served(live: LiveServer) -> None:
    document = httpx.get(live.url + "/openapi.json").json()
    assert document["openapi"].startswith("3.")
    assert {"/api/v1/sessions", "/api/v1/sessions/{session_id}", "/api/v1/sessions/{session_id}/entries",
            "/api/v1/sessions/{session_id}/reset", "/api/v1/render"} <= set(document["paths"])
    assert "ErrorEnvelope" in document["components"]["schemas"]
    assert "HTTPValidationError" not in document["components"]["schemas"]
    for path in document["paths"].values():
        for operation in path.values():
            # FastAPI's own 422 never shows; registry routes document theirs (the Prefactor contract).
            assert operation["responses"].get("422", {}).get("description") != "Validation Error"


def test_integers_beyond_64_bits_come_back_exactly(clients) -> None:
    alice, _ = clients
    body = (b'{"schemaVersion":"1.1.0","data":{"conversationHistory":[{"$type":"request","correlationId":"c",'
            b'"createdAt":"2025-11-04T19:40:00Z","messages":[{"role":"user","contents":[{"$type":"text","text":"n"}],'
            b'"extensionData":{"n":18446744073709551617,"m":-123456789012345678901234567890}}]}]}}')
    created = alice.post("/api/v1/sessions", params={"id": "big"}, content=body,
                         headers={"Content-Type": "application/json"})
    assert created.status_code == 201, created.text
    got = alice.get("/api/v1/sessions/big")
    assert got.status_code == 200 and got.content == body
    as_chat = alice.get("/api/v1/sessions/big", params={"format": "canonical"})
    assert as_chat.status_code == 200 and b"18446744073709551617" in as_chat.content
