"""The demo ``agentfolio serve --demo`` shows: the bundled sample sessions, a session with
every segment kind, synthetic histories of two lengths, and an agent with traces."""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from agentfolio.app.imports import guess_agent
from agentfolio.formats import durable_state
from agentfolio.formats.jsonio import parse_json
from agentfolio.samples import synthetic_durable_state
from agentfolio.samples.showcase import schema_version, showcase_session, span_export

if TYPE_CHECKING:
    from agentfolio.app import Agentfolio
    from agentfolio.store import Account

__all__ = ["load_demo", "load_registry_demo", "load_trace_demo"]


def load_demo(folio: Agentfolio, account: Account) -> int:
    """Store the demo in ``account``; returns the number of sessions stored."""
    loaded = 0
    for item in sorted(resources.files("agentfolio.samples").iterdir(), key=lambda entry: entry.name):
        if not item.name.endswith(".json"):
            continue
        document = parse_json(item.read_bytes(), source=item.name)
        if durable_state.looks_like(document):
            folio.sessions.create(account, document, session_id=item.name.removesuffix(".json")
                                  .replace(".sample", ""), agent=guess_agent(document), strict=False)
            loaded += 1
    for entries in (12, 400):
        folio.sessions.create(account, synthetic_durable_state(entries, seed=entries),
                              session_id=f"synthetic-{entries}", agent="Agent")
        loaded += 1
    folio.sessions.create(account, showcase_session()["session"], session_id="showcase-every-segment-kind",
                          agent="Atlas", strict=False)
    load_registry_demo(folio, account)
    load_trace_demo(folio, account, spans=300)
    return loaded + 1


def load_registry_demo(folio: Agentfolio, account: Account) -> list[str]:
    """Store an agent with a schema version and two instances of its spans (one clean,
    one with a span that breaks its schema); returns the instance ids."""
    from agentfolio.app.registry import AgentCreate, InstanceRegister, Principal, SpanCreate
    from agentfolio.app.registry.fields import schema_version_draft, timestamp

    service, principal = folio.registry, Principal(account)
    agent = service.create_agent(principal, AgentCreate(name="Atlas", external_identifier="atlas",
                                                        description="Travel assistant"))
    draft = schema_version_draft({key: value for key, value in schema_version().items() if key != "id"},
                                 "agent_schema_version")
    instances = []
    for run_number, spans in enumerate((span_export()["spans"], span_export()["spans"][:3])):
        instance = service.register_instance(principal, InstanceRegister(
            agent_id=agent.id, agent_version={"name": "Atlas", "external_identifier": "1.0"},
            agent_schema_version=draft, external_identifier=f"run-{run_number}"))
        known: dict[str, str] = {}
        for span in spans:
            parent = span.get("parent_span_id")
            created = service.create_span(principal, SpanCreate(
                agent_instance_id=instance.id, schema_name=span["schema_name"], status=span.get("status") or "active",
                payload=span.get("payload"), result_payload=span.get("result_payload"),
                parent_span_id=known.get(parent, parent) if parent else None,
                started_at=timestamp(span.get("started_at"), "started_at"),
                finished_at=timestamp(span.get("finished_at"), "finished_at")))
            known[span["id"]] = created.span.id
        instances.append(instance.id)
    return instances


def load_trace_demo(folio: Agentfolio, account: Account, *, spans: int = 300, otel: bool = True) -> str:
    """Store a LangChain agent's run of ``spans`` spans (its LLM calls' messages in their
    params and results) and, with ``otel``, an agent traced with the OpenTelemetry GenAI
    conventions through the OTLP ingest; returns the run's instance id."""
    import orjson

    from agentfolio.app.registry import BulkItem, InstanceFinish, InstanceRegister, InstanceStart, Principal, SpanCreate
    from agentfolio.app.registry.fields import schema_version_draft, timestamp
    from agentfolio.registry import ids
    from agentfolio.samples.traces import agent_run, agent_run_schema_version, genai_request

    service, principal = folio.registry, Principal(account)
    # No agent id: the agent is found (or made once) by its version's name, as the SDKs register.
    instance = service.register_instance(principal, InstanceRegister(
        agent_id=None, agent_version={"name": "Atlas research", "external_identifier": "1.0"},
        agent_schema_version=schema_version_draft(agent_run_schema_version(), "agent_schema_version"),
        external_identifier=f"research-{spans}"))
    partition = ids.decode(service.caller(principal).account_id).partition
    run = agent_run(spans)
    service.run(principal, InstanceStart(agent_instance_id=instance.id,
                                         timestamp=timestamp(run[0]["started_at"], "timestamp")))
    chosen: dict[str, str] = {}
    items = []
    for span in run:
        chosen[span["id"]] = ids.new_id(partition)
        parent = span["parent_span_id"]
        items.append(BulkItem(f"{instance.id}-{span['id']}", SpanCreate(
            agent_instance_id=instance.id, id=chosen[span["id"]], schema_name=span["schema_name"],
            status=span["status"], payload=span["payload"], result_payload=span["result_payload"],
            parent_span_id=chosen[parent] if parent else None,
            started_at=timestamp(span["started_at"], "started_at"),
            finished_at=timestamp(span["finished_at"], "finished_at"))))
    for start in range(0, len(items), 1000):
        service.bulk(principal, items[start:start + 1000])
    service.run(principal, InstanceFinish(agent_instance_id=instance.id, status="complete",
                                          timestamp=timestamp(run[0]["finished_at"], "timestamp")))
    if otel:
        from agentfolio.app.otlp import OtlpIngest

        ingest = OtlpIngest(folio.store)
        ingest.export(account, orjson.dumps(genai_request()), encoding="json")
        ingest.drain()
    return instance.id
