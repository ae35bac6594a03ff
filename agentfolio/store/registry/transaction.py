"""One transaction's work: idempotency, dispatch, caches and buffered span writes;
the operations themselves come from the per-area mixins."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from agentfolio.registry import ids
from agentfolio.registry.errors import RegistryError
from agentfolio.store.registry.agents import _AgentOps
from agentfolio.store.registry.bulk import _insert_many
from agentfolio.store.registry.instances import _InstanceOps
from agentfolio.store.registry.operations import OPERATIONS
from agentfolio.store.registry.schema_versions import _SchemaVersionOps
from agentfolio.store.registry.spans import _SpanOps
from agentfolio.store.registry.values import AccountInfo, OpError, Outcome, Principal, body_hash, dumps, loads, now_us
from agentfolio.store.registry_tables import (
    registry_idempotency as t_idempotency,
    registry_spans as t_spans,
)

if TYPE_CHECKING:
    from agentfolio.store.registry.repository import Registry


log = logging.getLogger("agentfolio.registry")


@dataclass
class _Idem:
    body_hash: str
    status: int
    response: bytes


@dataclass
class _Tx(_AgentOps, _SchemaVersionOps, _InstanceOps, _SpanOps):
    """One transaction's work: operations, caches and buffered span writes."""

    registry: Registry
    conn: Connection
    principal: Principal
    info: AccountInfo
    idem: dict[tuple[str, str], _Idem | None] = field(default_factory=dict)
    prefetched: bool = False
    instances: dict[str, Any] = field(default_factory=dict)
    pending_spans: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending_idem: list[dict[str, Any]] = field(default_factory=list)
    #: span id → instance id, for parent checks (spans never move between instances)
    span_instances: dict[str, str] = field(default_factory=dict)

    @property
    def pk(self) -> int:
        return self.info.account_pk

    def new_id(self) -> str:
        return ids.new_id(self.info.partition)

    # -- idempotency and dispatch --------------------------------------------------------

    def prefetch_keys(self, keys: list[str]) -> None:
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            rows = self.conn.execute(sa.select(t_idempotency).where(
                t_idempotency.c.account_pk == self.pk, t_idempotency.c.key.in_(chunk)))
            for row in rows:
                self.idem[(row.operation, row.key)] = _Idem(row.body_hash, row.status, row.response)
        self.prefetched = True

    def _lookup_key(self, operation: str, key: str) -> _Idem | None:
        if (operation, key) in self.idem:
            return self.idem[(operation, key)]
        if self.prefetched:
            return None
        row = self.conn.execute(sa.select(t_idempotency).where(
            t_idempotency.c.account_pk == self.pk, t_idempotency.c.operation == operation,
            t_idempotency.c.key == key)).first()
        return _Idem(row.body_hash, row.status, row.response) if row else None

    def run_item(self, operation: str, fields: Mapping[str, Any], key: str | None) -> Outcome:
        method, _, buffered = OPERATIONS[operation]
        digest = None
        if key is not None:
            digest = body_hash(fields)
            found = self._lookup_key(operation, key)
            if found is not None:
                if found.body_hash != digest:
                    raise OpError("idempotency_key_already_used",
                                  f"idempotency key {key!r} was already used with a different request")
                return Outcome(found.status, loads(found.response))
        try:
            outcome: Outcome = getattr(self, method)(fields)
        except RegistryError as error:
            raise OpError.from_registry(error) from None
        if key is not None and digest is not None:
            record = {"account_pk": self.pk, "operation": operation, "key": key, "body_hash": digest,
                      "status": outcome.status, "response": dumps(outcome.body), "inserted_at": now_us()}
            self.idem[(operation, key)] = _Idem(digest, outcome.status, record["response"])
            if buffered:
                self.pending_idem.append(record)
            else:
                self.conn.execute(sa.insert(t_idempotency), record)
        return outcome

    def run_bulk_item(self, operation: str, key: str, fields: dict[str, Any]) -> dict[str, Any]:
        spec = OPERATIONS.get(operation)
        if spec is None or operation.endswith("/terminate"):
            known = ", ".join(name for name in OPERATIONS if not name.endswith("/terminate"))
            return OpError("bad_request", f"unknown _type {operation!r} (known: {known})").to_json()
        method, writes, buffered = spec
        try:
            if not writes:
                self.flush()
                return getattr(self, method)(fields).body
            if buffered:
                return self.run_item(operation, fields, key).body
            self.flush()
            savepoint = self.conn.begin_nested()
            try:
                outcome = self.run_item(operation, fields, key)
            except BaseException:
                savepoint.rollback()
                self.idem.pop((operation, key), None)
                raise
            savepoint.commit()
            return outcome.body
        except OpError as error:
            return error.to_json()
        except RegistryError as error:
            return OpError.from_registry(error).to_json()
        except IntegrityError:
            raise
        except Exception:  # one bad item must not take the request down: report it, stop there
            log.exception("bulk item %s failed", operation)
            return OpError("unexpected", f"the server failed on this {operation} item; it was logged").to_json()

    def flush(self) -> None:
        """Insert the buffered spans and idempotency records, one ``executemany`` each,
        straight through the driver (the rows are plain values already)."""
        if self.pending_spans:
            _insert_many(self.conn, t_spans, list(self.pending_spans.values()))
            self.pending_spans.clear()
        if self.pending_idem:
            _insert_many(self.conn, t_idempotency, self.pending_idem)
            self.pending_idem.clear()
