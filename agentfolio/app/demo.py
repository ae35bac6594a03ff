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

__all__ = ["load_demo", "load_registry_demo"]


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
