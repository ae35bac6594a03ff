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
import sqlalchemy as sa

from agentfolio import _json
from agentfolio.app.registry import Principal
from agentfolio.app.traces import TraceService
from agentfolio.registry.sensitive import decode_at_rest
from agentfolio.settings import Settings
from agentfolio.store import Store
from agentfolio.store.registry_tables import registry_spans
from tests.otlp_support import get, provider, serving, spans_of, wait_for_session

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
    # Exactly as for a Prefactor run under the same version: the same scores and levels.
    run = _post(url, token, "/api/v1/agent_instance/register", {
        "agent_id": agent["id"], "agent_version": {"name": "Mailer"}, "idempotency_key": "prefactor-run-1"})
    assert run["agent_schema_version_id"] == declared["id"]
    for name in (AGENT, CHAT, TOOL):
        _post(url, token, "/api/v1/agent_spans", {"details": {
            "agent_instance_id": run["id"], "schema_name": name, "status": "active", "payload": {}}})
    prefactor = get(url, token, f"/api/v1/agent_instance/{run['id']}", include_risk_level="true")["details"]
    assert (prefactor["risk_score"], prefactor["risk_level"]) == (level["risk_score"], level["risk_level"])
    prefactor_spans = spans_of(url, token, agent_instance_id=run["id"], include_risk_level="true")
    assert sorted((span["schema_name"], span["risk_score"], span["risk_level"]) for span in prefactor_spans) \
        == sorted((span["schema_name"], span["risk_score"], span["risk_level"]) for span in scored)

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


def test_sensitive_values_in_otel_spans_are_kept_encoded_and_answered_masked(served: tuple[str, str],
                                                                              store: Store) -> None:
    """A ``$sensitive`` wrapper an exporter sends in a span's attributes (the SDK sends a
    dict as a key-value list) is kept encoded at rest and answered masked, as in a span
    created through the Prefactor API: in the span, its trace and its conversation."""
    url, token = served
    secret = {"$sensitive": "string", "value": "jane@example.com", "labels": ["email", "pii"]}
    shown = {"$sensitive": "string", "labels": ["email", "pii"], "masked": True}
    made = provider(url, token, service="mail-service")
    tracer = made.get_tracer("tests.governance")
    asked = [{"role": "user", "parts": [{"type": "text", "content": "Mail my results to Jane"}]}]
    answered = [{"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "tool_call", "id": "call-1", "name": "send_email", "arguments": {"to": secret}}]}]
    with tracer.start_as_current_span(AGENT, attributes={"gen_ai.operation.name": "invoke_agent",
                                                         "gen_ai.agent.name": "Mailer"}) as root:
        with tracer.start_as_current_span(CHAT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps(asked), "gen_ai.output.messages": answered}):  # type: ignore[dict-item]
            pass
        with tracer.start_as_current_span(TOOL, attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "send_email",
                "gen_ai.tool.call.arguments": {"to": secret}}):  # type: ignore[dict-item]
            pass
        trace_id = format(root.get_span_context().trace_id, "032x")
    made.force_flush()
    made.shutdown()

    instance = _instance(url, token, trace_id)
    spans = {span["schema_name"]: span for span in spans_of(url, token, agent_instance_id=instance["id"])}
    tool, chat, agent = spans[TOOL], spans[CHAT], spans[AGENT]
    assert tool["sensitive_encoding"] and chat["sensitive_encoding"] and not agent["sensitive_encoding"]
    assert tool["payload"]["attributes"]["gen_ai.tool.call.arguments"] == {"to": shown}
    assert chat["payload"]["attributes"]["gen_ai.output.messages"][0]["parts"][0]["arguments"] == {"to": shown}
    # At rest: encoded, never the plain value, and nothing lost.
    with store.engine.connect() as connection:
        stored = dict(connection.execute(sa.select(registry_spans.c.id, registry_spans.c.payload)
                                         .where(registry_spans.c.instance_id == instance["id"])).all())
    assert not any(b"jane@example.com" in bytes(raw) for raw in stored.values())
    at_rest = decode_at_rest(_json.loads(bytes(stored[tool["id"]])))
    assert at_rest["attributes"]["gen_ai.tool.call.arguments"] == {"to": secret}
    # Every answer shows it masked: the span, the trace and the conversation built from it.
    session = wait_for_session(url, token, f"otel:trace:{trace_id}", 2)
    answers = [session, get(url, token, f"/api/v1/agent_spans/{tool['id']}"),
               get(url, token, f"/api/v1/agent_spans/{chat['id']}"),
               spans_of(url, token, agent_instance_id=instance["id"], include_summaries="true")]
    traces, principal = TraceService(store), Principal(store.accounts.ensure("governance"))
    drawn = traces.conversations(principal, instance["id"], [chat["id"], tool["id"]])
    answers += [drawn[chat["id"]].session.model_dump(mode="json"),
                traces.span(principal, instance["id"], tool["id"]).model_dump(mode="json")]
    for answer in answers:  # neither plain nor encoded (encoding is reversible: not for answers)
        assert "jane@example.com" not in json.dumps(answer) and '"encoded"' not in json.dumps(answer)
    assert '"masked": true' in json.dumps(session)


def test_otel_spans_that_break_a_declared_schema_raise_the_alert_a_prefactor_span_does(
        served: tuple[str, str]) -> None:
    url, token = served
    _run(url, token)
    agent = get(url, token, "/api/v1/agent/show", external_identifier="Mailer")["details"]
    # The user declares which models the agent may call (a schema over the span as stored).
    allowed_models = {"type": "object", "properties": {"attributes": {"type": "object", "properties": {
        "gen_ai.request.model": {"enum": ["gpt-4o-mini"]}}}}}
    declared = _post(url, token, "/api/v1/agent_schema_version", {"details": {
        "agent_id": agent["id"], "external_identifier": "allowed-models", "span_type_schemas": [
            {"name": AGENT, "params_schema": {}}, {"name": TOOL, "params_schema": {}},
            {"name": CHAT, "params_schema": allowed_models}]}})
    assert get(url, token, "/api/v1/alerts", kind="schema_breaking_span")["summaries"] == []

    otel = _instance(url, token, _run(url, token))
    assert otel["agent_schema_version_id"] == declared["id"]
    chat = next(span for span in spans_of(url, token, agent_instance_id=otel["id"]) if span["schema_name"] == CHAT)
    assert chat["validation"]["status"] == "invalid"
    assert [problem["pointer"] for problem in chat["validation"]["problems"]] == ["/attributes/gen_ai.request.model"]

    run = _post(url, token, "/api/v1/agent_instance/register", {
        "agent_id": agent["id"], "agent_version": {"name": "Mailer"}, "idempotency_key": "prefactor-run-2"})
    prefactor = _post(url, token, "/api/v1/agent_spans", {"details": {
        "agent_instance_id": run["id"], "schema_name": CHAT, "status": "active",
        "payload": {"attributes": {"gen_ai.request.model": "gpt-4o"}}}})
    alerts = {alert["agent_span_id"]: alert
              for alert in get(url, token, "/api/v1/alerts", kind="schema_breaking_span")["summaries"]}
    assert set(alerts) == {chat["id"], prefactor["id"]}
    assert alerts[chat["id"]]["agent_instance_id"] == otel["id"]
    assert alerts[chat["id"]]["message"] == alerts[prefactor["id"]]["message"]
