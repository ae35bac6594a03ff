"""Rows that govern an account's agents: the risk profiles it keeps, and its alerts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Row

from agentfolio.registry.listing import PageRequest
from agentfolio.store.registry.base import Rows, eq
from agentfolio.store.registry_tables import registry_agents as t_agents
from agentfolio.store.registry_tables import registry_alerts as t_alerts
from agentfolio.store.registry_tables import registry_risk_profiles as t_profiles

PROFILE_SORT = {"id": t_profiles.c.id, "name": t_profiles.c.name, "inserted_at": t_profiles.c.inserted_at,
                "updated_at": t_profiles.c.updated_at}
ALERT_SORT = {"id": t_alerts.c.id, "kind": t_alerts.c.kind, "severity": t_alerts.c.severity,
              "inserted_at": t_alerts.c.inserted_at}


class RiskProfiles(Rows):
    def get(self, profile_id: str) -> Row[Any] | None:
        return self.conn.execute(self.scope.select(t_profiles).where(t_profiles.c.id == profile_id)).first()

    def by_name(self, name: str) -> Row[Any] | None:
        return self.conn.execute(self.scope.select(t_profiles).where(eq(t_profiles.c.name, name))).first()

    def exists(self, profile_id: str) -> bool:
        return self.conn.execute(self.scope.select(t_profiles, t_profiles.c.id)
                                 .where(t_profiles.c.id == profile_id)).first() is not None

    def insert(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_profiles).values(**values))

    def page(self, page: PageRequest) -> tuple[list[Row[Any]], int]:
        return self._page(t_profiles, [], page, PROFILE_SORT)

    def agent_counts(self) -> dict[str, int]:
        """How many of the account's agents each profile scores (by profile id)."""
        rows = self.conn.execute(self.scope.select(t_agents, t_agents.c.risk_profile_id, sa.func.count())
                                 .where(t_agents.c.risk_profile_id.is_not(None))
                                 .group_by(t_agents.c.risk_profile_id)).all()
        return {row[0]: row[1] for row in rows}


class Alerts(Rows):
    def raised(self, kind: str, subject_id: str) -> bool:
        """Whether an alert of this kind was already raised for this subject."""
        return self.conn.execute(self.scope.select(t_alerts, t_alerts.c.id).where(
            t_alerts.c.kind == kind, t_alerts.c.subject_id == subject_id)).first() is not None

    def insert(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_alerts).values(**values))

    def get(self, alert_id: str) -> Row[Any] | None:
        return self.conn.execute(self.scope.select(t_alerts).where(t_alerts.c.id == alert_id)).first()

    def unacknowledged_count(self) -> int:
        return int(self.conn.execute(self.scope.count(t_alerts).where(t_alerts.c.acknowledged_at.is_(None)))
                   .scalar_one())

    def page(self, page: PageRequest, *, acknowledged: bool | None, **filters: str) -> tuple[list[Row[Any]], int]:
        where = [eq(t_alerts.c[key], value) for key, value in filters.items()]
        if acknowledged is not None:
            column = t_alerts.c.acknowledged_at
            where.append(column.is_not(None) if acknowledged else column.is_(None))
        return self._page(t_alerts, where, page, ALERT_SORT)

    def acknowledge(self, alert_ids: Sequence[str], when: int) -> int:
        """Acknowledge these alerts (those not acknowledged yet); how many changed."""
        changed = 0
        for start in range(0, len(alert_ids), 500):
            changed += self.conn.execute(self.scope.update(t_alerts).where(
                t_alerts.c.id.in_(alert_ids[start:start + 500]), t_alerts.c.acknowledged_at.is_(None))
                .values(acknowledged_at=when)).rowcount
        return changed

    def acknowledge_all(self, when: int, **filters: str) -> int:
        """Acknowledge every unacknowledged alert matching ``filters``; how many changed."""
        where = [eq(t_alerts.c[key], value) for key, value in filters.items()]
        return int(self.conn.execute(self.scope.update(t_alerts).where(
            t_alerts.c.acknowledged_at.is_(None), *where).values(acknowledged_at=when)).rowcount)
