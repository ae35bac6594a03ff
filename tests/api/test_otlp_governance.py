"""Governance over OpenTelemetry traces, end to end through OTLP: every operation and tool
an agent's spans show becomes a span type of its schema version, its data risk undeclared
(unknown); a user declares the risk afterwards with the Prefactor API, and the roll-ups,
flags and risk levels then apply to the agent's OTel traces as they do to Prefactor runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.otlp_support import get, provider, serving, spans_of

CHAT, TOOL, AGENT = "chat gpt-4o", "execute_tool send_email", "invoke_agent Mailer"


@pytest.fixture
def served(settings: Settings, store: Store) -> Iterator[tuple[str, str]]:
    with serving(store, "governance") as found:
        yield found


def _run(url: str, token: str) -> str:
    """One agent run through the real SDK and its OTLP exporter; its trace id."""
    made = provider(url, token, service="mail-service")
    tracer = made.get_tracer("tests.governance")
    message = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Mail my results to Ann"}]}])
    with tracer.start_as_current_span(AGENT, attributes={"gen_ai.operation.name": "invoke_agent",
                                                         "gen_ai.agent.name": "Mailer"}) as root:
        with tracer.start_as_current_span(CHAT, attributes={"gen_ai.operation.name": "chat",
                                                            "gen_ai.request.model": "gpt-4o",
                                                            "gen_ai.input.messages": message}):
            pass
        with tracer.start_as_current_span(TOOL, attributes={"gen_ai.operation.name": "execute_tool",
                                                            "gen_ai.tool.name": "send_email"}):
            pass
        trace_id = format(root.get_span_context().trace_id, "032x")
    made.force_flush()
    made.shutdown()
    return trace_id


def _instance(url: str, token: str, trace_id: str) -> dict[str, Any]:
    found = get(url, token, "/api/v1/agent_instance", page_size=50)["summaries"]
    return next(i for i in found if i["external_identifier"] == trace_id)


def _post(url: str, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = httpx.post(url + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["details"]  # type: ignore[no-any-return]


def test_otel_span_types_are_governed_like_prefactor_ones(served: tuple[str, str]) -> None:
    url, token = served
    first = _instance(url, token, _run(url, token))
    agent = get(url, token, "/api/v1/agent/show", external_identifier="Mailer", include_risk_rollup="true")["details"]
    seen = get(url, token, f"/api/v1/agent_schema_version/{first['agent_schema_version_id']}")["details"]
    assert set(seen["span_type_schemas"]) == {AGENT, CHAT, TOOL}
    # Undeclared: every action and data category unknown, in the version and the roll-up.
    assert set(seen["span_type_schemas"][TOOL]["data_risk"]["action_profile"].values()) == {"unknown"}
    assert "unknown" in agent["risk_rollup"]["action_profile"].values()
    codes_before = {flag["code"] for flag in agent["risk_rollup"]["flags"]}
    assert "external_communication_with_sensitive_data" not in codes_before

    # The user declares what the model call and the tool touch, with the Prefactor API.
    declared = _post(url, token, "/api/v1/agent_schema_version", {"details": {
        "agent_id": agent["id"], "external_identifier": "declared-risk", "span_type_schemas": [
            {"name": AGENT, "params_schema": {}, "data_risk": {"action_profile": {"read_data": "allowed"}}},
            {"name": CHAT, "params_schema": {}, "data_risk": {
                "action_profile": {"read_data": "allowed"},
                "params_data_categories": {"financial_information": "included"}}},
            {"name": TOOL, "params_schema": {}, "data_risk": {
                "action_profile": {"external_communication": "allowed"},
                "params_data_categories": {"financial_information": "included"}}}]}})

    # The next trace runs under the declared version, and its risk is the declared one.
    second = _instance(url, token, _run(url, token))
    assert second["agent_schema_version_id"] == declared["id"]
    assert _instance(url, token, first["external_identifier"])["agent_schema_version_id"] == seen["id"]  # history
    agent = get(url, token, "/api/v1/agent/show", external_identifier="Mailer", include_risk_rollup="true")["details"]
    assert agent["current_schema_version_id"] == declared["id"]
    codes = {flag["code"] for flag in agent["risk_rollup"]["flags"]}
    assert "external_communication_with_sensitive_data" in codes
    level = get(url, token, f"/api/v1/agent_instance/{second['id']}", include_risk_level="true")["details"]
    unknown = get(url, token, f"/api/v1/agent_instance/{first['id']}", include_risk_level="true")["details"]
    assert level["risk_score"] > unknown["risk_score"] == 0  # undeclared risk scores nothing: unknown, not low
    scored = spans_of(url, token, agent_instance_id=second["id"], include_risk_level="true")
    tool_span = next(span for span in scored if span["schema_name"] == TOOL)
    assert tool_span["risk_score"] > 0

    # A span type seen only later extends the declared version: the declared risks stay.
    made = provider(url, token, service="mail-service")
    with made.get_tracer("tests.governance").start_as_current_span("execute_tool archive", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "archive", "gen_ai.agent.name": "Mailer"}):
        pass
    made.force_flush()
    made.shutdown()
    agent = get(url, token, "/api/v1/agent/show", external_identifier="Mailer")["details"]
    extended = get(url, token, f"/api/v1/agent_schema_version/{agent['current_schema_version_id']}")["details"]
    types = extended["span_type_schemas"]
    assert set(types) == {AGENT, CHAT, TOOL, "execute_tool archive"}
    assert types[TOOL]["data_risk"]["action_profile"]["external_communication"] == "allowed"
    assert set(types["execute_tool archive"]["data_risk"]["action_profile"].values()) == {"unknown"}
    # ...and the alert its risk combination calls for is raised for the receiver's version
    # too, as it was for the version the user created.
    alerts = get(url, token, "/api/v1/alerts", kind="critical_risk_combination")["summaries"]
    assert {alert["agent_schema_version_id"] for alert in alerts} == {declared["id"], extended["id"]}
