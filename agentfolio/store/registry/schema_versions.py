"""Schema-version operations of a registry transaction."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Mapping

import sqlalchemy as sa

from agentfolio.registry import ids
from agentfolio.registry.schema_versions import (
    count_external_identifier_repeats,
    load_span_types,
    normalise_schema_version,
    schema_version_details,
)
from agentfolio.registry.spans import CompiledSchemaVersion
from agentfolio.store.registry.rows import _no_nul
from agentfolio.store.registry.values import EPOCH, Outcome, dumps, loads, not_found, now_us, _problem
from agentfolio.store.registry_tables import (
    registry_deployments as t_deployments,
    registry_schema_versions as t_schema_versions,
)


class _SchemaVersionOps:
    """Schema-version operations (a mixin of the transaction class)."""

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
