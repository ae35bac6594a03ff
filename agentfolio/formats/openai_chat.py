"""OpenAI Chat Completions messages: ``{"model"?, "messages": [...], ...}`` or a bare list.

What most agent code already holds.  Reading maps each message onto the model:

* ``role`` → role, ``name`` → authorName; other message properties (``refusal``,
  ``audio``, ``annotations``...) are kept in the message's ``extra``;
* ``content``: a string → one text content; an array of parts → one content per part
  (``text`` → text, ``image_url`` → data/uri with ``image/*`` or the data URL's own type
  and ``detail`` kept in ``extra``, ``input_audio`` → a ``data:audio/<format>`` URI,
  ``file`` → hostedFile (``file_id``) or data (``file_data``), ``filename`` in ``extra``;
  any other part kept whole);
* ``tool_calls`` → functionCall contents (call id, name, the arguments string verbatim);
* a ``tool`` message → one functionResult whose callId is its ``tool_call_id``, which
  pairs it with its call.

Runs of system/developer/user messages become request entries, assistant/tool runs
response entries.  Request-body properties beside ``messages`` (``model``, ``tools``,
``temperature``...) stay in the session's ``extra``.  A read followed by a write gives the
same JSON value, except that a bare list is written as ``{"messages": [...]}``, a content
array holding exactly one plain text part is written as a string, and an assistant
message without text says ``"content": null``.
"""

from __future__ import annotations

from typing import Any, Iterable

import orjson

from agentfolio.formats.base import ReadResult
from agentfolio.formats.errors import FormatError, InvalidDocumentError, Problem, json_pointer
from agentfolio.formats.losses import (
    ConvertOptions,
    Lowered,
    Origin,
    Recorder,
    content_pointer,
    document_text,
    entry_pointer,
    json_text,
    memory_text,
    message_pointer,
    set_fields,
    skills_text,
    tools_text,
    with_extras,
)
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
    ReasoningContent,
    RequestEntry,
    ResponseEntry,
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

NAME = "openai-chat"
ROLES = ("system", "developer", "user", "assistant", "tool")
REQUEST_ROLES = frozenset({"system", "developer", "user"})
MESSAGE_KEYS = ("role", "name", "content", "tool_calls", "tool_call_id")
_AUDIO_TYPES = {"wav": "audio/wav", "mp3": "audio/mpeg"}
# Properties the Chat Completions API knows beside the ones mapped onto the model: kept by
# a conversion (the API refuses any other, so those are dropped and reported).
REQUEST_KEYS = frozenset({
    "model", "tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p", "n", "stop", "seed",
    "max_tokens", "max_completion_tokens", "response_format", "frequency_penalty", "presence_penalty",
    "logit_bias", "logprobs", "top_logprobs", "user", "metadata", "store", "stream", "stream_options",
    "reasoning_effort", "modalities", "audio", "prediction", "service_tier", "web_search_options", "verbosity"})
MESSAGE_EXTRA_KEYS = frozenset({"refusal", "audio", "annotations", "function_call"})
PART_EXTRA_KEYS = {"image": frozenset({"detail"}), "file": frozenset({"filename"})}


def looks_like(document: Any) -> bool:
    if isinstance(document, list):
        return bool(document) and all(isinstance(m, dict) and "role" in m for m in document)
    return (isinstance(document, dict) and isinstance(document.get("messages"), list)
            and "version" not in document and "schemaVersion" not in document)


