"""LangChain messages as ``messages_to_dict`` writes them: ``[{"type": "human"|"ai"|"system"|"tool",
"data": {"content", "additional_kwargs", "response_metadata", "name", "id", ...}}]``.

=========================================  =====================================================
LangChain                                   canonical
=========================================  =====================================================
``human`` / ``ai`` / ``system`` / ``tool``  roles user / assistant / system / tool
``content`` string                          one text content
``content`` blocks (v1 standard)            ``text`` → text, ``reasoning`` → reasoning,
                                            ``image``/``audio``/``video``/``file`` by ``url``,
                                            ``base64`` + ``mime_type`` or ``file_id`` → uri / data /
                                            hostedFile; anything else kept whole
``tool_calls``                              functionCall contents (``args`` kept as the object)
a ``tool`` message                          one functionResult (``tool_call_id``; ``status`` and
                                            ``artifact`` in its ``extra``)
``usage_metadata``                          a usage content, last in the message
``name`` / ``id``                           authorName / messageId
``additional_kwargs``, ``response_metadata``  kept in the message's ``extra``
=========================================  =====================================================

Read → write gives the same JSON value; ``messages_from_dict`` reads what we write.
"""

from __future__ import annotations

from typing import Any

from agentfolio.formats.base import FunctionFormat, ReadResult, read_lazily
from agentfolio.formats.errors import FormatError, Problem, validated
from agentfolio.formats.losses import ConvertOptions, Lowered, Origin, Recorder, json_text, with_extras
from agentfolio.formats.provider import (
    FORM_KEY,
    Target,
    add_extras,
    build,
    check_type,
    data_url,
    extras_without_form,
    form,
    is_kept_whole,
    json_arguments,
    kept_value,
    kept_whole,
    lower_messages,
    rest,
    split_data_url,
)
from agentfolio.formats.shared import group_by_role
from agentfolio.model import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    Message,
    OpaqueContent,
    ReasoningContent,
    Session,
    SessionData,
    TextContent,
    UriContent,
    Usage,
    UsageContent,
)

NAME = "langchain"
TYPES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
TYPE_OF_ROLE = {role: kind for kind, role in TYPES.items()}
ROLES = ("system", "user", "assistant", "tool")
_MEDIA = ("image", "audio", "video", "file")
_SCAN = 64


def looks_like(document: Any) -> bool:
    return isinstance(document, list) and bool(document) and all(
        isinstance(m, dict) and isinstance(m.get("type"), str) and isinstance(m.get("data"), dict)
        for m in document[:_SCAN])


def validate(document: Any) -> list[Problem]:
    problems: list[Problem] = []
    if not check_type(problems, "", document, list, "an array of messages as messages_to_dict writes them"):
        return problems
    for index, message in enumerate(document):
        pointer = f"/{index}"
        if not check_type(problems, pointer, message, dict, "a message object"):
            continue
        check_type(problems, pointer + "/type", message.get("type"), str, "a message type")
        data = message.get("data")
        if not check_type(problems, pointer + "/data", data, dict, "an object"):
            continue
        content = data.get("content")
        if not isinstance(content, (str, list)):
            problems.append(Problem(pointer + "/data/content", "expected a string or an array of content blocks"))
        calls = data.get("tool_calls")
        if calls is not None and check_type(problems, pointer + "/data/tool_calls", calls, list, "an array"):
            for c_index, call in enumerate(calls):
                where = f"{pointer}/data/tool_calls/{c_index}"
                if check_type(problems, where, call, dict, "a tool call object"):
                    check_type(problems, where + "/name", call.get("name"), str, "a string")
                    check_type(problems, where + "/args", call.get("args"), dict, "an object")
        if message.get("type") == "tool":
            check_type(problems, pointer + "/data/tool_call_id", data.get("tool_call_id"), str, "a string")
    return problems


# -- reading ------------------------------------------------------------------------------

def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    problems = validated(validate, document, strict=strict, source=source)
    if not isinstance(document, list):
        raise FormatError("expected an array of LangChain messages", source=source, pointer="")
    origin = Origin()
    return read_lazily(lambda: _read_session(document, origin), document, NAME, version="messages_to_dict",
                       problems=problems, origin=origin)


