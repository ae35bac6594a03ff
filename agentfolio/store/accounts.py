"""Accounts and their bearer tokens.  A token is shown once; only its SHA-256 is kept."""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.errors import InvalidInput, NotFound
from agentfolio.store.tables import accounts, tokens

TOKEN_PREFIX = "afk_"
ACCOUNT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True, slots=True)
class Account:
    pk: int
    name: str


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class Accounts:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, name: str) -> Account | None:
        with read_transaction(self.engine) as connection:
            row = connection.execute(sa.select(accounts.c.pk, accounts.c.name)
                                     .where(accounts.c.name == name)).first()
        return Account(row.pk, row.name) if row else None

    def require(self, name: str) -> Account:
        account = self.get(name)
        if account is None:
            raise NotFound(f"no account named {name!r}")
        return account

    def ensure(self, name: str) -> Account:
        """The account of that name, created if it does not exist yet."""
        if not ACCOUNT_NAME.fullmatch(name):
            raise InvalidInput(f"account name {name!r} must be 1-100 letters, digits, '.', '_' or '-', "
                               "starting with a letter or digit")
        found = self.get(name)
        if found:
            return found
        try:
            with write_transaction(self.engine) as connection:
                pk = connection.execute(sa.insert(accounts).values(name=name, created_at=time.time())
                                        .returning(accounts.c.pk)).scalar_one()
            return Account(pk, name)
        except IntegrityError:  # created meanwhile by another process
            return self.require(name)

    def list(self) -> list[Account]:
        with read_transaction(self.engine) as connection:
            rows = connection.execute(sa.select(accounts.c.pk, accounts.c.name).order_by(accounts.c.name))
            return [Account(row.pk, row.name) for row in rows]

    def create_token(self, account_name: str, *, label: str | None = None) -> tuple[str, Account]:
        """A new bearer token for the account (created if needed).  Shown here only."""
        account = self.ensure(account_name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with write_transaction(self.engine) as connection:
            connection.execute(sa.insert(tokens).values(account_pk=account.pk, token_hash=hash_token(token),
                                                        prefix=token[:12], label=label, created_at=time.time()))
        return token, account

    def authenticate(self, token: str) -> Account | None:
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        query = (sa.select(accounts.c.pk, accounts.c.name)
                 .select_from(tokens.join(accounts, tokens.c.account_pk == accounts.c.pk))
                 .where(tokens.c.token_hash == hash_token(token), tokens.c.revoked_at.is_(None)))
        with read_transaction(self.engine) as connection:
            row = connection.execute(query).first()
        return Account(row.pk, row.name) if row else None

    def revoke_token(self, token: str) -> bool:
        with write_transaction(self.engine) as connection:
            result = connection.execute(sa.update(tokens).where(tokens.c.token_hash == hash_token(token),
                                                                tokens.c.revoked_at.is_(None))
                                        .values(revoked_at=time.time()))
        return result.rowcount > 0
