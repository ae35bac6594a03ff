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


def texts_of(store: Store, account: Any, session_id: str) -> list[str]:
    _, document = store.sessions.of(account).get_document(session_id)
    return [m["contents"][0]["text"] for e in document["data"]["conversationHistory"] for m in e["messages"]
            if m.get("role") != "system"]


def entries_of(store: Store, account: Any, session_id: str) -> list[str]:
    """Each entry's kind and the texts of its messages."""
    _, document = store.sessions.of(account).get_document(session_id)
    return [f"{e['$type']}:" + ",".join(m["contents"][0].get("text", "") for m in e["messages"])
            for e in document["data"]["conversationHistory"]]


def turn(index: int, *, start: int | None = None) -> bytes:
    """The chat span of turn ``index``: the history of the turns before it, one new
    question, one answer."""
    history = [text for i in range(index) for text in (f"q{i}", f"a{i}")]
    return body({"id": bytes([index + 1]) * 8, "start": NOW + 1000 * index if start is None else start,
                 "attributes": chat([*history, f"q{index}"], f"a{index}")})


def test_each_request_appends_only_its_new_messages(store: Store) -> None:
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    session_id = ingest.export(account, turn(0), encoding="protobuf").sessions[0]
    first = store.sessions.of(account).info(session_id)
    for index in range(1, 6):
        ingest.export(account, turn(index), encoding="protobuf")
        # One append per request: the version moves by one and the entries already stored stay.
        assert store.sessions.of(account).info(session_id).version == first.version + index
    assert texts_of(store, account, session_id) == [text for i in range(6) for text in (f"q{i}", f"a{i}")]


def test_a_span_arriving_late_is_put_in_its_place(store: Store) -> None:
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    session_id = ingest.export(account, turn(0), encoding="protobuf").sessions[0]
    ingest.export(account, turn(2), encoding="protobuf")
    ingest.export(account, turn(1), encoding="protobuf")  # started before turn 2
    ingest.export(account, turn(3), encoding="protobuf")
    assert texts_of(store, account, session_id) == [text for i in range(4) for text in (f"q{i}", f"a{i}")]


def test_spans_stored_without_their_conversation_are_taken_in_later(store: Store) -> None:
    """Spans whose conversation was not written (a server stopped between the two) are
    taken in by the next request of that session, or by the exporter's retry."""
    from agentfolio.otel.decode import decode_request
    from agentfolio.otel.mapping import map_spans

    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    session_id = ingest.export(account, turn(0), encoding="protobuf").sessions[0]
    ingest.spans.write(account, map_spans(decode_request(turn(1), "protobuf").spans))  # no conversation
    ingest.export(account, turn(2), encoding="protobuf")
    assert texts_of(store, account, session_id) == [text for i in range(3) for text in (f"q{i}", f"a{i}")]
    # Each model call its own request and response, the one stored alone too.
    assert entries_of(store, account, session_id) == [
        entry for i in range(3) for entry in (f"request:q{i}", f"response:a{i}")]

    lost = store.accounts.ensure("lost")
    ingest.spans.write(lost, map_spans(decode_request(turn(0), "protobuf").spans))
    retried = ingest.export(lost, turn(0), encoding="protobuf")
    assert (retried.accepted, retried.duplicates) == (0, 1)
    assert texts_of(store, lost, session_id) == ["q0", "a0"]


def test_two_servers_extend_one_conversation(store: Store) -> None:
    account = store.accounts.ensure("app")
    servers = [OtlpIngest(store), OtlpIngest(Store.open(store.settings))]
    try:
        session_id = servers[0].export(account, turn(0), encoding="protobuf").sessions[0]
        for index in range(1, 6):
            servers[index % 2].export(account, turn(index), encoding="protobuf")
            servers[(index + 1) % 2].export(account, turn(index), encoding="protobuf")  # the same batch again
        assert texts_of(store, account, session_id) == [text for i in range(6) for text in (f"q{i}", f"a{i}")]
    finally:
        servers[1].store.close()
