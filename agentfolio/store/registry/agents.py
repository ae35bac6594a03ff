"""Agent operations of a registry transaction."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import sqlalchemy as sa

from agentfolio.registry import ids
from agentfolio.registry.listing import PageRequest, list_body, page_info, parse_page_request
from agentfolio.registry.risk import DataRisk, rollup, score_span_type
from agentfolio.registry.schema_versions import load_span_types
from agentfolio.store.registry.operations import AGENT_SORT
from agentfolio.store.registry.rows import _agent_row, _eq
from agentfolio.store.registry.values import (
    OpError,
    Outcome,
    _flag,
    fmt,
    loads,
    not_found,
    now_us,
    _optional_id,
    _problem,
    _text,
)
from agentfolio.store.registry_tables import (
    registry_agents as t_agents,
    registry_instances as t_instances,
    registry_schema_versions as t_schema_versions,
)


class _AgentOps:
    """Agent operations, listing pages and the risk report (a mixin of the transaction class)."""

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
