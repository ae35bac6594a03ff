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
* a span's row id is derived from (account, trace id, span id) and its trace's epoch,
  the moment the trace was first seen (:func:`agentfolio.otel.mapping.registry_span_id`,
  :mod:`agentfolio.store.otel_epochs`): a span already stored is skipped,
  so a re-sent batch adds nothing; a child stored before its parent is flagged
  ``parent_found = false`` until the parent arrives, then cleared.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, OperationalError

from agentfolio.otel.mapping import MappedSpan, registry_span_ids
from agentfolio.otel.span_types import otel_span_type
from agentfolio.registry import ids
from agentfolio.registry.schema_versions import SchemaVersionDraft
from agentfolio.registry.sensitive import encode_at_rest, load_masked, masked, mentions_sensitive
from agentfolio.registry.spans import (
    PARENT_MISSING,
    SENSITIVE_CHECKED,
    CompiledSchemaVersion,
    SpanValidation,
    within_run,
)
from agentfolio.store.accounts import Account
from agentfolio.store.engine import write_transaction
from agentfolio.store.errors import StoreUnavailable as StoreUnavailable
from agentfolio.store.multirow import chunks
from agentfolio.store.otel_epochs import TraceEpoch, TraceEpochs
from agentfolio.store.otel_queue import QueueRows
from agentfolio.store.registry import AccountRecord, RegistryStore, RegistryUnit
from agentfolio.store.registry.base import Rows
from agentfolio.store.registry.bulk import insert_many
from agentfolio.store.registry.trace_stats import TraceCounts, update_each_span, update_spans
from agentfolio.store.registry_tables import (
    otel_conversations as t_conversations,
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
    registry_instances as t_instances,
)
from agentfolio.store.registry_tables import (
    registry_schema_versions as t_schema_versions,
)
from agentfolio.store.registry_tables import (
    registry_spans as t_spans,
)
from agentfolio.store.scope import AccountScope

#: Values looked up per statement (each statement binds them as one parameter: see ``among``).
_CHUNK = 5_000
_OTEL_VERSION = {"name": "opentelemetry", "external_identifier": None, "description": None,
                 "runtime_environment": None}


@dataclass(slots=True)
class WrittenSpans:
    inserted: int = 0
    duplicates: int = 0
    #: Sessions that received an LLM span (each LLM span's conversation).
    sessions: set[str] = field(default_factory=set)
    #: Sessions whose conversation has new spans to take in (queued, see store.otel_queue).
    queued: set[str] = field(default_factory=set)
    #: (agent id, instance id) of every trace written to.
    instances: set[tuple[str, str]] = field(default_factory=set)
    #: (agent id, schema version id) of every schema version this write created (span
    #: types seen for the first time): governance raises the alerts they call for.
    schema_versions: list[tuple[str, str]] = field(default_factory=list)
    #: Spans found invalid for more than a parent not seen yet (the row's ids and type, and
    #: why): governance raises the alert each calls for, as for a Prefactor API span.
    invalid: list[tuple[dict[str, Any], SpanValidation]] = field(default_factory=list)


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

    @contextmanager
    def reading(self, account: Account) -> Iterator[ConversationReads]:
        """What the conversation worker reads of the account's sessions, all from one
        snapshot (so the counts it compares agree with each other)."""
        with self.engine.connect() as connection:
            if connection.dialect.name == "postgresql":
                connection.execution_options(isolation_level="REPEATABLE READ")
            with connection.begin():
                yield ConversationReads(connection, account)


class ConversationReads:
    """Reads of one account's conversations and their waiting spans, on one connection."""

    def __init__(self, connection: Connection, account: Account) -> None:
        self.connection = connection
        self.rows = OtelRows(connection, AccountScope(account.pk))
        self.queue = QueueRows(connection, AccountScope(account.pk))

    def session_spans(self, session_id: str, *, limit: int = 10_000) -> tuple[list[dict[str, Any]], str | None]:
        """The stored OTel payloads of one session's spans in start order, and the agent
        (external identifier) its first span is filed under."""
        rows = self.rows.session_spans(session_id, limit)
        payloads = [load_masked(row[0]) for row in rows]
        # Rows hold microseconds; spans starting within one microsecond keep their nanosecond order.
        payloads.sort(key=lambda p: (p.get("start_time_unix_nano") or 0, p.get("end_time_unix_nano") or 0))
        return payloads, (rows[0][1] if rows else None)


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """Where a session built from spans stands: its state, the session version it
    describes and how many of the session's spans it has taken."""

    state: bytes
    session_version: int
    spans: int


