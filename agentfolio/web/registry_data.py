"""The viewer's reads of the stored registry: agents, instances and their spans.

Everything goes through ``folio.store.registry.execute`` (the same operations the Prefactor
API answers with), as the signed-in account, so the viewer sees exactly what the API
would show that account and never reaches around it.
"""

from __future__ import annotations

from typing import Any

from agentfolio.store.errors import NotFound, StoreError
from agentfolio.web.agents import SchemaVersionView, schema_version_view
from agentfolio.web.traces import Trace, build_trace

#: At most this many spans are drawn for one instance (the rest are counted).
MAX_TRACE_SPANS = 5000


def _principal(account: Any) -> Any:
    from agentfolio.store.registry import Principal

    return Principal(account)


def _run(store: Any, account: Any, operation: str, fields: dict[str, Any]) -> dict[str, Any]:
    outcome = store.store.registry.execute(_principal(account), operation, fields)
    if outcome.status == 404:
        raise NotFound(outcome.body.get("message", "not found"))
    if outcome.status != 200:
        raise StoreError(outcome.body.get("message", f"{operation} failed"))
    return outcome.body


def has_registry(store: Any) -> bool:
    return store is not None and getattr(store.store, "registry", None) is not None


def list_agents(store: Any, account: Any, *, offset: int = 0, page_size: int = 50) -> tuple[list[dict[str, Any]], Any]:
    body = _run(store, account, "agents/list", {"pagination[offset]": offset, "pagination[page_size]": page_size,
                                                "sorting": "name"})
    agents = body["summaries"]
    for agent in agents:
        try:
            agent["risk"] = store.store.registry.agent_risk(_principal(account), agent["id"])["rollup"]
        except StoreError:
            agent["risk"] = None
    return agents, body["pagination"]


def list_instances(store: Any, account: Any, *, agent_id: str | None = None, offset: int = 0,
                   page_size: int = 50) -> tuple[list[dict[str, Any]], Any]:
    fields: dict[str, Any] = {"pagination[offset]": offset, "pagination[page_size]": page_size,
                              "sorting": "-inserted_at", "include_risk_level": True}
    if agent_id:
        fields["agent_id"] = agent_id
    body = _run(store, account, "agent_instances/list", fields)
    return body["summaries"], body["pagination"]


def instance_trace(store: Any, account: Any, instance_id: str) -> Trace:
    instance = _run(store, account, "agent_instances/get",
                    {"agent_instance_id": instance_id, "include_risk_level": True})["details"]
    spans: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None and len(spans) < MAX_TRACE_SPANS:
        body = _run(store, account, "agent_spans/list", {
            "agent_instance_id": instance_id, "include_summaries": True, "sorting": "started_at",
            "pagination[offset]": offset, "pagination[page_size]": 100})
        spans.extend(body["summaries"])
        offset = body["pagination"]["next_page_offset"]
    schema_version = None
    version_id = instance.get("agent_schema_version_id")
    if version_id:
        try:
            schema_version = _run(store, account, "agent_schema_versions/get",
                                  {"agent_schema_version_id": version_id})["details"]
        except StoreError:
            schema_version = None
    return build_trace(spans[:MAX_TRACE_SPANS], schema_version=schema_version, instance=instance, stored=True)


def agent_overview(store: Any, account: Any, agent_id: str) -> dict[str, Any]:
    """An agent, its risk roll-up (all versions) and each schema version as a view."""
    agent = _run(store, account, "agents/show", {"agent_id": agent_id, "include_counts": True})["details"]
    report = store.store.registry.agent_risk(_principal(account), agent["id"])
    profile = store.store.registry.risk_profile(account)
    versions: list[tuple[dict[str, Any], SchemaVersionView]] = []
    for entry in reversed(report["schema_versions"]):
        details = _run(store, account, "agent_schema_versions/get", {"agent_schema_version_id": entry["id"]})["details"]
        versions.append((entry, schema_version_view(details, profile=profile)))
    from agentfolio.registry.risk import RiskFlag

    flags = [RiskFlag(f["code"], f["severity"], f["message"], tuple(f["span_types"])) for f in report["rollup"]["flags"]]
    from agentfolio.web.agents import risk_badges

    return {"agent": agent, "report": report, "versions": versions, "flags": flags, "profile": profile.name,
            "agent_badges": risk_badges(report["rollup"])}