def _read_session(document: list[Any], origin: Origin) -> Session:
    messages: list[Message] = []
    for index, raw in enumerate(document):
        message = _read_message(raw, f"/{index}", origin) if isinstance(raw, dict) else None
        if message is None:
            kept = kept_whole(NAME, raw, "message")
            origin.add(kept, f"/{index}", {"value": ()})
            message = with_extras(Message(role=messages[-1].role if messages else "user", contents=(kept,)),
                                  {FORM_KEY: "item"})
        origin.add(message, f"/{index}", {"authorName": ("data", "name"), "messageId": ("data", "id")})
        messages.append(message)
    entries = group_by_role(messages, ROLES, frozenset({"system", "user"}))
    session = Session(data=SessionData(conversation_history=tuple(entries)))
    origin.add(session, "")
    return session


def _read_message(raw: dict[str, Any], pointer: str, origin: Origin) -> Message | None:
    kind, data = raw.get("type"), raw.get("data")
    if kind not in TYPES or not isinstance(data, dict) or set(raw) != {"type", "data"} or data.get(
            "type", kind) != kind or not isinstance(data.get("content"), (str, list)):
        return None
    role = TYPES[kind]
    skip = ["content", "type"]
    known: dict[str, Any] = {"role": role}
    for wire, attribute in (("name", "author_name"), ("id", "message_id")):
        if isinstance(data.get(wire), str):
            known[attribute] = data[wire]
            skip.append(wire)
    extras = rest(data, *skip)
    # How this message was spelled where the model holds it one way (see provider.FORM_KEY).
    forms = [name for name, present in (("untyped", "type" not in data),
                                        ("no-calls", kind == "ai" and "tool_calls" not in data)) if present]
    contents: list[Any] = []
    base = pointer + "/data"
    if kind == "tool":
        if not isinstance(data.get("tool_call_id"), str):
            return None
        result = build(FunctionResultContent, {k: extras.pop(k) for k in ("artifact", "status") if k in extras},
                       call_id=data["tool_call_id"], result=data["content"])
        extras.pop("tool_call_id")
        origin.add(result, base, {"callId": ("tool_call_id",), "result": ("content",)})
        contents.append(result)
    else:
        content = data["content"]
        if isinstance(content, str):
            text = TextContent(text=content)
            origin.add(text, base + "/content", {"text": ()})
            contents.append(text)
        else:
            contents.extend(_read_block(b, f"{base}/content/{i}", origin) for i, b in enumerate(content))
            if len(contents) == 1 and isinstance(contents[0], TextContent) and not contents[0].extra:
                forms.append("blocks")
    if kind == "ai" and isinstance(data.get("tool_calls"), list):
        calls = [_read_call(c, f"{base}/tool_calls/{i}", origin) for i, c in enumerate(data["tool_calls"])]
        if any(c is None for c in calls):
            return None
        contents.extend(calls)
        extras.pop("tool_calls")
    if kind == "ai" and isinstance(data.get("usage_metadata"), dict):
        usage = _read_usage(data["usage_metadata"])
        if usage is None:
            return None
        contents.append(UsageContent(usage=usage))
        origin.add(contents[-1], base + "/usage_metadata", {"usage": ()})
        extras.pop("usage_metadata")
    if forms:
        extras[FORM_KEY] = " ".join(forms)
    return build(Message, extras, contents=tuple(contents), **known)


def _read_usage(raw: dict[str, Any]) -> Usage | None:
    names = (("input_tokens", "input_token_count"), ("output_tokens", "output_token_count"),
             ("total_tokens", "total_token_count"))
    known = {attribute: raw[wire] for wire, attribute in names
             if isinstance(raw.get(wire), int) and not isinstance(raw.get(wire), bool)}
    return build(Usage, rest(raw, *(w for w, a in names if a in known)), **known)


