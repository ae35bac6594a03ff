"""Opening units of work on the registry, and what outlives them: each account's registry
record (public id, partition, default environment) and the compiled schema versions."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from agentfolio.registry import ids
from agentfolio.registry.spans import SchemaVersionCache
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.registry.records import DeploymentGrant, authenticate_deployment, expire_idempotency
from agentfolio.store.registry.unit import RegistryUnit
from agentfolio.store.registry_tables import registry_accounts as t_accounts

T = TypeVar("T")
DEPLOYMENT_TOKEN_PREFIX = "afd_"
#: Attempts of a write unit that lost a race on a unique key (the winner's row is then found).
WRITE_ATTEMPTS = 3
#: Seconds between two rounds of removing expired idempotency records (by each process:
#: deleting what is expired is the same work whoever does it, so nothing is coordinated).
EXPIRY_INTERVAL = 60.0


@dataclass(frozen=True, slots=True)
class AccountRecord:
    """An account as the registry knows it.  ``partition``: the ID partition every ID of
    the account carries (no two accounts share one)."""

    account_pk: int
    id: str
    partition: int
    default_environment_id: str


class RegistryStore:
    """The registry's rows in one database: one per :class:`agentfolio.store.Store`."""

    def __init__(self, engine: Engine, *, idempotency_window: int = 0) -> None:
        """``idempotency_window``: seconds an idempotency key is remembered (0: forever)."""
        self.engine = engine
        self.versions = SchemaVersionCache(lambda _version_id: None)  # units load, scoped, on a miss
        self.idempotency_window = idempotency_window
        self._accounts: dict[int, AccountRecord] = {}
        self._next_expiry = 0.0

    def unit(self, connection: sa.Connection, account_pk: int) -> RegistryUnit:
        """The repositories of one account on ``connection``."""
        return RegistryUnit(connection, account_pk, self.versions, idempotency_window=self.idempotency_window)

    def account(self, account_pk: int) -> AccountRecord:
        """The account's registry record, made on first use."""
        found = self._accounts.get(account_pk)
        if found is not None:
            return found
        with read_transaction(self.engine) as connection:
            row = self.unit(connection, account_pk).settings.get()
        if row is None:
            self._create_account(account_pk)
            with read_transaction(self.engine) as connection:
                row = self.unit(connection, account_pk).settings.get()
            assert row is not None
        record = AccountRecord(account_pk, row.id, ids.decode(row.id).partition, row.default_environment_id)
        self._accounts[account_pk] = record
        return record

    def _create_account(self, account_pk: int) -> None:
        stamp = time.time_ns() // 1000
        try:
            with write_transaction(self.engine) as connection:
                account_id = _fresh_partition_id(connection)
                environment_id = ids.new_id(ids.decode(account_id).partition)
                unit = self.unit(connection, account_pk)
                unit.settings.insert(id=account_id, default_environment_id=environment_id, inserted_at=stamp)
                unit.environments.insert(id=environment_id, name="default", inserted_at=stamp)
        except IntegrityError:
            pass  # made meanwhile by another process

    @contextmanager
    def reading(self, account: AccountRecord) -> Iterator[RegistryUnit]:
        with read_transaction(self.engine) as connection:
            yield self.unit(connection, account.account_pk)

    def write(self, account: AccountRecord, work: Callable[[RegistryUnit], T]) -> T:
        """Run ``work`` in one write transaction and commit it.  A unique key taken by a
        concurrent transaction (an idempotency key, an external identifier) runs it again,
        so it sees the winner's row; after :data:`WRITE_ATTEMPTS` the ``IntegrityError``
        is raised."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with write_transaction(self.engine) as connection:
                    unit = self.unit(connection, account.account_pk)
                    result = work(unit)
                    unit.flush()
                self._expire_now_and_then()
                return result
            except IntegrityError:
                if attempt == WRITE_ATTEMPTS - 1:
                    raise
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    def expire_idempotency(self, now: float | None = None) -> int:
        """Remove the idempotency records older than the window (every account's); how many."""
        if not self.idempotency_window:
            return 0
        before = int(((time.time() if now is None else now) - self.idempotency_window) * 1_000_000)
        removed = 0
        while True:
            with write_transaction(self.engine) as connection:
                done = expire_idempotency(connection, before)
            removed += done
            if done == 0:
                return removed

    def _expire_now_and_then(self) -> None:
        """One bounded round of expiry after a write, at most every :data:`EXPIRY_INTERVAL`."""
        if not self.idempotency_window or time.monotonic() < self._next_expiry:
            return
        self._next_expiry = time.monotonic() + EXPIRY_INTERVAL
        before = (time.time_ns() // 1000) - self.idempotency_window * 1_000_000
        try:
            with write_transaction(self.engine) as connection:
                expire_idempotency(connection, before)
        except sa.exc.OperationalError:  # busy: the next round does it
            pass

    def authenticate_deployment(self, token: str) -> DeploymentGrant | None:
        if not token.startswith(DEPLOYMENT_TOKEN_PREFIX) or len(token) > 200:
            return None
        with read_transaction(self.engine) as connection:
            return authenticate_deployment(connection, token)


def _fresh_partition_id(connection: sa.Connection) -> str:
    """A new account id whose partition no other account uses, so the IDs an account may
    choose for its rows (its own partition) never name another account's rows."""
    while True:
        account_id = ids.new_id()
        partition = account_id[10:16]  # characters 10-15 spell the 30 partition bits
        taken = connection.execute(sa.select(t_accounts.c.account_pk).where(
            sa.func.substr(t_accounts.c.id, 11, 6) == partition).limit(1)).first()
        if taken is None:
            return account_id