def validate(document: Any) -> list[Problem]:
    """Structural checks (OpenAI publishes no schema for stored messages)."""
    messages, base = _messages_of(document)
    problems = []
    for index, message in enumerate(messages):
        pointer = json_pointer([*base, index])
        if not isinstance(message, dict):
            problems.append(Problem(pointer, "expected a message object"))
            continue
        role = message.get("role")
        if role not in ROLES and role != "function":
            problems.append(Problem(pointer + "/role", f"role {orjson.dumps(role).decode()} is not one of "
                                    + ", ".join(ROLES)))
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            problems.append(Problem(pointer + "/content", "expected a string, an array of parts or null"))
        if isinstance(content, list):
            for p_index, part in enumerate(content):
                if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                    problems.append(Problem(f"{pointer}/content/{p_index}", 'expected a part object with a "type"'))
        calls = message.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                problems.append(Problem(pointer + "/tool_calls", "expected an array"))
            else:
                for c_index, call in enumerate(calls):
                    function = call.get("function") if isinstance(call, dict) else None
                    if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                        problems.append(Problem(f"{pointer}/tool_calls/{c_index}", 'a tool call needs a string "id"'))
                    elif call.get("type", "function") == "function" and not (
                            isinstance(function, dict) and isinstance(function.get("name"), str)
                            and isinstance(function.get("arguments"), str)):
                        problems.append(Problem(f"{pointer}/tool_calls/{c_index}/function",
                                                "a function call needs a string name and arguments"))
        if role == "tool" and not isinstance(message.get("tool_call_id"), str):
            problems.append(Problem(pointer, 'a tool message needs a string "tool_call_id"'))
    return problems


def _messages_of(document: Any) -> tuple[list[Any], list[str]]:
    if isinstance(document, list):
        return document, []
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        return document["messages"], ["messages"]
    raise FormatError('expected OpenAI chat messages: an array, or an object with "messages"', pointer="")


def read(document: Any, *, strict: bool = True, source: str | None = None) -> ReadResult:
    try:
        problems = validate(document)
    except FormatError as error:
        raise error.with_source(source) if source else error
    if problems and strict:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidDocumentError(f"{first.message}{more}", source=source, pointer=first.pointer, problems=problems)
    messages, base = _messages_of(document)
    if not all(isinstance(m, dict) for m in messages):
        raise FormatError("messages must be objects", source=source, pointer=json_pointer(base))
    origin = Origin()
    read_messages = [_read_message(m, json_pointer([*base, i]), origin) for i, m in enumerate(messages)]
    session = Session(data=SessionData(conversation_history=tuple(group_entries(read_messages))))
    extras = {k: v for k, v in document.items() if k != "messages"} if isinstance(document, dict) else {}
    origin.add(session, "")
    return ReadResult(session=with_extras(session, extras), format=NAME,
                      version="request" if isinstance(document, dict) else "messages", problems=problems,
                      origin=origin)


def group_entries(messages: Iterable[Message]) -> list[RequestEntry | ResponseEntry]:
    entries: list[RequestEntry | ResponseEntry] = []
    run: list[Message] = []
    run_is_request: bool | None = None
    for message in messages:
        is_request = message.role in REQUEST_ROLES if message.role in ROLES else bool(
            run_is_request if run_is_request is not None else True)
        if run and is_request != run_is_request:
            entries.append((RequestEntry if run_is_request else ResponseEntry)(messages=tuple(run)))
            run = []
        run.append(message)
        run_is_request = is_request
    if run:
        entries.append((RequestEntry if run_is_request else ResponseEntry)(messages=tuple(run)))
    return entries