def _read_call(raw: Any, pointer: str, origin: Origin) -> Any:
    if not (isinstance(raw, dict) and isinstance(raw.get("name"), str) and isinstance(raw.get("args"), dict)
            and (raw.get("id") is None or isinstance(raw.get("id"), str)) and raw.get("type", "tool_call")
            == "tool_call"):
        return None
    extras = rest(raw, "name", "args", "id", "type")
    if "type" not in raw:
        extras[FORM_KEY] = "untyped"
    call = build(FunctionCallContent, extras, name=raw["name"], arguments=raw["args"],
                 **({"call_id": raw["id"]} if "id" in raw else {}))
    if call is not None:
        origin.add(call, pointer, {"callId": ("id",), "arguments": ("args",)})
    return call


def _read_block(block: Any, pointer: str, origin: Origin) -> Any:
    built = _map_block(block) if isinstance(block, dict) else None
    if built is None:
        built = kept_whole(NAME, block)
        origin.add(built, pointer, {"value": ()})
    else:
        origin.add(built, pointer, {"text": ("reasoning",) if isinstance(built, ReasoningContent) else ("text",),
                                    "uri": ("url",), "mediaType": ("mime_type",), "fileId": ("file_id",)})
    return built


def _map_block(block: dict[str, Any]) -> Any:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return build(TextContent, rest(block, "type", "text"), text=block["text"])
    if kind == "reasoning" and isinstance(block.get("reasoning"), str):
        return build(ReasoningContent, rest(block, "type", "reasoning"), text=block["reasoning"])
    if kind in _MEDIA:
        extras = rest(block, "url", "base64", "file_id", "mime_type")
        mime = block.get("mime_type")
        if "mime_type" in block and not isinstance(mime, str):
            return None
        typed = {"media_type": mime} if isinstance(mime, str) else {}
        sources = [k for k in ("url", "base64", "file_id") if k in block]
        if len(sources) != 1 or not isinstance(block[sources[0]], str):
            return None
        if sources[0] == "url":
            return build(UriContent, extras, uri=block["url"], **typed)
        if sources[0] == "base64" and isinstance(mime, str):
            return build(DataContent, extras, uri=data_url(mime, block["base64"]), media_type=mime)
        if sources[0] == "file_id":
            return build(HostedFileContent, extras, file_id=block["file_id"], **typed)
    return None


# -- writing ------------------------------------------------------------------------------

def write(session: Session) -> list[Any]:
    return [_write_message(message, f"/{index}") for index, (_, message) in enumerate(session.messages())]


def _refuse(content: Any, pointer: str) -> Any:
    raise FormatError(f"a {getattr(content, 'kind', '?')!r} content of this shape has no LangChain form; "
                      "convert the session", pointer=pointer)


_NO_FORMS: frozenset[str] = frozenset()


def _write_message(message: Message, pointer: str) -> Any:
    spelled = form(message)
    forms = set(spelled.split()) if isinstance(spelled, str) else _NO_FORMS
    items = message.items
    if "item" in forms and len(items) == 1 and is_kept_whole(NAME, items[0]):
        return kept_value(items[0])
    kind = TYPE_OF_ROLE.get(message.role or "")
    if kind is None:
        raise FormatError(f"role {message.role!r} has no LangChain message type; convert the session",
                          pointer=pointer)
    data: dict[str, Any] = {}
    blocks: list[Any] = []
    calls: list[Any] = []
    # Tested by exact class (the model's kinds have no subclasses) and pointers made only
    # to refuse: this runs once per content of a long history.
    for index, content in enumerate(items):
        if type(content) is FunctionResultContent:
            if kind != "tool" or len(items) != 1 or content.call_id is None:
                _refuse(content, f"{pointer}/contents/{index}")
            data["content"] = content.result
            data["tool_call_id"] = content.call_id
            data.update(content.__pydantic_extra__ or {})
        elif type(content) is FunctionCallContent:
            if content.name is None or not isinstance(content.arguments, dict):
                _refuse(content, f"{pointer}/contents/{index}")
            extra = dict(content.__pydantic_extra__ or {})
            call = {"name": content.name, "args": content.arguments}
            if "call_id" in content.__pydantic_fields_set__:
                call["id"] = content.call_id
            if extra.pop(FORM_KEY, None) != "untyped":
                call["type"] = "tool_call"
            call.update(extra)
            calls.append(call)
        elif type(content) is UsageContent and content.usage is not None:
            usage = content.usage
            data["usage_metadata"] = {**{w: v for w, v in (("input_tokens", usage.input_token_count),
                                                           ("output_tokens", usage.output_token_count),
                                                           ("total_tokens", usage.total_token_count))
                                         if v is not None}, **usage.extra}
        else:
            blocks.append(_write_block(content, f"{pointer}/contents/{index}"))
    if "content" not in data:
        plain = len(blocks) == 1 and isinstance(blocks[0], dict) and set(blocks[0]) == {"type", "text"} and blocks[
            0]["type"] == "text"
        data["content"] = blocks[0]["text"] if plain and "blocks" not in forms else blocks
    if "untyped" not in forms:
        data["type"] = kind
    if message.author_name is not None:
        data["name"] = message.author_name
    if message.message_id is not None:
        data["id"] = message.message_id
    if calls or (kind == "ai" and "tool_calls" not in (message.__pydantic_extra__ or {}) and "no-calls" not in forms):
        data["tool_calls"] = calls
    data.update(extras_without_form(message))
    return {"type": kind, "data": data}


