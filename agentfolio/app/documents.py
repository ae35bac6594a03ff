"""Documents not (yet) stored: read, identify, validate and convert them.

Every front end asks the same questions of a file — what is it, is it valid, what does it
look like in another format and what would that lose — and gets the same answers from
here: one :class:`DocumentReport` for validity, one :func:`identify` for "what kind of
document is this" (sessions in any registered format, span exports, schema versions,
MessageBodies and their schemas).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentfolio.app.span_files import FORMAT_NAME as SPAN_FILE
from agentfolio.app.span_files import SpanFile, looks_like_span_file, read_span_file
from agentfolio.formats import registry
from agentfolio.formats.base import ReadResult
from agentfolio.formats.errors import FormatError, Problem, refuse_if_invalid
from agentfolio.formats.jsonio import DEFAULT_MAX_BYTES, gc_paused, parse_json, read_bytes

if TYPE_CHECKING:
    from agentfolio.formats.convert import Conversion

__all__ = [
    "SPAN_FILE",
    "DocumentReport",
    "Identified",
    "Kind",
    "convert_read",
    "convert_report",
    "identify",
    "identify_all",
    "identify_bytes",
    "one_conversation",
    "read_document",
    "read_file",
    "read_span_path",
    "schema_version_of",
    "span_list",
    "validate_file",
]

Kind = Literal["session", "trace", "schema_version", "body", "body_schema", "invalid"]


def read_document(document: Any, *, strict: bool = False, format_name: str | None = None,
                  source: str | None = None) -> ReadResult:
    """A parsed document as a session, in the format named or else the one detected."""
    fmt = registry.get(format_name) if format_name else registry.detect(document, source=source)
    return fmt.read(document, strict=strict, source=source)


def read_file(path: str | os.PathLike[str], *, strict: bool = False, format_name: str | None = None,
              max_bytes: int = DEFAULT_MAX_BYTES) -> ReadResult:
    """A file (JSON, at most ``max_bytes``) as a session; FormatError on anything wrong.
    An OTLP/JSON span export is read as the one conversation it holds (FormatError, saying
    how many, when it holds several: see :func:`read_span_path`)."""
    data = read_bytes(path, max_bytes=max_bytes)
    if _span_file(data, format_name):
        return one_conversation(read_span_file(data, source=str(path)), strict=strict)
    document = parse_json(data, source=str(path))
    return read_document(document, strict=strict, format_name=format_name, source=str(path))


def _span_file(data: bytes, format_name: str | None) -> bool:
    if format_name == SPAN_FILE:
        return True
    return format_name is None and looks_like_span_file(data)


def read_span_path(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> SpanFile | None:
    """The conversations of an OTLP/JSON span export (None: the file is not one)."""
    data = read_bytes(path, max_bytes=max_bytes)
    return read_span_file(data, source=str(path)) if looks_like_span_file(data) else None


def one_conversation(spans: SpanFile, *, strict: bool = False) -> ReadResult:
    """The one conversation of a span export as a session read; FormatError when it holds
    none or several."""
    refuse_if_invalid(spans.problems, strict=strict, source=spans.source)
    if len(spans.found) != 1:
        what = "no conversation: none of its spans carries model messages" if not spans.found else (
            f"{len(spans.found)} conversations ({', '.join(c.session_id for c in spans.found[:3])}"
            f"{', …' if len(spans.found) > 3 else ''}): `agentfolio show` shows each and `agentfolio import` "
            "stores each as a session")
        raise FormatError(f"an OTLP/JSON span export with {what}", source=spans.source, pointer="")
    return ReadResult(session=spans.found[0].built.session, format=SPAN_FILE, problems=list(spans.problems),
                      notes=spans.notes)


def convert_read(result: ReadResult, to: str, *, strict: bool = False) -> Conversion:
    """A session already read, converted; losses point into the document it was read from."""
    # Imported here: validating a file needs neither conversions nor the model.
    from agentfolio.formats.convert import ConvertOptions, convert

    return convert(result.session, to=to, from_=result.format, origin=result.origin,
                   options=ConvertOptions(strict=strict))


@dataclass
class DocumentReport:
    """What agentfolio says about one document: its format and version, whether it is
    valid (every problem, with a pointer), notes on what was kept without being understood,
    and — when a conversion was asked for — the converted document and what it lost."""

    source: str | None
    valid: bool = False
    format: str | None = None
    version: str | None = None
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    to: str | None = None
    document: Any = None
    losses: list[Any] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.source, "from": self.format, "format": self.format, "version": self.version,
                "valid": self.valid, "problems": [p.to_json() for p in self.problems],
                "notes": [n.to_json() for n in self.notes], "to": self.to, "document": self.document,
                "losses": [loss.to_json() for loss in self.losses]}

    @classmethod
    def of_error(cls, error: FormatError, source: str | None) -> DocumentReport:
        problems = list(error.problems) or [Problem(error.pointer or "", error.message)]
        return cls(source, problems=problems)

    @classmethod
    def of_read(cls, result: ReadResult, source: str | None) -> DocumentReport:
        return cls(source, valid=not result.problems, format=result.format, version=result.version,
                   problems=list(result.problems), notes=list(result.notes))


def validate_file(path: str | os.PathLike[str], *, format_name: str | None = None,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> DocumentReport:
    """The report for one file; never raises for bad content (an unreadable file is a report too).
    An OTLP/JSON span export is valid when every request in it decodes and no span is refused."""
    try:
        data = read_bytes(path, max_bytes=max_bytes)
        if _span_file(data, format_name):
            spans = read_span_file(data, source=str(path))
            return DocumentReport(str(path), valid=not spans.problems, format=SPAN_FILE,
                                  version=f"{spans.spans} spans, {len(spans.found)} conversations",
                                  problems=list(spans.problems), notes=spans.notes)
        result = read_document(parse_json(data, source=str(path)), strict=False, format_name=format_name,
                               source=str(path))
    except FormatError as error:
        return DocumentReport.of_error(error, str(path))
    return DocumentReport.of_read(result, str(path))


def convert_report(document: Any, *, to: str | None, format_name: str | None = None,
                   strict: bool = False) -> DocumentReport:
    """Validity of a parsed document and, with ``to``, the document converted with its losses.
    Raises FormatError for a document that cannot be read at all (or, ``strict``, is invalid)."""
    result = read_document(document, strict=strict, format_name=format_name)
    report = DocumentReport.of_read(result, None)
    if to is not None:
        conversion = convert_read(result, to)
        report.to, report.document, report.losses = to, conversion.result, conversion.losses
    return report


# -- what kind of document is this -----------------------------------------------------------


@dataclass
class Identified:
    """A parsed document and what it turned out to be. ``session``: ``result`` is its
    ReadResult; the other kinds keep the parsed ``document``. Bad content is described
    (``message``, ``problems``), never raised."""

    name: str
    kind: Kind
    size: int
    result: ReadResult | None = None
    document: Any = None
    problems: list[Problem] = field(default_factory=list)
    message: str | None = None
    detected: str | None = None


def _is_span(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("schema_name"), str) and (
        "agent_instance_id" in value or "status" in value or "payload" in value)


def span_list(document: Any) -> list[dict[str, Any]] | None:
    """The spans of a span export: a list of spans, ``{"spans": [...]}``, an API list
    answer (``{"summaries": [...]}`` or ``{"details": {"summaries": ...}}``)."""
    candidates = [document]
    if isinstance(document, dict):
        details = document.get("details")
        candidates += [document.get(key) for key in ("spans", "summaries", "agent_spans")]
        if isinstance(details, dict):
            candidates += [details.get(key) for key in ("spans", "summaries")]
    for candidate in candidates:
        if isinstance(candidate, list) and candidate and all(isinstance(item, dict) for item in candidate) \
                and sum(_is_span(item) for item in candidate) >= max(1, len(candidate) // 2):
            return candidate
    return None


def schema_version_of(document: Any) -> dict[str, Any] | None:
    """A schema version in a document: the API's details, a create request, or a
    registration's ``agent_schema_version``."""
    if not isinstance(document, dict):
        return None
    for candidate in (document, document.get("details"), document.get("agent_schema_version"),
                      document.get("schema_version")):
        if isinstance(candidate, dict) and isinstance(candidate.get("span_type_schemas"), (dict, list)):
            return candidate
    return None


