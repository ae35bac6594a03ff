"""Prompt Envelope 1.0: ``{version, model?, messages: [{id, role, segments, timestamp}]}``.

A message is a list of typed segments, each with its own look.  Reading maps every
segment onto a canonical content, so a read followed by a write gives back the same
JSON value:

==================  ===============================================================
segment             canonical content
==================  ===============================================================
text                TextContent
system_prompt       TextContent, presentation ``style="system_prompt"``, collapsed
long_text           TextContent, presentation ``style="long_text"``, charCount, collapsed
static_var          TemplateVariableContent
memory              MemoryContent (+ collapsed)
skills              SkillsContent (+ collapsed)
tool_overview       ToolCatalogContent (+ collapsed)
tool_call_request   FunctionCallContent, callId generated ``call_<message>_<segment>``
tool_call_result    FunctionResultContent paired with the earliest open request of the
                    same toolName (its callId); ``success`` kept in ``extra``, and
                    ``toolName`` too when no request matches
document            DocumentContent
media               DataContent (``data:`` URL) or UriContent, mediaType ``image/*``
                    (or the data URL's own type when it is of that class); altText in
                    ``extra``
==================  ===============================================================

Messages: ``id`` → messageId, ``timestamp`` (Unix epoch milliseconds) → createdAt as an
ISO 8601 UTC string that encodes the number exactly (see :func:`ms_to_iso`).  Runs of
system/user messages become request entries and runs of assistant/tool messages
response entries; writing flattens them again.  Unknown properties at every level are
kept in the records' ``extra`` and written back.
"""

from __future__ import annotations

import math
import re
from collections import deque
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable

import orjson
from pydantic import ValidationError

from agentfolio.formats.base import ReadResult
from agentfolio.formats.errors import FormatError, InvalidDocumentError, Problem, UnsupportedVersionError, json_pointer
from agentfolio.formats.losses import (
    ConvertOptions,
    Lowered,
    Origin,
    Recorder,
    content_pointer,
    document_text,
    entry_pointer,
    json_text,
    message_pointer,
    set_fields,
    with_extras,
)
from agentfolio.formats.schema_check import check
from agentfolio.model import (
    DataContent,
    DocumentContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    MemoryContent,
    MemoryItem,
    Message,
    OpaqueContent,
    OpaqueEntry,
    PartContent,
    Presentation,
    ReasoningContent,
    RequestEntry,
    ResponseEntry,
    Session,
    SessionData,
    SkillItem,
    SkillsContent,
    TemplateVariableContent,
    TextContent,
    ToolCatalogContent,
    ToolDescription,
    UnknownContent,
    UriContent,
    UsageContent,
)

NAME = "envelope"
VERSION = "1.0"
SCHEMA = "prompt-envelope-1.0.json"

ROLES = ("system", "user", "assistant", "tool")
REQUEST_ROLES = frozenset({"system", "user"})
MEDIA_TYPES = ("image", "audio", "video")

# Segment kind → the properties it owns (everything else on a segment is an unknown
# property, kept in the content's ``extra``).
SEGMENT_KEYS: dict[str, tuple[str, ...]] = {
    "text": ("kind", "content"),
    "system_prompt": ("kind", "content", "collapsed"),
    "long_text": ("kind", "content", "charCount", "collapsed"),
    "static_var": ("kind", "name", "value", "description"),
    "memory": ("kind", "description", "items", "collapsed"),
    "skills": ("kind", "description", "items", "collapsed"),
    "tool_overview": ("kind", "items", "collapsed"),
    "tool_call_request": ("kind", "toolName", "arguments", "collapsed"),
    "tool_call_result": ("kind", "toolName", "result", "success", "collapsed"),
    "document": ("kind", "fileName", "mimeType", "snippet", "sizeBytes", "parsedContent"),
    "media": ("kind", "mediaType", "url", "altText"),
}
MESSAGE_KEYS = ("id", "role", "segments", "timestamp")
ROOT_KEYS = ("version", "model", "messages")
# Kinds folded when a record does not say (agentfolio.present.rules.FOLDED_KINDS).
_FOLDED_BY_DEFAULT = frozenset({"system_prompt", "memory", "skills", "tool_overview", "long_text"})


# -- Timestamps ----------------------------------------------------------------------
#
# The envelope counts epoch milliseconds; the model keeps ISO 8601 strings.  An integer
# count is written with exactly three fraction digits (``…:20.123Z``), any other number
# with at least six (``…:20.123400Z``, ``…:20.000000Z`` for ``1700000000000.0``), so the
# string gives back the very number it came from, integer or float.

MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
                  r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?")


