"""Idempotency records and deployment tokens."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentfolio.store.accounts import hash_token
from agentfolio.store.registry.base import Rows
from agentfolio.store.registry.bulk import insert_many
from agentfolio.store.registry_tables import (
    registry_deployment_tokens as t_tokens,
)
from agentfolio.store.registry_tables import (
    registry_deployments as t_deployments,
)
from agentfolio.store.registry_tables import (
    registry_idempotency as t_idempotency,
)
from agentfolio.store.tables import accounts


@dataclass(frozen=True, slots=True)
class IdempotencyRecord:
    """The first answer to ``(operation, key)`` and the fingerprint of the request that made it."""

    operation: str
    key: str
    fingerprint: str
    answer: bytes


class Idempotency(Rows):
    __slots__ = ("pending",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.pending: list[dict[str, Any]] = []

    def find(self, operation: str, key: str) -> IdempotencyRecord | None:
        row = self.conn.execute(self.scope.select(t_idempotency).where(
            t_idempotency.c.operation == operation, t_idempotency.c.key == key)).first()
        return IdempotencyRecord(row.operation, row.key, row.body_hash, row.response) if row else None

    def find_keys(self, keys: Iterable[str]) -> list[IdempotencyRecord]:
        """Every record whatever its operation whose key is one of ``keys``."""
        wanted = list(keys)
        found: list[IdempotencyRecord] = []
        for start in range(0, len(wanted), 500):
            rows = self.conn.execute(self.scope.select(t_idempotency)
                                     .where(t_idempotency.c.key.in_(wanted[start:start + 500])))
            found.extend(IdempotencyRecord(row.operation, row.key, row.body_hash, row.response) for row in rows)
        return found

    def insert(self, record: IdempotencyRecord, *, buffered: bool = False) -> None:
        """Keep a record; ``buffered``: with the next :meth:`flush` (beside buffered spans)."""
        values = {"operation": record.operation, "key": record.key, "body_hash": record.fingerprint,
                  "status": 200, "response": record.answer, "inserted_at": time.time_ns() // 1000}
        if buffered:
            self.pending.append(values)
        else:
            self.conn.execute(self.scope.insert(t_idempotency).values(**values))

    def flush(self) -> None:
        if self.pending:
            insert_many(self.conn, t_idempotency, self.scope.rows(self.pending))
            self.pending.clear()


@dataclass(frozen=True, slots=True)
class DeploymentGrant:
    """What a deployment token allows: one agent in one environment of one account."""

    account_pk: int
    account_name: str
    deployment_id: str
    agent_id: str
    environment_id: str


class DeploymentTokens(Rows):
    def insert(self, deployment_id: str, token: str, *, label: str | None) -> None:
        self.conn.execute(self.scope.insert(t_tokens).values(
            deployment_id=deployment_id, token_hash=hash_token(token), prefix=token[:12], label=label,
            created_at=time.time()))


def authenticate_deployment(connection: Connection, token: str) -> DeploymentGrant | None:
    """The grant of a live token.  Unscoped on purpose: the token is how the account is found."""
    query = (sa.select(t_tokens.c.account_pk, accounts.c.name, t_deployments.c.id, t_deployments.c.agent_id,
                       t_deployments.c.environment_id)
             .select_from(t_tokens.join(t_deployments, t_tokens.c.deployment_id == t_deployments.c.id)
                          .join(accounts, t_tokens.c.account_pk == accounts.c.pk))
             .where(t_tokens.c.token_hash == hash_token(token), t_tokens.c.revoked_at.is_(None),
                    t_deployments.c.account_pk == t_tokens.c.account_pk))
    row = connection.execute(query).first()
    return None if row is None else DeploymentGrant(row[0], row[1], row[2], row[3], row[4])
