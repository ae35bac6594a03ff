"""The viewer's reads of the stored registry: agents, instances and their spans.

Everything goes through the :class:`RegistryService` (the operations the Prefactor API
answers with), as the signed-in account, so the viewer sees exactly what the API would
show that account and never reaches around it.  Outputs are handed to the templates in
their JSON form, the same shape a span export opened from a file has.  Refusals
(``not_found`` …) propagate: the page guard answers them.
"""

from __future__ import annotations

from typing import Any

from agentfolio.app.registry import (
    AgentList,
    AgentShow,
    AlertAcknowledge,
    AlertCount,
    AlertList,
    InstanceGet,
    InstanceList,
    InstanceTerminate,
    PageRequest,
    Principal,
    RegistryRefusal,
    RegistryService,
    SchemaVersionGet,
    Sorting,
    SpanList,
)
from agentfolio.registry.risk import RiskFlag
from agentfolio.web.agents import SchemaVersionView, risk_badges, schema_version_view
from agentfolio.web.traces import Trace, build_trace

#: At most this many spans are drawn for one instance (the rest are counted).
MAX_TRACE_SPANS = 5000


def _service(folio: Any) -> RegistryService:
    service: RegistryService = folio.registry
    return service


def has_registry(folio: Any) -> bool:
    """Whether the viewer has a store behind it (``folio``: an :class:`agentfolio.app.Agentfolio`)."""
    return folio is not None and getattr(folio, "registry", None) is not None


def list_agents(folio: Any, account: Any, *, offset: int = 0, page_size: int = 50) -> tuple[list[dict[str, Any]], Any]:
    service, principal = _service(folio), Principal(account)
    page = service.list_agents(principal, AgentList(page=PageRequest(offset, page_size, Sorting("name", "asc"))))
    agents = [agent.model_dump(mode="json") for agent in page.items]
    for agent in agents:
        try:
            agent["risk"] = service.agent_risk(principal, agent["id"]).rollup
        except RegistryRefusal:
            agent["risk"] = None
    return agents, page.pagination


def risk_profile(folio: Any, account: Any) -> Any:
    """The risk profile the account's scores are made under (for the legend)."""
    return _service(folio).risk_profile(Principal(account))


def list_instances(folio: Any, account: Any, *, agent_id: str | None = None, offset: int = 0,
                   page_size: int = 50) -> tuple[list[dict[str, Any]], Any]:
    command = InstanceList(page=PageRequest(offset, page_size, Sorting("inserted_at", "desc")), agent_id=agent_id,
                           include_risk_level=True)
    page = _service(folio).list_instances(Principal(account), command)
    return [instance.model_dump(mode="json") for instance in page.items], page.pagination


def instance_trace(folio: Any, account: Any, instance_id: str) -> Trace:
    service, principal = _service(folio), Principal(account)
    instance = service.get_instance(principal, InstanceGet(agent_instance_id=instance_id,
                                                           include_risk_level=True)).model_dump(mode="json")
    spans: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None and len(spans) < MAX_TRACE_SPANS:
        page = service.list_spans(principal, SpanList(
            page=PageRequest(offset, 100, Sorting("started_at", "asc")), agent_instance_id=instance_id,
            include_summaries=True))
        spans.extend(span.model_dump(mode="json") for span in page.items)
        offset = page.pagination["next_page_offset"]
    schema_version = None
    version_id = instance.get("agent_schema_version_id")
    if version_id:
        try:
            schema_version = service.get_schema_version(principal, SchemaVersionGet(version_id)).model_dump(mode="json")
        except RegistryRefusal:
            schema_version = None
    return build_trace(spans[:MAX_TRACE_SPANS], schema_version=schema_version, instance=instance, stored=True)


def agent_overview(folio: Any, account: Any, agent_id: str) -> dict[str, Any]:
    """An agent, its risk roll-up (all versions) and each schema version as a view."""
    service, principal = _service(folio), Principal(account)
    agent = service.show_agent(principal, AgentShow(agent_id=agent_id)).model_dump(mode="json")
    report = service.agent_risk(principal, agent["id"]).model_dump(mode="json")
    profile = service.risk_profile(principal, agent["id"])
    versions: list[tuple[dict[str, Any], SchemaVersionView]] = []
    for entry in reversed(report["schema_versions"]):
        details = service.get_schema_version(principal, SchemaVersionGet(entry["id"])).model_dump(mode="json")
        versions.append((entry, schema_version_view(details, profile=profile)))
    flags = [RiskFlag(f["code"], f["severity"], f["message"], tuple(f["span_types"]))
             for f in report["rollup"]["flags"]]
    runs, _ = list_instances(folio, account, agent_id=agent["id"], page_size=20)
    return {"agent": agent, "report": report, "versions": versions, "flags": flags, "profile": profile.name,
            "risk_profile": profile,
            "agent_badges": risk_badges(report["rollup"]), "runs": runs}


def terminate_instance(folio: Any, account: Any, instance_id: str, reason: str | None) -> dict[str, Any]:
    """Stop a running instance (its agent's SDK sees it and stops); the instance as it now is."""
    stopped = _service(folio).run(Principal(account), InstanceTerminate(agent_instance_id=instance_id,
                                                                        reason=reason or None))
    return stopped.model_dump(mode="json")  # type: ignore[no-any-return]


def list_alerts(folio: Any, account: Any, *, everything: bool = False) -> dict[str, Any]:
    """The newest alerts (open ones, or all) and how many are open."""
    service, principal = _service(folio), Principal(account)
    page = service.run(principal, AlertList(page=PageRequest(0, 100, Sorting("id", "desc")),
                                            acknowledged=None if everything else False))
    return {"alerts": [alert.model_dump(mode="json") for alert in page.items],
            "open_count": service.run(principal, AlertCount()).count, "showing_all": everything}


def acknowledge_alerts(folio: Any, account: Any, alert_id: str | None) -> int:
    """Acknowledge one alert (``None``: every open one); how many were acknowledged."""
    command = AlertAcknowledge(everything=True) if alert_id is None else AlertAcknowledge(alert_ids=(alert_id,))
    done = _service(folio).run(Principal(account), command)
    return int(done.acknowledged or 0)
