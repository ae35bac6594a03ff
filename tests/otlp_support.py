"""Shared pieces of the OTLP tests: a server with a token, exporters from the real SDK
(protobuf, and JSON built by the SDK's own encoder), and reads of what got stored."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP/JSON form of spans, as the specification spells it (hex ids)."""
    document = json_format.MessageToDict(encode_spans(spans))
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for holder in (span, *span.get("links", [])):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in holder:
                            import base64

                            holder[key] = base64.b64decode(holder[key]).hex()
    return document


class JsonSpanExporter(SpanExporter):
    """OTLP/HTTP with JSON bodies: the SDK's encoder, the spec's hex ids, one POST per export."""

    def __init__(self, endpoint: str, token: str) -> None:
        self.endpoint = endpoint
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.answers: list[httpx.Response] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        response = httpx.post(self.endpoint, json=otlp_json(spans), headers=self.headers, timeout=30)
        self.answers.append(response)
        return SpanExportResult.SUCCESS if response.status_code == 200 else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass


def provider(url: str, token: str, *, service: str = "otel-tests", encoding: str = "protobuf",
             batch: bool = True) -> TracerProvider:
    exporter: SpanExporter
    if encoding == "protobuf":
        exporter = OTLPSpanExporter(endpoint=url + "/v1/traces", headers={"Authorization": f"Bearer {token}"})
    else:
        exporter = JsonSpanExporter(url + "/v1/traces", token)
    made = TracerProvider(resource=Resource.create({"service.name": service}))
    made.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    return made


class Relay(SpanExporter):
    """A global tracer provider can be set once per process; tests point it at their
    server.  Only spans of the instrumentation under test (scope name prefix) are sent:
    the server runs in this process too, and its framework traces its own requests."""

    def __init__(self, scope_prefix: str) -> None:
        self.target: SpanExporter | None = None
        self.scope_prefix = scope_prefix

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        chosen = [span for span in spans if span.instrumentation_scope is not None
                  and span.instrumentation_scope.name.startswith(self.scope_prefix)]
        if self.target is None or not chosen:
            return SpanExportResult.SUCCESS
        return self.target.export(chosen)

    def shutdown(self) -> None:
        pass


def serving(store: Any, account: str) -> Any:
    """A server over ``store`` on loopback (uvicorn in a thread of this process: its start does
    not wait for a second interpreter to import everything), and a token of ``account``:
    ``with serving(store, "otel") as (url, token): ...``."""
    from contextlib import contextmanager

    from agentfolio.app import Agentfolio
    from agentfolio.server import create_server
    from tests.storage import InProcessServer

    @contextmanager
    def served() -> Any:
        token, _ = store.accounts.create_token(account)
        server = InProcessServer(create_server(folio=Agentfolio(store, owned=False), viewer=False),
                                 log_level="warning")
        try:
            yield server.url, token
        finally:
            server.stop()

    return served()


def get(url: str, token: str, path: str, **params: Any) -> Any:
    response = httpx.get(url + path, params=params, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def spans_of(url: str, token: str, **filters: Any) -> list[dict[str, Any]]:
    return get(url, token, "/api/v1/agent_spans", page_size=500, **filters)["summaries"]


def messages_of(document: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(role, content kinds) of every message of a durable state, in order."""
    return [(message.get("role"), [content.get("$type") for content in message.get("contents") or []])
            for entry in document["data"]["conversationHistory"] for message in entry.get("messages") or []]


def settle(store: Any, account: Any, timeout: float = 120) -> None:
    """Wait until the conversation work queued for ``account`` is done (a server's worker
    takes it in after answering): polls the application's count of pending sessions."""
    import time

    from agentfolio.app.otlp import OtlpIngest

    ingest = OtlpIngest(store)
    deadline = time.monotonic() + timeout
    while ingest.pending(account):
        if time.monotonic() > deadline:
            raise AssertionError(f"{ingest.pending(account)} session(s) still pending after {timeout} s")
        time.sleep(0.05)


def wait_for_session(url: str, token: str, session_id: str, count: int, timeout: float = 120) -> dict[str, Any]:
    """The stored session once it holds ``count`` messages (conversations follow their
    spans, from the queue a server's worker drains)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        response = httpx.get(f"{url}/api/v1/sessions/{session_id}", headers={"Authorization": f"Bearer {token}"},
                             timeout=30)
        if response.status_code == 200 and len(messages_of(response.json())) >= count:
            return response.json()
        if time.monotonic() > deadline:
            raise AssertionError(f"session {session_id} not ready: {response.status_code} {response.text[:300]}")
        time.sleep(0.1)


def settled_session(url: str, token: str, session_id: str, store: Any) -> dict[str, Any]:
    """The stored session once every conversation of the token's account is taken in."""
    account = store.accounts.authenticate(token)
    settle(store, account)
    response = httpx.get(f"{url}/api/v1/sessions/{session_id}", headers={"Authorization": f"Bearer {token}"},
                         timeout=30)
    assert response.status_code == 200, response.text[:300]
    return response.json()
