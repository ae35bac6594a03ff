"""The agent registry's repository: agents, schema versions, instances, spans, idempotency.

Every operation the Prefactor API offers is a named *operation* (``agents/create``,
``agent_spans/create`` …, the names bulk items use as ``_type``) taking a flat dict of
fields (a wrapped request's ``details`` merged with its path parameters) and answering
an :class:`Outcome`: the HTTP status and the exact JSON body the single endpoint sends.
``/api/v1/bulk`` runs the same operations, so a bulk item's output is what the single
endpoint would have answered, and an idempotency key replays the same way through both.

* :meth:`Registry.execute` runs one operation in its own transaction.
* :meth:`Registry.execute_bulk` runs items in order in **one** transaction: each
  non-span item in a savepoint; span creates are buffered and inserted with one
  ``executemany`` (their failure modes are all checked before anything is buffered, so
  nothing needs rolling back).  Processing stops at the first item that errors; the
  items before it are kept.
* Idempotency: ``(account, operation, key)`` → the first answer and the SHA-256 of the
  canonical body (sorted keys, without the key).  A replay answers the first result; the
  same key with another body is ``idempotency_key_already_used`` (409).  Errors are not
  recorded (they changed nothing, so running again is equivalent).
* Spans are never refused for their content: each is validated against its instance's
  schema version (compiled once, :class:`SchemaVersionCache`) and stored with the result.

The domain rules live in :mod:`agentfolio.registry`; this module only stores and reads.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Mapping

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from agentfolio.registry import ids
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.jsonschemas import SchemaCompileError, compile_schema
from agentfolio.registry.listing import PageRequest, list_body, page_info, parse_page_request
from agentfolio.registry.risk import (
    DEFAULT_RISK_PROFILE,
    DataRisk,
    RiskProfile,
    rollup,
    score_instance,
    score_span_type,
)
from agentfolio.registry.schema_versions import (
    count_external_identifier_repeats,
    load_span_types,
    normalise_schema_version,
    schema_version_details,
)
from agentfolio.registry.spans import (
    CompiledSchemaVersion,
    SchemaVersionCache,
    SpanProblem,
    SpanValidation,
    check_create,
    check_finish,
    check_instance_finish,
    span_counts,
    validate_without_version,
)
from agentfolio.registry.templates import render_summary
from agentfolio.registry.timestamps import parse_timestamp
from agentfolio.store.accounts import Account, hash_token
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.registry_tables import (
    registry_accounts as t_accounts,
    registry_agent_versions as t_versions,
    registry_agents as t_agents,
    registry_deployment_tokens as t_tokens,
    registry_deployments as t_deployments,
    registry_environments as t_environments,
    registry_idempotency as t_idempotency,
    registry_instances as t_instances,
    registry_schema_versions as t_schema_versions,
    registry_spans as t_spans,
)

log = logging.getLogger("agentfolio.registry")

DEPLOYMENT_TOKEN_PREFIX = "afd_"
MAX_KEY_CHARS = 64
MAX_BULK_KEY_CHARS = 128
MAX_BULK_ITEMS = 10_000
MAX_PARENT_CHARS = 200
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: HTTP status for each error code (docs/prefactor-api.md §3).
STATUS_FOR_CODE = {
    "bad_request": 400, "invalid_value": 422, "required_value": 422, "not_authenticated": 401,
    "bad_authtoken": 401, "not_permitted": 403, "not_found": 404, "invalid_action": 409,
    "idempotency_key_already_used": 409, "not_implemented": 501, "unexpected": 500, "unknown": 500,
}


# --------------------------------------------------------------------------- values


class OpError(Exception):
    """A refused operation: HTTP status, seed error code, message, and per-field errors."""

    def __init__(self, code: str, message: str, *, errors: Mapping[str, str] | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.errors = dict(errors) if errors else None
        self.status = status or STATUS_FOR_CODE.get(code, 400)

    @classmethod
    def from_registry(cls, error: RegistryError) -> "OpError":
        return cls(error.code, error.message, errors=error.errors)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": "error", "code": self.code, "message": self.message}
        if self.errors:
            body["errors"] = self.errors
        return body


def not_found(kind: str, value: object) -> OpError:
    shown = value if isinstance(value, str) and len(value) <= 64 else "that id"
    return OpError("not_found", f"no {kind} {shown!r} in this account" if shown != "that id"
                   else f"no such {kind} in this account")


@dataclass(frozen=True, slots=True)
class Outcome:
    status: int
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: an account token (whole account) or a deployment token (one agent
    in one environment)."""

    account: Account
    scope: str = "account"
    deployment_id: str | None = None
    agent_id: str | None = None
    environment_id: str | None = None


@dataclass(frozen=True, slots=True)
class AccountInfo:
    account_pk: int
    id: str
    partition: int
    default_environment_id: str


def now_us() -> int:
    return time.time_ns() // 1000


