"""Account isolation of bearer tokens (account and deployment tokens), on SQLite and PostgreSQL.

Each account lists only its own tokens of both kinds and revokes only its own: another
account's token id is answered like an id never issued, and nothing of the owner's
changes.  ``scripts/mutate_scope.py`` runs this file with each scoping call removed.
"""

from __future__ import annotations

import pytest

from agentfolio.app.registry import AgentCreate, Principal, RegistryService
from agentfolio.store import NotFound, Store
from agentfolio.store.tokens import AccountTokens


@pytest.fixture
def holders(store: Store) -> dict[str, tuple[AccountTokens, str, str]]:
    """Per account: its tokens repository, its account token and its deployment token."""
    service = RegistryService(store)
    found = {}
    for name in ("alice", "bob"):
        token, account = store.accounts.create_token(name, label=f"{name}-laptop")
        agent = service.create_agent(Principal(account), AgentCreate(name="same")).id
        deployment = service.create_deployment_token(Principal(account), agent, label=f"{name}-ci").token
        found[name] = (store.tokens.of(account), token, deployment)
    return found


def test_each_account_lists_only_its_own_tokens(holders) -> None:
    for name, (tokens, token, deployment) in holders.items():
        listed = tokens.list()
        assert [(info.kind, info.label, info.prefix) for info in listed] == [
            ("account", f"{name}-laptop", token[:12]), ("deployment", f"{name}-ci", deployment[:12])]


def test_another_accounts_tokens_cannot_be_revoked(holders, store: Store) -> None:
    alice, alice_token, alice_deployment = holders["alice"]
    bob = holders["bob"][0]
    before = alice.list()
    for info in before:
        with pytest.raises(NotFound):
            bob.revoke(info.id)
    assert alice.list() == before
    assert store.accounts.authenticate(alice_token) is not None
    assert store.registry.authenticate_deployment(alice_deployment) is not None
    assert all(info.revoked_at is None for info in bob.list())


def test_revoking_ones_own_token_leaves_the_other_accounts(holders, store: Store) -> None:
    alice, alice_token, alice_deployment = holders["alice"]
    bob, bob_token, bob_deployment = holders["bob"]
    for info in alice.list():
        assert alice.revoke(info.id).revoked_at is not None
    assert store.accounts.authenticate(alice_token) is None
    assert store.registry.authenticate_deployment(alice_deployment) is None
    assert store.accounts.authenticate(bob_token) is not None
    assert store.registry.authenticate_deployment(bob_deployment) is not None
    assert [info.revoked_at for info in bob.list()] == [None, None]
