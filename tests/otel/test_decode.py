"""Decoding OTLP trace requests: every value kept as sent, in both encodings; bounds refused."""

from __future__ import annotations

import base64
import math
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from agentfolio.otel.decode import MAX_VALUE_DEPTH, OtlpError, decode_request, decompress, media_encoding

NOW = 1_750_000_000 * 10**9

scalars = st.one_of(st.text(max_size=20), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=20)


def to_any(value: Any, target: AnyValue) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, list):
        target.array_value.SetInParent()
        for item in value:
            to_any(item, target.array_value.values.add())
    else:
        target.kvlist_value.SetInParent()
        for key, item in value.items():
            pair = target.kvlist_value.values.add()
            pair.key = key
            to_any(item, pair.value)


def request(attributes: dict[str, Any]) -> ExportTraceServiceRequest:
    made = ExportTraceServiceRequest()
    resource_spans = made.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "svc"
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name, scope_spans.scope.version = "lib", "1.0"
    span = scope_spans.spans.add(trace_id=bytes(range(16)), span_id=b"\x01" * 8, parent_span_id=b"\x02" * 8,
                                 name="op", kind=3, start_time_unix_nano=NOW, end_time_unix_nano=NOW + 9,
                                 trace_state="k=v", dropped_attributes_count=2)
    span.status.code, span.status.message = 2, "boom"
    for key, value in attributes.items():
        to_any(value, span.attributes.add(key=key).value)
    event = span.events.add(name="e", time_unix_nano=NOW + 1)
    event.attributes.add(key="n").value.int_value = 5
    link = span.links.add(trace_id=b"\x09" * 16, span_id=b"\x08" * 8)
    link.attributes.add(key="why").value.string_value = "follows"
    return made


def as_otlp_json(made: ExportTraceServiceRequest) -> bytes:
    document = json_format.MessageToDict(made)
    for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for holder in (span, *span.get("links", [])):
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in holder:
                    holder[key] = base64.b64decode(holder[key]).hex()
    return orjson.dumps(document)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=10), values, max_size=5))
def test_attribute_values_come_back_as_sent_in_both_encodings(attributes: dict[str, Any]) -> None:
    made = request(attributes)
    for decoded in (decode_request(made.SerializeToString(), "protobuf", now_ns=NOW),
                    decode_request(as_otlp_json(made), "json", now_ns=NOW)):
        (span,) = decoded.spans
        assert span.attributes == attributes
        assert (span.trace_id, span.span_id, span.parent_span_id) == (bytes(range(16)).hex(), "01" * 8, "02" * 8)
        assert (span.kind, span.status_code, span.status_message) == ("CLIENT", "ERROR", "boom")
        assert span.events == [{"name": "e", "time_unix_nano": NOW + 1, "attributes": {"n": 5}}]
        assert span.links == [{"trace_id": "09" * 16, "span_id": "08" * 8, "attributes": {"why": "follows"}}]
        assert span.resource["attributes"] == {"service.name": "svc"}
        assert (span.scope["name"], span.scope["version"]) == ("lib", "1.0")
        assert span.dropped == {"attributes": 2} and span.trace_state == "k=v"


def test_depth_at_the_limit_is_read_and_one_past_it_refused() -> None:
    def nested(depth: int) -> Any:
        value: Any = "leaf"
        for _ in range(depth - 1):
            value = [value]
        return value

    (span,) = decode_request(request({"deep": nested(MAX_VALUE_DEPTH)}).SerializeToString(), "protobuf",
                             now_ns=NOW).spans
    assert span.attributes["deep"] == nested(MAX_VALUE_DEPTH)
    with pytest.raises(OtlpError, match="deeper than"):
        decode_request(request({"deep": nested(MAX_VALUE_DEPTH + 1)}).SerializeToString(), "protobuf", now_ns=NOW)


def test_non_finite_doubles_are_kept_as_text() -> None:
    made = request({})
    made.resource_spans[0].scope_spans[0].spans[0].attributes.add(key="x").value.double_value = math.inf
    (span,) = decode_request(made.SerializeToString(), "protobuf", now_ns=NOW).spans
    assert span.attributes["x"] == "inf"


def test_media_types_and_gzip() -> None:
    assert media_encoding("application/x-protobuf") == "protobuf"
    assert media_encoding("application/json; charset=utf-8") == "json"
    with pytest.raises(OtlpError):
        media_encoding("application/grpc")
    import gzip

    assert decompress(gzip.compress(b"abc"), "gzip", 3) == b"abc"
    with pytest.raises(OtlpError, match="over the 2-byte limit"):
        decompress(gzip.compress(b"abc"), "gzip", 2)
    with pytest.raises(OtlpError, match="truncated"):
        decompress(gzip.compress(b"abc" * 100)[:-12], "gzip", 1000)
    with pytest.raises(OtlpError, match="not supported"):
        decompress(b"x", "br", 10)
