"""The OTLP ingest use case: admission bounds, conversations rebuilt when later spans
arrive, and strings no database takes as they are (NUL) stored without failing."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agentfolio.app.otlp import OtlpIngest
from agentfolio.store import Store

NOW = 1_750_000_000 * 10**9


def body(*spans: dict[str, Any]) -> bytes:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "svc\x00name"
    scope = resource_spans.scope_spans.add()
    for fields in spans:
        span = scope.spans.add(trace_id=b"\x01" * 16, span_id=fields["id"], parent_span_id=fields.get("parent", b""),
                               name=fields.get("name", "chat m"), start_time_unix_nano=fields["start"],
                               end_time_unix_nano=fields["start"] + 10)
        for key, value in fields.get("attributes", {}).items():
            span.attributes.add(key=key).value.string_value = value
    return request.SerializeToString()


def chat(inputs: list[str], output: str) -> dict[str, str]:
    def message(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "parts": [{"type": "text", "content": text}]}

    history = [message("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(inputs)]
    return {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps([message("assistant", output)])}


def test_admission_is_bounded(store: Store) -> None:
    ingest = OtlpIngest(store, queue_size=2)
    assert ingest.admit() and ingest.admit()
    assert not ingest.admit()
    ingest.release()
    assert ingest.admit()


def test_a_later_request_extends_the_conversation_and_nul_is_no_failure(store: Store) -> None:
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    first = ingest.export(account, body({"id": b"\x02" * 8, "start": NOW,
                                         "attributes": chat(["hello\x00there"], "hi")}), encoding="protobuf")
    assert (first.accepted, first.duplicates, first.rejected) == (1, 0, 0)
    assert ingest.wait_idle()
    session_id = first.sessions[0]
    # The second call of the conversation arrives later, with its agent span first in the request.
    second = ingest.export(account, body(
        {"id": b"\x09" * 8, "start": NOW - 100, "name": "invoke_agent A",
         "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "A\x00gent"}},
        {"id": b"\x03" * 8, "start": NOW + 50, "attributes": chat(["hello\x00there", "hi", "more"], "done")}),
        encoding="protobuf")
    assert second.accepted == 2
    assert ingest.wait_idle()
    _, document = store.sessions.of(account).get_document(session_id)
    texts = [m["contents"][0]["text"] for e in document["data"]["conversationHistory"] for m in e["messages"]]
    assert texts == ["hello\x00there", "hi", "more", "done"], texts
    resent = body({"id": b"\x02" * 8, "start": NOW, "attributes": chat(["hello\x00there"], "hi")})
    again = ingest.export(account, resent, encoding="protobuf")
    assert (again.accepted, again.duplicates) == (0, 1)
