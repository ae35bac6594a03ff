"""OTLP/JSON files — what an OpenTelemetry collector's file exporter writes — read as the
conversations their spans hold.

A file is one ``ExportTraceServiceRequest`` in OTLP's JSON encoding, or one per line (the
file exporter's own layout).  Each request is decoded exactly as the OTLP receiver decodes
one (:mod:`agentfolio.otel.decode`: the same bounds, hex or base64 ids), spans sent twice
count once, and the conversations are built exactly as the receiver builds stored ones
(:func:`agentfolio.otel.conversation.conversations`): validate, show, import and the
viewer see what ``agentfolio serve`` would have stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentfolio.formats.errors import FormatError, Problem

if TYPE_CHECKING:
    from agentfolio.otel.conversation import FoundConversation
    from agentfolio.otel.decode import OtelSpan

__all__ = ["FORMAT_NAME", "SpanFile", "looks_like_span_file", "read_span_file"]

FORMAT_NAME = "otlp-json"
#: How far into a file its first request's marker key must appear.
_SNIFF = 4096


@dataclass
class SpanFile:
    """What an OTLP/JSON file holds."""

    source: str | None
    requests: int = 0
    spans: int = 0
    #: Lines (or the document) that are not OTLP trace requests, and spans refused alone.
    problems: list[Problem] = field(default_factory=list)
    found: list[FoundConversation] = field(default_factory=list)

    @property
    def nothing_found(self) -> str:
        """Why no conversation came out of the file (said when none did)."""
        message = f"an OTLP/JSON span export of {self.spans} spans, none carrying model messages"
        if self.problems:
            message += f"; {len(self.problems)} refused, the first: {self.problems[0].message}"
        return message

    @property
    def notes(self) -> list[Problem]:
        """What each conversation says it could not place, under its session id."""
        return [Problem("", f"{conversation.session_id}: {note}")
                for conversation in self.found for note in conversation.built.notes]


def looks_like_span_file(data: bytes) -> bool:
    """Whether bytes are OTLP/JSON trace requests (cheap: the marker key near the start)."""
    head = data[:_SNIFF].lstrip()
    return head.startswith(b"{") and (b'"resourceSpans"' in head or b'"resource_spans"' in head)


def read_span_file(data: bytes, *, source: str | None = None) -> SpanFile:
    """Every request of the file decoded, its spans mapped and joined into conversations.
    FormatError only when nothing in it is an OTLP trace request."""
    # Imported here: checking an ordinary file never loads protobuf or the OTel mapping.
    from agentfolio.otel.conversation import conversations
    from agentfolio.otel.decode import OtlpError, decode_request
    from agentfolio.otel.mapping import map_spans

    found = SpanFile(source)
    spans: dict[tuple[str, str], OtelSpan] = {}
    chunks = [(0, data)] if _one_document(data) else _lines(data)
    if not chunks:
        raise FormatError("the file is empty", source=source, pointer="")
    for line, chunk in chunks:
        where = f"line {line}: " if line else ""
        try:
            decoded = decode_request(chunk, "json")
        except OtlpError as error:
            found.problems.append(Problem("", f"{where}{error.message}"))
            continue
        found.requests += 1
        found.problems.extend(Problem("", f"{where}{why}") for why in decoded.rejected)
        for span in decoded.spans:
            spans.setdefault((span.trace_id, span.span_id), span)
    if not found.requests:
        first = found.problems[0].message if found.problems else "no trace request in it"
        raise FormatError(f"not an OTLP/JSON trace export: {first}", source=source, pointer="",
                          problems=found.problems)
    found.spans = len(spans)
    found.found = conversations(map_spans(spans.values()))
    return found


def _one_document(data: bytes) -> bool:
    """A single JSON document (pretty-printed or not) rather than one request per line: a
    file exporter's lines are each a whole JSON document, a pretty-printed one's are not."""
    from agentfolio import _json

    body = data.strip()
    if b"\n" not in body:
        return True
    try:
        _json.loads(body.split(b"\n", 1)[0])
    except ValueError:
        return True
    return False


def _lines(data: bytes) -> list[tuple[int, bytes]]:
    return [(number, line) for number, line in enumerate(data.split(b"\n"), 1) if line.strip()]