def _looks_like_body_schema(document: Any) -> bool:
    parts = document.get("parts") if isinstance(document, dict) else None
    return isinstance(parts, list) and any(isinstance(p, dict) and ("required" in p or any(
        ch in str(p.get("name", "")) + str(p.get("content_type", "")) for ch in "*?{[")) for p in parts)


def identify(document: Any, *, name: str, size: int) -> Identified:
    """Read a parsed document as whatever it is, tried in order: every session format the
    registry knows, a span export, a schema version, a MessageBody, a MessageBody schema."""
    found = Identified(name, "invalid", size)
    try:
        fmt = registry.detect(document, source=name)
    except FormatError:
        fmt = None
    if fmt is not None and fmt.name == "message-body" and set(document) == {"parts"}:
        fmt = None  # a body (or a body schema) has views of its own, below
    # Anything else with parts (an ACP message: ``role`` + ``parts``) is read as the one
    # message it is, as ``agentfolio show`` reads it: its other properties are reported
    # where they stand and kept, not refused.
    if fmt is not None:
        found.detected = fmt.name
        try:
            found.result = fmt.read(document, strict=False, source=name)
        except FormatError as error:
            found.message = error.message
            found.problems = list(error.problems) or [Problem(error.pointer or "", error.message)]
            return found
        found.kind = "session"
        found.problems = list(found.result.problems)
        return found
    if span_list(document) is not None:
        found.kind, found.detected, found.document = "trace", "span export", document
        return found
    if schema_version_of(document) is not None:
        found.kind, found.detected, found.document = "schema_version", "schema version", document
        return found
    if isinstance(document, (dict, list)) and (isinstance(document, list) or "parts" in document):
        return _identify_body(found, document)
    found.message = ("not a document agentfolio knows: expected a session (" + ", ".join(registry.FORMATS)
                     + "), a span export, a schema version, a MessageBody or a MessageBody schema")
    found.problems = [Problem("", found.message)]
    found.document = document  # still shown, as the JSON it is
    return found


