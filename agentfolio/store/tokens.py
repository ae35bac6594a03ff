"""Every bearer token of an account, listed and revoked by id, and the viewer's sign-ins.

Two kinds of token reach the API: account tokens (``afk_…``, table ``tokens``) and
deployment tokens (``afd_…``, bound to one agent in one environment, table
``registry_tokens``).  Both are listed and revoked here by a public id, ``afk-<n>`` or
``afd-<n>``; a revoked token is refused at once by every front end, and ends the viewer
sign-ins it opened.

A viewer sign-in is a row of ``viewer_sessions``: the browser's cookie holds a random
secret whose SHA-256 is kept (never the API token), it lasts as long as the caller says
(the viewer: a day, see ``agentfolio.app.accounts``), signing out deletes it, and it
stops working as soon as its token is revoked.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from agentfolio.store.accounts import TOKEN_PREFIX, Account, hash_token
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.errors import NotFound
from agentfolio.store.registry_tables import registry_deployment_tokens as deployment_tokens
from agentfolio.store.registry_tables import registry_deployments as deployments
from agentfolio.store.scope import AccountScope
from agentfolio.store.tables import accounts, tokens, viewer_sessions

__all__ = ["AccountTokens", "TokenInfo", "Tokens"]

VIEWER_SECRET_PREFIX = "afv_"
TOKEN_ID = re.compile(r"(afk|afd)-([1-9][0-9]{0,17})")


@dataclass(frozen=True, slots=True)
class TokenInfo:
    id: str
    kind: Literal["account", "deployment"]
    prefix: str
    label: str | None
    created_at: float
    revoked_at: float | None
    agent_id: str | None = None
    environment_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        from agentfolio.store.sessions import iso

        return {"id": self.id, "type": self.kind, "prefix": self.prefix, "label": self.label,
                "created_at": iso(self.created_at), "revoked_at": iso(self.revoked_at),
                "revoked": self.revoked_at is not None, "agent_id": self.agent_id,
                "environment_id": self.environment_id}


class Tokens:
    """Bearer tokens: :meth:`of` opens one account's; the viewer's sign-ins, which find
    their account from a secret, are here."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def of(self, account: Account) -> AccountTokens:
        """The tokens of ``account``, and only those."""
        return AccountTokens(self.engine, account)

    # -- viewer sign-ins ------------------------------------------------------------------

    def open_viewer_session(self, token: str, *, lifetime: float,
                            now: float | None = None) -> tuple[str, Account] | None:
        """Sign a browser in with an account token: the secret for its cookie, or None
        when the token is unknown or revoked."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        now = time.time() if now is None else now
        secret = VIEWER_SECRET_PREFIX + secrets.token_urlsafe(32)
        with write_transaction(self.engine) as connection:
            row = connection.execute(
                sa.select(tokens.c.pk, accounts.c.pk.label("account_pk"), accounts.c.name)
                .select_from(tokens.join(accounts, tokens.c.account_pk == accounts.c.pk))
                .where(tokens.c.token_hash == hash_token(token), tokens.c.revoked_at.is_(None))).first()
            if row is None:
                return None
            # Sign-ins that ran out are removed as new ones start: the table stays small.
            connection.execute(sa.delete(viewer_sessions).where(viewer_sessions.c.expires_at < now))
            connection.execute(AccountScope(row.account_pk).insert(viewer_sessions).values(
                token_pk=row.pk, secret_hash=hash_token(secret), created_at=now,
                expires_at=now + lifetime))
        return secret, Account(row.account_pk, row.name)

    def viewer_account(self, secret: str, *, now: float | None = None) -> Account | None:
        """The account a browser's cookie signs in as: None once signed out, expired, or
        its token revoked."""
        if not secret.startswith(VIEWER_SECRET_PREFIX) or len(secret) > 200:
            return None
        now = time.time() if now is None else now
        query = (sa.select(accounts.c.pk, accounts.c.name)
                 .select_from(viewer_sessions.join(tokens, viewer_sessions.c.token_pk == tokens.c.pk)
                              .join(accounts, viewer_sessions.c.account_pk == accounts.c.pk))
                 .where(viewer_sessions.c.secret_hash == hash_token(secret), viewer_sessions.c.expires_at > now,
                        tokens.c.revoked_at.is_(None), tokens.c.account_pk == viewer_sessions.c.account_pk))
        with read_transaction(self.engine) as connection:
            row = connection.execute(query).first()
        return Account(row.pk, row.name) if row else None

    def end_viewer_session(self, secret: str) -> None:
        with write_transaction(self.engine) as connection:
            connection.execute(sa.delete(viewer_sessions)
                               .where(viewer_sessions.c.secret_hash == hash_token(secret)))


class AccountTokens:
    """One account's tokens of both kinds, every statement built by its :class:`AccountScope`."""

    def __init__(self, engine: Engine, account: Account) -> None:
        self.engine = engine
        self.scope = AccountScope(account.pk)

    def list(self) -> list[TokenInfo]:
        """The account's tokens of both kinds, oldest first, revoked ones included."""
        with read_transaction(self.engine) as connection:
            own = connection.execute(self.scope.select(tokens, tokens.c.pk, tokens.c.prefix, tokens.c.label,
                                                       tokens.c.created_at, tokens.c.revoked_at)).all()
            bound = connection.execute(
                self.scope.select(deployment_tokens, deployment_tokens.c.pk, deployment_tokens.c.prefix,
                                  deployment_tokens.c.label, deployment_tokens.c.created_at,
                                  deployment_tokens.c.revoked_at, deployments.c.agent_id,
                                  deployments.c.environment_id)
                .join(deployments, deployments.c.id == deployment_tokens.c.deployment_id)).all()
        found = [TokenInfo(f"afk-{row.pk}", "account", row.prefix, row.label, row.created_at, row.revoked_at)
                 for row in own]
        found += [TokenInfo(f"afd-{row.pk}", "deployment", row.prefix, row.label, row.created_at, row.revoked_at,
                            row.agent_id, row.environment_id) for row in bound]
        return sorted(found, key=lambda info: (info.created_at, info.id))

    def revoke(self, token_id: str) -> TokenInfo:
        """Revoke one of the account's tokens (again: no change); NotFound for any other id."""
        match = TOKEN_ID.fullmatch(token_id)
        if match is None:
            raise NotFound(f"no token {token_id!r}")
        table = tokens if match[1] == "afk" else deployment_tokens
        with write_transaction(self.engine) as connection:
            connection.execute(self.scope.update(table)
                               .where(table.c.pk == int(match[2]), table.c.revoked_at.is_(None))
                               .values(revoked_at=time.time()))
        for info in self.list():
            if info.id == token_id:
                return info
        raise NotFound(f"no token {token_id!r}")