def timestamp_problem(value: Any) -> str | None:
    """Why ``value`` is not a usable envelope timestamp, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None  # the schema says "expected number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"timestamp {value} is not a finite number of milliseconds"
    if value < 0 or math.copysign(1.0, value) < 0:
        return f"timestamp {_number(value)} is before 1970-01-01 (Unix epoch milliseconds cannot be negative)"
    if value > MAX_MS:
        return f"timestamp {_number(value)} is after 9999-12-31 (is it in microseconds or nanoseconds?)"
    return None


def ms_to_iso(value: int | float) -> str:
    """Epoch milliseconds as an ISO 8601 UTC string that :func:`iso_to_ms` reverses exactly."""
    problem = timestamp_problem(value)
    if problem:
        raise ValueError(problem)
    if isinstance(value, int):
        seconds, millis = divmod(value, 1000)
        return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z"
    exact = Decimal(repr(value))
    whole = int(exact // 1000)
    fraction = format((exact - whole * 1000) / 1000, "f")  # "0.xxxxx" or "0"
    digits = fraction.partition(".")[2].rstrip("0").ljust(6, "0")
    return (_EPOCH + timedelta(seconds=whole)).strftime("%Y-%m-%dT%H:%M:%S") + f".{digits}Z"


def iso_to_ms(text: str) -> int | float | None:
    """An ISO 8601 date-time as epoch milliseconds (an int when it is whole and written
    with at most three fraction digits), or None if it is not one.  A time without an
    offset is taken as UTC."""
    match = _ISO.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        offset = timezone.utc if zulu or not sign else timezone(
            (1 if sign == "+" else -1) * timedelta(hours=int(off_h), minutes=int(off_m)))
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0), tzinfo=offset)
    except ValueError:
        return None
    whole = (moment - _EPOCH) // timedelta(seconds=1) * 1000
    if not fraction or (len(fraction) <= 3):
        return whole + int((fraction or "0").ljust(3, "0"))
    try:
        exact = Decimal(whole) + Decimal("0." + fraction) * 1000
    except InvalidOperation:
        return None
    return float(exact)


def _number(value: Any) -> str:
    return orjson.dumps(value).decode() if isinstance(value, (int, float)) and math.isfinite(value) else str(value)


# -- Reading -------------------------------------------------------------------------

def looks_like(document: Any) -> bool:
    return (isinstance(document, dict) and "version" in document and "messages" in document
            and "schemaVersion" not in document)


def validate(document: Any) -> list[Problem]:
    """Version first (a wrong one is refused outright), then the schema and timestamps."""
    if not isinstance(document, dict):
        raise FormatError("expected a Prompt Envelope object {version, messages}, found "
                          + _json_type(document), pointer="")
    if "version" not in document:
        raise UnsupportedVersionError(f'no "version": a Prompt Envelope must say its version; supported: {VERSION}',
                                      pointer="/version")
    if document["version"] != VERSION:
        raise UnsupportedVersionError(f"Prompt Envelope version {_short(document['version'])} is not supported; "
                                      f"supported: {VERSION!r}", pointer="/version")
    stamps: list[Problem] = []
    messages = document.get("messages")
    if isinstance(messages, list):
        for index, message in enumerate(messages):
            if isinstance(message, dict) and "timestamp" in message:
                problem = timestamp_problem(message["timestamp"])
                if problem:
                    stamps.append(Problem(json_pointer(["messages", index, "timestamp"]), problem))
    # A non-finite number reaches the schema check as null: say what it really is.
    taken = {problem.pointer for problem in stamps}
    return stamps + [problem for problem in check(SCHEMA, document) if problem.pointer not in taken]


def read(document: Any, *, strict: bool = True, source: str | None = None) -> ReadResult:
    """Read a parsed Prompt Envelope into the canonical model.

    ``strict`` refuses a document that breaks the schema or has an unusable timestamp
    (InvalidDocumentError lists every problem).  A tolerant read keeps what does not fit
    as read: a segment with problems as an OpaqueContent, a message's bad ``id``/``role``
    /``timestamp`` in its ``extra``, so the write still gives the document back.
    """
    try:
        problems = validate(document)
    except FormatError as error:
        raise error.with_source(source) if source else error
    if problems and strict:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidDocumentError(f"{first.message}{more}", source=source, pointer=first.pointer, problems=problems)
    messages = document.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise FormatError("messages must be an array of objects", source=source, pointer="/messages")
    flagged = {problem.pointer for problem in problems}
    origin = Origin(presentation=True)
    session = _read_session(document, flagged, origin, source)
    return ReadResult(session=session, format=NAME, version=VERSION, problems=problems, origin=origin)


def _read_session(document: dict[str, Any], flagged: set[str], origin: Origin, source: str | None) -> Session:
    reader = _SegmentReader(flagged, origin, source)
    messages = [reader.message(index, message) for index, message in enumerate(document["messages"])]
    entries = group_entries(messages)
    extras = {key: value for key, value in document.items() if key not in ("version", "messages")}
    session = Session(data=SessionData(conversation_history=tuple(entries)))
    origin.add(session, "")
    return with_extras(session, extras)


def group_entries(messages: Iterable[Message]) -> list[RequestEntry | ResponseEntry]:
    """Runs of system/user messages → request entries, assistant/tool runs → responses.

    A message with any other role joins the run before it (a request if it is first).
    """
    entries: list[RequestEntry | ResponseEntry] = []
    run: list[Message] = []
    run_is_request: bool | None = None
    for message in messages:
        is_request = message.role in REQUEST_ROLES if message.role in ROLES else (
            run_is_request if run_is_request is not None else True)
        if run and is_request != run_is_request:
            entries.append(_entry(run_is_request, run))
            run = []
        run.append(message)
        run_is_request = is_request
    if run:
        entries.append(_entry(run_is_request, run))
    return entries


def _entry(is_request: bool | None, messages: list[Message]) -> RequestEntry | ResponseEntry:
    return (RequestEntry if is_request else ResponseEntry)(messages=tuple(messages))


class _SegmentReader:
    def __init__(self, flagged: set[str], origin: Origin, source: str | None) -> None:
        self.flagged = flagged
        self.origin = origin
        self.source = source
        self.open_calls: dict[str, deque[str]] = {}

    def is_flagged(self, pointer: str) -> bool:
        return any(p == pointer or p.startswith(pointer + "/") for p in self.flagged)

    def message(self, index: int, raw: dict[str, Any]) -> Message:
        pointer = json_pointer(["messages", index])
        known: dict[str, Any] = {}
        kept_raw: dict[str, Any] = {}
        if isinstance(raw.get("id"), str):
            known["message_id"] = raw["id"]
        if isinstance(raw.get("role"), str):
            known["role"] = raw["role"]
        stamp = raw.get("timestamp")
        if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and timestamp_problem(stamp) is None:
            known["created_at"] = ms_to_iso(stamp)
        segments = raw.get("segments")
        if isinstance(segments, list) and all(isinstance(s, dict) for s in segments):
            known["contents"] = tuple(self.segment(index, s_index, segment)
                                      for s_index, segment in enumerate(segments))
        field_of = {"message_id": "id", "role": "role", "created_at": "timestamp", "contents": "segments"}
        for name, key in field_of.items():
            if name not in known and key in raw:
                kept_raw[key] = raw[key]  # unusable as read (tolerant read): written back as is
        extras = {key: value for key, value in raw.items() if key not in MESSAGE_KEYS}
        message = with_extras(Message(**known), {**kept_raw, **extras})
        self.origin.add(message, pointer, {"messageId": ("id",), "createdAt": ("timestamp",),
                                           "contents": ("segments",)})
        return message

    def segment(self, message_index: int, index: int, raw: dict[str, Any]) -> Any:
        pointer = json_pointer(["messages", message_index, "segments", index])
        kind = raw.get("kind")
        if kind not in SEGMENT_KEYS or self.is_flagged(pointer):
            content = OpaqueContent.model_validate(raw)
            self.origin.add(content, pointer)
            return content
        try:
            content, names = getattr(self, "_" + kind)(raw, message_index, index)
        except (ValidationError, KeyError, TypeError, ValueError) as error:  # pragma: no cover - schema checked
            raise FormatError(f"cannot read {kind} segment: {error}", source=self.source, pointer=pointer) from None
        extras = {key: value for key, value in raw.items() if key not in SEGMENT_KEYS[kind]}
        content = with_extras(content, {**content.extra, **extras})
        self.origin.add(content, pointer, {**names, "$type": ("kind",), "presentation/collapsed": ("collapsed",),
                                              "presentation/style": ("kind",),
                                              "presentation/charCount": ("charCount",)})
        return content

    @staticmethod
    def _presentation(raw: dict[str, Any], style: str | None = None, **more: Any) -> Presentation:
        return Presentation(collapsed=raw["collapsed"], **({"style": style} if style else {}), **more)

    def _text(self, raw, *_):
        return TextContent(text=raw["content"]), {"text": ("content",)}

    def _system_prompt(self, raw, *_):
        return TextContent(text=raw["content"], presentation=self._presentation(raw, "system_prompt")), \
            {"text": ("content",)}

    def _long_text(self, raw, *_):
        presentation = self._presentation(raw, "long_text", char_count=raw["charCount"])
        return TextContent(text=raw["content"], presentation=presentation), {"text": ("content",)}

    def _static_var(self, raw, *_):
        optional = {"description": raw["description"]} if "description" in raw else {}
        return TemplateVariableContent(name=raw["name"], value=raw["value"], **optional), {}

    def _memory(self, raw, *_):
        optional = {"description": raw["description"]} if "description" in raw else {}
        items = tuple(MemoryItem.model_validate(item) for item in raw["items"])
        return MemoryContent(items=items, presentation=self._presentation(raw), **optional), {}

    def _skills(self, raw, *_):
        optional = {"description": raw["description"]} if "description" in raw else {}
        items = tuple(SkillItem.model_validate(item) for item in raw["items"])
        return SkillsContent(items=items, presentation=self._presentation(raw), **optional), {}

    def _tool_overview(self, raw, *_):
        items = tuple(ToolDescription.model_validate(item) for item in raw["items"])
        return ToolCatalogContent(items=items, presentation=self._presentation(raw)), {}

    def _tool_call_request(self, raw, message_index, index):
        call_id = f"call_{message_index}_{index}"
        self.open_calls.setdefault(raw["toolName"], deque()).append(call_id)
        call = FunctionCallContent(call_id=call_id, name=raw["toolName"], arguments=raw["arguments"],
                                   presentation=self._presentation(raw))
        return call, {"name": ("toolName",), "callId": ()}

    def _tool_call_result(self, raw, message_index, index):
        waiting = self.open_calls.get(raw["toolName"])
        extras: dict[str, Any] = {}
        if waiting:
            call_id = waiting.popleft()
        else:
            call_id = f"result_{message_index}_{index}"
            extras["toolName"] = raw["toolName"]  # no request to take the name from
        extras["success"] = raw["success"]
        result = FunctionResultContent(call_id=call_id, result=raw["result"], presentation=self._presentation(raw))
        return with_extras(result, extras), {"callId": ()}

    def _document(self, raw, *_):
        optional = {"parsed_content": raw["parsedContent"]} if "parsedContent" in raw else {}
        document = DocumentContent(file_name=raw["fileName"], media_type=raw["mimeType"], snippet=raw["snippet"],
                                   size_bytes=raw["sizeBytes"], **optional)
        return document, {"mediaType": ("mimeType",)}

    def _media(self, raw, *_):
        media, url = raw["mediaType"], raw["url"]
        extras = {"altText": raw["altText"]} if "altText" in raw else {}
        names = {"uri": ("url",)}
        if url.startswith("data:"):
            declared = url[5:].split(",", 1)[0].split(";", 1)[0]
            media_type = declared if declared.split("/", 1)[0].lower() == media and "/" in declared else f"{media}/*"
            return with_extras(DataContent(uri=url, media_type=media_type), extras), names
        return with_extras(UriContent(uri=url, media_type=f"{media}/*"), extras), names


# -- Writing -------------------------------------------------------------------------

def write(session: Session) -> dict[str, Any]:
    """The session as a Prompt Envelope.

    Raises FormatError for what an envelope cannot hold (reasoning, usage, entry
    properties...): ``agentfolio.formats.convert`` lowers those first, with a loss
    report.  Presentation a record leaves open takes the kind's default.
    """
    extras = dict(session.extra)
    document: dict[str, Any] = {"version": VERSION}
    if "model" in extras:
        document["model"] = extras.pop("model")
    call_names = {c.call_id: c.name for _, m in session.messages() for c in m.items
                  if isinstance(c, FunctionCallContent) and c.call_id is not None}
    messages = []
    for entry_index, entry in enumerate(session.entries):
        if isinstance(entry, OpaqueEntry):
            raise FormatError(f"an entry of kind {entry.kind!r} has no envelope form; convert the session",
                              pointer=entry_pointer(entry_index))
        for message_index, message in enumerate(entry.items):
            messages.append(_write_message(message, call_names, message_pointer(entry_index, message_index)))
    document["messages"] = messages
    for key, value in extras.items():
        document.setdefault(key, value)
    return document


def dumps(session: Session, *, indent: bool = True) -> bytes:
    return orjson.dumps(write(session), option=orjson.OPT_INDENT_2 if indent else 0)


def _write_message(message: Message, call_names: dict[str, str | None], pointer: str) -> dict[str, Any]:
    extras = message.extra
    written: dict[str, Any] = {}
    if message.message_id is not None:
        written["id"] = message.message_id
    if message.role is not None:
        written["role"] = message.role
    if message.contents is not None:
        written["segments"] = [_write_segment(content, call_names, f"{pointer}/contents/{index}")
                               for index, content in enumerate(message.contents)]
    if message.created_at is not None:
        stamp = iso_to_ms(message.created_at)
        if stamp is None:
            raise FormatError(f"createdAt {message.created_at!r} is not an ISO 8601 time", pointer=pointer + "/createdAt")
        written["timestamp"] = stamp
    for key in MESSAGE_KEYS:
        if key not in written and key not in extras:
            raise FormatError(f"an envelope message needs {key!r}; convert the session to generate it",
                              pointer=pointer)
    for key, value in extras.items():
        written.setdefault(key, value)
    return written


def _collapsed(content: Any, kind: str) -> bool:
    presentation = content.presentation
    if presentation is not None and presentation.collapsed is not None:
        return presentation.collapsed
    return kind in _FOLDED_BY_DEFAULT


def _write_segment(content: Any, call_names: dict[str, str | None], pointer: str) -> dict[str, Any]:
    if isinstance(content, OpaqueContent):
        return dict(content.extra)
    segment = _segment_of(content, call_names)
    if segment is None:
        raise FormatError(f"{content.kind!r} has no envelope segment; convert the session instead of writing it "
                          "directly", pointer=pointer)
    for key, value in content.extra.items():
        segment.setdefault(key, value)
    return segment


def _segment_of(content: Any, call_names: dict[str, str | None]) -> dict[str, Any] | None:
    if isinstance(content, TextContent) and content.text is not None:
        style = content.presentation.style if content.presentation else None
        if style == "system_prompt":
            return {"kind": style, "content": content.text, "collapsed": _collapsed(content, style)}
        if style == "long_text":
            count = content.presentation.char_count
            return {"kind": style, "content": content.text, "charCount": len(content.text) if count is None else count,
                    "collapsed": _collapsed(content, style)}
        return {"kind": "text", "content": content.text}
    if isinstance(content, TemplateVariableContent):
        return {"kind": "static_var", "name": content.name, "value": content.value,
                **({"description": content.description} if content.description is not None else {})}
    if isinstance(content, (MemoryContent, SkillsContent)) and content.items:
        kind = "memory" if isinstance(content, MemoryContent) else "skills"
        return {"kind": kind, **({"description": content.description} if content.description is not None else {}),
                "items": [item.to_json_value() for item in content.items], "collapsed": _collapsed(content, kind)}
    if isinstance(content, ToolCatalogContent) and content.items:
        return {"kind": "tool_overview", "items": [item.to_json_value() for item in content.items],
                "collapsed": _collapsed(content, "tool_overview")}
    if isinstance(content, FunctionCallContent) and content.name is not None and isinstance(content.arguments, dict):
        return {"kind": "tool_call_request", "toolName": content.name, "arguments": content.arguments,
                "collapsed": _collapsed(content, "tool_call_request")}
    if isinstance(content, FunctionResultContent) and isinstance(content.result, str):
        name = content.extra.get("toolName", call_names.get(content.call_id or ""))
        success = content.extra.get("success")
        if not isinstance(name, str) or not isinstance(success, bool):
            return None
        return {"kind": "tool_call_result", "toolName": name, "result": content.result, "success": success,
                "collapsed": _collapsed(content, "tool_call_result")}
    if isinstance(content, DocumentContent) and content.size_bytes is not None and content.uri is None:
        return {"kind": "document", "fileName": content.file_name, "mimeType": content.media_type,
                "snippet": content.snippet, "sizeBytes": content.size_bytes,
                **({"parsedContent": content.parsed_content} if content.parsed_content is not None else {})}
    if isinstance(content, (DataContent, UriContent)) and content.uri is not None:
        media = (content.media_type or "").split("/", 1)[0]
        if media in MEDIA_TYPES:
            return {"kind": "media", "mediaType": media, "url": content.uri}
    return None


# -- Lowering: any canonical session → one the envelope writer holds ----------------

def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Map what an envelope cannot hold onto what it can, reporting each loss."""
    return _EnvelopeLowering(session, Recorder(origin), options or ConvertOptions()).run()


