"""Idempotency records and deployment tokens."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
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
from agentfolio.store.scope import AccountScope
from agentfolio.store.tables import accounts


@dataclass(frozen=True, slots=True)
class IdempotencyRecord:
    """What the first request with ``(operation, key)`` did: the fingerprint of its input
    and the id of what it made or changed, whose answer a replay reads again.  ``answer``
    is kept only where nothing would be left to read (a deletion).  ``expired``: older
    than the window, so the key is free again."""

    operation: str
    key: str
    fingerprint: str
    resource_id: str | None = None
    answer: bytes | None = None
    expired: bool = False


#: Keys asked for in one statement (a bulk request's keys of one operation).
_KEYS_PER_QUERY = 500


class Idempotency(Rows):
    """The account's idempotency records.  Looked up by the primary key's own order,
    ``(account, operation, key)``: one indexed probe per key, however many records the
    account keeps."""

    __slots__ = ("pending", "window_us")

    def __init__(self, conn: Connection, scope: AccountScope, window_seconds: int = 0) -> None:
        super().__init__(conn, scope)
        self.pending: list[dict[str, Any]] = []
        self.window_us = window_seconds * 1_000_000

    def _record(self, row: Any, now: int) -> IdempotencyRecord:
        expired = bool(self.window_us) and row.inserted_at < now - self.window_us
        return IdempotencyRecord(row.operation, row.key, row.body_hash, row.resource_id, row.response, expired)

    def find(self, operation: str, key: str) -> IdempotencyRecord | None:
        row = self.conn.execute(self.scope.select(t_idempotency).where(
            t_idempotency.c.operation == operation, t_idempotency.c.key == key)).first()
        return self._record(row, time.time_ns() // 1000) if row else None

    def find_keys(self, wanted: Iterable[tuple[str, str]]) -> list[IdempotencyRecord]:
        """The records of these ``(operation, key)`` pairs that exist (expired ones too,
        marked): one statement per operation and 500 keys."""
        by_operation: dict[str, list[str]] = {}
        for operation, key in wanted:
            by_operation.setdefault(operation, []).append(key)
        now = time.time_ns() // 1000
        found: list[IdempotencyRecord] = []
        for operation, keys in by_operation.items():
            for start in range(0, len(keys), _KEYS_PER_QUERY):
                rows = self.conn.execute(self._lookup(operation, keys[start:start + _KEYS_PER_QUERY]))
                found.extend(self._record(row, now) for row in rows)
        return found

    def _lookup(self, operation: str, keys: list[str]) -> sa.Select[Any]:
        """The records of ``keys``, each found by a probe of the primary key.

        SQLite probes the index for each value of ``key IN (…)``.  PostgreSQL's planner
        may answer that with one range scan of the account's records filtered by key, or a
        sequential scan, depending on its statistics, so a growing table slows every
        request until they are refreshed; a lateral join on the keys makes each one an
        equality probe of the whole primary key, whatever the statistics say."""
        if self.conn.dialect.name != "postgresql":
            return self.scope.select(t_idempotency).where(t_idempotency.c.operation == operation,
                                                          t_idempotency.c.key.in_(keys))
        wanted = sa.func.unnest(sa.cast(sa.literal(keys, type_=postgresql.ARRAY(sa.String())),
                                        postgresql.ARRAY(sa.String()))).table_valued("key") \
            .render_derived(name="wanted")
        found = self.scope.select(t_idempotency).where(t_idempotency.c.operation == operation,
                                                       t_idempotency.c.key == wanted.c.key).limit(1).lateral("found")
        return sa.select(found).select_from(wanted).join(found, sa.true())

    def insert(self, record: IdempotencyRecord, *, buffered: bool = False, replace: bool = False) -> None:
        """Keep a record; ``buffered``: with the next :meth:`flush` (beside buffered spans);
        ``replace``: an expired record of the same key goes first."""
        if replace:
            self.conn.execute(self.scope.delete(t_idempotency).where(
                t_idempotency.c.operation == record.operation, t_idempotency.c.key == record.key))
        values = {"operation": record.operation, "key": record.key, "body_hash": record.fingerprint,
                  "status": 200, "response": record.answer, "resource_id": record.resource_id,
                  "inserted_at": time.time_ns() // 1000}
        if buffered:
            self.pending.append(values)
        else:
            self.conn.execute(self.scope.insert(t_idempotency).values(**values))

    def flush(self) -> None:
        if self.pending:
            insert_many(self.conn, t_idempotency, self.scope.rows(self.pending))
            self.pending.clear()


def expire_idempotency(connection: Connection, before_us: int, *, limit: int = 5_000) -> int:
    """Delete up to about ``limit`` records of every account inserted before ``before_us``
    (oldest first, through the ``inserted_at`` index); how many went.  Unscoped on purpose:
    expiry is the same rule for every account."""
    bound = connection.execute(sa.select(t_idempotency.c.inserted_at)
                               .where(t_idempotency.c.inserted_at < before_us)
                               .order_by(t_idempotency.c.inserted_at).offset(limit).limit(1)).scalar()
    upto = before_us if bound is None else bound
    return connection.execute(sa.delete(t_idempotency).where(t_idempotency.c.inserted_at < upto)).rowcount or 0


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
