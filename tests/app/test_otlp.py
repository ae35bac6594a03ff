"""The OTLP ingest use case: admission bounds, conversations extended or rebuilt when
later spans arrive (taken in from the queue by :meth:`OtlpIngest.drain`), and strings no
database takes as they are (NUL) stored without failing."""

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
        span = scope.spans.add(trace_id=fields.get("trace", b"\x01" * 16), span_id=fields["id"],
                               parent_span_id=fields.get("parent", b""),
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
    first = exported(ingest, account, body({"id": b"\x02" * 8, "start": NOW,
                                            "attributes": chat(["hello\x00there"], "hi")}))
    assert (first.accepted, first.duplicates, first.rejected) == (1, 0, 0)
    ingest.drain()
    assert not ingest.pending(account)
    session_id = first.sessions[0]
    # The second call of the conversation arrives later, with its agent span first in the request.
    second = ingest.export(account, body(
        {"id": b"\x09" * 8, "start": NOW - 100, "name": "invoke_agent A",
         "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "A\x00gent"}},
        {"id": b"\x03" * 8, "start": NOW + 50, "attributes": chat(["hello\x00there", "hi", "more"], "done")}),
        encoding="protobuf")
    assert second.accepted == 2
    ingest.drain()
    assert not ingest.pending(account)
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


def exported(ingest: OtlpIngest, account: Any, body: bytes) -> Any:
    """Export, then take the queued conversation work in."""
    result = ingest.export(account, body, encoding="protobuf")
    ingest.drain()
    assert not ingest.pending(account)
    return result


def test_each_request_appends_only_its_new_messages(store: Store) -> None:
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    session_id = exported(ingest, account, turn(0)).sessions[0]
    first = store.sessions.of(account).info(session_id)
    for index in range(1, 6):
        exported(ingest, account, turn(index))
        # One append per round: the version moves by one and the entries already stored stay.
        assert store.sessions.of(account).info(session_id).version == first.version + index
    assert texts_of(store, account, session_id) == [text for i in range(6) for text in (f"q{i}", f"a{i}")]


def test_a_burst_of_one_conversation_is_one_append(store: Store) -> None:
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    session_id = exported(ingest, account, turn(0)).sessions[0]
    first = store.sessions.of(account).info(session_id)
    for index in range(1, 6):
        ingest.export(account, turn(index), encoding="protobuf")
    assert ingest.pending(account) == 1
    ingest.drain()
    assert store.sessions.of(account).info(session_id).version == first.version + 1
    assert texts_of(store, account, session_id) == [text for i in range(6) for text in (f"q{i}", f"a{i}")]


def test_a_span_arriving_late_is_put_in_its_place(store: Store) -> None:
    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    session_id = exported(ingest, account, turn(0)).sessions[0]
    exported(ingest, account, turn(2))
    exported(ingest, account, turn(1))  # started before turn 2
    exported(ingest, account, turn(3))
    assert texts_of(store, account, session_id) == [text for i in range(4) for text in (f"q{i}", f"a{i}")]


def test_spans_whose_conversation_was_lost_are_taken_in_later(store: Store) -> None:
    """Spans stored while their queued work was lost (set aside after failing, or stored
    before the queue existed) are taken in by the next round of that session: the span
    count does not add up, so the session is built again from all of its spans."""
    from agentfolio.store.registry_tables import otel_work, otel_work_spans

    account = store.accounts.ensure("app")
    ingest = OtlpIngest(store)
    session_id = exported(ingest, account, turn(0)).sessions[0]
    ingest.export(account, turn(1), encoding="protobuf")
    with store.engine.begin() as connection:  # the work of turn 1 is lost
        connection.execute(otel_work_spans.delete())
        connection.execute(otel_work.delete())
    exported(ingest, account, turn(2))
    assert texts_of(store, account, session_id) == [text for i in range(3) for text in (f"q{i}", f"a{i}")]
    # Each model call its own request and response, the one whose work was lost too.
    assert entries_of(store, account, session_id) == [
        entry for i in range(3) for entry in (f"request:q{i}", f"response:a{i}")]


def test_two_servers_extend_one_conversation(store: Store) -> None:
    account = store.accounts.ensure("app")
    servers = [OtlpIngest(store), OtlpIngest(Store.open(store.settings))]
    try:
        session_id = exported(servers[0], account, turn(0)).sessions[0]
        for index in range(1, 6):
            exported(servers[index % 2], account, turn(index))
            exported(servers[(index + 1) % 2], account, turn(index))  # the same batch again
        assert texts_of(store, account, session_id) == [text for i in range(6) for text in (f"q{i}", f"a{i}")]
    finally:
        servers[1].store.close()