def _write_block(content: Any, pointer: str) -> Any:
    if type(content) is OpaqueContent and is_kept_whole(NAME, content):
        return kept_value(content)
    if type(content) is TextContent and content.text is not None:
        return add_extras({"type": "text", "text": content.text}, content)
    if type(content) is ReasoningContent and content.text is not None:
        return add_extras({"type": "reasoning", "reasoning": content.text}, content)
    extra = extras_without_form(content)
    media_type = getattr(content, "media_type", None)
    kind = next((m for m in _MEDIA[:3] if (media_type or "").startswith(m + "/")), "file")
    kind = extra.pop("type", kind)
    typed = {"mime_type": media_type} if media_type is not None else {}
    if isinstance(content, UriContent) and content.uri is not None:
        return {"type": kind, "url": content.uri, **typed, **extra}
    if isinstance(content, DataContent):
        data = split_data_url(content.uri, media_type)
        if data is not None:
            return {"type": kind, "base64": data, **typed, **extra}
    if isinstance(content, HostedFileContent) and content.file_id is not None:
        return {"type": kind, "file_id": content.file_id, **typed, **extra}
    return _refuse(content, pointer)


# -- lowering -----------------------------------------------------------------------------

def _nearest_role(role: str | None, in_request: bool) -> str:
    if role == "function":
        return "tool"
    if role == "developer":
        return "system"
    return "user" if in_request else "assistant"


def _fix(rec: Recorder, source: Any, content: Any, pointer: str) -> Any:
    if isinstance(content, FunctionCallContent):
        update: dict[str, Any] = {}
        if content.name is None:
            update["name"] = ""
            rec.approximate(source, pointer, "name", "name", "a tool call needs a name: written as ''")
        arguments, why = json_arguments(content.arguments)
        if why:
            update["arguments"] = arguments
            rec.approximate(source, pointer, "arguments", "arguments", f"LangChain args are an object: {why}")
        if content.informational_only:
            rec.drop(source, pointer, "informationalOnly", "server-run call", "LangChain tool calls are the "
                     "client's to run")
            content = build(FunctionCallContent, content.extra, name=content.name, arguments=content.arguments,
                            **({"call_id": content.call_id} if content.call_id is not None else {}))
        return content.model_copy(update=update) if update else content
    if isinstance(content, FunctionResultContent):
        update = {}
        if content.call_id is None:
            update["call_id"] = ""
            rec.approximate(source, pointer, "callId", "callId", "a tool message needs a tool_call_id: written as ''")
        if not isinstance(content.result, (str, list)):
            update["result"] = "" if content.result is None else json_text(content.result)
            rec.approximate(source, pointer, "result", "result", "a tool message's content is text or blocks: "
                            "written as JSON text")
        return content.model_copy(update=update) if update else content
    if isinstance(content, (TextContent, ReasoningContent)) and content.text is None:
        if isinstance(content, ReasoningContent):
            rec.drop(source, pointer, None, "redacted reasoning", "LangChain reasoning blocks hold text")
            return None
        return content.model_copy(update={"text": ""})
    if isinstance(content, DataContent) and split_data_url(content.uri, content.media_type) is None:
        rec.drop(source, pointer, None, "data content", "LangChain takes inline data as base64 with its media type")
        return None
    if isinstance(content, (UriContent, HostedFileContent)) and not (getattr(content, "uri", None)
                                                                    or getattr(content, "file_id", None)):
        rec.drop(source, pointer, None, f"{content.kind} content", "it has no URL or file id")
        return None
    return content


