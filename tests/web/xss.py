"""Script payloads for the viewer's escaping tests: every text field of a session carries one."""

from __future__ import annotations

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