# Envelope fields the model keeps in a content's ``extra`` (no canonical field for them).
_KEPT_IN_EXTRA = frozenset({"altText", "success", "toolName"})


def _fits_extra(kind: str, key: str, value: Any) -> bool:
    return ((kind, key) in (("media", "altText"), ("tool_call_result", "toolName")) and isinstance(value, str)) or (
        (kind, key) == ("tool_call_result", "success") and isinstance(value, bool))


class _EnvelopeLowering:
    def __init__(self, session: Session, recorder: Recorder, options: ConvertOptions) -> None:
        from agentfolio.present.rules import LONG_TEXT_CHARS, call_failed

        self.session = session
        self.rec = recorder
        self.long_text = options.long_text_chars if options.long_text_chars is not None else LONG_TEXT_CHARS
        self.call_failed = call_failed
        self.call_names = {c.call_id: c.name for _, m in session.messages() for c in m.items
                           if isinstance(c, FunctionCallContent) and c.call_id is not None}
        used = [m.message_id for _, m in session.messages() if isinstance(m.message_id, str)]
        self.used_ids = set(used)
        self.seen_ids: set[str] = set()
        self.last_ms: int | float | None = None

    def run(self) -> Lowered:
        session, rec = self.session, self.rec
        extras: dict[str, Any] = {}
        for key, value in session.extra.items():
            if key == "model" and not isinstance(value, str):
                rec.drop(session, "", key, "model", "the envelope's model is a string")
            elif key in ("version", "messages"):
                rec.drop(session, "", key, f"property {key!r}", "the envelope uses that name for its own field")
            else:
                extras[key] = value
        if session.schema_version is not None:
            rec.drop(session, "", "schemaVersion", "schemaVersion", "the envelope has its own version (1.0)")
        if session.data is not None:
            for key in session.data.extra:
                rec.drop(session.data, "/data", key, f"data property {key!r}",
                         "the envelope has no place for session-wide state")
        kept: list[tuple[int, bool, Message]] = []  # (source entry, entry is a request, message)
        for entry_index, entry in enumerate(session.entries):
            kept.extend(self.entry(entry_index, entry))
        if not kept:
            raise FormatError("nothing an envelope can hold: a Prompt Envelope needs at least one message",
                              pointer=self.rec.at(session.data, "/data/conversationHistory") if session.data else "")
        self.check_grouping(kept)
        lowered = Session(data=SessionData(conversation_history=tuple(group_entries(m for _, _, m in kept))))
        return Lowered(with_extras(lowered, extras), rec.losses)

    def entry(self, index: int, entry: Any) -> list[tuple[int, bool, Message]]:
        rec, pointer = self.rec, entry_pointer(index)
        if isinstance(entry, OpaqueEntry):
            rec.drop(entry, pointer, None, f"entry of unknown kind {entry.kind!r}",
                     "the envelope has no entries; an unknown one has no messages to keep")
            return []
        before = len(rec.losses)
        for key in set_fields(entry, skip=("$type", "messages")):
            rec.drop(entry, pointer, key, key, "the envelope has no entries, only messages")
        for key in entry.extra:
            rec.drop(entry, pointer, key, f"entry property {key!r}", "the envelope has no entries, only messages")
        is_request = entry.kind == "request"
        messages = []
        for message_index, message in enumerate(entry.items):
            lowered = self.message(index, message_index, message, is_request, entry.created_at)
            if lowered is not None:
                messages.append((index, is_request, lowered))
        if not messages:
            del rec.losses[before:]
            rec.drop(entry, pointer, None, f"{entry.kind} entry", "none of its messages has anything an envelope holds")
        elif entry.kind not in ("request", "response"):
            rec.approximate(entry, pointer, "$type", f"entry kind {entry.kind!r}",
                            "the envelope has no entries: read back, its messages form request or "
                            "response entries by role")
        return messages

    def check_grouping(self, kept: list[tuple[int, bool, Message]]) -> None:
        """Report entries the envelope's role-run grouping will not give back."""
        runs: list[tuple[bool, list[int]]] = []  # (is a request run, source entry of each message)
        for source, _, message in kept:
            is_request = message.role in REQUEST_ROLES
            if not runs or runs[-1][0] != is_request:
                runs.append((is_request, []))
            runs[-1][1].append(source)
        reported: set[int] = set()
        for is_request, sources in runs:
            for source in dict.fromkeys(sources):
                if source in reported:
                    continue
                entry = self.session.entries[source]
                whole = set(sources) == {source} and sum(source in s for _, s in runs) == 1
                if not whole:
                    reported.add(source)
                    self.rec.approximate(entry, entry_pointer(source), None, "entry boundaries",
                                         "the envelope has no entries: messages are regrouped by role "
                                         "(system/user runs, assistant/tool runs), which splits this entry or "
                                         "merges it with a neighbour")
                elif entry.kind in ("request", "response") and (entry.kind == "request") != is_request:
                    reported.add(source)
                    self.rec.approximate(entry, entry_pointer(source), "$type", f"entry kind {entry.kind!r}",
                                         "its messages' roles make it a "
                                         f"{'request' if is_request else 'response'} entry when read back")

    def message(self, entry_index: int, index: int, message: Message, in_request: bool,
                entry_time: str | None) -> Message | None:
        rec, pointer = self.rec, message_pointer(entry_index, index)
        role = message.role
        if role not in ROLES:
            role = "system" if role == "developer" else ("user" if in_request else "assistant")
            rec.approximate(message, pointer, "role", f"role {message.role!r}",
                            f"the envelope's roles are {', '.join(ROLES)}; written as {role!r}")
        segments = []
        for content_index, content in enumerate(message.items):
            lowered = self.content(content, content_pointer(entry_index, index, content_index), role)
            if lowered is not None:
                segments.append(lowered)
        if not segments:
            return None
        known: dict[str, Any] = {"role": role, "contents": tuple(segments)}
        known["message_id"] = self.message_id(message, pointer)
        known["created_at"] = self.created_at(message, pointer, entry_time)
        for key in set_fields(message, skip=("role", "contents", "messageId", "createdAt")):
            rec.drop(message, pointer, key, key, "an envelope message has no such field")
        extras = {}
        for key, value in message.extra.items():
            if key in MESSAGE_KEYS:
                rec.drop(message, pointer, key, f"property {key!r}", "the envelope uses that name for its own field")
            else:
                extras[key] = value
        return with_extras(Message(**known), extras)

    def message_id(self, message: Message, pointer: str) -> str:
        if isinstance(message.message_id, str):
            return message.message_id  # the envelope does not require ids to be unique
        number = len(self.seen_ids)
        while f"msg-{number}" in self.used_ids or f"msg-{number}" in self.seen_ids:
            number += 1
        generated = f"msg-{number}"
        self.seen_ids.add(generated)
        self.rec.approximate(message, pointer, "messageId", "messageId",
                             "the envelope requires a message id: one was generated")
        return generated

    def created_at(self, message: Message, pointer: str, entry_time: str | None) -> str:
        given = message.created_at
        stamp = iso_to_ms(given) if isinstance(given, str) else None
        if stamp is not None and timestamp_problem(stamp) is None:
            written = ms_to_iso(stamp)
            if written != given:
                self.rec.approximate(message, pointer, "createdAt", "createdAt",
                                     "the envelope keeps epoch milliseconds: the same instant reads back spelled in UTC "
                                     "with millisecond digits")
            self.last_ms = stamp
            return written
        fallback = iso_to_ms(entry_time) if isinstance(entry_time, str) else None
        source = "its entry's createdAt"
        if fallback is None or timestamp_problem(fallback) is not None:
            fallback, source = (self.last_ms, "the previous message's time") if self.last_ms is not None else (0, "0")
        written = ms_to_iso(fallback)
        why = ("the envelope requires a timestamp" if given is None
               else f"{given!r} is not a time the envelope can hold (1970 to 9999)")
        self.rec.approximate(message, pointer, "createdAt", "createdAt", f"{why}; took {source}")
        self.last_ms = fallback
        return written

    # Contents --------------------------------------------------------------------

    def content(self, content: Any, pointer: str, role: str) -> Any:
        rec = self.rec
        if isinstance(content, (ReasoningContent, UsageContent, UnknownContent, OpaqueContent)):
            what = {ReasoningContent: "reasoning", UsageContent: "usage content",
                    UnknownContent: "unknown-wrapped content"}.get(type(content), f"content of kind {content.kind!r}")
            rec.drop(content, pointer, None, what, "the envelope has no segment for it")
            return None
        handler = getattr(self, "_" + type(content).__name__, None)
        lowered, kind = handler(content, pointer, role) if handler else (None, None)
        if lowered is None:
            return None
        return self.carry_extras(content, lowered, kind, pointer)

    def carry_extras(self, source: Any, lowered: Any, kind: str, pointer: str) -> Any:
        """Unknown properties travel with the content, unless the segment owns the name."""
        owned = set(SEGMENT_KEYS[kind]) - _KEPT_IN_EXTRA
        set_by_lowering = set() if lowered is source else set(lowered.extra)
        keep = {}
        for key, value in source.extra.items():
            if key in set_by_lowering:
                continue
            if key in owned or (key in _KEPT_IN_EXTRA and not _fits_extra(kind, key, value)):
                self.rec.drop(source, pointer, key, f"property {key!r}",
                              f"an envelope {kind} segment uses that name for its own field")
            else:
                keep[key] = value
        if lowered is source:
            if len(keep) == len(source.extra):
                return source
            lowered = source.model_copy()
            object.__setattr__(lowered, "__pydantic_extra__", keep)
            return lowered
        return with_extras(lowered, keep)

    def keep_presentation(self, content: Any, pointer: str, allowed: tuple[str, ...]) -> Presentation | None:
        """The parts of a content's presentation the target segment has room for."""
        presentation = content.presentation
        if presentation is None:
            return None
        kept = {}
        for key in set_fields(presentation):
            attribute = {"charCount": "char_count"}.get(key, key)
            if key in allowed:
                kept[attribute] = getattr(presentation, attribute)
            else:
                self.rec.drop(content, pointer, f"presentation/{key}", f"presentation {key}",
                              "the envelope segment it becomes has no such property")
        return Presentation(**kept) if kept else None

    def _TextContent(self, content: TextContent, pointer: str, role: str):
        text = content.text
        if text is None:
            self.rec.approximate(content, pointer, "text", "text", "missing text written as an empty string")
            text = ""
        style = content.presentation.style if content.presentation else None
        if style not in (None, "system_prompt", "long_text"):
            style = None
        if style is None:
            if role == "system":
                style = "system_prompt"
            elif len(text) > self.long_text:
                style = "long_text"
        allowed = {"system_prompt": ("collapsed", "style"), "long_text": ("collapsed", "style", "charCount")}.get(
            style or "", ())
        presentation = self.keep_presentation(content, pointer, allowed)
        if style is not None:
            presentation = (presentation or Presentation()).model_copy(update={"style": style})
        built = TextContent(text=text, **({"presentation": presentation} if presentation else {}))
        return built, style or "text"

    def _ErrorContent(self, content: ErrorContent, pointer: str, role: str):
        code = f" [{content.error_code}]" if content.error_code else ""
        self.rec.approximate(content, pointer, None, "error content",
                             "the envelope has no error segment: written as text"
                             + ("; its details are dropped" if "details" in content.model_fields_set else ""))
        return TextContent(text=f"Error{code}: {content.message or ''}"), "text"

    def _HostedFileContent(self, content: HostedFileContent, pointer: str, role: str):
        self.rec.approximate(content, pointer, None, "hosted file", "the envelope has no hosted files: written as text")
        return TextContent(text=f"[hosted file {content.file_id}]"), "text"

    def _HostedVectorStoreContent(self, content: HostedVectorStoreContent, pointer: str, role: str):
        self.rec.approximate(content, pointer, None, "hosted vector store",
                             "the envelope has no vector stores: written as text")
        return TextContent(text=f"[vector store {content.vector_store_id}]"), "text"

    def _TemplateVariableContent(self, content: TemplateVariableContent, pointer: str, role: str):
        if content.presentation is not None:
            self.keep_presentation(content, pointer, ())
            return content.model_copy(update={"presentation": None}), "static_var"
        return content, "static_var"

    def _listing(self, content: Any, pointer: str, kind: str):
        if not content.items:
            self.rec.drop(content, pointer, None, f"empty {kind}", f"an envelope {kind} segment needs at least one item")
            return None, None
        presentation = self.keep_presentation(content, pointer, ("collapsed",))
        if presentation != content.presentation:
            content = content.model_copy(update={"presentation": presentation})
        return content, kind

    def _MemoryContent(self, content: MemoryContent, pointer: str, role: str):
        return self._listing(content, pointer, "memory")

    def _SkillsContent(self, content: SkillsContent, pointer: str, role: str):
        return self._listing(content, pointer, "skills")

    def _ToolCatalogContent(self, content: ToolCatalogContent, pointer: str, role: str):
        if any(item.parameters is None for item in content.items):
            items = []
            for index, item in enumerate(content.items):
                if item.parameters is None:
                    items.append(item.model_copy(update={"parameters": _parameters_line(item.json_schema)}))
                    self.rec.approximate(content, pointer, None, f"items/{index}/parameters",
                                         "the envelope requires a parameters line: derived from the schema")
                else:
                    items.append(item)
            content = content.model_copy(update={"items": tuple(items)})
        return self._listing(content, pointer, "tool_overview")

    def _FunctionCallContent(self, content: FunctionCallContent, pointer: str, role: str):
        rec, update = self.rec, {}
        if content.call_id is not None:
            rec.drop(content, pointer, "callId", "callId", "the envelope has no call ids: a result is paired with "
                     "the earliest open request for the same tool, and ids are generated when read back")
        if content.name is None:
            rec.approximate(content, pointer, "name", "name", "the envelope requires a tool name: written as ''")
            update["name"] = ""
        arguments = content.arguments
        if not isinstance(arguments, dict):
            parsed = _parse_object(arguments) if isinstance(arguments, str) else None
            if parsed is None:
                update["arguments"] = {} if arguments is None else {"_raw": arguments}
                why = ("the envelope requires an arguments object: written as {}" if arguments is None
                       else 'the envelope requires an arguments object: kept as {"_raw": ...}')
            else:
                update["arguments"] = parsed
                why = "the envelope keeps arguments as an object: the string was parsed"
            rec.approximate(content, pointer, "arguments", "arguments", why)
        presentation = self.keep_presentation(content, pointer, ("collapsed",))
        if presentation != content.presentation:
            update["presentation"] = presentation
        return (content.model_copy(update=update) if update else content), "tool_call_request"

    def _FunctionResultContent(self, content: FunctionResultContent, pointer: str, role: str):
        rec, extras = self.rec, {}
        if content.call_id is not None:
            rec.drop(content, pointer, "callId", "callId", "the envelope has no call ids: a result is paired with "
                     "the earliest open request for the same tool, and ids are generated when read back")
        name = content.extra.get("toolName")
        if isinstance(name, str):
            extras["toolName"] = name
        elif not isinstance(self.call_names.get(content.call_id or ""), str):
            rec.approximate(content, pointer, None, "toolName",
                            "no call with this call id names the tool: written as ''")
            extras["toolName"] = ""
        result = content.result
        if not isinstance(result, str):
            rec.approximate(content, pointer, "result", "result", "the envelope keeps a result as a string: "
                            + ("missing result written as ''" if result is None else "written as JSON text"))
            result = "" if result is None else json_text(result)
        success = content.extra.get("success")
        if not isinstance(success, bool):
            success = not self.call_failed(content)
            rec.approximate(content, pointer, "success", "success",
                            f"the source does not say whether the call succeeded: taken as {str(success).lower()}")
        extras["success"] = success
        presentation = self.keep_presentation(content, pointer, ("collapsed",))
        built = FunctionResultContent(call_id=content.call_id, result=result,
                                      **({"presentation": presentation} if presentation else {}))
        return with_extras(built, extras), "tool_call_result"

    def _DocumentContent(self, content: DocumentContent, pointer: str, role: str):
        update: dict[str, Any] = {}
        if content.uri is not None:
            self.rec.drop(content, pointer, "uri", "uri", "an envelope document card has no link")
            update["uri"] = None
        if content.size_bytes is None:
            self.rec.approximate(content, pointer, "sizeBytes", "sizeBytes",
                                 "the envelope requires a size: written as 0")
            update["size_bytes"] = 0
        if content.presentation is not None:
            self.keep_presentation(content, pointer, ())
            update["presentation"] = None
        if not update:
            return content, "document"
        rebuilt = {"file_name": content.file_name, "media_type": content.media_type, "snippet": content.snippet,
                   "size_bytes": update.get("size_bytes", content.size_bytes)}
        if content.parsed_content is not None:
            rebuilt["parsed_content"] = content.parsed_content
        return DocumentContent(**rebuilt), "document"

    def _media(self, content: Any, pointer: str, uri: str | None, media_type: str | None):
        from agentfolio.present.rules import media_class

        if uri is None:
            self.rec.drop(content, pointer, None, f"{content.kind} content without a uri", "nothing to link to")
            return None, None
        media = media_class(media_type, uri)
        if media is None:
            return self._as_document(content, pointer, uri, media_type)
        if content.presentation is not None:
            self.keep_presentation(content, pointer, ())
        # Lowered to what the reader rebuilds from {mediaType, url}; say so where that differs.
        read_back = _SegmentReader(set(), Origin(), None)._media({"mediaType": media, "url": uri})[0]
        if read_back.media_type != media_type:
            self.rec.approximate(content, pointer, "mediaType", "mediaType",
                                 f"the envelope keeps only the class {media!r}: reads back as {read_back.media_type!r}")
        if type(read_back) is not type(content) and isinstance(content, (DataContent, UriContent)):
            self.rec.approximate(content, pointer, "$type", f"{content.kind} content",
                                 f"an envelope media url reads back as {read_back.kind!r} content")
        return read_back, "media"

    def _as_document(self, content: Any, pointer: str, uri: str, media_type: str | None):
        size, text = _data_uri_payload(uri)
        name = uri.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] if not uri.startswith("data:") else "attachment"
        self.rec.approximate(content, pointer, None, f"{getattr(content, 'kind', 'file')} content",
                             "not image, audio or video: written as an envelope document card, without its "
                             + ("data" if uri.startswith("data:") else "link"))
        optional = {"parsed_content": text} if text is not None else {}
        document = DocumentContent(file_name=name or "attachment", media_type=media_type or "application/octet-stream",
                                   snippet=(text or "")[:200], size_bytes=size if size is not None else 0, **optional)
        return document, "document"

    def _DataContent(self, content: DataContent, pointer: str, role: str):
        return self._media(content, pointer, content.uri, content.media_type)

    def _UriContent(self, content: UriContent, pointer: str, role: str):
        return self._media(content, pointer, content.uri, content.media_type)

    def _PartContent(self, content: PartContent, pointer: str, role: str):
        from agentfolio.present.rules import media_class

        if content.url and media_class(content.content_type, content.url):
            return self._media(content, pointer, content.url, content.content_type)
        text = content.content if content.encoding in (None, "plain") else None
        size = len((content.content or "").encode()) if content.content is not None else 0
        self.rec.approximate(content, pointer, None, "body part",
                             "the envelope has no named parts: written as a document card")
        optional = {"parsed_content": text} if text is not None else {}
        return DocumentContent(file_name=content.name or "part", media_type=content.content_type or "text/plain",
                               snippet=(text or "")[:200], size_bytes=size, **optional), "document"


def _parameters_line(schema: Any) -> str:
    """``city, units?`` from a JSON Schema's properties and required list."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return ""
    required = set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
    return ", ".join(name if name in required else f"{name}?" for name in schema["properties"])


def _parse_object(text: str) -> dict[str, Any] | None:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _data_uri_payload(uri: str) -> tuple[int | None, str | None]:
    """Size in bytes of a ``data:`` URI's payload, and its text if it is text."""
    if not uri.startswith("data:") or "," not in uri:
        return None, None
    header, _, payload = uri[5:].partition(",")
    if header.endswith(";base64"):
        import base64
        import binascii

        try:
            data = base64.b64decode(payload, validate=False)
        except (binascii.Error, ValueError):
            return None, None
    else:
        from urllib.parse import unquote_to_bytes

        data = unquote_to_bytes(payload)
    mime = header.split(";", 1)[0]
    if mime.startswith("text/") or mime in ("application/json", ""):
        try:
            return len(data), data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return len(data), None


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _short(value: Any, limit: int = 40) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["NAME", "VERSION", "looks_like", "read", "write", "dumps", "lower", "validate", "ms_to_iso", "iso_to_ms",
           "group_entries", "document_text"]
