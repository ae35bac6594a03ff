"""Script payloads for the viewer's escaping tests: every text field of a session carries one."""

from __future__ import annotations

import json
from typing import Any


def xss_payload(tag: str = "x") -> str:
    return (f"<script>window.__xss=(window.__xss||0)+1</script><img src=x onerror=\"window.__xss=1\">"
            f"\"'><svg onload=window.__xss=1>{tag}</svg>[link](javascript:window.__xss=1)"
            f"<iframe srcdoc=\"<script>parent.__xss=1</script>\"></iframe>")


def xss_session() -> dict[str, Any]:
    """A session whose every text field carries script payloads."""
    p = xss_payload
    history = [
        {"$type": "request", "createdAt": p("created"), "correlationId": p("corr"), "messages": [
            {"role": p("role"), "authorName": p("author"), "createdAt": p("mcreated"), "contents": [
                {"$type": "text", "text": p("text")},
                {"$type": "text", "text": p("system"), "presentation": {"style": "system_prompt"}},
                {"$type": "templateVariable", "name": p("var"), "value": p("value"), "description": p("desc")},
                {"$type": "memory", "description": p("mdesc"), "items": [{"title": p("mt"), "content": p("mc")}]},
                {"$type": "skills", "description": p("sdesc"), "items": [{"name": p("sn"), "description": p("sd")}]},
                {"$type": "toolCatalog", "items": [{"name": p("tn"), "description": p("td"), "parameters": p("tp")}]},
                {"$type": "document", "fileName": p("fn"), "mediaType": p("mt"), "snippet": p("sn"),
                 "parsedContent": p("pc")},
                {"$type": "data", "uri": "javascript:window.__xss=1", "mediaType": "image/png", "altText": p("alt")},
                {"$type": "uri", "uri": "data:text/html,<script>parent.__xss=1</script>", "mediaType": p("mt")},
            ]}]},
        {"$type": "response", "messages": [
            {"role": "assistant", "contents": [
                {"$type": "reasoning", "text": p("reasoning")},
                {"$type": "functionCall", "callId": p("cid"), "name": p("fname"), "arguments": {p("k"): p("v")}},
                {"$type": "functionResult", "callId": p("cid"), "result": p("result")},
                {"$type": "error", "message": p("err"), "errorCode": p("code"), "details": {"x": p("d")}},
                {"$type": p("kind"), "field": p("unknown")},
                {"$type": "text", "text": "![img](javascript:window.__xss=1) <b onmouseover=alert(1)>x</b>"},
            ]}]},
        {"$type": p("entry"), "payload": p("entry payload")},
    ]
    return {"agentfolio": "1", "session": {"schemaVersion": "1.2.0", "data": {"conversationHistory": history}}}


def xss_span_export() -> dict[str, Any]:
    """A span export whose names, ids, statuses, payloads and OpenTelemetry attributes,
    events and links all carry script payloads."""
    p = xss_payload
    otel = {"trace_id": p("trace"), "span_id": p("sid"), "parent_span_id": None, "name": p("oname"),
            "kind": p("okind"), "start_time_unix_nano": 1_767_607_200_000_000_000,
            "end_time_unix_nano": 1_767_607_201_000_000_000, "status": {"code": "ERROR", "message": p("smsg")},
            "attributes": {p("akey"): p("aval"), "gen_ai.input.messages": [
                {"role": "user", "parts": [{"type": "text", "content": p("genai")}]}]},
            "events": [{"name": p("ename"), "time_unix_nano": 1_767_607_200_500_000_000,
                        "attributes": {p("ekey"): p("eval")}}],
            "links": [{"trace_id": p("ltrace"), "span_id": p("lspan"), "attributes": {p("lk"): p("lv")}}],
            "resource": {"attributes": {"service.name": p("svc")}}, "scope": {"name": p("scope")}}
    return {"agent_instance": {"id": p("inst"), "status": p("istatus")}, "spans": [
        {"id": p("id1"), "parent_span_id": None, "schema_name": p("schema"), "status": p("status"),
         "payload": {p("k"): p("v"), "messages": [{"role": "user", "content": p("msg")}]},
         "result_payload": {"outputs": {"messages": [{"role": "assistant", "content": p("answer")}]}},
         "summary": p("summary"), "started_at": "2026-01-05T10:00:00Z", "finished_at": "2026-01-05T10:00:01Z"},
        {"id": p("id2"), "parent_span_id": p("id1"), "schema_name": "otel", "status": "failed", "payload": otel,
         "started_at": "2026-01-05T10:00:00.200Z", "finished_at": "2026-01-05T10:00:00.900Z"},
    ]}


def xss_otlp_request() -> dict[str, Any]:
    """An OTLP/JSON request of one GenAI trace whose names, attribute keys and values,
    events and status message carry script payloads."""
    p = xss_payload

    def attr(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": p("genai")}]}])
    span = {"traceId": "5" * 32, "spanId": "6" * 16, "name": p("span name"), "kind": 1,
            "startTimeUnixNano": "1767607200000000000", "endTimeUnixNano": "1767607201000000000",
            "attributes": [attr("gen_ai.operation.name", "chat"), attr("gen_ai.agent.name", p("agent")),
                           attr(p("attribute key"), p("attribute value")), attr("gen_ai.input.messages", messages)],
            "events": [{"name": p("event"), "timeUnixNano": "1767607200500000000",
                        "attributes": [attr(p("event key"), p("event value"))]}],
            "status": {"code": 2, "message": p("status message")}}
    return {"resourceSpans": [{"resource": {"attributes": [attr("service.name", p("service"))]},
                               "scopeSpans": [{"scope": {"name": p("scope")}, "spans": [span]}]}]}
