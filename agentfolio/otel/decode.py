"""OTLP/HTTP trace requests → :class:`OtelSpan` records, every input bounded.

The wire formats are the OTLP specification's: ``application/x-protobuf`` (an
``ExportTraceServiceRequest``, decoded by ``opentelemetry-proto``) and
``application/json`` (the protobuf JSON mapping with the OTLP exceptions: trace and span
ids are hex strings, enums may be integers, unknown fields are ignored).  Many
exporters send base64 ids in JSON anyway (the plain protobuf mapping); both are read,
told apart by length.

Bounds: the body after decompression (:func:`decompress`), attribute values nested at
most :data:`MAX_VALUE_DEPTH` deep, and span times inside a plausible window.  A request
that breaks one is refused whole (:class:`OtlpError`): nothing of it is stored.  A span
whose ids cannot place it in a trace (wrong length, all zero) is *rejected* alone and
counted, as OTLP's partial success expects.
"""

from __future__ import annotations

import base64
import contextlib
import math
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from agentfolio import _json
from agentfolio._json import too_deep
from agentfolio.errors import AgentfolioError

__all__ = ["DecodedRequest", "Encoding", "OtelSpan", "OtlpError", "OtlpTooLargeError", "decode_request", "decompress",
           "encode_response", "media_encoding"]

Encoding = Literal["protobuf", "json"]

#: Attribute values (arrays and key-value lists) nested deeper than this refuse the request.
MAX_VALUE_DEPTH = 32
#: JSON bodies nest deeper than this only when a value breaks MAX_VALUE_DEPTH (4 levels per value level).
MAX_JSON_DEPTH = 16 + 4 * MAX_VALUE_DEPTH
#: Span times before this (1990-01-01) are not real times.
MIN_TIME_NS = 631_152_000 * 10**9
#: Span times this far past the server's clock are refused (clock skew beyond it is a bug).
MAX_FUTURE_NS = 24 * 3600 * 10**9

SPAN_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_CODES = ("UNSET", "OK", "ERROR")


class OtlpError(AgentfolioError):
    """A request refused whole (HTTP 400 unless a subclass says otherwise)."""

    code = "bad_request"


class OtlpTooLargeError(OtlpError):
    code = "payload_too_large"


class OtlpUnsupportedMediaError(OtlpError):
    code = "unsupported_media_type"


@dataclass(slots=True)
class OtelSpan:
    """One span as sent, in plain values: ids in lowercase hex, times in nanoseconds,
    attributes as a JSON-ready mapping (arrays → lists, key-value lists → objects,
    bytes → base64 text).  Never changed once decoded (not ``frozen``: a frozen
    dataclass sets each field through ``object.__setattr__``, which made building one
    cost as much as decoding its attributes)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str
    start_ns: int
    end_ns: int
    status_code: str
    status_message: str
    attributes: dict[str, Any]
    events: list[dict[str, Any]]
    links: list[dict[str, Any]]
    resource: dict[str, Any]
    scope: dict[str, Any]
    trace_state: str = ""
    flags: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.end_ns > 0

    def to_json(self) -> dict[str, Any]:
        """The whole span, as stored: nothing the exporter sent is left out."""
        body: dict[str, Any] = {
            "trace_id": self.trace_id, "span_id": self.span_id, "parent_span_id": self.parent_span_id,
            "name": self.name, "kind": self.kind, "start_time_unix_nano": self.start_ns,
            "end_time_unix_nano": self.end_ns or None,
            "status": {"code": self.status_code, "message": self.status_message},
            "attributes": self.attributes, "events": self.events, "links": self.links,
            "resource": self.resource, "scope": self.scope,
        }
        if self.trace_state:
            body["trace_state"] = self.trace_state
        if self.flags:
            body["flags"] = self.flags
        if self.dropped:
            body["dropped"] = self.dropped
        return body


@dataclass(slots=True)
class DecodedRequest:
    spans: list[OtelSpan]
    #: One line per rejected span (why), for the partial-success answer.
    rejected: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- transport


def media_encoding(content_type: str | None) -> Encoding:
    """The encoding a Content-Type names; :class:`OtlpUnsupportedMediaError` for anything else."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == "application/x-protobuf":
        return "protobuf"
    if media == "application/json":
        return "json"
    shown = media or "none"
    raise OtlpUnsupportedMediaError(f"Content-Type {shown!r} is not an OTLP encoding: send application/x-protobuf "
                               "or application/json")


