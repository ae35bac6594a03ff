"""Accounts and their bearer tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentfolio.store import Account, Store

__all__ = ["AccountService"]


class AccountService:
    def __init__(self, store: Store) -> None:
        self._accounts = store.accounts

    def get(self, name: str) -> Account | None:
        return self._accounts.get(name)

    def require(self, name: str) -> Account:
        """The account of that name; NotFound (with how to create one) when there is none."""
        return self._accounts.require(name)

    def ensure(self, name: str) -> Account:
        return self._accounts.ensure(name)

    def create_token(self, name: str, *, label: str | None = None) -> tuple[str, Account]:
        """A new bearer token for the account (created if needed); only its hash is kept."""
        return self._accounts.create_token(name, label=label)

    def authenticate(self, token: str) -> Account | None:
        return self._accounts.authenticate(token)
