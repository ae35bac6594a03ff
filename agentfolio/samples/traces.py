"""Traces of any size shaped like real agent runs, for the demo, the tests and the benchmark.

* :func:`agent_run`: the spans of a Prefactor-instrumented LangChain agent (the span types
  and payloads the Prefactor LangChain middleware writes): a root agent span, then steps,
  each an LLM call whose params and result hold its messages, and the tools it called;
  every fourth step nests a sub-agent, some tools fail.
* :func:`agent_run_schema_version`: the schema version those spans are checked against.
* :func:`genai_request`: an OTLP/JSON export request of an agent traced with the
  OpenTelemetry GenAI conventions (``invoke_agent``, ``chat`` with
  ``gen_ai.input.messages``/``gen_ai.output.messages``, ``execute_tool`` with events).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["agent_run", "agent_run_schema_version", "genai_request"]

_CITIES = ("Paris", "Lyon", "Oslo", "Lima", "Kyoto", "Quito", "Perth", "Turin")
_TOOLS = ("get_weather", "search_trains", "book_table", "convert_currency")


def agent_run_schema_version() -> dict[str, Any]:
    return {
        "external_identifier": "langchain-demo-v1",
        "span_type_schemas": [
            {"name": "langchain:agent", "title": "Agent", "params_schema": {"type": "object"},
             "template": "{{agent_name}}"},
            {"name": "langchain:llm", "title": "LLM call", "template": "{{model_name}}",
             "params_schema": {"type": "object", "required": ["model_name"]},
             "data_risk": {"action_profile": {"read_data": "allowed"},
                           "params_data_categories": {"personal_identifiers": "included"}}},
            {"name": "langchain:tool", "title": "Tool call", "template": "{{tool_name}}",
             "params_schema": {"type": "object", "required": ["tool_name"]},
             "data_risk": {"action_profile": {"external_communication": "allowed"}}},
            {"name": "workflow:step", "title": "Step", "template": "step {{index}}",
             "params_schema": {"type": "object"}},
        ],
    }


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def agent_run(spans: int, *, seed: int = 0, start: datetime | None = None) -> list[dict[str, Any]]:
    """``spans`` spans (at least 1) as a span export lists them, ids ``s0``, ``s1``...;
    parents always come before their children."""
    rng = random.Random(seed)
    clock = start or datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    out: list[dict[str, Any]] = []

    def add(parent: str | None, name: str, began: datetime, took_ms: float, payload: dict[str, Any],
            result: dict[str, Any] | None, status: str = "complete") -> str:
        span_id = f"s{len(out)}"
        out.append({"id": span_id, "parent_span_id": parent, "schema_name": name, "status": status,
                    "payload": payload, "result_payload": result, "started_at": _iso(began),
                    "finished_at": _iso(began + timedelta(milliseconds=took_ms))})
        return span_id

    root = add(None, "langchain:agent", clock, 0, {"agent_name": "Atlas", "inputs": {"messages": []}}, {})
    step = 0
    while len(out) < spans:
        step += 1
        city = rng.choice(_CITIES)
        parent = root
        if step % 4 == 0 and len(out) < spans:
            parent = add(root, "workflow:step", clock, 0, {"index": step}, {"status": "ok"})
        if len(out) >= spans:
            break
        tool = rng.choice(_TOOLS)
        call_id = f"call_{step}"
        llm_ms = rng.uniform(300, 1400)
        messages = [{"role": "human", "content": f"Plan step {step}: what about {city}?"},
                    {"role": "ai", "content": "", "tool_calls": [{"name": tool, "args": {"city": city},
                                                                  "id": call_id}]},
                    {"role": "tool", "content": f"{tool} says: fine in {city}", "tool_call_id": call_id}]
        add(parent, "langchain:llm", clock, llm_ms,
            {"model_name": "gpt-4o-mini", "provider": "openai", "temperature": 0.2,
             "inputs": {"model": "gpt-4o-mini", "system": "You are Atlas, a travel assistant.",
                        "messages": messages}},
            {"outputs": {"messages": [{"role": "ai", "content": f"In {city}, take the morning train."}]},
             "token_usage": {"prompt_tokens": rng.randint(200, 900), "completion_tokens": rng.randint(20, 200),
                             "total_tokens": 1100}})
        clock += timedelta(milliseconds=llm_ms)
        for _ in range(rng.randint(1, 2)):
            if len(out) >= spans:
                break
            tool_ms = rng.uniform(20, 400)
            failed = rng.random() < 0.05
            add(parent, "langchain:tool", clock, tool_ms, {"tool_name": tool, "inputs": {"city": city}},
                {"error": {"error_type": "Timeout", "message": "no answer in time"}} if failed
                else {"outputs": {"output": f"{tool}: ok for {city}"}}, "failed" if failed else "complete")
            clock += timedelta(milliseconds=tool_ms)
        if parent != root:
            out[int(parent[1:])]["finished_at"] = _iso(clock)
    out[0]["finished_at"] = _iso(clock + timedelta(milliseconds=5))
    return out[:spans]


def genai_request(turns: int = 3, *, trace_id: str = "4bf92f3577b34da6a3ce929d0e0e4736",
                  service: str = "travel-service", start_ns: int = 1_767_607_200_000_000_000) -> dict[str, Any]:
    """An OTLP/JSON ``ExportTraceServiceRequest``: one ``invoke_agent`` span, and per turn a
    ``chat`` span carrying the conversation so far and an ``execute_tool`` span."""
    spans: list[dict[str, Any]] = []
    clock = start_ns
    history: list[dict[str, Any]] = []
    root_id = f"{1:016x}"

    def attr(key: str, value: Any) -> dict[str, Any]:
        if isinstance(value, bool):
            return {"key": key, "value": {"boolValue": value}}
        if isinstance(value, int):
            return {"key": key, "value": {"intValue": str(value)}}
        return {"key": key, "value": {"stringValue": value}}

    for turn in range(turns):
        city = _CITIES[turn % len(_CITIES)]
        history.append({"role": "user", "parts": [{"type": "text", "content": f"Weather in {city}?"}]})
        chat_id = f"{2 + turn * 2:016x}"
        answer = {"role": "assistant", "parts": [
            {"type": "tool_call", "id": f"call_{turn}", "name": "get_weather", "arguments": {"city": city}}],
            "finish_reason": "tool_call"}
        spans.append({"traceId": trace_id, "spanId": chat_id, "parentSpanId": root_id, "name": "chat gpt-4o-mini",
                      "kind": 3, "startTimeUnixNano": str(clock), "endTimeUnixNano": str(clock + 800_000_000),
                      "attributes": [attr("gen_ai.operation.name", "chat"), attr("gen_ai.request.model", "gpt-4o-mini"),
                                     attr("gen_ai.system_instructions", json.dumps(
                                         [{"type": "text", "content": "You are a weather assistant."}])),
                                     attr("gen_ai.input.messages", json.dumps(history)),
                                     attr("gen_ai.output.messages", json.dumps([answer])),
                                     attr("gen_ai.usage.input_tokens", 120 + turn * 40),
                                     attr("gen_ai.usage.output_tokens", 18)],
                      "status": {}})
        history.append(answer)
        clock += 800_000_000
        tool_id = f"{3 + turn * 2:016x}"
        spans.append({"traceId": trace_id, "spanId": tool_id, "parentSpanId": root_id,
                      "name": "execute_tool get_weather", "kind": 1, "startTimeUnixNano": str(clock),
                      "endTimeUnixNano": str(clock + 150_000_000),
                      "attributes": [attr("gen_ai.operation.name", "execute_tool"),
                                     attr("gen_ai.tool.name", "get_weather"),
                                     attr("gen_ai.tool.call.id", f"call_{turn}")],
                      "events": [{"name": "cache.miss", "timeUnixNano": str(clock + 10_000_000),
                                  "attributes": [attr("cache.key", city)]}],
                      "status": {"code": 2, "message": "upstream timeout"} if turn == 1 else {}})
        history.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": f"call_{turn}",
                                                   "response": {"city": city, "forecast": "sunny"}}]})
        clock += 150_000_000
    spans.insert(0, {"traceId": trace_id, "spanId": root_id, "name": "invoke_agent Breeze", "kind": 1,
                     "startTimeUnixNano": str(start_ns), "endTimeUnixNano": str(clock + 1_000_000),
                     "attributes": [attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", "Breeze")],
                     "status": {}})
    return {"resourceSpans": [{"resource": {"attributes": [attr("service.name", service)]},
                               "scopeSpans": [{"scope": {"name": "agentfolio.samples"}, "spans": spans}]}]}