def _read_message(raw: dict[str, Any], pointer: str, origin: Origin) -> Message:
    known: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    if isinstance(raw.get("role"), str):
        known["role"] = raw["role"]
    elif "role" in raw:
        kept["role"] = raw["role"]
    if isinstance(raw.get("name"), str):
        known["author_name"] = raw["name"]
    elif "name" in raw:
        kept["name"] = raw["name"]
    contents: list[Any] = []
    content = raw.get("content")
    if raw.get("role") == "tool" and isinstance(raw.get("tool_call_id"), str):
        result = FunctionResultContent(call_id=raw["tool_call_id"], **({"result": content} if "content" in raw else {}))
        origin.add(result, pointer, {"callId": ("tool_call_id",), "result": ("content",)})
        contents.append(result)
    elif isinstance(content, str):
        text = TextContent(text=content)
        origin.add(text, pointer + "/content", {"text": ()})
        contents.append(text)
    elif isinstance(content, list):
        for index, part in enumerate(content):
            contents.append(_read_part(part, f"{pointer}/content/{index}", origin))
    elif "content" in raw and content is not None:
        kept["content"] = content
    calls = raw.get("tool_calls")
    if isinstance(calls, list):
        for index, call in enumerate(calls):
            contents.append(_read_call(call, f"{pointer}/tool_calls/{index}", origin))
    elif "tool_calls" in raw:
        kept["tool_calls"] = calls
    if raw.get("role") != "tool" and "tool_call_id" in raw:
        kept["tool_call_id"] = raw["tool_call_id"]
    if raw.get("role") == "tool" and not isinstance(raw.get("tool_call_id"), str):
        kept.update({k: raw[k] for k in ("tool_call_id", "content") if k in raw})
    if content is None and "content" in raw and raw.get("role") not in ("assistant", "tool"):
        kept["content"] = None  # an explicit null only assistants say by default
    extras = {k: v for k, v in raw.items() if k not in MESSAGE_KEYS}
    message = with_extras(Message(**known, contents=tuple(contents)), {**kept, **extras})
    origin.add(message, pointer, {"authorName": ("name",)})
    return message


def _read_part(part: Any, pointer: str, origin: Origin) -> Any:
    kind = part.get("type") if isinstance(part, dict) else None
    built: Any = None
    names: dict[str, tuple[str, ...]] = {}
    try:
        if kind == "text" and isinstance(part.get("text"), str):
            built = with_extras(TextContent(text=part["text"]), _rest(part, "type", "text"))
        elif kind == "image_url" and isinstance(part.get("image_url"), dict) and isinstance(
                part["image_url"].get("url"), str) and set(part) == {"type", "image_url"}:
            url = part["image_url"]["url"]
            built = _media_content(url, "image")
            built = with_extras(built, _rest(part["image_url"], "url"))
            names = {"uri": ("image_url", "url")}
        elif kind == "input_audio" and isinstance(part.get("input_audio"), dict) and set(part) == {
                "type", "input_audio"} and part["input_audio"].get("format") in _AUDIO_TYPES and isinstance(
                part["input_audio"].get("data"), str) and set(part["input_audio"]) == {"data", "format"}:
            audio = part["input_audio"]
            media_type = _AUDIO_TYPES[audio["format"]]
            built = DataContent(uri=f"data:{media_type};base64,{audio['data']}", media_type=media_type)
            names = {"uri": ("input_audio", "data")}
        elif kind == "file" and isinstance(part.get("file"), dict) and set(part) == {"type", "file"}:
            file = part["file"]
            if isinstance(file.get("file_id"), str) and "file_data" not in file:
                built = with_extras(HostedFileContent(file_id=file["file_id"]), _rest(file, "file_id"))
            elif isinstance(file.get("file_data"), str) and "file_id" not in file:
                built = with_extras(DataContent(uri=file["file_data"], media_type=_data_type(file["file_data"])),
                                    _rest(file, "file_data"))
            names = {"fileId": ("file", "file_id"), "uri": ("file", "file_data")}
    except (TypeError, AttributeError):  # pragma: no cover - shapes checked above
        built = None
    if built is None:
        built = OpaqueContent.model_validate(part) if isinstance(part, dict) else OpaqueContent()
    origin.add(built, pointer, names)
    return built


def _rest(value: dict[str, Any], *known: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in known}


def _data_type(uri: str) -> str | None:
    if not uri.startswith("data:"):
        return None
    declared = uri[5:].split(",", 1)[0].split(";", 1)[0]
    return declared or None


def _media_content(url: str, media: str) -> Any:
    if url.startswith("data:"):
        declared = _data_type(url)
        media_type = declared if declared and declared.split("/", 1)[0] == media else f"{media}/*"
        return DataContent(uri=url, media_type=media_type)
    return UriContent(uri=url, media_type=f"{media}/*")


