"""OpenTelemetry spans written into the agent registry's tables: the same agents,
instances (one per trace) and spans the Prefactor API and the viewer read.

One entry point, :meth:`OtelSpans.write`, stores a decoded request in one transaction:

* agents are found by external identifier (the agent name the spans carry, else the
  service name) and created when new;
* every span type seen becomes a span type of the agent's schema version: when new
  ones appear, a new version declaring the old types and the new ones (permissive
  schemas, data risk undeclared) becomes the agent's current version, and the traces
  receiving those spans move to it (versions stay immutable);
* a trace is an instance (external identifier: the trace id); its start is its earliest
  span, and it finishes with its root span;
* a span's row id is derived from (account, trace id, span id)
  (:func:`agentfolio.otel.mapping.registry_span_id`): a span already stored is skipped,
  so a re-sent batch adds nothing; a child stored before its parent is flagged
  ``parent_found = false`` until the parent arrives, then cleared.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, OperationalError

from agentfolio.otel.mapping import MappedSpan, registry_span_id
from agentfolio.otel.span_types import otel_span_type
from agentfolio.registry import ids
from agentfolio.registry.schema_versions import SchemaVersionDraft
from agentfolio.registry.spans import CompiledSchemaVersion, SpanProblem, SpanValidation
from agentfolio.store.accounts import Account
from agentfolio.store.engine import read_transaction, write_transaction
from agentfolio.store.errors import StoreError
from agentfolio.store.registry import AccountRecord, RegistryStore, RegistryUnit
from agentfolio.store.registry.bulk import insert_many as _insert_many
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
    registry_instances as t_instances,
)
from agentfolio.store.registry_tables import (
    registry_schema_versions as t_schema_versions,
)
from agentfolio.store.registry_tables import (
    registry_spans as t_spans,
)

PARENT_MISSING = "parent_span_id names no span of this instance"
_CHUNK = 500
_OTEL_VERSION = {"name": "opentelemetry", "external_identifier": None, "description": None,
                 "runtime_environment": None}


class StoreUnavailable(StoreError):
    """The database cannot take the write now (locked, restarting, unreachable): retry later."""

    code = "unavailable"


@dataclass(slots=True)
class WrittenSpans:
    inserted: int = 0
    duplicates: int = 0
    #: Sessions whose spans changed (each LLM span's conversation).
    sessions: set[str] = field(default_factory=set)
    #: (agent id, instance id) of every trace written to.
    instances: set[tuple[str, str]] = field(default_factory=set)


def now_us() -> int:
    return time.time_ns() // 1000


def _ensure_deployment(unit: RegistryUnit, info: AccountRecord, agent_id: str, environment_id: str) -> str:
    found = unit.deployments.find(agent_id, environment_id)
    if found:
        return found
    deployment_id = ids.new_id(info.partition)
    stamp = now_us()
    unit.deployments.insert(id=deployment_id, agent_id=agent_id, environment_id=environment_id,
                            inserted_at=stamp, updated_at=stamp)
    return deployment_id


class OtelSpans:
    """Writes and reads OTel spans in the registry tables of one store."""

    def __init__(self, registry: RegistryStore) -> None:
        self.registry = registry
        self.engine = registry.engine

    def write(self, account: Account, spans: list[MappedSpan]) -> WrittenSpans:
        info = self.registry.account(account.pk)
        for attempt in range(3):
            try:
                with write_transaction(self.engine) as connection:
                    return _Write(self.registry, connection, info).run(spans)
            except OperationalError as error:
                raise StoreUnavailable(f"the database cannot take spans now ({type(error.orig).__name__})") from None
            except IntegrityError:
                if attempt == 2:
                    raise
                time.sleep(0.01 * (attempt + 1))  # a concurrent request stored the same rows: re-check them
        raise AssertionError("unreachable")

    def session_spans(self, account: Account, session_id: str, *,
                      limit: int = 10_000) -> tuple[list[dict[str, Any]], str | None]:
        """The stored OTel payloads of one session's spans in start order, and the agent
        (external identifier) its first span is filed under."""
        with read_transaction(self.engine) as connection:
            rows = connection.execute(sa.select(t_spans.c.payload, t_agents.c.external_identifier)
                                      .select_from(t_spans.join(t_agents, t_spans.c.agent_id == t_agents.c.id))
                                      .where(t_spans.c.account_pk == account.pk, t_spans.c.session_id == session_id)
                                      .order_by(t_spans.c.started_at, t_spans.c.id).limit(limit)).all()
        payloads = [orjson.loads(row[0]) for row in rows]
        # Rows hold microseconds; spans starting within one microsecond keep their nanosecond order.
        payloads.sort(key=lambda p: (p.get("start_time_unix_nano") or 0, p.get("end_time_unix_nano") or 0))
        return payloads, (rows[0][1] if rows else None)


class _Write:
    def __init__(self, registry: RegistryStore, connection: Connection, info: AccountRecord) -> None:
        self.registry = registry
        self.unit = RegistryUnit(connection, info.account_pk, registry.versions)
        self.conn = connection
        self.info = info
        self.pk = info.account_pk
        self.stamp = now_us()
        self._ids: dict[tuple[str, str], str] = {}

    def _id(self, trace_id: str, span_id: str) -> str:
        key = (trace_id, span_id)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = registry_span_id(self.info.partition, self.pk, trace_id, span_id)
        return found

    def run(self, spans: list[MappedSpan]) -> WrittenSpans:
        result = WrittenSpans()
        fresh: dict[str, MappedSpan] = {}
        for mapped in spans:
            row_id = self._id(mapped.trace_id, mapped.span.span_id)
            if row_id in fresh:
                result.duplicates += 1
            else:
                fresh[row_id] = mapped
        stored = self._existing(t_spans.c.id, list(fresh))
        for row_id in stored:
            del fresh[row_id]
        result.duplicates += len(stored)
        if not fresh:
            return result
        agent_of = self._agents_of(fresh)
        agents = self._agent_rows(set(agent_of.values()))
        versions = self._versions(agents, fresh, agent_of)
        instances = self._instances(fresh, agent_of, agents, versions)
        instance_of = {row_id: instances[(agents[agent_of[row_id]], mapped.trace_id)]
                       for row_id, mapped in fresh.items()}
        parents = self._parents(fresh, instance_of)
        rows = []
        for row_id, mapped in fresh.items():
            agent_id = agents[agent_of[row_id]]
            instance_id = instance_of[row_id]
            parent_id = self._id(mapped.trace_id, mapped.span.parent_span_id) if mapped.span.parent_span_id else None
            parent_found = None if parent_id is None else parents.get(parent_id) == instance_id
            version = versions[agent_id]
            payload = mapped.span.to_json()
            validation = version.validate(mapped.schema_name, payload, None, status=mapped.status)
            if parent_found is False:
                validation = SpanValidation("invalid", (*validation.problems, SpanProblem(
                    "parent_span_id", "", PARENT_MISSING)), PARENT_MISSING)  # type: ignore[arg-type]
            rows.append({
                "id": row_id, "account_pk": self.pk, "agent_id": agent_id, "instance_id": instance_id,
                "schema_version_id": version.id, "parent_span_id": parent_id, "parent_found": parent_found,
                "schema_name": mapped.schema_name, "status": mapped.status,
                "payload": orjson.dumps(payload), "result_payload": None, "sensitive_encoding": False,
                "validation_status": validation.status,
                "validation": None if validation.status == "valid" else orjson.dumps(validation.to_json()),
                "session_id": mapped.session_id, "started_at": mapped.started_us, "finished_at": mapped.finished_us,
                "inserted_at": self.stamp, "updated_at": self.stamp})
            result.instances.add((agent_id, instance_id))
            if mapped.is_llm:
                result.sessions.add(mapped.session_id)
        _insert_many(self.conn, t_spans, rows)
        self._rehome(fresh, agent_of, agents, instance_of)
        self._found_children(list(fresh))
        result.inserted = len(rows)
        return result

    # -- lookups --------------------------------------------------------------------------

    def _existing(self, column: Any, values: Iterable[str]) -> set[str]:
        found: set[str] = set()
        values = list(values)
        for start in range(0, len(values), _CHUNK):
            found.update(self.conn.execute(sa.select(column).where(
                t_spans.c.account_pk == self.pk, column.in_(values[start:start + _CHUNK]))).scalars())
        return found

    def _agents_of(self, fresh: dict[str, MappedSpan]) -> dict[str, str]:
        """Each span's agent identifier: its own (or an ancestor's in this request), else
        its stored parent's, else its service (until its parent arrives: :meth:`_rehome`)."""
        parent_ids = {row_id: self._id(m.trace_id, m.span.parent_span_id)
                      for row_id, m in fresh.items() if m.agent_hint is None and m.span.parent_span_id}
        stored_parent: dict[str, str] = {}
        outside = sorted(set(parent_ids.values()) - fresh.keys())
        for start in range(0, len(outside), _CHUNK):
            stored_parent.update(self.conn.execute(
                sa.select(t_spans.c.id, t_agents.c.external_identifier)
                .select_from(t_spans.join(t_agents, t_spans.c.agent_id == t_agents.c.id))
                .where(t_spans.c.account_pk == self.pk, t_spans.c.id.in_(outside[start:start + _CHUNK]))).all())
        resolved: dict[str, str] = {}

        def resolve(row_id: str) -> str:
            chain: list[str] = []
            current: str | None = row_id
            while current is not None and current not in resolved and current in fresh and len(chain) < 10_000:
                mapped = fresh[current]
                if mapped.agent_hint is not None:
                    resolved[current] = mapped.agent_hint
                    break
                chain.append(current)
                current = parent_ids.get(current)
                if current in chain:  # a cycle in bad input
                    current = None
            if current is not None and current in resolved:
                found = resolved[current]
            elif current is not None and current in stored_parent:
                found = stored_parent[current]
            else:
                found = fresh[chain[-1] if chain else row_id].service_name
            for item in chain:
                resolved[item] = found
            return resolved.get(row_id, found)

        return {row_id: resolve(row_id) for row_id in fresh}

    def _agent_rows(self, names: set[str]) -> dict[str, str]:
        """Agent identifier → agent id, creating the agents not seen before."""
        found: dict[str, str] = {}
        wanted = sorted(names)
        for start in range(0, len(wanted), _CHUNK):
            found.update(self.conn.execute(sa.select(t_agents.c.external_identifier, t_agents.c.id).where(
                t_agents.c.account_pk == self.pk,
                t_agents.c.external_identifier.in_(wanted[start:start + _CHUNK])))
                .all())
        for name in wanted:
            if name not in found:
                agent_id = ids.new_id(self.info.partition)
                self.conn.execute(sa.insert(t_agents).values(
                    id=agent_id, account_pk=self.pk, name=name, external_identifier=name,
                    description="Seen in OpenTelemetry spans", status="active", inserted_at=self.stamp,
                    updated_at=self.stamp))
                found[name] = agent_id
        return found

    def _versions(self, agents: dict[str, str], fresh: dict[str, MappedSpan],
                  agent_of: dict[str, str]) -> dict[str, CompiledSchemaVersion]:
        """Each agent's schema version, extended (as a new version) by span types not declared yet."""
        names: dict[str, set[str]] = defaultdict(set)
        for row_id, mapped in fresh.items():
            names[agents[agent_of[row_id]]].add(mapped.schema_name)
        return {agent_id: self._declare(agent_id, seen) for agent_id, seen in names.items()}

    def _declare(self, agent_id: str, seen: set[str]) -> CompiledSchemaVersion:
        version_id = self.conn.execute(sa.select(t_agents.c.current_schema_version_id).where(
            t_agents.c.id == agent_id)).scalar()
        compiled = self.unit.compiled(version_id)
        declared = dict(compiled.span_types) if compiled else {}
        missing = sorted(seen - declared.keys())
        if compiled is not None and not missing:
            return compiled
        for name in missing:
            declared[name] = otel_span_type(name)
        draft = SchemaVersionDraft(None, agent_id, None, declared)
        fingerprint = draft.fingerprint()
        new_id = self.conn.execute(sa.select(t_schema_versions.c.id).where(
            t_schema_versions.c.agent_id == agent_id, t_schema_versions.c.fingerprint == fingerprint)
            .limit(1)).scalar()
        if new_id is None:
            new_id = ids.new_id(self.info.partition)
            self.conn.execute(sa.insert(t_schema_versions).values(
                id=new_id, account_pk=self.pk, agent_id=agent_id, external_identifier="opentelemetry",
                fingerprint=fingerprint, span_type_schemas=orjson.dumps(draft.span_type_schemas_json()),
                quality_schemas=b"{}", inserted_at=self.stamp, updated_at=self.stamp))
        self.conn.execute(sa.update(t_agents).where(t_agents.c.id == agent_id).values(
            current_schema_version_id=new_id, updated_at=self.stamp))
        self.conn.execute(sa.update(t_deployments).where(t_deployments.c.agent_id == agent_id).values(
            current_schema_version_id=new_id, updated_at=self.stamp))
        compiled = CompiledSchemaVersion.from_draft(draft, new_id)
        self.registry.versions.put(compiled)
        return compiled

    def _instances(self, fresh: dict[str, MappedSpan], agent_of: dict[str, str], agents: dict[str, str],
                   versions: dict[str, CompiledSchemaVersion]) -> dict[tuple[str, str], str]:
        """(agent id, trace id) → instance id, creating traces not seen before and moving
        existing ones to the agent's current schema version, start and finish."""
        traces: dict[tuple[str, str], list[MappedSpan]] = defaultdict(list)
        for row_id, mapped in fresh.items():
            traces[(agents[agent_of[row_id]], mapped.trace_id)].append(mapped)
        by_agent: dict[str, list[str]] = defaultdict(list)
        for agent_id, trace_id in traces:
            by_agent[agent_id].append(trace_id)
        existing: dict[tuple[str, str], Any] = {}
        for agent_id, trace_ids in by_agent.items():
            for start in range(0, len(trace_ids), _CHUNK):
                for found in self.conn.execute(sa.select(
                        t_instances.c.id, t_instances.c.external_identifier, t_instances.c.schema_version_id,
                        t_instances.c.started_at, t_instances.c.finished_at, t_instances.c.status).where(
                        t_instances.c.agent_id == agent_id,
                        t_instances.c.external_identifier.in_(trace_ids[start:start + _CHUNK]))):
                    existing[(agent_id, found.external_identifier)] = found
        out: dict[tuple[str, str], str] = {}
        version_rows: dict[str, str] = {}
        deployments: dict[str, str] = {}
        new_rows: list[dict[str, Any]] = []
        for key, members in traces.items():
            agent_id, trace_id = key
            version_id = versions[agent_id].id
            started = min(mapped.started_us for mapped in members)
            root = next((mapped for mapped in members if mapped.span.parent_span_id is None
                         and mapped.finished_us is not None), None)
            status = root.status if root is not None else "active"
            finished = root.finished_us if root is not None else None
            row = existing.get(key)
            if row is not None:
                changes: dict[str, Any] = {}
                if row.schema_version_id != version_id:
                    changes["schema_version_id"] = version_id
                if row.started_at is None or started < row.started_at:
                    changes["started_at"] = started
                if root is not None and row.status == "active":
                    changes.update(status=status, finished_at=finished)
                if changes:
                    changes["updated_at"] = self.stamp
                    self.conn.execute(sa.update(t_instances).where(t_instances.c.id == row.id).values(**changes))
                out[key] = row.id
                continue
            if agent_id not in version_rows:
                version_rows[agent_id] = self._agent_version(agent_id)
                deployments[agent_id] = _ensure_deployment(self.unit, self.info, agent_id,
                                                           self.info.default_environment_id)
            instance_id = ids.new_id(self.info.partition)
            new_rows.append({
                "id": instance_id, "account_pk": self.pk, "agent_id": agent_id,
                "agent_version_id": version_rows[agent_id], "schema_version_id": version_id,
                "environment_id": self.info.default_environment_id, "deployment_id": deployments[agent_id],
                "status": status, "external_identifier": trace_id, "purpose": "live",
                "session_id": members[0].session_id, "termination_reason": None, "quality_payloads": None,
                "started_at": started, "finished_at": finished, "inserted_at": self.stamp, "updated_at": self.stamp})
            out[key] = instance_id
        if new_rows:
            _insert_many(self.conn, t_instances, new_rows)
        return out

    def _agent_version(self, agent_id: str) -> str:
        fingerprint = hashlib.sha256(orjson.dumps(_OTEL_VERSION, option=orjson.OPT_SORT_KEYS)).hexdigest()
        found = self.conn.execute(sa.select(t_versions.c.id).where(
            t_versions.c.agent_id == agent_id, t_versions.c.fingerprint == fingerprint)).scalar()
        if isinstance(found, str):
            return found
        version_id = ids.new_id(self.info.partition)
        self.conn.execute(sa.insert(t_versions).values(
            id=version_id, account_pk=self.pk, agent_id=agent_id, name=_OTEL_VERSION["name"], fingerprint=fingerprint,
            inserted_at=self.stamp))
        self.conn.execute(sa.update(t_agents).where(t_agents.c.id == agent_id,
                                                    t_agents.c.current_version_id.is_(None)).values(
            current_version_id=version_id))
        return version_id

    def _parents(self, fresh: dict[str, MappedSpan], instance_of: dict[str, str]) -> dict[str, str]:
        """Parent row id → its instance id, for every parent named (in this request or stored)."""
        wanted = {self._id(m.trace_id, m.span.parent_span_id) for m in fresh.values() if m.span.parent_span_id}
        out = {row_id: instance_of[row_id] for row_id in wanted if row_id in fresh}
        stored = sorted(wanted - fresh.keys())
        for start in range(0, len(stored), _CHUNK):
            out.update(self.conn.execute(sa.select(t_spans.c.id, t_spans.c.instance_id).where(
                t_spans.c.account_pk == self.pk, t_spans.c.id.in_(stored[start:start + _CHUNK])))
                .all())
        return out

    def _rehome(self, fresh: dict[str, MappedSpan], agent_of: dict[str, str], agents: dict[str, str],
                instance_of: dict[str, str]) -> None:
        """Spans stored under their service because they arrived before the span naming
        their agent (children end, and are exported, first) move to that agent's trace:
        every stored descendant of a newly stored named span still filed under the
        service, span types declared on the new agent, the emptied instance removed."""
        named = {row_id: m for row_id, m in fresh.items() if agent_of[row_id] != m.service_name}
        if not named:
            return
        traces = sorted({m.trace_id for m in named.values()})
        services = sorted({m.service_name for m in named.values()})
        fallbacks: dict[str, list[str]] = defaultdict(list)  # trace id → instance ids filed under a service
        for start in range(0, len(traces), _CHUNK):
            for instance_id, trace_id in self.conn.execute(
                    sa.select(t_instances.c.id, t_instances.c.external_identifier)
                    .select_from(t_instances.join(t_agents, t_instances.c.agent_id == t_agents.c.id))
                    .where(t_instances.c.account_pk == self.pk, t_agents.c.external_identifier.in_(services),
                           t_instances.c.external_identifier.in_(traces[start:start + _CHUNK]))).all():
                fallbacks[trace_id].append(instance_id)
        for trace_id, instance_ids in fallbacks.items():
            for fallback in instance_ids:
                children: dict[str, list[tuple[str, str]]] = defaultdict(list)
                for span_id, parent_id, schema_name in self.conn.execute(sa.select(
                        t_spans.c.id, t_spans.c.parent_span_id, t_spans.c.schema_name).where(
                        t_spans.c.instance_id == fallback)).all():
                    if parent_id is not None:
                        children[parent_id].append((span_id, schema_name))
                moved_any = False
                for row_id, mapped in named.items():
                    if mapped.trace_id != trace_id or instance_of[row_id] == fallback:
                        continue
                    moving: list[tuple[str, str]] = []
                    stack = [row_id]
                    while stack:
                        for child in children.pop(stack.pop(), ()):
                            moving.append(child)
                            stack.append(child[0])
                    if not moving:
                        continue
                    agent_id = agents[agent_of[row_id]]
                    version = self._declare(agent_id, {name for _, name in moving})
                    self.conn.execute(sa.update(t_instances).where(t_instances.c.id == instance_of[row_id]).values(
                        schema_version_id=version.id, updated_at=self.stamp))
                    moved = [span_id for span_id, _ in moving]
                    for start in range(0, len(moved), _CHUNK):
                        self.conn.execute(sa.update(t_spans).where(t_spans.c.id.in_(moved[start:start + _CHUNK]))
                                          .values(agent_id=agent_id, instance_id=instance_of[row_id],
                                                  schema_version_id=version.id, updated_at=self.stamp))
                    moved_any = True
                if moved_any and self.conn.execute(sa.select(t_spans.c.id).where(
                        t_spans.c.instance_id == fallback).limit(1)).first() is None:
                    self.conn.execute(sa.delete(t_instances).where(t_instances.c.id == fallback))

    def _found_children(self, new_ids: list[str]) -> None:
        """Spans stored before their parent (now here) stop being flagged for it."""
        for start in range(0, len(new_ids), _CHUNK):
            children = self.conn.execute(sa.select(t_spans.c.id, t_spans.c.validation, t_spans.c.instance_id,
                                                   t_spans.c.parent_span_id).where(
                t_spans.c.account_pk == self.pk, t_spans.c.parent_found.is_(False),
                t_spans.c.parent_span_id.in_(new_ids[start:start + _CHUNK]))).all()
            if not children:
                continue
            parents = dict(self.conn.execute(sa.select(t_spans.c.id, t_spans.c.instance_id).where(
                t_spans.c.id.in_({child.parent_span_id for child in children})))
                .all())
            for child in children:
                if parents.get(child.parent_span_id) != child.instance_id:
                    continue
                recorded = orjson.loads(child.validation) if child.validation else {}
                problems = [p for p in recorded.get("problems", []) if p.get("part") != "parent_span_id"]
                notes = [n for n in (recorded.get("note") or "").split("; ") if n and n != PARENT_MISSING]
                status = "invalid" if problems else ("unchecked" if notes else "valid")
                self.conn.execute(sa.update(t_spans).where(t_spans.c.id == child.id).values(
                    parent_found=True, validation_status=status,
                    validation=None if status == "valid" else orjson.dumps(
                        {"status": status, "problems": problems, "note": "; ".join(notes) or None}),
                    updated_at=self.stamp))