class OtelRows(Rows):
    """The statements OTel ingest runs, each built through the account's scope: a span,
    agent, schema version or instance of another account is never found or changed.
    What the writes change in their traces' stats is added up in :attr:`counts` and
    written by :meth:`apply_counts`, one row per trace."""

    __slots__ = ("counts",)

    def __init__(self, connection: Connection, scope: AccountScope) -> None:
        super().__init__(connection, scope)
        self.counts = TraceCounts(scope.account_pk)

    def apply_counts(self) -> None:
        self.counts.apply(self.conn)

    def stored(self, span_ids: list[str]) -> set[str]:
        """Which of these span ids are stored."""
        found: set[str] = set()
        for chunk in chunks(span_ids, _CHUNK):
            found.update(self.conn.execute(self.scope.select(t_spans, t_spans.c.id)
                                           .where(self.among(t_spans.c.id, chunk))).scalars())
        return found

    def agents_of_spans(self, span_ids: list[str]) -> dict[str, str]:
        """Stored span id → the external identifier of the agent it is filed under."""
        found: dict[str, str] = {}
        for chunk in chunks(span_ids, _CHUNK):
            found.update(self.conn.execute(self.scope.select(t_spans, t_spans.c.id, t_agents.c.external_identifier)
                                           .join(t_agents, t_spans.c.agent_id == t_agents.c.id)
                                           .where(self.among(t_spans.c.id, chunk))).all())
        return found

    def instances_of_spans(self, span_ids: list[str]) -> dict[str, str]:
        """Stored span id → its instance id."""
        found: dict[str, str] = {}
        for chunk in chunks(span_ids, _CHUNK):
            found.update(self.conn.execute(self.scope.select(t_spans, t_spans.c.id, t_spans.c.instance_id)
                                           .where(self.among(t_spans.c.id, chunk))).all())
        return found

    def agents_named(self, names: list[str]) -> dict[str, str]:
        """Agent external identifier → agent id, for those of ``names`` that exist."""
        found: dict[str, str] = {}
        for chunk in chunks(names, _CHUNK):
            found.update(self.conn.execute(self.scope.select(t_agents, t_agents.c.external_identifier, t_agents.c.id)
                                           .where(self.among(t_agents.c.external_identifier, chunk))).all())
        return found

    def insert_agent(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_agents).values(**values))

    def current_schema_version(self, agent_id: str) -> str | None:
        return self.conn.execute(self.scope.select(t_agents, t_agents.c.current_schema_version_id)
                                 .where(t_agents.c.id == agent_id)).scalar()

    def newest_schema_version(self, agent_id: str) -> str | None:
        """The agent's schema version created last (by the receiver, a run's registration, or a
        user declaring its span types' data risk)."""
        return self.conn.execute(self.scope.select(t_schema_versions, t_schema_versions.c.id)
                                 .where(t_schema_versions.c.agent_id == agent_id)
                                 .order_by(t_schema_versions.c.inserted_at.desc(), t_schema_versions.c.id.desc())
                                 .limit(1)).scalar()

    def schema_version_with(self, agent_id: str, fingerprint: str) -> str | None:
        return self.conn.execute(self.scope.select(t_schema_versions, t_schema_versions.c.id).where(
            t_schema_versions.c.agent_id == agent_id, t_schema_versions.c.fingerprint == fingerprint)
            .limit(1)).scalar()

    def insert_schema_version(self, **values: Any) -> None:
        self.conn.execute(self.scope.insert(t_schema_versions).values(**values))

    def run_schema_version(self, agent_id: str, version_id: str, stamp: int) -> None:
        """Make ``version_id`` the agent's current schema version, and its deployments'."""
        self.conn.execute(self.scope.update(t_agents).where(t_agents.c.id == agent_id).values(
            current_schema_version_id=version_id, updated_at=stamp))
        self.conn.execute(self.scope.update(t_deployments).where(t_deployments.c.agent_id == agent_id).values(
            current_schema_version_id=version_id, updated_at=stamp))

    def agent_version_with(self, agent_id: str, fingerprint: str) -> str | None:
        return self.conn.execute(self.scope.select(t_versions, t_versions.c.id).where(
            t_versions.c.agent_id == agent_id, t_versions.c.fingerprint == fingerprint)).scalar()

    def insert_agent_version(self, agent_id: str, **values: Any) -> None:
        """A new agent version, which becomes the agent's current one if it has none."""
        self.conn.execute(self.scope.insert(t_versions).values(agent_id=agent_id, **values))
        self.conn.execute(self.scope.update(t_agents).where(t_agents.c.id == agent_id,
                                                            t_agents.c.current_version_id.is_(None))
                          .values(current_version_id=values["id"]))

    def instances_of_traces(self, agent_id: str, trace_ids: list[str]) -> list[Any]:
        """The agent's instances for these trace ids (their external identifiers)."""
        found: list[Any] = []
        for chunk in chunks(trace_ids, _CHUNK):
            found.extend(self.conn.execute(self.scope.select(
                t_instances, t_instances.c.id, t_instances.c.external_identifier, t_instances.c.schema_version_id,
                t_instances.c.started_at, t_instances.c.finished_at, t_instances.c.status).where(
                t_instances.c.agent_id == agent_id, self.among(t_instances.c.external_identifier, chunk))))
        return found

    def insert_instances(self, rows: list[dict[str, Any]]) -> None:
        insert_many(self.conn, t_instances, self.scope.rows(rows))

    def update_instance(self, instance_id: str, **changes: Any) -> None:
        self.conn.execute(self.scope.update(t_instances).where(t_instances.c.id == instance_id).values(**changes))

    def delete_instances_if_empty(self, instance_ids: list[str]) -> None:
        self.apply_counts()  # the spans moved out are counted before the stats row goes with the instance
        # The spans of an instance are its account's: the instance's scope covers them.
        for chunk in chunks(instance_ids, _CHUNK):
            self.conn.execute(self.scope.delete(t_instances).where(
                self.among(t_instances.c.id, chunk), ~sa.exists().where(t_spans.c.instance_id == t_instances.c.id)))

    def service_instances(self, services: list[str], trace_ids: list[str]) -> list[tuple[str, str]]:
        """(instance id, trace id) of the traces filed under one of these service agents."""
        found: list[tuple[str, str]] = []
        for chunk in chunks(trace_ids, _CHUNK):
            found.extend(self.conn.execute(
                self.scope.select(t_instances, t_instances.c.id, t_instances.c.external_identifier)
                .join(t_agents, t_instances.c.agent_id == t_agents.c.id)
                .where(t_agents.c.external_identifier.in_(services),
                       self.among(t_instances.c.external_identifier, chunk))).all())
        return found

    def span_trees(self, instance_ids: list[str]) -> dict[str, list[tuple[str, str | None, str]]]:
        """Instance id → (span id, parent span id, span type) of every span of it."""
        found: dict[str, list[tuple[str, str | None, str]]] = defaultdict(list)
        for chunk in chunks(instance_ids, _CHUNK):
            for instance_id, span_id, parent_id, schema_name in self.conn.execute(self.scope.select_by_key(
                    t_spans, t_spans.c.instance_id, t_spans.c.id, t_spans.c.parent_span_id, t_spans.c.schema_name)
                    .where(self.among(t_spans.c.instance_id, chunk))):
                found[instance_id].append((span_id, parent_id, schema_name))
        return found

    def update_spans(self, span_ids: list[str], **changes: Any) -> None:
        """Set ``changes`` on these spans, their traces' counts kept."""
        update_spans(self.conn, self.scope, span_ids, self.counts, **changes)

    def update_each_span(self, changes: dict[str, dict[str, Any]]) -> None:
        """Set on each span (key: its id) its own values, their traces' counts kept."""
        update_each_span(self.conn, self.scope, changes, self.counts)

    def update_instances(self, instance_ids: list[str], **changes: Any) -> None:
        """Set ``changes`` on these instances (traces)."""
        for chunk in chunks(instance_ids, _CHUNK):
            self.conn.execute(self.scope.update(t_instances).where(self.among(t_instances.c.id, chunk))
                              .values(**changes))

    def waiting_for(self, parent_ids: list[str]) -> list[Any]:
        """Spans stored before their parent, among the children of ``parent_ids`` (through
        the partial index of such spans)."""
        found: list[Any] = []
        for chunk in chunks(parent_ids, _CHUNK):
            found.extend(self.conn.execute(self.scope.select(
                t_spans, t_spans.c.id, t_spans.c.validation, t_spans.c.instance_id, t_spans.c.parent_span_id)
                .where(t_spans.c.parent_found == sa.false(), self.among(t_spans.c.parent_span_id, chunk))))
        return found

    def insert_spans(self, rows: list[dict[str, Any]]) -> None:
        scoped = self.scope.rows(rows)
        insert_many(self.conn, t_spans, scoped)
        self.counts.add_all(scoped)

    def session_span_counts(self, session_ids: list[str]) -> dict[str, int]:
        """How many spans each of these sessions has (absent: none)."""
        found: dict[str, int] = {}
        for chunk in chunks(session_ids, _CHUNK):
            found.update(self.conn.execute(self.scope.select(t_spans, t_spans.c.session_id, sa.func.count())
                                           .where(self.among(t_spans.c.session_id, chunk))
                                           .group_by(t_spans.c.session_id)).all())
        return found

    def conversations(self, session_ids: list[str]) -> dict[str, ConversationRecord]:
        found: dict[str, ConversationRecord] = {}
        for chunk in chunks(session_ids, _CHUNK):
            for row in self.conn.execute(self.scope.select(
                    t_conversations, t_conversations.c.session_id, t_conversations.c.state,
                    t_conversations.c.session_version, t_conversations.c.spans)
                    .where(self.among(t_conversations.c.session_id, chunk))):
                found[row.session_id] = ConversationRecord(row.state, row.session_version, row.spans)
        return found

    def keep_conversations(self, records: dict[str, ConversationRecord]) -> None:
        session_ids = sorted(records)
        for chunk in chunks(session_ids, _CHUNK):
            self.conn.execute(self.scope.delete(t_conversations).where(self.among(t_conversations.c.session_id, chunk)))
        stamp = now_us()
        insert_many(self.conn, t_conversations, self.scope.rows(
            {"session_id": session_id, "state": record.state, "session_version": record.session_version,
             "spans": record.spans, "updated_at": stamp} for session_id, record in sorted(records.items())))

    def session_spans(self, session_id: str, limit: int) -> list[tuple[bytes, str | None]]:
        """(payload, agent external identifier) of the session's spans in start order."""
        return list(self.conn.execute(
            self.scope.select(t_spans, t_spans.c.payload, t_agents.c.external_identifier)
            .join(t_agents, t_spans.c.agent_id == t_agents.c.id)
            .where(t_spans.c.session_id == session_id)
            .order_by(t_spans.c.started_at, t_spans.c.id).limit(limit)).all())