def _read_call(call: Any, pointer: str, origin: Origin) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if (isinstance(call, dict) and call.get("type") == "function" and isinstance(call.get("id"), str)
            and isinstance(function, dict) and isinstance(function.get("name"), str)
            and isinstance(function.get("arguments"), str) and set(function) == {"name", "arguments"}):
        built = with_extras(FunctionCallContent(call_id=call["id"], name=function["name"],
                                                arguments=function["arguments"]), _rest(call, "id", "type", "function"))
        origin.add(built, pointer, {"callId": ("id",), "name": ("function", "name"),
                                    "arguments": ("function", "arguments")})
        return built
    # Kept whole, marked so the writer puts it back among the tool calls.
    built = with_extras(OpaqueContent(), {"$type": "openai.tool_call", "call": call})
    origin.add(built, pointer)
    return built


# -- Writing -------------------------------------------------------------------------

def write(session: Session) -> dict[str, Any]:
    """The session as a Chat Completions request body: ``{..., "messages": [...]}``."""
    extras = dict(session.extra)
    messages = []
    for entry_index, entry in enumerate(session.entries):
        if isinstance(entry, OpaqueEntry):
            raise FormatError(f"an entry of kind {entry.kind!r} has no OpenAI form; convert the session",
                              pointer=entry_pointer(entry_index))
        for index, message in enumerate(entry.items):
            messages.append(_write_message(message, message_pointer(entry_index, index)))
    document: dict[str, Any] = {}
    if "model" in extras:
        document["model"] = extras.pop("model")
    document["messages"] = messages
    document.update(extras)
    return document


def _write_message(message: Message, pointer: str) -> dict[str, Any]:
    written: dict[str, Any] = {}
    extras = dict(message.extra)
    if message.role is not None:
        written["role"] = message.role
    if message.author_name is not None:
        written["name"] = message.author_name
    parts: list[Any] = []
    calls: list[Any] = []
    results = [c for c in message.items if isinstance(c, FunctionResultContent)]
    for index, content in enumerate(message.items):
        where = f"{pointer}/contents/{index}"
        if isinstance(content, FunctionResultContent):
            continue
        if isinstance(content, FunctionCallContent):
            if not isinstance(content.arguments, str) or content.call_id is None or content.name is None:
                raise FormatError("a tool call needs an id, a name and arguments as a string; convert the session",
                                  pointer=where)
            calls.append({"id": content.call_id, "type": "function",
                          "function": {"name": content.name, "arguments": content.arguments}, **content.extra})
        elif isinstance(content, OpaqueContent) and content.extra.get("$type") == "openai.tool_call":
            calls.append(content.extra.get("call"))
        else:
            parts.append(_write_part(content, where))
    if results:
        if len(results) != 1 or message.role != "tool" or parts or calls:
            raise FormatError("a tool message holds exactly one result; convert the session", pointer=pointer)
        written["tool_call_id"] = results[0].call_id
        if "result" in results[0].model_fields_set:
            written["content"] = results[0].result
    elif "content" in extras:
        written["content"] = extras.pop("content")
    elif len(parts) == 1 and parts[0].get("type") == "text" and set(parts[0]) == {"type", "text"}:
        written["content"] = parts[0]["text"]
    elif parts:
        written["content"] = parts
    elif message.role == "assistant" or calls:
        written["content"] = None
    if calls:
        written["tool_calls"] = calls
    for key, value in extras.items():
        written.setdefault(key, value)
    return written


def _write_part(content: Any, pointer: str) -> dict[str, Any]:
    if isinstance(content, TextContent) and content.text is not None:
        return {"type": "text", "text": content.text, **content.extra}
    if isinstance(content, (DataContent, UriContent)) and content.uri is not None:
        media = (content.media_type or "").split("/", 1)[0]
        if media == "image":
            return {"type": "image_url", "image_url": {"url": content.uri, **content.extra}}
        audio_format = next((f for f, t in _AUDIO_TYPES.items() if t == content.media_type), None)
        prefix = f"data:{content.media_type};base64,"
        if audio_format and content.uri.startswith(prefix) and not content.extra:
            return {"type": "input_audio", "input_audio": {"data": content.uri[len(prefix):], "format": audio_format}}
        if isinstance(content, DataContent):
            return {"type": "file", "file": {"file_data": content.uri, **content.extra}}
    if isinstance(content, HostedFileContent) and content.file_id is not None:
        return {"type": "file", "file": {"file_id": content.file_id, **content.extra}}
    if isinstance(content, OpaqueContent):
        return dict(content.extra)
    raise FormatError(f"{getattr(content, 'kind', '?')!r} has no OpenAI chat form; convert the session instead",
                      pointer=pointer)


