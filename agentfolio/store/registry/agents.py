"""Rows describing agents: agents, their versions and schema versions, environments,
deployments, and the account's registry settings (risk profile)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Row

from agentfolio.registry.listing import PageRequest
from agentfolio.store.registry.base import Rows, eq
from agentfolio.store.registry.span_counts import delete_spans_counted_in_sql
from agentfolio.store.registry_tables import (
    registry_accounts as t_accounts,
)
from agentfolio.store.registry_tables import (
    registry_agent_versions as t_versions,
)
from agentfolio.store.registry_tables import (
    registry_agents as t_agents,
)
from agentfolio.store.registry_tables import (
    registry_deployments as t_deployments,
)
from agentfolio.store.registry_tables import (
    registry_environments as t_environments,
)
from agentfolio.store.registry_tables import (
    registry_instances as t_instances,
)
from agentfolio.store.registry_tables import (
    registry_schema_versions as t_schema_versions,
)
from agentfolio.store.registry_tables import (
    registry_spans as t_spans,
)

AGENT_SORT = {"id": t_agents.c.id, "name": t_agents.c.name, "status": t_agents.c.status,
              "inserted_at": t_agents.c.inserted_at, "updated_at": t_agents.c.updated_at}


class Agents(Rows):
    def get(self, agent_id: str) -> Row[Any] | None:
        return self.conn.execute(self.scope.select(t_agents).where(t_agents.c.id == agent_id)).first()

    def by_external_identifier(self, external: str) -> Row[Any] | None:
        return self.conn.execute(self.scope.select(t_agents)
                                 .where(eq(t_agents.c.external_identifier, external))).first()

    def exists(self, agent_id: str) -> bool:
        return self.conn.execute(self.scope.select(t_agents, t_agents.c.id)
                                 .where(t_agents.c.id == agent_id)).first() is not None

    def insert(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_agents).values(**values))

    def update(self, agent_id: str, **changes: Any) -> None:
        self.conn.execute(self.scope.update(t_agents).where(t_agents.c.id == agent_id).values(**changes))

    def delete(self, agent_id: str) -> None:
        """The agent with its versions, deployments, instances and spans (foreign keys
        cascade), its spans deleted first so the account's span counts lose them.

        On PostgreSQL the agent's row and its traces' rows are locked first: a new trace
        of the agent, or a span of one of its traces, checks that row (its foreign key),
        so none is added behind the count, and writers that added one before have
        committed by the time the spans are deleted."""
        traces = self.scope.select(t_instances, t_instances.c.id).where(t_instances.c.agent_id == agent_id)
        if self.conn.dialect.name == "postgresql":
            self.conn.execute(self.scope.select(t_agents, t_agents.c.id).where(t_agents.c.id == agent_id)
                              .with_for_update())
            self.conn.execute(traces.with_for_update())
        delete_spans_counted_in_sql(self.conn, t_spans, sa.and_(self.scope.owns(t_spans),
                                                                t_spans.c.instance_id.in_(traces)))
        self.conn.execute(self.scope.delete(t_agents).where(t_agents.c.id == agent_id))

    def count(self) -> int:
        return int(self.conn.execute(self.scope.count(t_agents)).scalar_one())

    def page(self, page: PageRequest, *, only_id: str | None = None, **filters: str) -> tuple[list[Row[Any]], int]:
        where = [eq(t_agents.c[key], value) for key, value in filters.items()]
        if only_id is not None:
            where.append(t_agents.c.id == only_id)
        return self._page(t_agents, where, page, AGENT_SORT)


class AgentVersions(Rows):
    def find(self, agent_id: str, fingerprint: str) -> str | None:
        return self.conn.execute(self.scope.select(t_versions, t_versions.c.id).where(
            t_versions.c.agent_id == agent_id, t_versions.c.fingerprint == fingerprint)).scalar()

    def insert(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_versions).values(**values))


class SchemaVersions(Rows):
    def get(self, version_id: str) -> Row[Any] | None:
        return self.conn.execute(self.scope.select(t_schema_versions)
                                 .where(t_schema_versions.c.id == version_id)).first()

    def owner(self, version_id: str) -> str | None:
        """The agent a schema version belongs to (``None``: no such version in this account)."""
        return self.conn.execute(self.scope.select(t_schema_versions, t_schema_versions.c.agent_id)
                                 .where(t_schema_versions.c.id == version_id)).scalar()

    def find(self, agent_id: str, fingerprint: str) -> str | None:
        """The oldest version of the agent declaring exactly these span types."""
        return self.conn.execute(self.scope.select(t_schema_versions, t_schema_versions.c.id).where(
            t_schema_versions.c.agent_id == agent_id, t_schema_versions.c.fingerprint == fingerprint)
            .order_by(t_schema_versions.c.id).limit(1)).scalar()

    def external_identifiers(self, agent_id: str, external: str) -> list[str]:
        return list(self.conn.execute(self.scope.select(t_schema_versions, t_schema_versions.c.external_identifier)
                                      .where(t_schema_versions.c.agent_id == agent_id,
                                             t_schema_versions.c.external_identifier == external)).scalars())

    def of_agent(self, agent_id: str) -> Sequence[Row[Any]]:
        return self.conn.execute(self.scope.select(t_schema_versions, t_schema_versions.c.id,
                                                   t_schema_versions.c.external_identifier,
                                                   t_schema_versions.c.span_type_schemas)
                                 .where(t_schema_versions.c.agent_id == agent_id)
                                 .order_by(t_schema_versions.c.id)).all()

    def span_type_schemas(self, version_id: str) -> bytes | None:
        return self.conn.execute(self.scope.select(t_schema_versions, t_schema_versions.c.span_type_schemas)
                                 .where(t_schema_versions.c.id == version_id)).scalar()

    def quality_schemas(self, version_id: str) -> bytes | None:
        return self.conn.execute(self.scope.select(t_schema_versions, t_schema_versions.c.quality_schemas)
                                 .where(t_schema_versions.c.id == version_id)).scalar()

    def insert(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_schema_versions).values(**values))


class Environments(Rows):
    def exists(self, environment_id: str) -> bool:
        return self.conn.execute(self.scope.select(t_environments, t_environments.c.id)
                                 .where(t_environments.c.id == environment_id)).first() is not None

    def by_name(self, name: str) -> str | None:
        return self.conn.execute(self.scope.select(t_environments, t_environments.c.id)
                                 .where(t_environments.c.name == name)).scalar()

    def insert(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_environments).values(**values))


class Deployments(Rows):
    def find(self, agent_id: str, environment_id: str) -> str | None:
        return self.conn.execute(self.scope.select(t_deployments, t_deployments.c.id).where(
            t_deployments.c.agent_id == agent_id, t_deployments.c.environment_id == environment_id)).scalar()

    def insert(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_deployments).values(**values))

    def current_schema_version(self, deployment_id: str) -> str | None:
        return self.conn.execute(self.scope.select(t_deployments, t_deployments.c.current_schema_version_id)
                                 .where(t_deployments.c.id == deployment_id)).scalar()

    def update(self, deployment_id: str, **changes: Any) -> None:
        self.conn.execute(self.scope.update(t_deployments).where(t_deployments.c.id == deployment_id)
                          .values(**changes))

    def running_schema_version(self, version_id: str) -> list[str]:
        """Deployments whose current schema version is ``version_id``."""
        return list(self.conn.execute(self.scope.select(t_deployments, t_deployments.c.id)
                                      .where(t_deployments.c.current_schema_version_id == version_id)).scalars())


class AccountSettings(Rows):
    """The account's one ``registry_accounts`` row: public id, default environment, risk profile."""

    def get(self) -> Row[Any] | None:
        return self.conn.execute(self.scope.select(t_accounts)).first()

    def insert(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_accounts).values(**values))

    def risk_profile(self) -> bytes | None:
        return self.conn.execute(self.scope.select(t_accounts, t_accounts.c.risk_profile)).scalar()

    def set_risk_profile(self, raw: bytes | None) -> None:
        self.conn.execute(self.scope.update(t_accounts).values(risk_profile=raw))
