"""Lowering any canonical session to what Chat Completions messages hold, with losses."""

from __future__ import annotations

from typing import Any

from agentfolio import _json
from agentfolio.formats.losses import (
    ConvertOptions,
    Loss,
    Lowered,
    Origin,
    Recorder,
    content_pointer,
    drop_entry_fields,
    drop_presentation,
    drop_provider_fields,
    entry_pointer,
    error_text,
    json_text,
    listing_text,
    message_pointer,
    set_fields,
    with_extras,
)
from agentfolio.formats.openai_chat.reader import group_entries
from agentfolio.formats.openai_chat.spec import MESSAGE_EXTRA_KEYS, PART_EXTRA_KEYS, REQUEST_KEYS, ROLES, TOOL_CALL_KIND
from agentfolio.formats.shared import data_url_type
from agentfolio.formats.tools import SPELLINGS, lower_tools
from agentfolio.model import (
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    Message,
    OpaqueContent,
    OpaqueEntry,
    PartContent,
    ReasoningContent,
    Session,
    SessionData,
    TextContent,
    ToolCatalogContent,
    UnknownContent,
    UriContent,
    UsageContent,
)


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Map what Chat Completions messages cannot hold onto what they can, with losses."""
    rec = Recorder(origin)
    extras: dict[str, Any] = {}
    for key, value in session.extra.items():
        if key in REQUEST_KEYS and (key != "model" or isinstance(value, str)):
            extras[key] = value
        else:
            rec.drop(session, "", key, f"property {key!r}",
                     "not a Chat Completions request property (the API refuses unknown ones)")
    if session.schema_version is not None:
        rec.drop(session, "", "schemaVersion", "schemaVersion", "Chat Completions messages have no version")
    if session.data is not None:
        for key in session.data.extra:
            rec.drop(session.data, "/data", key, f"data property {key!r}", "chat messages have no session state")
    messages: list[Message] = []
    result_pointers: dict[int, str] = {}  # where each result stood, should it move
    catalog: list[tuple[Any, Any, str]] = []  # tool catalogs, which become the request's tools
    generated = 0
    for entry_index, entry in enumerate(session.entries):
        pointer = entry_pointer(entry_index)
        if isinstance(entry, OpaqueEntry):
            rec.drop(entry, pointer, None, f"entry of unknown kind {entry.kind!r}", "chat messages have no entries")
            continue
        drop_entry_fields(rec, entry, pointer, "chat messages have no entries, only messages")
        if entry.kind not in ("request", "response"):
            rec.approximate(entry, pointer, "$type", f"entry kind {entry.kind!r}",
                            "read back, its messages form request or response entries by role")
        for index, message in enumerate(entry.items):
            lowered, generated = _lower_message(rec, message, entry_index, index, entry.kind == "request", generated,
                                                result_pointers, catalog)
            messages.extend(lowered)
    messages = _answer_only_calls_made(rec, messages, result_pointers)
    tools = lower_tools(rec, session, "tools", "", extras.get("tools"), SPELLINGS["openai-chat"], catalog)
    if tools is not None:
        extras["tools"] = tools
    lowered_session = Session(data=SessionData(conversation_history=tuple(group_entries(messages))))
    return Lowered(with_extras(lowered_session, extras), rec.losses)


def _lower_message(rec: Recorder, message: Message, entry_index: int, index: int, in_request: bool,
                   generated: int, result_pointers: dict[int, str],
                   catalog: list[tuple[Any, Any, str]]) -> tuple[list[Message], int]:
    pointer = message_pointer(entry_index, index)
    if message.items and all(isinstance(content, ToolCatalogContent) for content in message.items):
        for position, content in enumerate(message.items):
            where = rec.at(content, content_pointer(entry_index, index, position))
            catalog.extend((item, content, where) for item in content.items)  # type: ignore[union-attr]
        rec.approximate(message, pointer, None, "message", "it holds only tool definitions: written as the "
                        "request's tools")
        return [], generated
    role = message.role
    if role not in ROLES:
        role = "tool" if role == "function" else ("user" if in_request else "assistant")
        rec.approximate(message, pointer, "role", f"role {message.role!r}", f"written as {role!r}")
    for key in set_fields(message, skip=("role", "contents", "authorName")):
        rec.drop(message, pointer, key, key, "a chat message has no such field")
    for key in message.extra:
        if key not in MESSAGE_EXTRA_KEYS or message.role != "assistant":
            rec.drop(message, pointer, key, f"message property {key!r}", "the Chat Completions API refuses unknown "
                     "message properties")
    kept: list[Any] = []
    results: list[FunctionResultContent] = []
    for position, content in enumerate(message.items):
        where = content_pointer(entry_index, index, position)
        if isinstance(content, ToolCatalogContent):
            catalog.extend((item, content, rec.at(content, where)) for item in content.items)
            rec.approximate(content, where, None, "tool catalog", "written as the request's tools")
            continue
        drop_provider_fields(rec, content, where, "Chat Completions")
        if isinstance(content, FunctionResultContent):
            results.append(_lower_result(rec, content, where))
            result_pointers[id(results[-1])] = rec.at(content, where)
            continue
        if isinstance(content, FunctionCallContent):
            lowered_call, generated = _lower_call(rec, content, where, generated)
            kept.append(lowered_call)
            continue
        lowered = _lower_content(rec, content, where, role)
        if lowered is not None:
            kept.append(lowered)
    name = {"author_name": message.author_name} if message.author_name is not None else {}
    carried = {k: v for k, v in message.extra.items() if k in MESSAGE_EXTRA_KEYS and message.role == "assistant"}
    out: list[Message] = []
    if kept:
        if role == "tool":
            rec.approximate(message, pointer, "role", "role 'tool'",
                            "a tool message holds only a result: its other contents form an assistant message")
        out.append(with_extras(Message(role=role if role != "tool" else "assistant", contents=tuple(kept), **name),
                               carried))
    if len(results) > 1 or (results and (kept or role != "tool")):
        rec.approximate(message, pointer, None, "message structure",
                        "each tool result is its own tool message in Chat Completions")
    out.extend(Message(role="tool", contents=(result,)) for result in results)
    if not out and not message.items:
        out.append(with_extras(Message(role=role, contents=(), **name), carried))  # an empty message stays one
    elif not out:
        rec.drop(message, pointer, None, "message", "nothing in it has a Chat Completions form")
    return out, generated


def _answer_only_calls_made(rec: Recorder, messages: list[Message], result_pointers: dict[int, str]) -> list[Message]:
    """A tool message must answer a call of an earlier assistant message (the API refuses
    it otherwise): one whose call has no Chat Completions form, or none at all, becomes a
    user message holding the result as text."""
    made: set[str] = set()
    out = []
    for message in messages:
        for content in message.items:
            if isinstance(content, FunctionCallContent) and content.call_id is not None:
                made.add(content.call_id)
            elif isinstance(content, OpaqueContent) and content.extra.get("$type") == TOOL_CALL_KIND:
                call = content.extra.get("call")
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    made.add(call["id"])
        result = message.items[0] if message.role == "tool" and len(message.items) == 1 else None
        if isinstance(result, FunctionResultContent) and result.call_id not in made:
            rec.losses.append(Loss(result_pointers.get(id(result), ""), "tool result",
                                   f"no tool call with id {result.call_id!r} comes before it in Chat Completions "
                                   "form: written as a user message's text", approximated=True))
            text = result.result if isinstance(result.result, str) else json_text(result.result)
            message = Message(role="user", contents=(TextContent(text=text),))
        out.append(message)
    return out


def _lower_call(rec: Recorder, call: FunctionCallContent, pointer: str, generated: int) -> tuple[Any, int]:
    update: dict[str, Any] = {}
    if call.call_id is None:
        generated += 1
        update["call_id"] = f"call_{generated}"
        rec.approximate(call, pointer, "callId", "callId", "a tool call needs an id: one was generated")
    if call.name is None:
        update["name"] = ""
        rec.approximate(call, pointer, "name", "name", "a tool call needs a name: written as ''")
    if not isinstance(call.arguments, str):
        update["arguments"] = _json.dumps(call.arguments if call.arguments is not None else {}).decode()
        if call.arguments is None:
            rec.approximate(call, pointer, "arguments", "arguments", "a tool call needs arguments: written as {}")
    _drop_presentation_and_extras(rec, call, pointer)
    return FunctionCallContent(call_id=update.get("call_id", call.call_id), name=update.get("name", call.name),
                               arguments=update.get("arguments", call.arguments)), generated


def _lower_result(rec: Recorder, result: FunctionResultContent, pointer: str) -> FunctionResultContent:
    value = result.result
    if not isinstance(value, (str, list)):
        rec.approximate(result, pointer, "result", "result", "a tool message's content is text: written as JSON text"
                        if value is not None else "a tool message's content is text: written as ''")
        value = "" if value is None else json_text(value)
    _drop_presentation_and_extras(rec, result, pointer)
    return FunctionResultContent(call_id=result.call_id or "", result=value)


def _drop_presentation_and_extras(rec: Recorder, content: Any, pointer: str,
                                  allowed: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Presentation and unknown properties are dropped (reported); ``allowed`` ones kept."""
    drop_presentation(rec, content, pointer, "chat messages do not record how a content is shown")
    kept = {}
    for key, value in content.extra.items():
        if key in allowed:
            kept[key] = value
        else:
            rec.drop(content, pointer, key, f"property {key!r}", "the Chat Completions API refuses unknown properties")
    return kept