# -- Lowering ------------------------------------------------------------------------

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
    generated = 0
    for entry_index, entry in enumerate(session.entries):
        pointer = entry_pointer(entry_index)
        if isinstance(entry, OpaqueEntry):
            rec.drop(entry, pointer, None, f"entry of unknown kind {entry.kind!r}", "chat messages have no entries")
            continue
        for key in set_fields(entry, skip=("$type", "messages")):
            rec.drop(entry, pointer, key, key, "chat messages have no entries, only messages")
        for key in entry.extra:
            rec.drop(entry, pointer, key, f"entry property {key!r}", "chat messages have no entries, only messages")
        if entry.kind not in ("request", "response"):
            rec.approximate(entry, pointer, "$type", f"entry kind {entry.kind!r}",
                            "read back, its messages form request or response entries by role")
        for index, message in enumerate(entry.items):
            lowered, generated = _lower_message(rec, message, entry_index, index, entry.kind == "request", generated)
            messages.extend(lowered)
    lowered_session = Session(data=SessionData(conversation_history=tuple(group_entries(messages))))
    return Lowered(with_extras(lowered_session, extras), rec.losses)


def _lower_message(rec: Recorder, message: Message, entry_index: int, index: int, in_request: bool,
                   generated: int) -> tuple[list[Message], int]:
    pointer = message_pointer(entry_index, index)
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
        if isinstance(content, FunctionResultContent):
            results.append(_lower_result(rec, content, where))
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
        update["arguments"] = orjson.dumps(call.arguments if call.arguments is not None else {}).decode()
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
    if content.presentation is not None:
        for key in set_fields(content.presentation):
            rec.drop(content, pointer, f"presentation/{key}", f"presentation {key}",
                     "chat messages do not record how a content is shown")
    kept = {}
    for key, value in content.extra.items():
        if key in allowed:
            kept[key] = value
        else:
            rec.drop(content, pointer, key, f"property {key!r}", "the Chat Completions API refuses unknown properties")
    return kept


def _lower_content(rec: Recorder, content: Any, pointer: str, role: str) -> Any:
    as_text = {TemplateVariableContent: lambda c: c.value, MemoryContent: memory_text, SkillsContent: skills_text,
               ToolCatalogContent: tools_text, DocumentContent: document_text}
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
        code = f" [{content.error_code}]" if content.error_code else ""
        return TextContent(text=f"Error{code}: {content.message or ''}")
    if type(content) in as_text:
        rec.approximate(content, pointer, None, f"{content.kind} content", "chat messages have no such kind: "
                        "written as text")
        return TextContent(text=as_text[type(content)](content))
    if isinstance(content, (DataContent, UriContent, HostedFileContent, PartContent)) and role == "user":
        media_type = getattr(content, "media_type", None) or ""
        uri = getattr(content, "uri", None)
        if isinstance(content, HostedFileContent) and content.file_id:
            return with_extras(HostedFileContent(file_id=content.file_id), kept)
        if uri and media_type.startswith("image/") and isinstance(content, (DataContent, UriContent)):
            return with_extras(type(content)(uri=uri, media_type=media_type), kept)
        if isinstance(content, DataContent) and uri:
            return with_extras(DataContent(uri=uri, media_type=media_type or _data_type(uri)), kept)
    label = getattr(content, "uri", None) or getattr(content, "url", None) or getattr(content, "file_id", None)
    rec.approximate(content, pointer, None, f"{content.kind} content",
                    "only user messages carry files and images in Chat Completions: written as a text mention")
    return TextContent(text=f"[{getattr(content, 'media_type', None) or content.kind}: {label}]")
