"""Tokens of both kinds listed and revoked by id, only within their account; viewer
sign-ins that end on sign-out, on expiry and when their token is revoked."""

from __future__ import annotations

import pytest

from agentfolio.app.registry import AgentCreate, Principal, RegistryService
from agentfolio.store import NotFound, Store


def test_an_account_lists_and_revokes_its_own_tokens_of_both_kinds(store: Store) -> None:
    token, alice = store.accounts.create_token("alice", label="laptop")
    other, bob = store.accounts.create_token("bob")
    service = RegistryService(store)
    agent = service.create_agent(Principal(alice), AgentCreate(name="a")).id
    made = service.create_deployment_token(Principal(alice), agent, label="ci")
    deployment = made.token
    listed = store.tokens.of(alice).list()
    assert [(t.kind, t.label, t.prefix, t.revoked_at) for t in listed] == [
        ("account", "laptop", token[:12], None), ("deployment", "ci", deployment[:12], None)]
    assert listed[1].agent_id == agent and listed[1].environment_id == made.environment_id
    assert [t.kind for t in store.tokens.of(bob).list()] == ["account"]

    # Bob cannot revoke (or learn about) Alice's tokens: the same answer as for an id never issued.
    for token_id in (listed[0].id, listed[1].id, "afk-999999", "nonsense"):
        with pytest.raises(NotFound):
            store.tokens.of(bob).revoke(token_id)
    assert store.accounts.authenticate(token) == alice
    assert store.registry.authenticate_deployment(deployment) is not None

    assert store.tokens.of(alice).revoke(listed[1].id).revoked_at is not None
    assert store.registry.authenticate_deployment(deployment) is None
    assert store.tokens.of(alice).revoke(listed[0].id).revoked_at is not None
    assert store.accounts.authenticate(token) is None
    assert store.accounts.authenticate(other) == bob
    again = store.tokens.of(alice).revoke(listed[0].id)  # revoking twice changes nothing
    assert again.revoked_at == store.tokens.of(alice).list()[0].revoked_at


def test_viewer_sign_ins_end_on_sign_out_expiry_and_revocation(store: Store) -> None:
    token, alice = store.accounts.create_token("alice")
    assert store.tokens.open_viewer_session("afk_unknown", lifetime=60) is None
    secret, account = store.tokens.open_viewer_session(token, lifetime=60, now=1000.0)
    assert account == alice and token not in secret
    assert store.tokens.viewer_account(secret, now=1030.0) == alice
    assert store.tokens.viewer_account(secret, now=1061.0) is None  # expired
    assert store.tokens.viewer_account(token, now=1030.0) is None  # the API token is not a sign-in

    first, _ = store.tokens.open_viewer_session(token, lifetime=60)
    second, _ = store.tokens.open_viewer_session(token, lifetime=60)
    store.tokens.end_viewer_session(first)
    assert store.tokens.viewer_account(first) is None
    assert store.tokens.viewer_account(second) == alice
    store.tokens.of(alice).revoke(store.tokens.of(alice).list()[0].id)
    assert store.tokens.viewer_account(second) is None
    assert store.tokens.open_viewer_session(token, lifetime=60) is None