def _lower_content(rec: Recorder, content: Any, pointer: str, role: str) -> Any:
    chat_own = _chat_own(content)
    if chat_own is not None:
        return chat_own
    if isinstance(content, (ReasoningContent, UsageContent, UnknownContent, OpaqueContent, HostedVectorStoreContent)):
        rec.drop(content, pointer, None, f"{content.kind} content", "chat messages have no place for it")
        return None
    media_class = (getattr(content, "media_type", None) or "").split("/", 1)[0]
    allowed = PART_EXTRA_KEYS["image"] if media_class == "image" else (
        PART_EXTRA_KEYS["file"] if isinstance(content, (DataContent, HostedFileContent)) else frozenset())
    kept = _drop_presentation_and_extras(rec, content, pointer, allowed if role == "user" else frozenset())
    if isinstance(content, TextContent):
        return TextContent(text=content.text or "")
    if isinstance(content, ErrorContent):
        rec.approximate(content, pointer, None, "error content", "written as text")
        return TextContent(text=error_text(content))
    text = listing_text(content)
    if text is not None:
        rec.approximate(content, pointer, None, f"{content.kind} content", "chat messages have no such kind: "
                        "written as text")
        return TextContent(text=text)
    if isinstance(content, (DataContent, UriContent, HostedFileContent, PartContent)) and role == "user":
        media_type = getattr(content, "media_type", None) or ""
        uri = getattr(content, "uri", None)
        if isinstance(content, HostedFileContent) and content.file_id:
            return with_extras(HostedFileContent(file_id=content.file_id), kept)
        if uri and media_type.startswith("image/") and isinstance(content, (DataContent, UriContent)):
            declared = data_url_type(uri)
            _report_media_type(rec, content, pointer, declared if declared and declared.startswith("image/")
                               else "image/*", "an image part carries only its URL")
            return with_extras(type(content)(uri=uri, media_type=media_type), kept)
        if isinstance(content, DataContent) and uri:
            _report_media_type(rec, content, pointer, data_url_type(uri), "a file part carries only its data URL")
            return with_extras(DataContent(uri=uri, media_type=media_type or data_url_type(uri)), kept)
    if isinstance(content, PartContent) and content.content is not None and content.encoding != "base64":
        rec.approximate(content, pointer, None, "part content", "chat messages have no named parts: written as "
                        "its text")
        return TextContent(text=content.content)
    label = getattr(content, "uri", None) or getattr(content, "url", None) or getattr(content, "file_id", None)
    media_type = getattr(content, "media_type", None) or getattr(content, "content_type", None) or ""
    if role != "user":
        why = "only user messages carry files and images in Chat Completions"
    elif isinstance(content, UriContent):
        what = "audio" if media_type.startswith("audio/") else "a file"
        why = (f"Chat Completions takes {what} only inline (base64 data) or as an uploaded file id, "
               "never by URL")
    else:
        why = "Chat Completions has no part for it"
    rec.approximate(content, pointer, None, f"{content.kind} content", f"{why}: written as a text mention")
    return TextContent(text=f"[{getattr(content, 'media_type', None) or content.kind}: {label}]")


def _chat_own(content: Any) -> OpaqueContent | None:
    """A Chat Completions part or tool call the model has no kind for, kept whole: as read
    from a chat (an OpaqueContent), or as another format kept it in its escape hatch
    (durable state's ``{"$type": "unknown", "content": ...}``)."""
    kept: Any = None
    if isinstance(content, OpaqueContent):
        kept = dict(content.extra)
    elif isinstance(content, UnknownContent) and isinstance(content.content, dict):
        kept = content.content
    if not isinstance(kept, dict):
        return None
    tag = kept.get("$type")
    if (tag == TOOL_CALL_KIND and isinstance(kept.get("call"), dict)) or (
            tag is None and isinstance(kept.get("type"), str)):
        return with_extras(OpaqueContent(), kept) if not isinstance(content, OpaqueContent) else content
    return None


def _report_media_type(rec: Recorder, content: Any, pointer: str, read_back: str | None, why: str) -> None:
    """A media type the written part does not carry reads back as something else: say so."""
    if content.media_type is not None and content.media_type != read_back:
        rec.approximate(content, pointer, "mediaType", "mediaType",
                        f"{why}: {content.media_type!r} reads back as {read_back or 'none'!r}")
