"""Reading a Prompt Envelope into the canonical model (see the package docstring for the mapping)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from agentfolio import _json
from agentfolio.formats.base import ReadResult, read_lazily
from agentfolio.formats.envelope.spec import MESSAGE_KEYS, NAME, REQUEST_ROLES, ROLES, SCHEMA, SEGMENT_KEYS, VERSION
from agentfolio.formats.envelope.timestamps import ms_to_iso, timestamp_problem
from agentfolio.formats.errors import FormatError, Problem, UnsupportedVersionError, json_pointer, validated
from agentfolio.formats.losses import ConvertOptions, Origin, with_extras
from agentfolio.formats.schema_check import check
from agentfolio.formats.shared import data_url_type, group_by_role
from agentfolio.model import (
    DataContent,
    DocumentContent,
    FunctionCallContent,
    FunctionResultContent,
    MemoryContent,
    MemoryItem,
    Message,
    OpaqueContent,
    Presentation,
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
    UriContent,
)


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


def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    """Read a parsed Prompt Envelope into the canonical model.

    ``strict`` refuses a document that breaks the schema or has an unusable timestamp
    (InvalidDocumentError lists every problem).  A tolerant read keeps what does not fit
    as read: a segment with problems as an OpaqueContent, a message's bad ``id``/``role``
    /``timestamp`` in its ``extra``, so the write still gives the document back.
    """
    problems = validated(validate, document, strict=strict, source=source)
    messages = document.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise FormatError("messages must be an array of objects", source=source, pointer="/messages")
    flagged = {problem.pointer for problem in problems}
    origin = Origin(presentation=True)
    return read_lazily(lambda: _read_session(document, flagged, origin, source), document, NAME, version=VERSION,
                       problems=problems, origin=origin)


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
    return group_by_role(messages, ROLES, REQUEST_ROLES)


# Where each of a content's fields sits in its segment (see Origin.add).
_Names = dict[str, tuple[str, ...]]


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
        optional: dict[str, Any] = {"style": style} if style else {}
        return Presentation(collapsed=raw["collapsed"], **optional, **more)

    def _text(self, raw: dict[str, Any], *_: int) -> tuple[TextContent, _Names]:
        return TextContent(text=raw["content"]), {"text": ("content",)}

    def _system_prompt(self, raw: dict[str, Any], *_: int) -> tuple[TextContent, _Names]:
        return TextContent(text=raw["content"], presentation=self._presentation(raw, "system_prompt")), \
            {"text": ("content",)}

    def _long_text(self, raw: dict[str, Any], *_: int) -> tuple[TextContent, _Names]:
        presentation = self._presentation(raw, "long_text", char_count=raw["charCount"])
        return TextContent(text=raw["content"], presentation=presentation), {"text": ("content",)}

    def _static_var(self, raw: dict[str, Any], *_: int) -> tuple[TemplateVariableContent, _Names]:
        optional: dict[str, Any] = {"description": raw["description"]} if "description" in raw else {}
        return TemplateVariableContent(name=raw["name"], value=raw["value"], **optional), {}

    def _memory(self, raw: dict[str, Any], *_: int) -> tuple[MemoryContent, _Names]:
        optional: dict[str, Any] = {"description": raw["description"]} if "description" in raw else {}
        items = tuple(MemoryItem.model_validate(item) for item in raw["items"])
        return MemoryContent(items=items, presentation=self._presentation(raw), **optional), {}

    def _skills(self, raw: dict[str, Any], *_: int) -> tuple[SkillsContent, _Names]:
        optional: dict[str, Any] = {"description": raw["description"]} if "description" in raw else {}
        items = tuple(SkillItem.model_validate(item) for item in raw["items"])
        return SkillsContent(items=items, presentation=self._presentation(raw), **optional), {}

    def _tool_overview(self, raw: dict[str, Any], *_: int) -> tuple[ToolCatalogContent, _Names]:
        items = tuple(ToolDescription.model_validate(item) for item in raw["items"])
        return ToolCatalogContent(items=items, presentation=self._presentation(raw)), {}

    def _tool_call_request(self, raw: dict[str, Any], message_index: int,
                           index: int) -> tuple[FunctionCallContent, _Names]:
        call_id = f"call_{message_index}_{index}"
        self.open_calls.setdefault(raw["toolName"], deque()).append(call_id)
        call = FunctionCallContent(call_id=call_id, name=raw["toolName"], arguments=raw["arguments"],
                                   presentation=self._presentation(raw))
        return call, {"name": ("toolName",), "callId": ()}

    def _tool_call_result(self, raw: dict[str, Any], message_index: int,
                          index: int) -> tuple[FunctionResultContent, _Names]:
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

    def _document(self, raw: dict[str, Any], *_: int) -> tuple[DocumentContent, _Names]:
        optional: dict[str, Any] = {"parsed_content": raw["parsedContent"]} if "parsedContent" in raw else {}
        document = DocumentContent(file_name=raw["fileName"], media_type=raw["mimeType"], snippet=raw["snippet"],
                                   size_bytes=raw["sizeBytes"], **optional)
        return document, {"mediaType": ("mimeType",)}

    def _media(self, raw: dict[str, Any], *_: int) -> tuple[DataContent | UriContent, _Names]:
        media, url = raw["mediaType"], raw["url"]
        extras = {"altText": raw["altText"]} if "altText" in raw else {}
        names: _Names = {"uri": ("url",)}
        if url.startswith("data:"):
            declared = data_url_type(url) or ""
            media_type = declared if declared.split("/", 1)[0].lower() == media and "/" in declared else f"{media}/*"
            return with_extras(DataContent(uri=url, media_type=media_type), extras), names
        return with_extras(UriContent(uri=url, media_type=f"{media}/*"), extras), names


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _short(value: Any, limit: int = 40) -> str:
    text = _json.dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"
