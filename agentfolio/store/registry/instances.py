"""Agent-instance operations of a registry transaction."""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

import orjson
import sqlalchemy as sa

from agentfolio import _json
from agentfolio.registry import ids
from agentfolio.registry.jsonschemas import SchemaCompileError, compile_schema
from agentfolio.registry.listing import list_body, page_info, parse_page_request
from agentfolio.registry.risk import DEFAULT_RISK_PROFILE, RiskProfile, score_instance
from agentfolio.registry.schema_versions import normalise_schema_version
from agentfolio.registry.spans import check_instance_finish, span_counts
from agentfolio.registry.templates import render_summary
from agentfolio.store.registry.operations import INSTANCE_SORT
from agentfolio.store.registry.rows import _ensure_deployment, _eq, _no_nul
from agentfolio.store.registry.values import (
    OpError,
    Outcome,
    dumps,
    _flag,
    fmt,
    loads,
    not_found,
    now_us,
    _object,
    _optional_id,
    _problem,
    _text,
    _when,
)
from agentfolio.store.registry_tables import (
    registry_accounts as t_accounts,
    registry_agent_versions as t_versions,
    registry_agents as t_agents,
    registry_deployments as t_deployments,
    registry_environments as t_environments,
    registry_instances as t_instances,
    registry_schema_versions as t_schema_versions,
    registry_spans as t_spans,
)


class _InstanceOps:
    """Agent-instance operations (a mixin of the transaction class)."""

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
        fingerprint = hashlib.sha256(_json.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()
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