def to_us(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def fmt(us: int | None) -> str | None:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (registry.timestamps.format_timestamp's spelling), fast."""
    if us is None:
        return None
    seconds, micros = divmod(us, 1_000_000)
    t = time.gmtime(seconds)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            f".{micros:06d}Z")


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def loads(data: bytes | None) -> Any:
    return None if data is None else orjson.loads(data)


def body_hash(fields: Mapping[str, Any]) -> str:
    canonical = {k: v for k, v in fields.items() if k != "idempotency_key"}
    return hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()


def _problem(field: str, code: str, message: str) -> OpError:
    return OpError(code, f"{field}: {message}", errors={field: message})


def _text(fields: Mapping[str, Any], key: str, *, required: bool = False, limit: int = 255,
          path: str | None = None) -> str | None:
    value = fields.get(key)
    name = path or key
    if value is None:
        if required:
            raise _problem(name, "required_value", "is required")
        return None
    if not isinstance(value, str):
        raise _problem(name, "invalid_value", f"must be a string, found {type(value).__name__}")
    if required and not value.strip():
        raise _problem(name, "invalid_value", "must not be empty")
    if "\x00" in value:
        raise _problem(name, "invalid_value", "must not contain NUL characters")
    if len(value) > limit:
        raise _problem(name, "invalid_value", f"is {len(value):,} characters, over the {limit:,}-character limit")
    return value


def _object(fields: Mapping[str, Any], key: str, *, nullable: bool = True) -> dict[str, Any] | None:
    value = fields.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _problem(key, "invalid_value", f"must be a JSON object{' or null' if nullable else ''}")
    return value


def _when(fields: Mapping[str, Any], key: str) -> int | None:
    try:
        moment = parse_timestamp(fields.get(key), key)
    except RegistryError as error:
        raise OpError.from_registry(error) from None
    return None if moment is None else to_us(moment)


def _optional_id(fields: Mapping[str, Any], key: str) -> str | None:
    value = fields.get(key)
    if value is None:
        return None
    problem = ids.describe_invalid(value)
    if problem:
        raise _problem(key, "invalid_value", problem)
    return value


def _flag(value: Any, key: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    raise _problem(key, "invalid_value", "must be true or false")


# --------------------------------------------------------------------------- operations

#: operation → (method name, writes, span operation: buffered, no savepoint)
OPERATIONS: dict[str, tuple[str, bool, bool]] = {
    "agents/create": ("agents_create", True, False),
    "agents/update": ("agents_update", True, False),
    "agents/retire": ("agents_retire", True, False),
    "agents/reinstate": ("agents_reinstate", True, False),
    "agents/delete": ("agents_delete", True, False),
    "agents/get": ("agents_get", False, False),
    "agents/show": ("agents_show", False, False),
    "agents/list": ("agents_list", False, False),
    "agent_schema_versions/create": ("schema_versions_create", True, False),
    "agent_schema_versions/get": ("schema_versions_get", False, False),
    "agent_instances/register": ("instances_register", True, False),
    "agent_instances/start": ("instances_start", True, False),
    "agent_instances/finish": ("instances_finish", True, False),
    "agent_instances/record_quality": ("instances_record_quality", True, False),
    "agent_instances/terminate": ("instances_terminate", True, False),
    "agent_instances/show": ("instances_get", False, False),
    "agent_instances/get": ("instances_get", False, False),
    "agent_instances/list": ("instances_list", False, False),
    "agent_spans/create": ("spans_create", True, True),
    "agent_spans/finish": ("spans_finish", True, True),
    "agent_spans/get": ("spans_get", False, False),
    "agent_spans/list": ("spans_list", False, False),
}

AGENT_SORT = {"id": t_agents.c.id, "name": t_agents.c.name, "status": t_agents.c.status,
              "inserted_at": t_agents.c.inserted_at, "updated_at": t_agents.c.updated_at}
INSTANCE_SORT = {"id": t_instances.c.id, "status": t_instances.c.status, "inserted_at": t_instances.c.inserted_at,
                 "updated_at": t_instances.c.updated_at, "started_at": t_instances.c.started_at,
                 "finished_at": t_instances.c.finished_at}
SPAN_SORT = {"id": t_spans.c.id, "status": t_spans.c.status, "schema_name": t_spans.c.schema_name,
             "inserted_at": t_spans.c.inserted_at, "updated_at": t_spans.c.updated_at,
             "started_at": t_spans.c.started_at, "finished_at": t_spans.c.finished_at}

SPAN_COLUMNS = [c.name for c in t_spans.columns]


class Registry:
    """The registry's store: one per :class:`agentfolio.store.Store`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.versions = SchemaVersionCache(self._load_version)
        self._accounts: dict[int, AccountInfo] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ accounts & tokens

    def account_info(self, account: Account) -> AccountInfo:
        found = self._accounts.get(account.pk)
        if found is not None:
            return found
        with read_transaction(self.engine) as connection:
            row = connection.execute(sa.select(t_accounts).where(t_accounts.c.account_pk == account.pk)).first()
        if row is None:
            account_id = ids.new_id()
            partition = ids.decode(account_id).partition
            environment_id = ids.new_id(partition)
            stamp = now_us()
            try:
                with write_transaction(self.engine) as connection:
                    connection.execute(sa.insert(t_accounts).values(
                        account_pk=account.pk, id=account_id, default_environment_id=environment_id,
                        inserted_at=stamp))
                    connection.execute(sa.insert(t_environments).values(
                        id=environment_id, account_pk=account.pk, name="default", inserted_at=stamp))
            except IntegrityError:
                pass  # created meanwhile by another process
            with read_transaction(self.engine) as connection:
                row = connection.execute(sa.select(t_accounts).where(t_accounts.c.account_pk == account.pk)).one()
        info = AccountInfo(account.pk, row.id, ids.decode(row.id).partition, row.default_environment_id)
        self._accounts[account.pk] = info
        return info

    def risk_profile(self, account: Account) -> RiskProfile:
        self.account_info(account)
        with read_transaction(self.engine) as connection:
            raw = connection.execute(sa.select(t_accounts.c.risk_profile)
                                     .where(t_accounts.c.account_pk == account.pk)).scalar()
        return DEFAULT_RISK_PROFILE if raw is None else RiskProfile.from_json(loads(raw))

    def set_risk_profile(self, account: Account, profile: Mapping[str, Any] | None) -> RiskProfile:
        """Set (``None``: reset to the default) the account's risk profile."""
        parsed = DEFAULT_RISK_PROFILE if profile is None else RiskProfile.from_json(profile)
        self.account_info(account)
        with write_transaction(self.engine) as connection:
            connection.execute(sa.update(t_accounts).where(t_accounts.c.account_pk == account.pk).values(
                risk_profile=None if profile is None else dumps(parsed.model_dump(mode="json"))))
        return parsed

    def create_deployment_token(self, account: Account, agent_id: str, *, environment: str | None = None,
                                label: str | None = None) -> tuple[str, dict[str, str]]:
        """A bearer token bound to one agent in one environment (default: the account's
        default environment, created by name if new).  Shown here only."""
        info = self.account_info(account)
        token = DEPLOYMENT_TOKEN_PREFIX + secrets.token_urlsafe(32)
        with write_transaction(self.engine) as connection:
            agent = _agent_row(connection, account.pk, agent_id)
            if agent is None:
                raise not_found("agent", agent_id)
            environment_id = info.default_environment_id
            if environment:
                environment_id = connection.execute(sa.select(t_environments.c.id).where(
                    t_environments.c.account_pk == account.pk, t_environments.c.name == environment)).scalar()
                if environment_id is None:
                    environment_id = ids.new_id(info.partition)
                    connection.execute(sa.insert(t_environments).values(
                        id=environment_id, account_pk=account.pk, name=environment, inserted_at=now_us()))
            deployment_id = _ensure_deployment(connection, info, agent.id, environment_id)
            connection.execute(sa.insert(t_tokens).values(
                account_pk=account.pk, deployment_id=deployment_id, token_hash=hash_token(token),
                prefix=token[:12], label=label, created_at=time.time()))
        return token, {"agent_id": agent.id, "environment_id": environment_id, "agent_deployment_id": deployment_id}

    def authenticate_deployment(self, token: str) -> Principal | None:
        if not token.startswith(DEPLOYMENT_TOKEN_PREFIX) or len(token) > 200:
            return None
        from agentfolio.store.tables import accounts

        query = (sa.select(accounts.c.pk, accounts.c.name, t_deployments.c.id, t_deployments.c.agent_id,
                           t_deployments.c.environment_id)
                 .select_from(t_tokens.join(t_deployments, t_tokens.c.deployment_id == t_deployments.c.id)
                              .join(accounts, t_tokens.c.account_pk == accounts.c.pk))
                 .where(t_tokens.c.token_hash == hash_token(token), t_tokens.c.revoked_at.is_(None)))
        with read_transaction(self.engine) as connection:
            row = connection.execute(query).first()
        if row is None:
            return None
        return Principal(Account(row[0], row[1]), "deployment", row[2], row[3], row[4])

    # ------------------------------------------------------------------ running operations

    def execute(self, principal: Principal, operation: str, fields: Mapping[str, Any],
                idempotency_key: object = None) -> Outcome:
        """One operation in its own transaction; refusals come back as error outcomes."""
        spec = OPERATIONS.get(operation)
        if spec is None:
            return _error_outcome(OpError("bad_request", f"unknown operation {operation!r}"))
        method, writes, _ = spec
        try:
            info = self.account_info(principal.account)
            if not writes:
                with read_transaction(self.engine) as connection:
                    return getattr(_Tx(self, connection, principal, info), method)(fields)
            key = _check_key(idempotency_key, MAX_KEY_CHARS)
            for attempt in range(3):
                try:
                    with write_transaction(self.engine) as connection:
                        tx = _Tx(self, connection, principal, info)
                        outcome = tx.run_item(operation, fields, key)
                        tx.flush()
                    return outcome
                except IntegrityError:
                    if attempt == 2:
                        raise
                    time.sleep(0.01 * (attempt + 1))  # a concurrent request with the same key won: replay it
        except OpError as error:
            return _error_outcome(error)
        except RegistryError as error:
            return _error_outcome(OpError.from_registry(error))
        raise AssertionError("unreachable")

    def execute_bulk(self, principal: Principal, body: object) -> Outcome:
        """``POST /api/v1/bulk``: items in order, stop at the first error (docs §4.5)."""
        try:
            items = _bulk_items(body)
        except OpError as error:
            return _error_outcome(error)
        info = self.account_info(principal.account)
        for attempt in range(3):
            try:
                with write_transaction(self.engine) as connection:
                    tx = _Tx(self, connection, principal, info)
                    tx.prefetch_keys([key for _, key, _ in items])
                    outputs: dict[str, Any] = {}
                    for operation, key, fields in items:
                        output = tx.run_bulk_item(operation, key, fields)
                        outputs[key] = output
                        if output.get("status") != "success":
                            break
                    tx.flush()
                return Outcome(200, {"status": "success", "outputs": outputs})
            except IntegrityError:
                if attempt == 2:
                    raise
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ reads for the CLI/viewer

    def agent_risk(self, principal: Principal, agent_ref: str) -> dict[str, Any]:
        """Roll-up per agent and per schema version, with span-type scores under the
        account's risk profile.  ``agent_ref``: an agent id or external identifier."""
        info = self.account_info(principal.account)
        with read_transaction(self.engine) as connection:
            return _Tx(self, connection, principal, info).risk_report(agent_ref)

    def list_agents(self, principal: Principal, query: Mapping[str, Any] | None = None) -> Outcome:
        return self.execute(principal, "agents/list", dict(query or {}))

    # ------------------------------------------------------------------ schema versions

    def _load_version(self, version_id: str) -> CompiledSchemaVersion | None:
        with read_transaction(self.engine) as connection:
            raw = connection.execute(sa.select(t_schema_versions.c.span_type_schemas)
                                     .where(t_schema_versions.c.id == version_id)).scalar()
        if raw is None:
            return None
        return CompiledSchemaVersion(version_id, load_span_types(loads(raw)))


def _error_outcome(error: OpError) -> Outcome:
    return Outcome(error.status, error.to_json())


def _check_key(value: object, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _problem("idempotency_key", "invalid_value", "must be a non-empty string")
    if len(value) > limit:
        raise _problem("idempotency_key", "invalid_value", f"is {len(value)} characters, over the {limit} limit")
    if "\x00" in value:
        raise _problem("idempotency_key", "invalid_value", "must not contain NUL characters")
    return value


def _eq(column: Any, value: str) -> Any:
    """``column = value`` for a filter; a value no stored text can hold matches nothing
    (PostgreSQL refuses NUL characters in text outright)."""
    return sa.false() if "\x00" in value else column == value


BULK_META = ("_type", "idempotency_key", "method", "path", "details")


def _bulk_items(body: object) -> list[tuple[str, str, dict[str, Any]]]:
    def refuse(where: str, message: str) -> OpError:
        return OpError("invalid_value", f"{where}: {message}", errors={where: message}, status=422)

    if not isinstance(body, dict):
        raise refuse("items", "the body must be an object with an 'items' array")
    raw = body.get("items")
    if not isinstance(raw, list) or not raw:
        raise refuse("items", "must be a non-empty array")
    if len(raw) > MAX_BULK_ITEMS:
        raise refuse("items", f"has {len(raw):,} items, over the {MAX_BULK_ITEMS:,} limit")
    out: list[tuple[str, str, dict[str, Any]]] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"items[{index}]"
        if not isinstance(item, dict):
            raise refuse(where, "must be an object")
        kind = item.get("_type")
        key = item.get("idempotency_key")
        if not isinstance(kind, str) or not kind:
            raise refuse(f"{where}._type", "is required (e.g. 'agent_spans/create')")
        if not isinstance(key, str) or not key or len(key) > MAX_BULK_KEY_CHARS or "\x00" in key:
            raise refuse(f"{where}.idempotency_key", f"is required: a string of 1-{MAX_BULK_KEY_CHARS} characters")
        if key in seen:
            raise refuse(f"{where}.idempotency_key", f"{key!r} is used by another item of this request")
        seen.add(key)
        details = item.get("details")
        fields = {k: v for k, v in item.items() if k not in BULK_META}
        if isinstance(details, dict):
            fields.update(details)
        fields.pop("idempotency_key", None)
        out.append((kind, key, fields))
    return out


_INSERT_SQL: dict[tuple[str, str], tuple[str, tuple[str, ...] | None]] = {}


def _insert_many(connection: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """``INSERT`` many rows of plain values (str, int, bytes, bool, None) through the DBAPI
    cursor: SQLAlchemy's per-row parameter processing costs more than the insert itself."""
    dialect = connection.dialect
    cache_key = (dialect.name, table.name)
    cached = _INSERT_SQL.get(cache_key)
    if cached is None:
        compiled = sa.insert(table).values({column.name: sa.bindparam(column.name) for column in table.columns}) \
            .compile(dialect=dialect)
        positions = tuple(compiled.positiontup) if compiled.positional else None  # type: ignore[arg-type]
        cached = _INSERT_SQL[cache_key] = (str(compiled), positions)
    sql, positions = cached
    if positions is not None:
        parameters: list[Any] = [tuple(row[name] for name in positions) for row in rows]
    else:
        parameters = rows
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.executemany(sql, parameters)
    except dialect.loaded_dbapi.IntegrityError as error:  # as SQLAlchemy would raise it: callers retry on it
        raise IntegrityError(sql, None, error) from error
    finally:
        cursor.close()


def _agent_row(connection: Connection, account_pk: int, agent_id: object) -> Any:
    if not ids.is_id(agent_id):
        return None
    return connection.execute(sa.select(t_agents).where(t_agents.c.id == agent_id,
                                                        t_agents.c.account_pk == account_pk)).first()


def _ensure_deployment(connection: Connection, info: AccountInfo, agent_id: str, environment_id: str) -> str:
    found = connection.execute(sa.select(t_deployments.c.id).where(
        t_deployments.c.agent_id == agent_id, t_deployments.c.environment_id == environment_id)).scalar()
    if found:
        return found
    deployment_id = ids.new_id(info.partition)
    stamp = now_us()
    connection.execute(sa.insert(t_deployments).values(
        id=deployment_id, account_pk=info.account_pk, agent_id=agent_id, environment_id=environment_id,
        inserted_at=stamp, updated_at=stamp))
    return deployment_id


@dataclass
class _Idem:
    body_hash: str
    status: int
    response: bytes


@dataclass
class _Tx:
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

    # -- agents ---------------------------------------------------------------------------

    def _deny_deployment(self, what: str) -> None:
        if self.principal.scope == "deployment":
            raise OpError("not_permitted", f"a deployment token cannot {what}; use an account token")

    def _agent(self, agent_id: object, *, for_write: bool = False) -> Any:
        row = _agent_row(self.conn, self.pk, agent_id)
        if row is None:
            raise not_found("agent", agent_id)
        if self.principal.scope == "deployment" and row.id != self.principal.agent_id:
            raise OpError("not_permitted", "this deployment token belongs to another agent")
        return row

    def _instance_counts(self, agent_id: str) -> dict[str, int]:
        counts = {"total": 0, "pending": 0, "active": 0, "complete": 0, "failed": 0, "cancelled": 0,
                  "terminated": 0, "finished": 0}
        rows = self.conn.execute(sa.select(t_instances.c.status, sa.func.count()).where(
            t_instances.c.agent_id == agent_id).group_by(t_instances.c.status))
        for status, count in rows:
            counts["total"] += count
            counts[status] = counts.get(status, 0) + count
            if status in ("complete", "failed", "cancelled", "terminated"):
                counts["finished"] += count
        return counts

    def agent_json(self, row: Any, *, counts: bool = True) -> dict[str, Any]:
        retired = row.status == "retired"
        body = {
            "type": "agent", "id": row.id, "account_id": self.info.id, "name": row.name,
            "description": row.description, "external_identifier": row.external_identifier, "status": row.status,
            "owner_person_id": row.owner_person_id, "risk_profile_id": row.risk_profile_id, "team_id": row.team_id,
            "current_version_id": row.current_version_id, "current_schema_version_id": row.current_schema_version_id,
            "available_actions": {"update": not retired, "retire": not retired, "reinstate": retired, "delete": True},
            "inserted_at": fmt(row.inserted_at), "updated_at": fmt(row.updated_at),
        }
        if counts:
            body["instance_counts"] = self._instance_counts(row.id)
        return body

    def agents_create(self, f: Mapping[str, Any]) -> Outcome:
        self._deny_deployment("create agents")
        name = _text(f, "name", required=True)
        description = _text(f, "description", limit=10_000)
        external = _text(f, "external_identifier")
        values = {key: _text(f, key, limit=64) for key in ("owner_person_id", "risk_profile_id", "team_id")}
        agent_id = _optional_id(f, "id") or self.new_id()
        if self.conn.execute(sa.select(t_agents.c.id).where(t_agents.c.id == agent_id)).first():
            raise _problem("id", "invalid_value", f"{agent_id!r} is already used")
        if external is not None and self.conn.execute(sa.select(t_agents.c.id).where(
                t_agents.c.account_pk == self.pk, t_agents.c.external_identifier == external)).first():
            raise _problem("external_identifier", "invalid_value", f"{external!r} is already used by another agent")
        stamp = now_us()
        self.conn.execute(sa.insert(t_agents).values(
            id=agent_id, account_pk=self.pk, name=name, description=description, external_identifier=external,
            status="pending", inserted_at=stamp, updated_at=stamp, **values))
        return Outcome(200, {"status": "success", "details": self.agent_json(self._agent(agent_id))})

    def agents_update(self, f: Mapping[str, Any]) -> Outcome:
        row = self._agent(f.get("agent_id"))
        if row.status == "retired":
            raise OpError("invalid_action", "a retired agent cannot be updated; reinstate it first")
        changes: dict[str, Any] = {}
        if "name" in f:
            changes["name"] = _text(f, "name", required=True)
        if "description" in f:
            changes["description"] = _text(f, "description", limit=10_000)
        for key in ("owner_person_id", "risk_profile_id", "team_id"):
            if key in f:
                changes[key] = _text(f, key, limit=64)
        if "external_identifier" in f and f["external_identifier"] != row.external_identifier:
            raise _problem("external_identifier", "invalid_value", "can only be set when the agent is created")
        if changes:
            changes["updated_at"] = now_us()
            self.conn.execute(sa.update(t_agents).where(t_agents.c.id == row.id).values(**changes))
        return Outcome(200, {"status": "success", "details": self.agent_json(self._agent(row.id))})

    def _set_agent_status(self, f: Mapping[str, Any], status: str, allowed_from: Iterable[str], verb: str) -> Outcome:
        self._deny_deployment(f"{verb} agents")
        row = self._agent(f.get("agent_id"))
        if row.status not in allowed_from:
            raise OpError("invalid_action", f"a {row.status} agent cannot be {verb}d")
        self.conn.execute(sa.update(t_agents).where(t_agents.c.id == row.id).values(status=status,
                                                                                     updated_at=now_us()))
        return Outcome(200, {"status": "success", "details": self.agent_json(self._agent(row.id))})

    def agents_retire(self, f: Mapping[str, Any]) -> Outcome:
        return self._set_agent_status(f, "retired", ("pending", "active", "dormant"), "retire")

    def agents_reinstate(self, f: Mapping[str, Any]) -> Outcome:
        row = self._agent(f.get("agent_id"))
        has_instances = self.conn.execute(sa.select(t_instances.c.id).where(
            t_instances.c.agent_id == row.id).limit(1)).first() is not None
        return self._set_agent_status(f, "active" if has_instances else "pending", ("retired",), "reinstate")

    def agents_delete(self, f: Mapping[str, Any]) -> Outcome:
        self._deny_deployment("delete agents")
        row = self._agent(f.get("agent_id"))
        details = self.agent_json(row)
        self.conn.execute(sa.delete(t_agents).where(t_agents.c.id == row.id))
        return Outcome(200, {"status": "success", "details": details})

    def agents_get(self, f: Mapping[str, Any]) -> Outcome:
        return Outcome(200, {"status": "success", "details": self.agent_json(self._agent(f.get("agent_id")))})

    def _agent_by_ref(self, agent_id: object, external: object) -> Any:
        if (agent_id is None) == (external is None):
            raise OpError("invalid_value", "give exactly one of agent_id and external_identifier",
                          errors={"agent_id": "give exactly one of agent_id and external_identifier"})
        if agent_id is not None:
            return self._agent(agent_id)
        if not isinstance(external, str):
            raise not_found("agent with external identifier", external)
        row = self.conn.execute(sa.select(t_agents).where(t_agents.c.account_pk == self.pk,
                                                          _eq(t_agents.c.external_identifier, external))).first()
        if row is None:
            raise not_found("agent with external identifier", external)
        return self._agent(row.id)

    def agents_show(self, f: Mapping[str, Any]) -> Outcome:
        row = self._agent_by_ref(f.get("agent_id"), f.get("external_identifier"))
        details = self.agent_json(row)
        if _flag(f.get("include_risk_rollup"), "include_risk_rollup"):
            report = self.risk_report(row.id)
            details["risk_rollup"] = report["rollup"]
            details["risk_rollup_by_schema_version"] = {v["id"]: v["rollup"] for v in report["schema_versions"]}
        return Outcome(200, {"status": "success", "details": details})

    def agents_list(self, f: Mapping[str, Any]) -> Outcome:
        page = parse_page_request(f, list(AGENT_SORT))
        where = [t_agents.c.account_pk == self.pk]
        if self.principal.scope == "deployment":
            where.append(t_agents.c.id == self.principal.agent_id)
        for key in ("risk_profile_id", "team_id", "owner_person_id", "status"):
            if isinstance(f.get(key), str):
                where.append(_eq(t_agents.c[key], f[key]))
        rows, total = self._page(t_agents, where, page, AGENT_SORT)
        return Outcome(200, list_body([self.agent_json(row, counts=False) for row in rows],
                                      page_info(total, page.offset, page.page_size, len(rows)), page.sorting))

    def _page(self, table: sa.Table, where: list[Any], page: PageRequest,
              sortable: Mapping[str, Any]) -> tuple[list[Any], int]:
        total = self.conn.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar_one()
        column = sortable[page.sorting.field]
        order = [column.desc() if page.sorting.direction == "desc" else column.asc()]
        if page.sorting.field != "id":
            order.append(table.c.id.desc() if page.sorting.direction == "desc" else table.c.id.asc())
        rows = self.conn.execute(sa.select(table).where(*where).order_by(*order)
                                 .offset(page.offset).limit(page.page_size)).all()
        return rows, total

    # -- schema versions ------------------------------------------------------------------

    def _store_schema_version(self, agent_id: str, draft: Any, *, dedup: bool) -> str:
        fingerprint = draft.fingerprint()
        if dedup:
            found = self.conn.execute(sa.select(t_schema_versions.c.id).where(
                t_schema_versions.c.agent_id == agent_id, t_schema_versions.c.fingerprint == fingerprint)
                .order_by(t_schema_versions.c.id).limit(1)).scalar()
            if found:
                return found
        version_id = draft.id or self.new_id()
        if self.conn.execute(sa.select(t_schema_versions.c.id).where(t_schema_versions.c.id == version_id)).first():
            if dedup:
                return version_id if self.conn.execute(sa.select(t_schema_versions.c.id).where(
                    t_schema_versions.c.id == version_id, t_schema_versions.c.account_pk == self.pk)).first() \
                    else self._refuse_id(version_id)
            self._refuse_id(version_id)
        stamp = now_us()
        self.conn.execute(sa.insert(t_schema_versions).values(
            id=version_id, account_pk=self.pk, agent_id=agent_id, external_identifier=draft.external_identifier,
            fingerprint=fingerprint, span_type_schemas=dumps(draft.span_type_schemas_json()),
            quality_schemas=dumps(draft.quality_schemas_json()), inserted_at=stamp, updated_at=stamp))
        self.registry.versions.put(CompiledSchemaVersion.from_draft(draft, version_id))
        return version_id

    @staticmethod
    def _refuse_id(version_id: str) -> str:
        raise _problem("id", "invalid_value", f"{version_id!r} is already used")

    def schema_version_json(self, version_id: str) -> dict[str, Any]:
        row = self.conn.execute(sa.select(t_schema_versions).where(
            t_schema_versions.c.id == version_id, t_schema_versions.c.account_pk == self.pk)).first()
        if row is None:
            raise not_found("agent schema version", version_id)
        if self.principal.scope == "deployment" and row.agent_id != self.principal.agent_id:
            raise not_found("agent schema version", version_id)
        from agentfolio.registry.schema_versions import SchemaVersionDraft

        span_types = load_span_types(loads(row.span_type_schemas))
        draft = SchemaVersionDraft(row.id, row.agent_id, row.external_identifier, span_types)
        details = schema_version_details(
            draft, id=row.id, account_id=self.info.id, agent_id=row.agent_id,
            inserted_at=EPOCH + timedelta(microseconds=row.inserted_at),
            updated_at=EPOCH + timedelta(microseconds=row.updated_at),
            external_identifier_repeats=self._repeats(row.agent_id, row.external_identifier),
            current_agent_deployment_refs=self.conn.execute(sa.select(t_deployments.c.id).where(
                t_deployments.c.current_schema_version_id == row.id)).scalars().all())
        details["quality_schemas"] = loads(row.quality_schemas)
        return details

    def _repeats(self, agent_id: str, external: str | None) -> int:
        if external is None:
            return 0
        values = self.conn.execute(sa.select(t_schema_versions.c.external_identifier).where(
            t_schema_versions.c.agent_id == agent_id, t_schema_versions.c.external_identifier == external)).scalars()
        return count_external_identifier_repeats(external, values)

    def schema_versions_create(self, f: Mapping[str, Any]) -> Outcome:
        agent_id = f.get("agent_id") or self.principal.agent_id
        if agent_id is None:
            raise _problem("details.agent_id", "required_value", "is required")
        agent = self._agent(agent_id)
        draft = normalise_schema_version({k: v for k, v in f.items() if k != "agent_id"})
        _no_nul(draft)
        version_id = self._store_schema_version(agent.id, draft, dedup=False)
        return Outcome(200, {"status": "success", "details": self.schema_version_json(version_id)})

    def schema_versions_get(self, f: Mapping[str, Any]) -> Outcome:
        version_id = f.get("agent_schema_version_id")
        if not ids.is_id(version_id):
            raise not_found("agent schema version", version_id)
        return Outcome(200, {"status": "success", "details": self.schema_version_json(version_id)})

    # -- instances ------------------------------------------------------------------------

    def _instance(self, instance_id: object, *, cached: bool = False) -> Any:
        if cached and instance_id in self.instances:
            return self.instances[instance_id]
        if not ids.is_id(instance_id):
            raise not_found("agent instance", instance_id)
        row = self.conn.execute(sa.select(t_instances).where(t_instances.c.id == instance_id,
                                                             t_instances.c.account_pk == self.pk)).first()
        if row is None or (self.principal.scope == "deployment" and row.agent_id != self.principal.agent_id):
            raise not_found("agent instance", instance_id)
        self.instances[row.id] = row
        return row

    def _span_counts(self, instance_id: str) -> dict[str, int]:
        rows = self.conn.execute(sa.select(t_spans.c.status, sa.func.count()).where(
            t_spans.c.instance_id == instance_id).group_by(t_spans.c.status)).all()
        counts = span_counts(())
        for status, count in rows:
            counts["total"] += count
            counts[status] = counts.get(status, 0) + count
            if status in ("complete", "failed", "cancelled"):
                counts["finished"] += count
        return counts

    def instance_json(self, row: Any, *, counts: dict[str, int] | None = None,
                      risk: RiskProfile | None = None) -> dict[str, Any]:
        quality = loads(row.quality_payloads) or {}
        body = {
            "type": "agent_instance", "id": row.id, "account_id": self.info.id, "agent_id": row.agent_id,
            "agent_version_id": row.agent_version_id, "agent_schema_version_id": row.schema_version_id,
            "environment_id": row.environment_id, "agent_deployment_id": row.deployment_id, "status": row.status,
            "inserted_at": fmt(row.inserted_at), "updated_at": fmt(row.updated_at),
            "started_at": fmt(row.started_at), "finished_at": fmt(row.finished_at),
            "termination_reason": row.termination_reason, "external_identifier": row.external_identifier,
            "purpose": row.purpose, "session_id": row.session_id,
            "span_counts": counts if counts is not None else self._span_counts(row.id),
            "quality_payloads": quality.get("payloads", {}), "quality_summaries": quality.get("summaries", {}),
            "quality_validation": quality.get("validation", {}),
        }
        if risk is not None:
            body.update(self._instance_risk(row, risk))
        return body

    def _instance_risk(self, row: Any, profile: RiskProfile) -> dict[str, Any]:
        names = dict(self.conn.execute(sa.select(t_spans.c.schema_name, sa.func.count()).where(
            t_spans.c.instance_id == row.id).group_by(t_spans.c.schema_name)).all())
        compiled = self.registry.versions.get(row.schema_version_id) if row.schema_version_id else None
        declared = {name: span_type.data_risk for name, span_type in (compiled.span_types if compiled else {}).items()}
        score = score_instance(names, declared, profile)
        return {"risk_score": round(score.score, 4), "risk_level": score.level, "risk": score.to_json()}

    def _version_row(self, agent_id: str, raw: Any) -> str:
        raw = raw if isinstance(raw, dict) else {}
        content = {key: raw.get(key) for key in ("name", "external_identifier", "description", "runtime_environment")}
        for key in ("name", "external_identifier"):
            _text(content, key, path=f"agent_version.{key}")
        _text(content, "description", path="agent_version.description", limit=10_000)
        fingerprint = hashlib.sha256(orjson.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()
        found = self.conn.execute(sa.select(t_versions.c.id).where(
            t_versions.c.agent_id == agent_id, t_versions.c.fingerprint == fingerprint)).scalar()
        if found:
            return found
        version_id = self.new_id()
        runtime = content["runtime_environment"]
        self.conn.execute(sa.insert(t_versions).values(
            id=version_id, account_pk=self.pk, agent_id=agent_id, name=content["name"],
            external_identifier=content["external_identifier"], description=content["description"],
            runtime_environment=None if runtime is None else dumps(runtime), fingerprint=fingerprint,
            inserted_at=now_us()))
        return version_id

    def instances_register(self, f: Mapping[str, Any]) -> Outcome:
        if self.principal.scope == "deployment":
            if f.get("agent_id") not in (None, self.principal.agent_id):
                raise OpError("not_permitted", "this deployment token belongs to another agent")
            agent = self._agent(self.principal.agent_id)
            environment_id = self.principal.environment_id
        else:
            agent_id = f.get("agent_id")
            if agent_id is None:
                raise _problem("agent_id", "required_value", "is required with an account token")
            agent = self._agent(agent_id)
            environment_id = f.get("environment_id") or self.info.default_environment_id
            if not ids.is_id(environment_id) or not self.conn.execute(sa.select(t_environments.c.id).where(
                    t_environments.c.id == environment_id, t_environments.c.account_pk == self.pk)).first():
                raise not_found("environment", environment_id)
        if agent.status == "retired":
            raise OpError("invalid_action", "the agent is retired; reinstate it to run new instances")
        if f.get("agent_version") is not None and not isinstance(f.get("agent_version"), dict):
            raise _problem("agent_version", "invalid_value", "must be an object")
        purpose = f.get("purpose") or "live"
        if purpose not in ("live", "smoke_test", "eval"):
            raise _problem("purpose", "invalid_value", f"{purpose!r} is not one of live, smoke_test, eval")
        external = _text(f, "external_identifier")
        session_id = _text(f, "session_id", limit=200)
        instance_id = _optional_id(f, "id") or self.new_id()
        if self.conn.execute(sa.select(t_instances.c.id).where(t_instances.c.id == instance_id)).first():
            raise _problem("id", "invalid_value", f"{instance_id!r} is already used")
        if external is not None and self.conn.execute(sa.select(t_instances.c.id).where(
                t_instances.c.agent_id == agent.id, t_instances.c.external_identifier == external)).first():
            raise _problem("external_identifier", "invalid_value", f"{external!r} is already used by another "
                                                                   "instance of this agent")
        version_id = self._version_row(agent.id, f.get("agent_version"))
        deployment_id = _ensure_deployment(self.conn, self.info, agent.id, environment_id)
        raw_schema = f.get("agent_schema_version")
        if raw_schema is not None:
            draft = normalise_schema_version(raw_schema, "agent_schema_version")
            _no_nul(draft, "agent_schema_version")
            schema_version_id = self._store_schema_version(agent.id, draft, dedup=True)
        else:
            schema_version_id = self.conn.execute(sa.select(t_deployments.c.current_schema_version_id).where(
                t_deployments.c.id == deployment_id)).scalar() or agent.current_schema_version_id
        stamp = now_us()
        if _flag(f.get("update_current_version", True), "update_current_version"):
            self.conn.execute(sa.update(t_deployments).where(t_deployments.c.id == deployment_id).values(
                current_version_id=version_id, current_schema_version_id=schema_version_id, updated_at=stamp))
            self.conn.execute(sa.update(t_agents).where(t_agents.c.id == agent.id).values(
                current_version_id=version_id, current_schema_version_id=schema_version_id, updated_at=stamp))
        if agent.status in ("pending", "dormant"):
            self.conn.execute(sa.update(t_agents).where(t_agents.c.id == agent.id).values(status="active",
                                                                                       updated_at=stamp))
        self.conn.execute(sa.insert(t_instances).values(
            id=instance_id, account_pk=self.pk, agent_id=agent.id, agent_version_id=version_id,
            schema_version_id=schema_version_id, environment_id=environment_id, deployment_id=deployment_id,
            status="pending", external_identifier=external, purpose=purpose, session_id=session_id,
            inserted_at=stamp, updated_at=stamp))
        return Outcome(200, {"status": "success",
                             "details": self.instance_json(self._instance(instance_id), counts=span_counts(()))})

    def instances_start(self, f: Mapping[str, Any]) -> Outcome:
        row = self._instance(f.get("agent_instance_id"))
        when = _when(f, "timestamp") or now_us()
        if row.status == "pending":
            self.conn.execute(sa.update(t_instances).where(t_instances.c.id == row.id).values(
                status="active", started_at=when, updated_at=now_us()))
        elif row.status != "active":
            raise OpError("invalid_action", f"the instance already finished ({row.status})")
        return Outcome(200, {"status": "success", "details": self.instance_json(self._instance(row.id))})

    def instances_finish(self, f: Mapping[str, Any]) -> Outcome:
        row = self._instance(f.get("agent_instance_id"))
        status = check_instance_finish(row.status, f.get("status"))
        when = _when(f, "timestamp") or now_us()
        self.conn.execute(sa.update(t_instances).where(t_instances.c.id == row.id).values(
            status=status, finished_at=when, started_at=row.started_at or when, updated_at=now_us()))
        return Outcome(200, {"status": "success", "details": self.instance_json(self._instance(row.id))})

    def instances_terminate(self, f: Mapping[str, Any]) -> Outcome:
        self._deny_deployment("terminate instances")
        row = self._instance(f.get("agent_instance_id"))
        reason = _text(f, "reason", limit=2_000) or "terminated by an operator"
        if row.status in ("complete", "failed", "cancelled", "terminated"):
            raise OpError("invalid_action", f"the instance already finished ({row.status})")
        stamp = now_us()
        self.conn.execute(sa.update(t_instances).where(t_instances.c.id == row.id).values(
            status="terminated", termination_reason=reason, finished_at=stamp, updated_at=stamp))
        return Outcome(200, {"status": "success", "details": self.instance_json(self._instance(row.id))})

    def instances_record_quality(self, f: Mapping[str, Any]) -> Outcome:
        row = self._instance(f.get("agent_instance_id"))
        name = _text(f, "name", required=True)
        payload = _object(f, "payload")
        quality = loads(row.quality_payloads) or {}
        payloads = quality.setdefault("payloads", {})
        summaries = quality.setdefault("summaries", {})
        validation = quality.setdefault("validation", {})
        if payload is None:
            for part in (payloads, summaries, validation):
                part.pop(name, None)
        else:
            schema = None
            if row.schema_version_id:
                raw = self.conn.execute(sa.select(t_schema_versions.c.quality_schemas).where(
                    t_schema_versions.c.id == row.schema_version_id)).scalar()
                schema = (loads(raw) or {}).get(name) if raw else None
            payloads[name] = payload
            validation[name] = _validate_quality(schema, name, payload)
            summary = render_summary(schema.get("template"), payload) if schema and schema.get("template") else None
            if summary is None:
                summaries.pop(name, None)
            else:
                summaries[name] = summary
        self.conn.execute(sa.update(t_instances).where(t_instances.c.id == row.id).values(
            quality_payloads=dumps(quality), updated_at=now_us()))
        return Outcome(200, {"status": "success", "details": self.instance_json(self._instance(row.id))})

    def instances_get(self, f: Mapping[str, Any]) -> Outcome:
        row = self._instance(f.get("agent_instance_id"))
        risk = self._profile() if _flag(f.get("include_risk_level"), "include_risk_level") else None
        return Outcome(200, {"status": "success", "details": self.instance_json(row, risk=risk)})

    def instances_list(self, f: Mapping[str, Any]) -> Outcome:
        page = parse_page_request(f, list(INSTANCE_SORT))
        where = [t_instances.c.account_pk == self.pk]
        if self.principal.scope == "deployment":
            where.append(t_instances.c.agent_id == self.principal.agent_id)
        for key, column in (("agent_id", t_instances.c.agent_id), ("status", t_instances.c.status),
                            ("environment_id", t_instances.c.environment_id),
                            ("session_id", t_instances.c.session_id)):
            if isinstance(f.get(key), str):
                where.append(_eq(column, f[key]))
        rows, total = self._page(t_instances, where, page, INSTANCE_SORT)
        risk = self._profile() if _flag(f.get("include_risk_level"), "include_risk_level") else None
        return Outcome(200, list_body([self.instance_json(row, risk=risk) for row in rows],
                                      page_info(total, page.offset, page.page_size, len(rows)), page.sorting))

    def _profile(self) -> RiskProfile:
        raw = self.conn.execute(sa.select(t_accounts.c.risk_profile).where(t_accounts.c.account_pk == self.pk)).scalar()
        return DEFAULT_RISK_PROFILE if raw is None else RiskProfile.from_json(loads(raw))

    # -- spans ----------------------------------------------------------------------------

    def _compiled(self, version_id: str | None) -> CompiledSchemaVersion | None:
        return self.registry.versions.get(version_id) if version_id else None

    def _parent_found(self, parent: str | None, instance_id: str) -> bool | None:
        if parent is None:
            return None
        pending = self.pending_spans.get(parent)
        if pending is not None:
            return pending["instance_id"] == instance_id
        if not ids.is_id(parent):
            return False
        found = self.span_instances.get(parent)
        if found is None:
            found = self.conn.execute(sa.select(t_spans.c.instance_id).where(
                t_spans.c.id == parent, t_spans.c.account_pk == self.pk)).scalar()
            if found is not None:
                self.span_instances[parent] = found
        return found == instance_id

    def _validate_span(self, compiled: CompiledSchemaVersion | None, schema_name: str, payload: Any,
                       result: Any, status: str, parent_found: bool | None, sensitive: bool) -> SpanValidation:
        validation = (compiled.validate(schema_name, payload, result, status=status) if compiled is not None
                      else validate_without_version())
        if parent_found is False or sensitive:
            problems = list(validation.problems)
            notes = [validation.note] if validation.note else []
            state = validation.status
            if parent_found is False:
                message = "parent_span_id names no span of this instance"
                problems.append(SpanProblem("parent_span_id", "", message))  # type: ignore[arg-type]
                notes.append(message)
                state = "invalid"
            if sensitive:
                notes.append("payload is sensitive-encoded: the schema saw the {$sensitive, value} wrappers")
            validation = SpanValidation(state, tuple(problems), "; ".join(notes) or None)  # type: ignore[arg-type]
        return validation

    def span_json(self, row: Mapping[str, Any], *, summaries: bool = False, risk: RiskProfile | None = None,
                  decoded: tuple[Any, Any, Any] | None = None) -> dict[str, Any]:
        """A span's ``details``; ``decoded``: (payload, result payload, validation) when the
        caller already has them as objects."""
        compiled = self._compiled(row["schema_version_id"])
        if decoded is not None:
            payload, result, validation = decoded
        else:
            payload = loads(row["payload"])
            result = loads(row["result_payload"])
            validation = loads(row["validation"]) if row["validation"] is not None else None
        if validation is None:
            validation = {"status": row["validation_status"], "problems": [], "note": None}
        body = {
            "type": "agent_span", "id": row["id"], "account_id": self.info.id, "agent_id": row["agent_id"],
            "agent_instance_id": row["instance_id"], "agent_schema_version_id": row["schema_version_id"],
            "parent_span_id": row["parent_span_id"], "schema_name": row["schema_name"],
            "schema_title": compiled.title(row["schema_name"]) if compiled else row["schema_name"],
            "status": row["status"], "payload": payload, "result_payload": result,
            "summary": compiled.summary(row["schema_name"], payload, result) if summaries and compiled else None,
            "started_at": fmt(row["started_at"]), "finished_at": fmt(row["finished_at"]),
            "inserted_at": fmt(row["inserted_at"]), "updated_at": fmt(row["updated_at"]),
            "validation": validation, "sensitive_encoding": bool(row["sensitive_encoding"]),
            "session_id": row["session_id"],
        }
        if risk is not None:
            span_type = compiled.span_types.get(row["schema_name"]) if compiled else None
            score = score_span_type(row["schema_name"], span_type.data_risk if span_type else DataRisk(), risk)
            body["risk_score"] = round(score.score, 4)
            body["risk_level"] = score.level
        return body

    def _with_control(self, body: dict[str, Any], instance: Any) -> dict[str, Any]:
        if instance.status == "terminated":
            body["control"] = {"terminate": True, "reason": instance.termination_reason or "terminated"}
        return body

    def spans_create(self, f: Mapping[str, Any]) -> Outcome:
        instance = self._instance(f.get("agent_instance_id"), cached=True)
        schema_name = _text(f, "schema_name", required=True)
        status = check_create(f.get("status", "active"), result_payload=f.get("result_payload"),
                              finished_at=f.get("finished_at"), field_path="status")
        payload = f.get("payload")
        if payload is None:
            payload = {}
        elif not isinstance(payload, dict):
            raise _problem("payload", "invalid_value", "must be a JSON object")
        result = _object(f, "result_payload")
        span_id = _optional_id(f, "id")
        if span_id is not None and (span_id in self.pending_spans or self.conn.execute(
                sa.select(t_spans.c.id).where(t_spans.c.id == span_id)).first()):
            raise _problem("id", "invalid_value", f"{span_id!r} is already used")
        span_id = span_id or self.new_id()
        parent = f.get("parent_span_id")
        if parent is not None:  # kept as given (flagged if it names no span), never refused
            parent = (parent if isinstance(parent, str) else orjson.dumps(parent).decode())
            parent = parent.replace("\x00", "\ufffd")[:MAX_PARENT_CHARS]
        sensitive = _flag(f.get("sensitive_encoding"), "sensitive_encoding")
        session_id = _text(f, "session_id", limit=200) or instance.session_id
        stamp = now_us()
        started = _when(f, "started_at")
        finished = _when(f, "finished_at")
        if status != "pending":  # a span that has not started keeps what the client said (usually nothing)
            started = started or stamp
        if status in ("complete", "failed", "cancelled"):
            finished = finished or stamp
        parent_found = self._parent_found(parent, instance.id)
        validation = self._validate_span(self._compiled(instance.schema_version_id), schema_name, payload, result,
                                         status, parent_found, sensitive)
        row = {"id": span_id, "account_pk": self.pk, "agent_id": instance.agent_id, "instance_id": instance.id,
               "schema_version_id": instance.schema_version_id, "parent_span_id": parent,
               "parent_found": parent_found, "schema_name": schema_name, "status": status,
               "payload": dumps(payload), "result_payload": None if result is None else dumps(result),
               "sensitive_encoding": sensitive, "validation_status": validation.status,
               "validation": None if validation.status == "valid" else dumps(validation.to_json()),
               "session_id": session_id, "started_at": started, "finished_at": finished,
               "inserted_at": stamp, "updated_at": stamp}
        self.pending_spans[span_id] = row
        details = self.span_json(row, decoded=(payload, result, validation.to_json()))
        body = self._with_control({"status": "success", "details": details}, instance)
        return Outcome(200, body)

    def _span(self, span_id: object) -> dict[str, Any]:
        pending = self.pending_spans.get(span_id)  # type: ignore[arg-type]
        if pending is not None:
            return pending
        if not ids.is_id(span_id):
            raise not_found("agent span", span_id)
        row = self.conn.execute(sa.select(t_spans).where(t_spans.c.id == span_id,
                                                         t_spans.c.account_pk == self.pk)).first()
        if row is None or (self.principal.scope == "deployment" and row.agent_id != self.principal.agent_id):
            raise not_found("agent span", span_id)
        return dict(row._mapping)

    def spans_finish(self, f: Mapping[str, Any]) -> Outcome:
        row = self._span(f.get("agent_span_id"))
        status = check_finish(row["status"], f.get("status"))
        result = _object(f, "result_payload")
        when = _when(f, "timestamp") or now_us()
        instance = self._instance(row["instance_id"], cached=True)
        payload = loads(row["payload"])
        validation = self._validate_span(self._compiled(row["schema_version_id"]), row["schema_name"], payload,
                                         result, status, row["parent_found"], bool(row["sensitive_encoding"]))
        changes = {"status": status, "result_payload": None if result is None else dumps(result),
                   "finished_at": when, "started_at": row["started_at"] or when, "updated_at": now_us(),
                   "validation_status": validation.status,
                   "validation": None if validation.status == "valid" else dumps(validation.to_json())}
        if row["id"] in self.pending_spans:
            self.pending_spans[row["id"]].update(changes)
        else:
            self.conn.execute(sa.update(t_spans).where(t_spans.c.id == row["id"]).values(**changes))
        row = {**row, **changes}
        return Outcome(200, self._with_control({"status": "success", "details": self.span_json(row)}, instance))

    def spans_get(self, f: Mapping[str, Any]) -> Outcome:
        row = self._span(f.get("agent_span_id"))
        risk = self._profile() if _flag(f.get("include_risk_level"), "include_risk_level") else None
        return Outcome(200, {"status": "success", "details": self.span_json(
            row, summaries=_flag(f.get("include_summaries"), "include_summaries"), risk=risk)})

    def spans_list(self, f: Mapping[str, Any]) -> Outcome:
        page = parse_page_request(f, list(SPAN_SORT))
        where = [t_spans.c.account_pk == self.pk]
        if self.principal.scope == "deployment":
            where.append(t_spans.c.agent_id == self.principal.agent_id)
        for key, column in (("agent_id", t_spans.c.agent_id), ("agent_instance_id", t_spans.c.instance_id),
                            ("status", t_spans.c.status), ("schema_name", t_spans.c.schema_name),
                            ("validation_status", t_spans.c.validation_status),
                            ("parent_span_id", t_spans.c.parent_span_id), ("session_id", t_spans.c.session_id)):
            if isinstance(f.get(key), str):
                where.append(_eq(column, f[key]))
        rows, total = self._page(t_spans, where, page, SPAN_SORT)
        summaries = _flag(f.get("include_summaries"), "include_summaries")
        risk = self._profile() if _flag(f.get("include_risk_level"), "include_risk_level") else None
        return Outcome(200, list_body([self.span_json(row._mapping, summaries=summaries, risk=risk) for row in rows],
                                      page_info(total, page.offset, page.page_size, len(rows)), page.sorting))

    # -- risk -----------------------------------------------------------------------------

    def risk_report(self, agent_ref: str) -> dict[str, Any]:
        if ids.is_id(agent_ref):
            agent = self._agent(agent_ref)
        else:
            agent = self._agent_by_ref(None, agent_ref)
        profile = self._profile()
        rows = self.conn.execute(sa.select(t_schema_versions.c.id, t_schema_versions.c.external_identifier,
                                           t_schema_versions.c.span_type_schemas)
                                 .where(t_schema_versions.c.agent_id == agent.id)
                                 .order_by(t_schema_versions.c.id)).all()
        everything: list[tuple[str, DataRisk]] = []
        versions = []
        for row in rows:
            span_types = load_span_types(loads(row.span_type_schemas))
            pairs = [(name, span_type.data_risk) for name, span_type in span_types.items()]
            everything.extend(pairs)
            versions.append({"id": row.id, "external_identifier": row.external_identifier,
                             "current": row.id == agent.current_schema_version_id,
                             "rollup": rollup(pairs).to_json(),
                             "span_types": [score_span_type(name, risk, profile).to_json() for name, risk in pairs]})
        return {"agent_id": agent.id, "name": agent.name, "external_identifier": agent.external_identifier,
                "risk_profile": profile.name, "rollup": rollup(everything).to_json(), "schema_versions": versions}


def _no_nul(draft: Any, path: str = "details") -> None:
    if draft.external_identifier and "\x00" in draft.external_identifier:
        raise _problem(f"{path}.external_identifier", "invalid_value", "must not contain NUL characters")


def _validate_quality(schema: Mapping[str, Any] | None, name: str, payload: Any) -> dict[str, Any]:
    if schema is None:
        return {"status": "invalid", "problems": [{"part": "name", "pointer": "", "schema_pointer": "",
                                                   "message": f"quality schema {name!r} is not declared"}],
                "note": None}
    if (schema.get("schema_validation") or {}).get("status") != "success":
        return {"status": "unchecked", "problems": [], "note": "the quality schema is invalid"}
    try:
        validator = compile_schema(schema.get("schema") or {})
    except SchemaCompileError as error:
        return {"status": "unchecked", "problems": [], "note": str(error)}
    problems = [{"part": "payload", "pointer": "".join(f"/{step}" for step in error.instance_path),
                 "schema_pointer": "".join(f"/{step}" for step in error.schema_path), "message": error.message[:300]}
                for _, error in zip(range(20), validator.iter_errors(payload))]
    return {"status": "invalid" if problems else "valid", "problems": problems, "note": None}


__all__ = ["DEPLOYMENT_TOKEN_PREFIX", "OPERATIONS", "OpError", "Outcome", "Principal", "Registry", "body_hash"]
