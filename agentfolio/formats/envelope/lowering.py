"""Lowering any canonical session to one the envelope writer holds, reporting each loss."""

from __future__ import annotations

from typing import Any

import orjson

from agentfolio import _json
from agentfolio.formats.envelope.reader import _SegmentReader, group_entries
from agentfolio.formats.envelope.spec import MESSAGE_KEYS, REQUEST_ROLES, ROLES, SEGMENT_KEYS
from agentfolio.formats.envelope.timestamps import iso_to_ms, ms_to_iso, timestamp_problem
from agentfolio.formats.errors import FormatError
from agentfolio.formats.losses import (
    ConvertOptions,
    Lowered,
    Origin,
    Recorder,
    content_pointer,
    drop_entry_fields,
    drop_provider_fields,
    entry_pointer,
    error_text,
    json_text,
    message_pointer,
    set_fields,
    with_extras,
)
from agentfolio.formats.shared import data_url_payload
from agentfolio.model import (
    DataContent,
    DocumentContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    MemoryContent,
    Message,
    OpaqueContent,
    OpaqueEntry,
    PartContent,
    Presentation,
    ReasoningContent,
    Session,
    SessionData,
    SkillsContent,
    TemplateVariableContent,
    TextContent,
    ToolCatalogContent,
    UnknownContent,
    UriContent,
    UsageContent,
)


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Map what an envelope cannot hold onto what it can, reporting each loss."""
    return _EnvelopeLowering(session, Recorder(origin), options or ConvertOptions()).run()


# Envelope fields the model keeps in a content's ``extra`` (no canonical field for them).
_KEPT_IN_EXTRA = frozenset({"altText", "success", "toolName"})


def _fits_extra(kind: str, key: str, value: Any) -> bool:
    return ((kind, key) in (("media", "altText"), ("tool_call_result", "toolName")) and isinstance(value, str)) or (
        (kind, key) == ("tool_call_result", "success") and isinstance(value, bool))


# A content as the envelope segment it becomes, with that segment's kind; (None, None) when dropped.
_Segment = tuple[Any, str | None]


class _EnvelopeLowering:
    def __init__(self, session: Session, recorder: Recorder, options: ConvertOptions) -> None:
        from agentfolio.model.analysis import LONG_TEXT_CHARS, call_failed

        self.session = session
        self.rec = recorder
        self.long_text = options.long_text_chars if options.long_text_chars is not None else LONG_TEXT_CHARS
        self.call_failed = call_failed
        self.call_names = {c.call_id: c.name for _, m in session.messages() for c in m.items
                           if isinstance(c, FunctionCallContent) and c.call_id is not None}
        # Calls lowered so far: a result pairs only with a request before it.
        self.calls_seen: set[str] = set()
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
        drop_entry_fields(rec, entry, pointer, "the envelope has no entries, only messages")
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
                                     "the envelope keeps epoch milliseconds: the same instant reads back spelled "
                                     "in UTC "
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
        drop_provider_fields(rec, content, pointer, "the envelope")
        handler = getattr(self, "_" + type(content).__name__, None)
        lowered, kind = handler(content, pointer, role) if handler else (None, None)
        if lowered is None or kind is None:
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

    def _TextContent(self, content: TextContent, pointer: str, role: str) -> _Segment:
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
        optional: dict[str, Any] = {"presentation": presentation} if presentation else {}
        built = TextContent(text=text, **optional)
        return built, style or "text"

    def _ErrorContent(self, content: ErrorContent, pointer: str, role: str) -> _Segment:
        self.rec.approximate(content, pointer, None, "error content",
                             "the envelope has no error segment: written as text"
                             + ("; its details are dropped" if "details" in content.model_fields_set else ""))
        return TextContent(text=error_text(content)), "text"

    def _HostedFileContent(self, content: HostedFileContent, pointer: str, role: str) -> _Segment:
        self.rec.approximate(content, pointer, None, "hosted file", "the envelope has no hosted files: written as text")
        return TextContent(text=f"[hosted file {content.file_id}]"), "text"

    def _HostedVectorStoreContent(self, content: HostedVectorStoreContent, pointer: str, role: str) -> _Segment:
        self.rec.approximate(content, pointer, None, "hosted vector store",
                             "the envelope has no vector stores: written as text")
        return TextContent(text=f"[vector store {content.vector_store_id}]"), "text"

    def _TemplateVariableContent(self, content: TemplateVariableContent, pointer: str, role: str) -> _Segment:
        if content.presentation is not None:
            self.keep_presentation(content, pointer, ())
            return content.model_copy(update={"presentation": None}), "static_var"
        return content, "static_var"

    def _listing(self, content: Any, pointer: str, kind: str) -> _Segment:
        if not content.items:
            self.rec.drop(content, pointer, None, f"empty {kind}",
                          f"an envelope {kind} segment needs at least one item")
            return None, None
        presentation = self.keep_presentation(content, pointer, ("collapsed",))
        if presentation != content.presentation:
            content = content.model_copy(update={"presentation": presentation})
        return content, kind

    def _MemoryContent(self, content: MemoryContent, pointer: str, role: str) -> _Segment:
        return self._listing(content, pointer, "memory")

    def _SkillsContent(self, content: SkillsContent, pointer: str, role: str) -> _Segment:
        return self._listing(content, pointer, "skills")

    def _ToolCatalogContent(self, content: ToolCatalogContent, pointer: str, role: str) -> _Segment:
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

    def _FunctionCallContent(self, content: FunctionCallContent, pointer: str, role: str) -> _Segment:
        rec = self.rec
        update: dict[str, Any] = {}
        if content.call_id is not None:
            self.calls_seen.add(content.call_id)
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

    def _FunctionResultContent(self, content: FunctionResultContent, pointer: str, role: str) -> _Segment:
        rec = self.rec
        extras: dict[str, Any] = {}
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
        elif content.call_id not in self.calls_seen:
            extras["toolName"] = self.call_names[content.call_id or ""]
            rec.approximate(content, pointer, None, "toolName", "the call with this call id comes after its "
                            "result, and the envelope pairs a result with a request before it: the tool's name "
                            "is written on the result")
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
        optional: dict[str, Any] = {"presentation": presentation} if presentation else {}
        built = FunctionResultContent(call_id=content.call_id, result=result, **optional)
        return with_extras(built, extras), "tool_call_result"

    def _DocumentContent(self, content: DocumentContent, pointer: str, role: str) -> _Segment:
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
        rebuilt: dict[str, Any] = {"file_name": content.file_name, "media_type": content.media_type,
                                   "snippet": content.snippet,
                                   "size_bytes": update.get("size_bytes", content.size_bytes)}
        if content.parsed_content is not None:
            rebuilt["parsed_content"] = content.parsed_content
        return DocumentContent(**rebuilt), "document"

    def _media(self, content: Any, pointer: str, uri: str | None, media_type: str | None) -> _Segment:
        from agentfolio.model.analysis import media_class

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

    def _as_document(self, content: Any, pointer: str, uri: str, media_type: str | None) -> _Segment:
        size, text = data_url_payload(uri)
        name = uri.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] if not uri.startswith("data:") else "attachment"
        self.rec.approximate(content, pointer, None, f"{getattr(content, 'kind', 'file')} content",
                             "not image, audio or video: written as an envelope document card, without its "
                             + ("data" if uri.startswith("data:") else "link"))
        optional: dict[str, Any] = {"parsed_content": text} if text is not None else {}
        document = DocumentContent(file_name=name or "attachment", media_type=media_type or "application/octet-stream",
                                   snippet=(text or "")[:200], size_bytes=size if size is not None else 0, **optional)
        return document, "document"

    def _DataContent(self, content: DataContent, pointer: str, role: str) -> _Segment:
        return self._media(content, pointer, content.uri, content.media_type)

    def _UriContent(self, content: UriContent, pointer: str, role: str) -> _Segment:
        return self._media(content, pointer, content.uri, content.media_type)

    def _PartContent(self, content: PartContent, pointer: str, role: str) -> _Segment:
        from agentfolio.model.analysis import media_class

        if content.url and media_class(content.content_type, content.url):
            return self._media(content, pointer, content.url, content.content_type)
        text = content.content if content.encoding in (None, "plain") else None
        size = len((content.content or "").encode()) if content.content is not None else 0
        self.rec.approximate(content, pointer, None, "body part",
                             "the envelope has no named parts: written as a document card")
        optional: dict[str, Any] = {"parsed_content": text} if text is not None else {}
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
        value = _json.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
