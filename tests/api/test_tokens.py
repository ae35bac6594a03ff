"""``/api/v1/api_token`` and the viewer's sign-in, through the served app."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from agentfolio.app import Agentfolio
from agentfolio.app.registry import AgentCreate, Principal, RegistryService
from agentfolio.server import create_server
from agentfolio.store import Store

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture
def client(store: Store):
    with TestClient(create_server(folio=Agentfolio(store, owned=False))) as served:
        yield served


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_tokens_are_listed_and_revoked_through_the_api(client: TestClient, store: Store) -> None:
    token, alice = store.accounts.create_token("alice", label="laptop")
    spare, _ = store.accounts.create_token("alice", label="spare")
    bob, _ = store.accounts.create_token("bob")
    service = RegistryService(store)
    agent = service.create_agent(Principal(alice), AgentCreate(name="a")).id
    deployment = service.create_deployment_token(Principal(alice), agent).token

    listed = client.get("/api/v1/api_token", headers=bearer(token))
    assert listed.status_code == 200, listed.text
    summaries = listed.json()["summaries"]
    assert [(s["type"], s["label"], s["revoked"]) for s in summaries] == [
        ("account", "laptop", False), ("account", "spare", False), ("deployment", None, False)]
    assert all(token not in str(s) and deployment not in str(s) for s in summaries)
    ids = [s["id"] for s in summaries]

    # A deployment token acts only within its agent: it neither lists nor revokes tokens.
    assert client.get("/api/v1/api_token", headers=bearer(deployment)).status_code == 403
    assert client.post(f"/api/v1/api_token/{ids[0]}/revoke", headers=bearer(deployment)).status_code == 403
    # Another account's token ids are unknown to Bob.
    refused = client.post(f"/api/v1/api_token/{ids[1]}/revoke", headers=bearer(bob))
    assert (refused.status_code, refused.json()["code"]) == (404, "not_found")

    revoked = client.post(f"/api/v1/api_token/{ids[2]}/revoke", headers=bearer(token))
    assert revoked.status_code == 200 and revoked.json()["details"]["revoked"] is True
    assert client.get("/api/v1/ping", headers=bearer(deployment)).status_code == 401
    assert client.post(f"/api/v1/api_token/{ids[1]}/revoke", headers=bearer(token)).status_code == 200
    assert client.get("/api/v1/sessions", headers=bearer(spare)).status_code == 401
    assert client.get("/api/v1/sessions", headers=bearer(token)).status_code == 200
    assert "/api/v1/api_token/{token_id}/revoke" in client.get("/openapi.json").json()["paths"]


def test_the_viewer_signs_in_for_less_than_a_month_and_signs_out_server_side(client: TestClient,
                                                                             store: Store) -> None:
    token, alice = store.accounts.create_token("alice")
    signed_in = client.post("/login", data={"token": token, "next": "/sessions"}, follow_redirects=False)
    assert signed_in.status_code == 303
    cookie = signed_in.headers["set-cookie"]
    max_age = int(re.search(r"Max-Age=(\d+)", cookie).group(1))
    assert 0 < max_age < 30 * 24 * 3600
    assert token not in cookie, "the cookie must not carry the API token itself"
    secret = signed_in.cookies.get("agentfolio_session")
    assert client.get("/sessions", cookies={"agentfolio_session": secret}, follow_redirects=False).status_code == 200

    client.post("/logout", cookies={"agentfolio_session": secret}, follow_redirects=False)
    # A copy of the cookie kept from before signing out no longer signs anyone in.
    replay = client.get("/sessions", cookies={"agentfolio_session": secret}, follow_redirects=False)
    assert replay.status_code in (303, 401) and "/login" in replay.headers.get("location", "/login")

    again = client.post("/login", data={"token": token}, follow_redirects=False).cookies.get("agentfolio_session")
    assert client.get("/sessions", cookies={"agentfolio_session": again}, follow_redirects=False).status_code == 200
    store.tokens.of(alice).revoke(store.tokens.of(alice).list()[0].id)
    after = client.get("/sessions", cookies={"agentfolio_session": again}, follow_redirects=False)
    assert after.status_code != 200
