"""The demo ``agentfolio serve --demo`` shows: the bundled sample sessions, a session with
every segment kind, synthetic histories of two lengths, and an agent with traces."""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any

from agentfolio.app.imports import guess_agent
from agentfolio.errors import AgentfolioError
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
    from agentfolio.store.registry import Principal

    principal = Principal(account)

    def run(operation: str, fields: dict[str, Any]) -> dict[str, Any]:
        outcome = folio.store.registry.execute(principal, operation, fields)
        if outcome.status not in (200, 201):
            raise AgentfolioError(f"demo: {operation}: {outcome.body}")
        return outcome.body["details"]

    agent = run("agents/create", {"name": "Atlas", "external_identifier": "atlas",
                                  "description": "Travel assistant"})
    version = {key: value for key, value in schema_version().items() if key != "id"}
    instances = []
    for run_number, spans in enumerate((span_export()["spans"], span_export()["spans"][:3])):
        instance = run("agent_instances/register", {
            "agent_id": agent["id"], "agent_version": {"name": "Atlas", "external_identifier": "1.0"},
            "agent_schema_version": version, "external_identifier": f"run-{run_number}"})
        known: dict[str, str] = {}
        for span in spans:
            fields = {key: span[key] for key in ("schema_name", "status", "payload", "result_payload", "started_at",
                                                 "finished_at") if span.get(key) is not None}
            if span.get("parent_span_id"):
                fields["parent_span_id"] = known.get(span["parent_span_id"], span["parent_span_id"])
            fields["agent_instance_id"] = instance["id"]
            created = run("agent_spans/create", fields)
            known[span["id"]] = created["id"]
        instances.append(instance["id"])
    return instances
