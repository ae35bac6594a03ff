"""The OTLP/HTTP receiver's answers: bad input is a clear 4xx with nothing stored and the
server still healthy; partial success; authentication; back-pressure."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.settings import Settings
from agentfolio.store import Store

NOW_NS = 1_750_000_000 * 10**9


def request_with(*spans: dict[str, Any], service: str = "svc") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    attribute = resource_spans.resource.attributes.add()
    attribute.key, attribute.value.string_value = "service.name", service
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "tests"
    for fields in spans:
        span = scope.spans.add()
        span.trace_id = fields.get("trace_id", bytes(range(1, 17)))
        span.span_id = fields.get("span_id", bytes(range(1, 9)))
        span.parent_span_id = fields.get("parent_span_id", b"")
        span.name = fields.get("name", "work")
        span.start_time_unix_nano = fields.get("start", NOW_NS)
        span.end_time_unix_nano = fields.get("end", NOW_NS + 1000)
    return request


def _server(store: Store, **limits: int) -> Any:
    limited = Store(store.settings.with_(**limits), store.engine, store.blobs) if limits else store
    return create_server(folio=Agentfolio(limited, owned=False), viewer=False)


@pytest.fixture
def client(settings: Settings, store: Store) -> Iterator[tuple[TestClient, dict[str, str], Store]]:
    token, _ = store.accounts.create_token("otel")
    with TestClient(_server(store)) as made:
        yield made, {"Authorization": f"Bearer {token}"}, store


def _post(client: TestClient, headers: dict[str, str], body: bytes, media: str = "application/x-protobuf",
          **extra: str) -> Any:
    return client.post("/v1/traces", content=body, headers={**headers, "Content-Type": media, **extra})


def _stored(client: TestClient, headers: dict[str, str]) -> int:
    answer = client.get("/api/v1/agent_spans", headers=headers)
    assert answer.status_code == 200
    return answer.json()["pagination"]["item_count"]


def _healthy(client: TestClient, headers: dict[str, str]) -> None:
    good = _post(client, headers, request_with({"span_id": b"\x09" * 8}).SerializeToString())
    assert good.status_code == 200, good.text


def _status(answer: Any) -> Status:
    status = Status()
    status.ParseFromString(answer.content)
    return status


def test_a_good_request_is_answered_with_an_export_response(client: Any) -> None:
    made, headers, _ = client
    answer = _post(made, headers, request_with({}).SerializeToString())
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/x-protobuf"
    response = ExportTraceServiceResponse()
    response.ParseFromString(answer.content)
    assert not response.HasField("partial_success")
    assert _stored(made, headers) == 1


def test_gzip_bodies_are_read(client: Any) -> None:
    made, headers, _ = client
    answer = _post(made, headers, gzip.compress(request_with({}).SerializeToString()), **{"Content-Encoding": "gzip"})
    assert answer.status_code == 200, answer.text
    assert _stored(made, headers) == 1


def test_a_span_without_usable_ids_is_rejected_alone(client: Any) -> None:
    made, headers, _ = client
    body = request_with({"span_id": b"\x01" * 8}, {"span_id": b"\x00" * 8},
                        {"trace_id": b"\x02" * 3}).SerializeToString()
    answer = _post(made, headers, body)
    assert answer.status_code == 200
    response = ExportTraceServiceResponse()
    response.ParseFromString(answer.content)
    assert response.partial_success.rejected_spans == 2
    assert "span_id must be 8 bytes" in response.partial_success.error_message
    assert _stored(made, headers) == 1


def test_json_partial_success_is_answered_in_json(client: Any) -> None:
    made, headers, _ = client
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "0102030405060708", "name": "ok",
         "startTimeUnixNano": str(NOW_NS), "endTimeUnixNano": str(NOW_NS + 5), "kind": 2, "futureField": {"x": 1}},
        {"traceId": "", "spanId": "0102030405060709", "name": "no trace", "startTimeUnixNano": str(NOW_NS)}]}]}]}
    answer = _post(made, headers, orjson.dumps(document), "application/json")
    assert answer.status_code == 200, answer.text
    assert answer.json()["partialSuccess"]["rejectedSpans"] == "1"
    spans = made.get("/api/v1/agent_spans", headers=headers).json()["summaries"]
    assert [(s["payload"]["name"], s["payload"]["kind"]) for s in spans] == [("ok", "SERVER")]


def test_base64_ids_in_json_are_read_too(client: Any) -> None:
    import base64

    made, headers, _ = client
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": base64.b64encode(bytes(range(1, 17))).decode(), "spanId": base64.b64encode(b"\x07" * 8).decode(),
         "name": "b64", "startTimeUnixNano": NOW_NS}]}]}]}
    answer = _post(made, headers, orjson.dumps(document), "application/json")
    assert answer.status_code == 200, answer.text
    span = made.get("/api/v1/agent_spans", headers=headers).json()["summaries"][0]
    assert span["payload"]["trace_id"] == bytes(range(1, 17)).hex()
    assert span["status"] == "active"  # no end time: still running


@pytest.mark.parametrize("case", ["truncated", "wrong type", "bomb", "absurd start", "end before start",
                                  "deep protobuf", "deep json", "not json", "bad gzip", "no token", "bad token"])
def test_bad_input_is_a_clear_4xx_and_stores_nothing(client: Any, case: str) -> None:
    made, headers, _ = client
    good = request_with({}, {"span_id": b"\x02" * 8}).SerializeToString()
    expected = 400
    media = "application/x-protobuf"
    extra: dict[str, str] = {}
    send_headers = headers
    if case == "truncated":
        body = good[:-7]
    elif case == "wrong type":
        body, media, expected = good, "text/plain", 415
    elif case == "bomb":
        member = gzip.compress(b"\0" * (64 << 20), compresslevel=9)  # one member inflates to 64 MiB
        body = member * max(1, (30 << 20) // len(member))  # ~30 MB of gzip
        extra, expected = {"Content-Encoding": "gzip"}, 413
    elif case == "absurd start":
        body = request_with({}, {"span_id": b"\x03" * 8, "start": 5}).SerializeToString()
    elif case == "end before start":
        body = request_with({}, {"span_id": b"\x03" * 8, "end": NOW_NS - 10}).SerializeToString()
    elif case == "deep protobuf":
        body = _deep_protobuf(10_000)
    elif case == "deep json":
        body, media = _deep_json(10_000), "application/json"
    elif case == "not json":
        body, media = b"{not json", "application/json"
    elif case == "bad gzip":
        body, extra = b"\x1f\x8b\x08\x00garbage", {"Content-Encoding": "gzip"}
    elif case == "no token":
        body, send_headers, expected = good, {}, 401
    else:
        body, send_headers, expected = good, {"Authorization": "Bearer nope"}, 401
    answer = _post(made, send_headers, body, media, **extra)
    assert answer.status_code == expected, answer.text[:300]
    if answer.headers["content-type"] == "application/x-protobuf":
        assert _status(answer).message
    else:
        assert answer.json()["message"]
    assert _stored(made, headers) == 0
    _healthy(made, headers)


def _deep_json(depth: int) -> bytes:
    # orjson refuses to write past 255 levels; the text is built by hand.
    text = '{"stringValue": "x"}'
    for _ in range(depth):
        text = '{"arrayValue": {"values": [' + text + "]}}"
    return ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0102030405060708090a0b0c0d0e0f10", '
            f'"spanId": "0102030405060708", "startTimeUnixNano": "{NOW_NS}", '
            f'"attributes": [{{"key": "deep", "value": {text}}}]}}]}}]}}]}}').encode()


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _deep_protobuf(depth: int) -> bytes:
    """An attribute value of arrays nested ``depth`` deep, written on the wire by hand
    (the protobuf library itself refuses to build it)."""
    value = _field(1, b"x")  # AnyValue.string_value
    for _ in range(depth):
        value = _field(5, _field(1, value))  # AnyValue.array_value → ArrayValue.values
    key_value = _field(1, b"deep") + _field(2, value)
    span = request_with({}).resource_spans[0].scope_spans[0].spans[0].SerializeToString() + _field(9, key_value)
    return _field(1, _field(2, _field(2, span)))  # request → resource_spans → scope_spans → spans


def test_a_full_queue_answers_429_with_retry_after(settings: Settings, store: Store) -> None:
    token, _ = store.accounts.create_token("otel")
    with TestClient(_server(store, otlp_queue_size=0)) as made:
        answer = _post(made, {"Authorization": f"Bearer {token}"}, request_with({}).SerializeToString())
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "1"


def test_each_account_sees_only_its_spans(client: Any) -> None:
    made, headers, store = client
    other, _ = store.accounts.create_token("someone-else")
    assert _post(made, {"Authorization": f"Bearer {other}"}, request_with({}).SerializeToString()).status_code == 200
    assert _stored(made, headers) == 0
    # The same trace and span ids in another account are another span.
    assert _post(made, headers, request_with({}).SerializeToString()).status_code == 200
    assert _stored(made, headers) == 1
    assert _stored(made, {"Authorization": f"Bearer {other}"}) == 1


def test_decompression_stops_at_the_limit(settings: Settings, store: Store) -> None:
    token, _ = store.accounts.create_token("otel")
    body = request_with({}).SerializeToString()
    with TestClient(_server(store, otlp_max_bytes=len(body) - 1)) as made:
        answer = _post(made, {"Authorization": f"Bearer {token}"}, zlib.compress(body), **{"Content-Encoding": "gzip"})
        assert answer.status_code == 400  # zlib, not gzip framing: corrupt
        answer = _post(made, {"Authorization": f"Bearer {token}"}, gzip.compress(body), **{"Content-Encoding": "gzip"})
        assert answer.status_code == 413


def test_otel_traces_show_in_the_viewer_with_their_strings_escaped(store: Store) -> None:
    token, account = store.accounts.create_token("viewer")
    evil = "<script>alert(1)</script>"
    app = create_server(folio=Agentfolio(store, owned=False), viewer=True, viewer_account=account)
    with TestClient(app) as made:
        sent = request_with({"name": evil})
        sent.resource_spans[0].scope_spans[0].spans[0].attributes.add(key="gen_ai.agent.name").value.string_value = evil
        assert _post(made, {"Authorization": f"Bearer {token}"}, sent.SerializeToString()).status_code == 200
        instance = made.get("/api/v1/agent_instance", headers={"Authorization": f"Bearer {token}"}).json()
        instance_id = instance["summaries"][0]["id"]
        listing = made.get("/traces")
        assert listing.status_code == 200 and instance_id in listing.text
        page = made.get(f"/traces/{instance_id}")
        assert page.status_code == 200
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and evil not in page.text


def test_a_store_that_cannot_write_answers_503_with_retry_after(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentfolio.store.otel_spans import OtelSpans, StoreUnavailable

    made, headers, _ = client

    def unavailable(*_: object) -> None:
        raise StoreUnavailable("the database cannot take spans now (OperationalError)")

    monkeypatch.setattr(OtelSpans, "write", unavailable)
    answer = _post(made, headers, request_with({}).SerializeToString())
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
    assert "cannot take spans" in _status(answer).message


def test_a_conversation_backlog_at_its_limit_answers_503_until_it_is_taken_in(store: Store) -> None:
    token, _ = store.accounts.create_token("otel")
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(_server(store, otlp_backlog=2)) as made:
        worker = made.app.state.folio.conversation_worker()
        worker.stop()  # the conversations fall behind
        first = _post(made, headers, request_with({"span_id": b"\x01" * 8}, {"span_id": b"\x02" * 8}).SerializeToString())
        assert first.status_code == 200
        made.app.state.otlp_ingest.backlog_check_seconds = 0  # read the depth at every request
        later = request_with({"span_id": b"\x03" * 8}).SerializeToString()
        refused = _post(made, headers, later)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert "retry later" in _status(refused).message
        assert _stored(made, headers) == 2  # nothing of the refused request
        worker.drain()  # the conversations catch up: spans are taken again
        assert _post(made, headers, later).status_code == 200
        assert _stored(made, headers) == 3
