"""Accounts and their bearer tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentfolio.store.accounts import Account

if TYPE_CHECKING:
    from agentfolio.store import Store
    from agentfolio.store.tokens import TokenInfo, Tokens

__all__ = ["VIEWER_SESSION_SECONDS", "Account", "AccountService"]

#: How long a viewer's browser stays signed in (its cookie's lifetime too): one day.
VIEWER_SESSION_SECONDS = 24 * 3600


class AccountService:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._accounts = store.accounts

    @property
    def _tokens(self) -> Tokens:
        # Opened when a token is asked about: its module loads the registry's tables,
        # which a command that only stores sessions never needs.
        return self._store.tokens

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

    # -- every token of an account (account and deployment tokens), by public id ------------

    def tokens(self, account: Account) -> list[TokenInfo]:
        return self._tokens.of(account).list()

    def revoke_token(self, account: Account, token_id: str) -> TokenInfo:
        """Revoke one of the account's tokens (``afk-…`` or ``afd-…``); it is refused at once
        everywhere, and the viewer sign-ins it opened end."""
        return self._tokens.of(account).revoke(token_id)

    # -- the viewer's sign-ins -----------------------------------------------------------

    def sign_in_viewer(self, token: str) -> tuple[str, Account] | None:
        """A browser signs in with an account token: the secret its cookie keeps."""
        return self._tokens.open_viewer_session(token, lifetime=VIEWER_SESSION_SECONDS)

    def viewer_account(self, secret: str) -> Account | None:
        return self._tokens.viewer_account(secret)

    def sign_out_viewer(self, secret: str) -> None:
        self._tokens.end_viewer_session(secret)
