"""The :class:`Registry`: accounts, deployment tokens, and running operations."""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from agentfolio.registry import ids
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.risk import DEFAULT_RISK_PROFILE, RiskProfile
from agentfolio.registry.schema_versions import load_span_types
from agentfolio.registry.spans import CompiledSchemaVersion, SchemaVersionCache
from agentfolio.store.accounts import Account, hash_token
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.registry.bulk import _bulk_items, _check_key, _error_outcome
from agentfolio.store.registry.operations import OPERATIONS
from agentfolio.store.registry.rows import _agent_row, _ensure_deployment
from agentfolio.store.registry.transaction import _Tx
from agentfolio.store.registry.values import (
    DEPLOYMENT_TOKEN_PREFIX,
    MAX_KEY_CHARS,
    AccountInfo,
    OpError,
    Outcome,
    Principal,
    dumps,
    loads,
    not_found,
    now_us,
)
from agentfolio.store.registry_tables import (
    registry_accounts as t_accounts,
    registry_deployment_tokens as t_tokens,
    registry_deployments as t_deployments,
    registry_environments as t_environments,
    registry_schema_versions as t_schema_versions,
)


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