_BLOCK = frozenset({"id", "extras", "index"})
_CONTENT_FIELDS: dict[type, tuple[frozenset[str], frozenset[str]]] = {
    TextContent: (frozenset({"text"}), _BLOCK | {"annotations"}),
    ReasoningContent: (frozenset({"text"}), _BLOCK),
    DataContent: (frozenset({"uri", "mediaType"}), _BLOCK | {"type"}),
    UriContent: (frozenset({"uri", "mediaType"}), _BLOCK | {"type"}),
    HostedFileContent: (frozenset({"fileId", "mediaType"}), _BLOCK | {"type"}),
    FunctionCallContent: (frozenset({"callId", "name", "arguments", "informationalOnly"}), frozenset()),
    FunctionResultContent: (frozenset({"callId", "result"}), frozenset({"artifact", "status"})),
    UsageContent: (frozenset({"usage"}), frozenset()),
}
TARGET = Target(NAME, "LangChain messages", ROLES, _nearest_role, _CONTENT_FIELDS,
                message_fields=frozenset({"authorName", "messageId"}),
                message_extras=frozenset({"additional_kwargs", "response_metadata", "invalid_tool_calls", "example",
                                          "name", "id", "usage_metadata", "artifact", "status"}),
                fix=_fix, citations=False)


def _partial_usage(content: Any) -> bool:
    if not isinstance(content, UsageContent) or content.usage is None:
        return False
    usage = content.usage
    return None in (usage.input_token_count, usage.output_token_count, usage.total_token_count)


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Map what LangChain messages cannot hold onto what they can, with losses.

    Each tool result is a tool message of its own; calls stand only in AI messages.
    """
    rec = Recorder(origin)
    lowered = lower_messages(session, rec, TARGET)
    messages: list[Message] = []
    for position, (message, _) in enumerate(lowered.messages):
        if any(_partial_usage(c) for c in message.items):
            # LangChain's usage_metadata needs all three counts; a partial one is refused by its own types.
            lowered.drop(rec, position, None, "usage without all of its token counts",
                         "LangChain's usage_metadata needs input, output and total token counts")
            message = message.model_copy(update={"contents": tuple(c for c in message.items
                                                                   if not _partial_usage(c))})
        results = [c for c in message.items if isinstance(c, FunctionResultContent)]
        others = [c for c in message.items if not isinstance(c, FunctionResultContent)]
        calls = any(isinstance(c, FunctionCallContent) for c in others)
        if message.role == "tool" and len(results) == 1 and not others:
            messages.append(message)
            continue
        if results and (others or len(results) > 1 or message.role != "tool"):
            lowered.approximate(rec, position, None, "message structure",
                                "each tool result is a tool message of its own in LangChain")
        if others or not results:
            role = message.role
            if role == "tool" or (calls and role != "assistant"):
                lowered.approximate(rec, position, "role", f"role {role!r}",
                                    "tool calls stand in AI messages, results in tool messages: written as "
                                    + ("'assistant'" if calls else "'user'"))
                role = "assistant" if calls else "user"
            messages.append(message.model_copy(update={"role": role, "contents": tuple(others)}))
        messages.extend(Message(role="tool", contents=(result,)) for result in results)
    result = Session(data=SessionData(conversation_history=tuple(group_by_role(messages, ROLES,
                                                                               frozenset({"system", "user"})))))
    return Lowered(result, rec.losses)


FORMAT = FunctionFormat(NAME, "LangChain messages (messages_to_dict)", looks_like, validate, read, write, lower)