def _identify_body(found: Identified, document: Any) -> Identified:
    from agentfolio.body import BodyError, MessageBody, MessageBodySchema

    schema_first = _looks_like_body_schema(document)
    attempts: list[tuple[Kind, Any]] = [("body_schema", MessageBodySchema), ("body", MessageBody)]
    if not schema_first:
        attempts.reverse()
    errors = []
    for kind, cls in attempts:
        try:
            parsed = cls.parse(document)
        except (BodyError, ValueError) as error:
            errors.append(str(error))
            continue
        found.kind, found.document = kind, parsed
        found.detected = "MessageBody schema" if kind == "body_schema" else "MessageBody"
        return found
    if isinstance(document, list) and document and all(isinstance(part, dict) for part in document):
        # A bare array of parts that breaks the body rules: shown as one message, each
        # problem at its own part (as ``{"parts": [...]}`` would be).
        body_format = registry.get("message-body")
        result = body_format.read({"parts": document}, strict=False, source=found.name)
        result.problems = [Problem(problem.pointer.removeprefix("/parts"), problem.message)
                           for problem in result.problems]
        found.kind, found.detected, found.result, found.problems = "session", "message parts", result, result.problems
        return found
    found.detected = "MessageBody schema" if schema_first else "MessageBody"
    found.message = errors[0]
    found.problems = [Problem("/parts", errors[0])]
    found.document = document
    return found


def identify_all(data: bytes, *, name: str) -> list[Identified]:
    """:func:`identify_bytes`, except that an OTLP/JSON span export is one session per
    conversation in it (named after its agent and conversation)."""
    if not looks_like_span_file(data):
        return [identify_bytes(data, name=name)]
    try:
        spans = read_span_file(data, source=name)
    except FormatError as error:
        return [Identified(name, "invalid", len(data), message=error.message,
                           problems=list(error.problems) or [Problem("", error.message)])]
    if not spans.found:
        message = spans.nothing_found
        return [Identified(name, "invalid", len(data), message=message,
                           problems=[Problem("", message), *spans.problems], detected=SPAN_FILE)]
    found = []
    for conversation in spans.found:
        label = f"{name} · {conversation.built.agent or 'conversation'} · {conversation.session_id}"
        result = ReadResult(session=conversation.built.session, format=SPAN_FILE, problems=list(spans.problems),
                            notes=[Problem("", note) for note in conversation.built.notes])
        found.append(Identified(label[:200], "session", len(data) // len(spans.found), result=result,
                                detected=SPAN_FILE, problems=list(spans.problems)))
    return found


def identify_bytes(data: bytes, *, name: str) -> Identified:
    """:func:`identify` for raw bytes; JSON that does not parse is described, not raised."""
    try:
        document = parse_json(data, source=name)
    except FormatError as error:
        return Identified(name, "invalid", len(data), message=error.message,
                          problems=[Problem(error.pointer or "", error.message)])
    with gc_paused():
        return identify(document, name=name, size=len(data))
