"""One unit of work: a transaction on the registry rows of one account."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection

from agentfolio import _json
from agentfolio.registry.schema_versions import load_span_types
from agentfolio.registry.spans import CompiledSchemaVersion, SchemaVersionCache
from agentfolio.store.registry.agents import (
    AccountSettings,
    Agents,
    AgentVersions,
    Deployments,
    Environments,
    SchemaVersions,
)
from agentfolio.store.registry.governance import Alerts, RiskProfiles
from agentfolio.store.registry.records import DeploymentTokens, Idempotency
from agentfolio.store.registry.runs import Instances, Spans
from agentfolio.store.registry.traces import TraceList, TraceSpans
from agentfolio.store.scope import AccountScope


class RegistryUnit:
    """The repositories of one account inside one transaction.

    Every repository is built on the same :class:`AccountScope`; there is no way to
    reach another account's rows from here.
    """

    def __init__(self, connection: Connection, account_pk: int, versions: SchemaVersionCache, *,
                 idempotency_window: int = 0) -> None:
        scope = AccountScope(account_pk)
        self.connection = connection
        self.account_pk = account_pk
        self.settings = AccountSettings(connection, scope)
        self.agents = Agents(connection, scope)
        self.agent_versions = AgentVersions(connection, scope)
        self.schema_versions = SchemaVersions(connection, scope)
        self.environments = Environments(connection, scope)
        self.deployments = Deployments(connection, scope)
        self.tokens = DeploymentTokens(connection, scope)
        self.instances = Instances(connection, scope)
        self.spans = Spans(connection, scope)
        self.traces = TraceSpans(connection, scope)
        self.trace_list = TraceList(connection, scope)
        self.idempotency = Idempotency(connection, scope, idempotency_window)
        self.risk_profiles = RiskProfiles(connection, scope)
        self.alerts = Alerts(connection, scope)
        self._versions = versions

    def compiled(self, version_id: str | None) -> CompiledSchemaVersion | None:
        """A schema version of this account, compiled once (versions never change)."""
        if not version_id:
            return None
        found = self._versions.get(version_id)
        if found is not None:
            return found
        raw = self.schema_versions.span_type_schemas(version_id)
        if raw is None:
            return None
        built = CompiledSchemaVersion(version_id, load_span_types(_json.loads(raw)))
        self._versions.put(built)
        return built

    def remember(self, version: CompiledSchemaVersion) -> None:
        self._versions.put(version)

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Undo what the block wrote if it raises (buffered rows are flushed first; spans
        read ahead are read again, since the block may change them)."""
        self.flush()
        self.spans.loaded.clear()
        nested = self.connection.begin_nested()
        try:
            yield
        except BaseException:
            nested.rollback()
            self.spans.counts.discard()  # the block's updates were rolled back: so is what they counted
            raise
        nested.commit()

    def flush(self) -> None:
        """Insert the buffered spans and idempotency records."""
        self.spans.flush()
        self.idempotency.flush()