def decompress(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The body after ``Content-Encoding`` (identity or gzip), never more than ``limit``
    bytes: a gzip bomb stops at the limit instead of filling memory."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        if len(body) > limit:
            raise OtlpTooLargeError(f"the request body is over the {limit:,}-byte limit")
        return body
    if encoding not in ("gzip", "x-gzip"):
        raise OtlpUnsupportedMediaError(f"Content-Encoding {encoding!r} is not supported: send gzip or none")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as error:
        raise OtlpError(f"the gzip body is corrupt ({error})") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise OtlpTooLargeError(f"the request body decompresses to over the {limit:,}-byte limit")
    if not inflater.eof:
        raise OtlpError("the gzip body is truncated")
    return out


# --------------------------------------------------------------------------- decoding


def decode_request(body: bytes, encoding: Encoding, *, now_ns: int | None = None) -> DecodedRequest:
    """Every span of an ``ExportTraceServiceRequest``; :class:`OtlpError` when the request
    cannot be read or breaks a bound (then nothing of it may be stored)."""
    request = _parse(body, encoding)
    limit = (now_ns if now_ns is not None else time.time_ns()) + MAX_FUTURE_NS
    decoded = DecodedRequest([])
    for r_index, resource_spans in enumerate(request.resource_spans):
        resource = {"attributes": _attributes(resource_spans.resource.attributes, f"resourceSpans[{r_index}]"),
                    "schema_url": resource_spans.schema_url or None}
        if resource_spans.resource.dropped_attributes_count:
            resource["dropped_attributes_count"] = resource_spans.resource.dropped_attributes_count
        for s_index, scope_spans in enumerate(resource_spans.scope_spans):
            scope_msg = scope_spans.scope
            scope = {"name": scope_msg.name, "version": scope_msg.version or None,
                     "attributes": _attributes(scope_msg.attributes, f"scopeSpans[{s_index}].scope"),
                     "schema_url": scope_spans.schema_url or None}
            for index, span in enumerate(scope_spans.spans):
                where = f"resourceSpans[{r_index}].scopeSpans[{s_index}].spans[{index}]"
                problem = _id_problem(span)
                if problem:
                    decoded.rejected.append(f"{where}: {problem}")
                    continue
                decoded.spans.append(_span(span, where, resource, scope, limit))
    return decoded


def _parse(body: bytes, encoding: Encoding) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    if encoding == "protobuf":
        try:
            request.ParseFromString(body)
        except DecodeError:
            raise OtlpError("the body is not an ExportTraceServiceRequest protobuf (truncated, malformed, "
                            "or nested deeper than the decoder allows)") from None
        return request
    try:
        document = _json.loads(body)
    except orjson.JSONDecodeError as error:
        raise OtlpError(f"the body is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise OtlpError('an OTLP/JSON trace request is an object: {"resourceSpans": [...]}')
    if too_deep(document, MAX_JSON_DEPTH):
        raise OtlpError(f"attribute values nest deeper than {MAX_VALUE_DEPTH} levels")
    _hex_ids_to_base64(document)
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True, max_recursion_depth=MAX_JSON_DEPTH)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as error:
        raise OtlpError(f"the body is not an OTLP/JSON trace request: {_clip(str(error))}") from None
    return request


_ID_KEYS = {"traceId": 16, "trace_id": 16, "spanId": 8, "span_id": 8, "parentSpanId": 8, "parent_span_id": 8}


def _hex_ids_to_base64(document: dict[str, Any]) -> None:
    """OTLP/JSON ids are hex; protobuf's JSON mapping reads bytes as base64.  A hex id
    (twice its byte length in characters) is rewritten; anything else is left for the
    base64 reader, which refuses what is neither."""
    for holder in _id_holders(document):
        for key, size in _ID_KEYS.items():
            value = holder.get(key)
            if isinstance(value, str) and len(value) == 2 * size:
                with contextlib.suppress(ValueError):
                    holder[key] = base64.b64encode(bytes.fromhex(value)).decode()


def _id_holders(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for resource_spans in _list(document, "resourceSpans", "resource_spans"):
        for scope_spans in _list(resource_spans, "scopeSpans", "scope_spans"):
            for span in _list(scope_spans, "spans"):
                if isinstance(span, dict):
                    yield span
                    for link in _list(span, "links"):
                        if isinstance(link, dict):
                            yield link


def _list(holder: Any, *keys: str) -> list[Any]:
    if not isinstance(holder, dict):
        return []
    for key in keys:
        value = holder.get(key)
        if isinstance(value, list):
            return value
    return []


def _id_problem(span: Any) -> str | None:
    if len(span.trace_id) != 16 or not any(span.trace_id):
        return f"trace_id must be 16 bytes, not all zero (got {len(span.trace_id)} bytes)"
    if len(span.span_id) != 8 or not any(span.span_id):
        return f"span_id must be 8 bytes, not all zero (got {len(span.span_id)} bytes)"
    if span.parent_span_id and len(span.parent_span_id) != 8:
        return f"parent_span_id must be empty or 8 bytes (got {len(span.parent_span_id)} bytes)"
    return None


def _span(span: Any, where: str, resource: dict[str, Any], scope: dict[str, Any], limit_ns: int) -> OtelSpan:
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    if not MIN_TIME_NS <= start <= limit_ns:
        raise OtlpError(f"{where}: start_time_unix_nano {start} is not a plausible time "
                        "(before 1990 or more than a day ahead of the server's clock)")
    if end and not start <= end <= limit_ns:
        raise OtlpError(f"{where}: end_time_unix_nano {end} is before the start or more than a day ahead "
                        "of the server's clock")
    # Most spans have neither events nor links: iterating an empty repeated field costs
    # as much as a few attributes, testing it a fraction.
    events = []
    for e_index, event in enumerate(span.events) if span.events else ():
        if event.time_unix_nano and not MIN_TIME_NS <= event.time_unix_nano <= limit_ns:
            raise OtlpError(f"{where}.events[{e_index}]: time_unix_nano {event.time_unix_nano} is not a "
                            "plausible time")
        item: dict[str, Any] = {"name": event.name, "time_unix_nano": event.time_unix_nano or None,
                                "attributes": _attributes(event.attributes, f"{where}.events[{e_index}]")}
        if event.dropped_attributes_count:
            item["dropped_attributes_count"] = event.dropped_attributes_count
        events.append(item)
    links = []
    for l_index, link in enumerate(span.links) if span.links else ():
        item = {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(),
                "attributes": _attributes(link.attributes, f"{where}.links[{l_index}]")}
        if link.trace_state:
            item["trace_state"] = link.trace_state
        if link.flags:
            item["flags"] = link.flags
        if link.dropped_attributes_count:
            item["dropped_attributes_count"] = link.dropped_attributes_count
        links.append(item)
    dropped = {name: count for name, count in (("attributes", span.dropped_attributes_count),
                                                ("events", span.dropped_events_count),
                                                ("links", span.dropped_links_count)) if count} \
        if span.dropped_attributes_count or span.dropped_events_count or span.dropped_links_count else {}
    kind = SPAN_KINDS[span.kind] if 0 <= span.kind < len(SPAN_KINDS) else str(span.kind)
    status = STATUS_CODES[span.status.code] if 0 <= span.status.code < len(STATUS_CODES) else str(span.status.code)
    return OtelSpan(
        trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex() if span.parent_span_id else None,
        name=span.name, kind=kind, start_ns=start, end_ns=end, status_code=status,
        status_message=span.status.message, attributes=_attributes(span.attributes, where), events=events,
        links=links, resource=resource, scope=scope, trace_state=span.trace_state, flags=span.flags,
        dropped=dropped)


def _attributes(pairs: Any, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        # Strings and integers (nearly every attribute) without a call each.
        value = pair.value
        which = value.WhichOneof("value")
        if which == "string_value":
            out[pair.key] = value.string_value
        elif which == "int_value":
            out[pair.key] = value.int_value
        else:
            out[pair.key] = _value(value, 1, where, pair.key)
    return out


def _value(value: AnyValue, depth: int, where: str, key: str) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else str(number)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if depth >= MAX_VALUE_DEPTH:
        raise OtlpError(f"{where}: attribute {_clip(key)!r} nests values deeper than {MAX_VALUE_DEPTH} levels")
    if which == "array_value":
        return [_value(item, depth + 1, where, key) for item in value.array_value.values]
    return {pair.key: _value(pair.value, depth + 1, where, key) for pair in value.kvlist_value.values}


# --------------------------------------------------------------------------- answers


def encode_response(encoding: Encoding, *, rejected: int = 0, message: str = "") -> tuple[bytes, str]:
    """An ``ExportTraceServiceResponse`` (with ``partial_success`` when something was
    rejected or needs saying) in the request's encoding, and its Content-Type."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if encoding == "protobuf":
        return response.SerializeToString(), "application/x-protobuf"
    document = json_format.MessageToDict(response)
    return _json.dumps(document), "application/json"


def encode_status(encoding: Encoding, code: int, message: str) -> tuple[bytes, str]:
    """A ``google.rpc.Status`` error body, as OTLP/HTTP failures carry."""
    from google.rpc.status_pb2 import Status

    status = Status(code=code, message=message)
    if encoding == "protobuf":
        return status.SerializeToString(), "application/x-protobuf"
    return _json.dumps(json_format.MessageToDict(status)), "application/json"


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