class _Write:
    def __init__(self, registry: RegistryStore, connection: Connection, info: AccountRecord) -> None:
        self.registry = registry
        self.unit = registry.unit(connection, info.account_pk)
        self.rows = OtelRows(connection, AccountScope(info.account_pk))
        self.info = info
        self.pk = info.account_pk
        self.stamp = now_us()
        self._ids: dict[tuple[str, str], str] = {}
        self.epochs: dict[str, TraceEpoch] = {}
        self.created: list[tuple[str, str]] = []
        #: Agent id → the schema version this request last found or made for it (see _declare).
        self._declared: dict[str, CompiledSchemaVersion] = {}

    def _id(self, trace_id: str, span_id: str) -> str:
        """The row id of a span of one of this request's traces (a parent's too: it shares the trace)."""
        key = (trace_id, span_id)
        found = self._ids.get(key)
        if found is None:
            self._derive_ids([key])
            found = self._ids[key]
        return found

    def _derive_ids(self, keys: list[tuple[str, str]]) -> None:
        """The row ids of these (trace id, span id), all derived at once (see :meth:`_id`)."""
        wanted = [key for key in dict.fromkeys(keys) if key not in self._ids]
        epochs = self.epochs
        made = registry_span_ids(self.info.partition, self.pk,
                                 [(trace_id, span_id, epochs[trace_id]) for trace_id, span_id in wanted])
        self._ids.update(zip(wanted, made, strict=True))

    def run(self, spans: list[MappedSpan]) -> WrittenSpans:
        result = WrittenSpans()
        self.epochs = TraceEpochs(self.rows.conn, self.rows.scope).fix((m.trace_id for m in spans),
                                                                       self.stamp // 1000)
        self._derive_ids([(m.trace_id, m.span.span_id) for m in spans]
                         + [(m.trace_id, m.span.parent_span_id) for m in spans if m.span.parent_span_id])
        fresh: dict[str, MappedSpan] = {}
        for mapped in spans:
            row_id = self._id(mapped.trace_id, mapped.span.span_id)
            if row_id in fresh:
                result.duplicates += 1
            else:
                fresh[row_id] = mapped
        stored = self.rows.stored(list(fresh))
        for row_id in stored:
            del fresh[row_id]
        result.duplicates += len(stored)
        if not fresh:
            return result
        agent_of = self._agents_of(fresh)
        agents = self._agent_rows(set(agent_of.values()), {m.service_name for m in fresh.values()})
        versions = self._versions(agents, fresh, agent_of)
        instances = self._instances(fresh, agent_of, agents, versions)
        instance_of = {row_id: instances[(agents[agent_of[row_id]], mapped.trace_id)]
                       for row_id, mapped in fresh.items()}
        parents = self._parents(fresh, instance_of)
        rows = []
        queued: dict[str, list[tuple[str, bool]]] = defaultdict(list)
        for row_id, mapped in fresh.items():
            agent_id = agents[agent_of[row_id]]
            instance_id = instance_of[row_id]
            parent_id = self._id(mapped.trace_id, mapped.span.parent_span_id) if mapped.span.parent_span_id else None
            parent_found = None if parent_id is None else parents.get(parent_id) == instance_id
            version = versions[agent_id]
            payload = mapped.span.to_json()
            raw = orjson.dumps(payload)
            # Values an exporter marked sensitive are kept encoded and seen masked, as in
            # spans created through the Prefactor API.
            sensitive = mentions_sensitive(raw)
            if sensitive:
                payload = masked(payload)
                raw = orjson.dumps(encode_at_rest(mapped.span.to_json()))
            validation = within_run(version.validate(mapped.schema_name, payload, None, status=mapped.status),
                                    parent_found=parent_found, sensitive=sensitive)
            rows.append({
                "id": row_id, "agent_id": agent_id, "instance_id": instance_id,
                "schema_version_id": version.id, "parent_span_id": parent_id, "parent_found": parent_found,
                "schema_name": mapped.schema_name, "status": mapped.status,
                "payload": raw, "result_payload": None, "sensitive_encoding": sensitive,
                "validation_status": validation.status,
                "validation": None if validation.status == "valid" else orjson.dumps(validation.to_json()),
                "session_id": mapped.session_id, "started_at": mapped.started_us, "finished_at": mapped.finished_us,
                "inserted_at": self.stamp, "updated_at": self.stamp})
            if any(problem.part != "parent_span_id" for problem in validation.problems):  # a parent comes later
                result.invalid.append(({"id": row_id, "agent_id": agent_id, "instance_id": instance_id,
                                        "schema_name": mapped.schema_name}, validation))
            result.instances.add((agent_id, instance_id))
            queued[mapped.session_id].append((row_id, mapped.is_llm))
            if mapped.is_llm:
                result.sessions.add(mapped.session_id)
        self.rows.insert_spans(rows)
        # The conversations follow after the answer, from the queue written with the spans.
        QueueRows(self.rows.conn, self.rows.scope).enqueue(queued)
        result.queued = set(queued)
        self._rehome(fresh, agent_of, agents, instance_of)
        self._found_children(list(fresh))
        self.rows.apply_counts()
        result.inserted = len(rows)
        result.schema_versions = list(self.created)
        return result

    # -- lookups --------------------------------------------------------------------------

    def _agents_of(self, fresh: dict[str, MappedSpan]) -> dict[str, str]:
        """Each span's agent identifier: its own (or an ancestor's in this request), else
        its stored parent's, else its service (until its parent arrives: :meth:`_rehome`)."""
        parent_ids = {row_id: self._id(m.trace_id, m.span.parent_span_id)
                      for row_id, m in fresh.items() if m.agent_hint is None and m.span.parent_span_id}
        stored_parent = self.rows.agents_of_spans(sorted(set(parent_ids.values()) - fresh.keys()))
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

    def _agent_rows(self, names: set[str], services: set[str]) -> dict[str, str]:
        """Agent identifier → agent id, creating the agents not seen before; and of the
        ``services`` the spans came from, those stored as agents (only their traces can
        hold spans to move: see :meth:`_rehome`), in the same statement."""
        wanted = sorted(names)
        found = self.rows.agents_named(sorted(names | services))
        for name in wanted:
            if name not in found:
                agent_id = ids.new_id(self.info.partition)
                self.rows.insert_agent(id=agent_id, name=name, external_identifier=name,
                                       description="Seen in OpenTelemetry spans", status="active",
                                       inserted_at=self.stamp, updated_at=self.stamp)
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
        # Within one request (one write transaction) the version found or made for the
        # agent stays its newest and current: a trace moving in with types it declares
        # needs no second look.
        known = self._declared.get(agent_id)
        if known is not None and seen <= known.span_types.keys():
            return known
        self._declared[agent_id] = compiled = self._declare_anew(agent_id, seen)
        return compiled

    def _declare_anew(self, agent_id: str, seen: set[str]) -> CompiledSchemaVersion:
        # The newest version is the base: one a user created to declare the data risk of the
        # span types seen so far is what later traces run under (and what any new span
        # type extends), as a Prefactor run takes the version it registers with.
        newest = self.rows.newest_schema_version(agent_id)
        compiled = self.unit.compiled(newest)
        declared = dict(compiled.span_types) if compiled else {}
        missing = sorted(seen - declared.keys())
        if compiled is not None and not missing:
            if newest is not None and newest != self.rows.current_schema_version(agent_id):
                self.rows.run_schema_version(agent_id, newest, self.stamp)
            return compiled
        for name in missing:
            declared[name] = otel_span_type(name)
        draft = SchemaVersionDraft(None, agent_id, None, declared)
        fingerprint = draft.fingerprint()
        new_id = self.rows.schema_version_with(agent_id, fingerprint)
        if new_id is None:
            new_id = ids.new_id(self.info.partition)
            self.rows.insert_schema_version(
                id=new_id, agent_id=agent_id, external_identifier="opentelemetry", fingerprint=fingerprint,
                span_type_schemas=orjson.dumps(draft.span_type_schemas_json()), quality_schemas=b"{}",
                inserted_at=self.stamp, updated_at=self.stamp)
            self.created.append((agent_id, new_id))
        self.rows.run_schema_version(agent_id, new_id, self.stamp)
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
            for found in self.rows.instances_of_traces(agent_id, trace_ids):
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
                    self.rows.update_instance(row.id, updated_at=self.stamp, **changes)
                out[key] = row.id
                continue
            if agent_id not in version_rows:
                version_rows[agent_id] = self._agent_version(agent_id)
                deployments[agent_id] = _ensure_deployment(self.unit, self.info, agent_id,
                                                           self.info.default_environment_id)
            instance_id = ids.new_id(self.info.partition)
            new_rows.append({
                "id": instance_id, "agent_id": agent_id,
                "agent_version_id": version_rows[agent_id], "schema_version_id": version_id,
                "environment_id": self.info.default_environment_id, "deployment_id": deployments[agent_id],
                "status": status, "external_identifier": trace_id, "purpose": "live",
                "session_id": members[0].session_id, "termination_reason": None, "quality_payloads": None,
                "started_at": started, "finished_at": finished, "inserted_at": self.stamp, "updated_at": self.stamp})
            out[key] = instance_id
        if new_rows:
            self.rows.insert_instances(new_rows)
        return out

    def _agent_version(self, agent_id: str) -> str:
        fingerprint = hashlib.sha256(orjson.dumps(_OTEL_VERSION, option=orjson.OPT_SORT_KEYS)).hexdigest()
        found = self.rows.agent_version_with(agent_id, fingerprint)
        if isinstance(found, str):
            return found
        version_id = ids.new_id(self.info.partition)
        self.rows.insert_agent_version(agent_id, id=version_id, name=_OTEL_VERSION["name"], fingerprint=fingerprint,
                                       inserted_at=self.stamp)
        return version_id

    def _parents(self, fresh: dict[str, MappedSpan], instance_of: dict[str, str]) -> dict[str, str]:
        """Parent row id → its instance id, for every parent named (in this request or stored)."""
        wanted = {self._id(m.trace_id, m.span.parent_span_id) for m in fresh.values() if m.span.parent_span_id}
        out = {row_id: instance_of[row_id] for row_id in wanted if row_id in fresh}
        out.update(self.rows.instances_of_spans(sorted(wanted - fresh.keys())))
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
        # No trace is filed under a service that is no agent: nothing to look for.
        services = sorted({m.service_name for m in named.values()} & agents.keys())
        if not services:
            return
        named_in: dict[str, list[str]] = defaultdict(list)  # trace id → its named spans' row ids
        for row_id, mapped in named.items():
            named_in[mapped.trace_id].append(row_id)
        fallbacks: dict[str, list[str]] = defaultdict(list)  # trace id → instance ids filed under a service
        for instance_id, trace_id in self.rows.service_instances(services, sorted(named_in)):
            fallbacks[trace_id].append(instance_id)
        trees = self.rows.span_trees(sorted({fallback for found in fallbacks.values() for fallback in found}))
        # What moves where, written together once every trace is looked at.
        moves: dict[str, dict[str, Any]] = {}
        versioned: dict[str | None, list[str]] = defaultdict(list)  # schema version id → the traces now running it
        emptied: list[str] = []
        for trace_id, instance_ids in fallbacks.items():
            for fallback in instance_ids:
                children: dict[str, list[tuple[str, str]]] = defaultdict(list)
                for span_id, parent_id, schema_name in trees.get(fallback, ()):
                    if parent_id is not None:
                        children[parent_id].append((span_id, schema_name))
                moved_any = False
                for row_id in named_in[trace_id]:
                    if instance_of[row_id] == fallback:
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
                    versioned[version.id].append(instance_of[row_id])
                    for span_id, _ in moving:
                        moves[span_id] = {"agent_id": agent_id, "instance_id": instance_of[row_id],
                                          "schema_version_id": version.id, "updated_at": self.stamp}
                    moved_any = True
                if moved_any:
                    emptied.append(fallback)
        for version_id, instance_ids in versioned.items():
            self.rows.update_instances(instance_ids, schema_version_id=version_id, updated_at=self.stamp)
        self.rows.update_each_span(moves)
        if emptied:
            self.rows.delete_instances_if_empty(emptied)

    def _found_children(self, new_ids: list[str]) -> None:
        """Spans stored before their parent (now here) stop being flagged for it."""
        children = self.rows.waiting_for(new_ids)
        if not children:
            return
        parents = self.rows.instances_of_spans(sorted({child.parent_span_id for child in children}))
        # Children whose validation ends the same (nearly all: valid) are updated together.
        alike: dict[tuple[str, bytes | None], list[str]] = defaultdict(list)
        for child in children:
            if parents.get(child.parent_span_id) != child.instance_id:
                continue
            recorded = orjson.loads(child.validation) if child.validation else {}
            problems = [p for p in recorded.get("problems", []) if p.get("part") != "parent_span_id"]
            notes = [n for n in (recorded.get("note") or "").split("; ") if n and n != PARENT_MISSING]
            status = "invalid" if problems else (
                "unchecked" if any(note != SENSITIVE_CHECKED for note in notes) else "valid")
            validation = None if status == "valid" else orjson.dumps(
                {"status": status, "problems": problems, "note": "; ".join(notes) or None})
            alike[(status, validation)].append(child.id)
        for (status, validation), span_ids in alike.items():
            self.rows.update_spans(span_ids, parent_found=True, validation_status=status, validation=validation,
                                   updated_at=self.stamp)
