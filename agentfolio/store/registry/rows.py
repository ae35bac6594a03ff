"""Row lookups and checks shared by the registry's operations."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentfolio.registry import ids
from agentfolio.store.registry.values import AccountInfo, now_us, _problem
from agentfolio.store.registry_tables import (
    registry_agents as t_agents,
    registry_deployments as t_deployments,
)


def _eq(column: Any, value: str) -> Any:
    """``column = value`` for a filter; a value no stored text can hold matches nothing
    (PostgreSQL refuses NUL characters in text outright)."""
    return sa.false() if "\x00" in value else column == value


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


def _no_nul(draft: Any, path: str = "details") -> None:
    if draft.external_identifier and "\x00" in draft.external_identifier:
        raise _problem(f"{path}.external_identifier", "invalid_value", "must not contain NUL characters")
