"""OpenAI Responses: a request (``{"model", "instructions"?, "input": str | [items]...}``)
or a response object (``{"object": "response", "output": [items], "usage"...}``).

Each item becomes one message, so the items come back in their order:

=================================  ================================================================
item                                canonical message
=================================  ================================================================
``message`` (``role``, content)     its role; ``input_text``/``output_text`` → text (annotations →
                                    Citations), ``input_image`` → data/uri/hostedFile (``image/*``),
                                    ``input_file`` → data/uri/hostedFile (``filename`` → name)
``function_call``                   assistant: functionCall (arguments string verbatim)
``function_call_output``            tool: functionResult (``output`` as read)
``reasoning``                       assistant: reasoning (summary text; ``encrypted_content`` →
                                    protectedData)
``web_search_call``, ``mcp_call``,  assistant: functionCall, informationalOnly (what the
``code_interpreter_call``...         provider ran; its results and status in ``extra``)
anything else                       kept whole
=================================  ================================================================

A part's ``type`` is written back from the role (``output_text`` for the assistant,
``input_text`` otherwise) unless it said otherwise.  ``instructions`` become a leading
system message; a string ``input`` one user message.  Read → write gives the same JSON value.
"""

from __future__ import annotations

import zlib
from typing import Any, cast

from agentfolio.formats.base import FunctionFormat, ReadResult, read_lazily
from agentfolio.formats.errors import FormatError, Problem, validated
from agentfolio.formats.losses import ConvertOptions, Lowered, Origin, Recorder, json_text, with_extras
from agentfolio.formats.provider import (
    FORM_KEY,
    Target,
    build,
    check_type,
    extras_without_form,
    form,
    is_kept_whole,
    kept_value,
    kept_whole,
    lower_messages,
    rest,
    signed_by,
    string_arguments,
)
from agentfolio.formats.shared import data_url_type, group_by_role
from agentfolio.model import (
    Citation,
    Content,
    DataContent,
    ErrorResponseEntry,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    Message,
    OpaqueContent,
    ReasoningContent,
    ResponseEntry,
    Session,
    SessionData,
    TextContent,
    UriContent,
    Usage,
)

NAME = "openai-responses"
ROLES = ("system", "developer", "user", "assistant", "tool")
REQUEST_ROLES = frozenset({"system", "developer", "user"})
MESSAGE_ROLES = ("system", "developer", "user", "assistant")
# Built-in tools whose calls are items of type ``<name>_call``.
BUILT_IN_CALLS = frozenset({"web_search", "file_search", "code_interpreter", "computer", "image_generation",
                            "local_shell", "shell", "apply_patch"})
CITATION_TYPES = frozenset({"url_citation", "file_citation", "container_file_citation", "file_path"})
_SCAN = 64


def looks_like(document: Any) -> bool:
    if not isinstance(document, dict) or "messages" in document or "contents" in document:
        return False
    if document.get("object") == "response" and isinstance(document.get("output"), list):
        return True
    return isinstance(document.get("input"), (str, list)) and ("model" in document or "instructions" in document
                                                               or _items_look_like(document["input"]))


def _items_look_like(items: Any) -> bool:
    if isinstance(items, str):
        return True
    return bool(items) and all(isinstance(i, dict) and ("role" in i or isinstance(i.get("type"), str))
                               for i in items[:_SCAN])


def _is_response(document: Any) -> bool:
    return isinstance(document, dict) and document.get("object") == "response"


# -- validation ---------------------------------------------------------------------------

def validate(document: Any) -> list[Problem]:
    problems: list[Problem] = []
    if not isinstance(document, dict):
        return [Problem("", "expected a Responses request or response object")]
    key = "output" if _is_response(document) else "input"
    items = document.get(key)
    if key == "input" and isinstance(items, str):
        return problems
    if not check_type(problems, "/" + key, items, list, "an array of items"):
        return problems
    if "instructions" in document and not _is_response(document) and not isinstance(
            document["instructions"], (str, type(None))):
        problems.append(Problem("/instructions", "expected a string"))
    for index, item in enumerate(cast(list[Any], items)):  # check_type saw a list
        _check_item(problems, f"/{key}/{index}", item)
    return problems


def _check_item(problems: list[Problem], pointer: str, item: Any) -> None:
    if not check_type(problems, pointer, item, dict, "an item object"):
        return
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        if item.get("role") not in MESSAGE_ROLES:
            problems.append(Problem(pointer + "/role", "expected one of " + ", ".join(MESSAGE_ROLES)))
        content = item.get("content")
        if isinstance(content, list):
            for p_index, part in enumerate(content):
                where = f"{pointer}/content/{p_index}"
                if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                    problems.append(Problem(where, 'expected a content part with a "type"'))
                elif part["type"] in ("input_text", "output_text"):
                    check_type(problems, where + "/text", part.get("text"), str, "a string")
                    if part["type"] == "output_text":
                        check_type(problems, where + "/annotations", part.get("annotations"), list, "an array")
        elif not isinstance(content, str):
            problems.append(Problem(pointer + "/content", "expected a string or an array of content parts"))
    elif kind == "function_call":
        for name in ("call_id", "name", "arguments"):
            check_type(problems, f"{pointer}/{name}", item.get(name), str, "a string")
    elif kind == "function_call_output":
        check_type(problems, pointer + "/call_id", item.get("call_id"), str, "a string")
        if not (isinstance(item.get("output"), str) or _output_parts(item.get("output"))):
            problems.append(Problem(pointer + "/output", "expected a string or an array of input parts"))
    elif kind == "reasoning":
        check_type(problems, pointer + "/summary", item.get("summary"), list, "an array of summary parts")
    elif not isinstance(kind, str):
        problems.append(Problem(pointer, 'expected an item with a "type" (or a message with a "role")'))


# -- reading ------------------------------------------------------------------------------

def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    problems = validated(validate, document, strict=strict, source=source)
    if not isinstance(document, dict):
        raise FormatError("expected a Responses request or response object", source=source, pointer="")
    origin = Origin()
    response = _is_response(document)
    key = "output" if response else "input"
    if not isinstance(document.get(key), (str, list)):
        raise FormatError(f'expected "{key}": an array of items', source=source, pointer="/" + key)
    return read_lazily(lambda: _read_session(document, origin, response), document, NAME,
                       version="response" if response else "request", problems=problems, origin=origin)


def _read_session(document: dict[str, Any], origin: Origin, response: bool) -> Session:
    key = "output" if response else "input"
    raw_items = document[key]
    messages: list[Message] = []
    skip = [key]
    if not response and isinstance(document.get("instructions"), str):
        instructions = with_extras(Message(role="system", contents=(TextContent(text=document["instructions"]),)),
                                   {FORM_KEY: "instructions"})
        origin.add(instructions.items[0], "/instructions", {"text": ()})
        origin.add(instructions, "/instructions")
        messages.append(instructions)
        skip.append("instructions")
    if isinstance(raw_items, str):
        text = TextContent(text=raw_items)
        origin.add(text, "/input", {"text": ()})
        message = with_extras(Message(role="user", contents=(text,)), {FORM_KEY: "input"})
        origin.add(message, "/input")
        messages.append(message)
    else:
        for index, item in enumerate(raw_items):
            messages.append(read_item(item, f"/{key}/{index}", origin,
                                      messages[-1].role if messages else ("assistant" if response else "user")))
    usage = _read_usage(document.get("usage")) if response else None
    if usage is not None:
        skip.append("usage")
    if response:
        optional: dict[str, Any] = {"usage": usage} if usage is not None else {}
        entry = ResponseEntry(messages=tuple(messages), **optional)
        origin.add(entry, "", {"usage": ("usage",)})
        entries: list[Any] = [entry]
    else:
        entries = list(group_by_role(messages, ROLES, REQUEST_ROLES))
    session = with_extras(Session(data=SessionData(conversation_history=tuple(entries))), rest(document, *skip))
    origin.add(session, "")
    return session


def _read_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), int) and not isinstance(raw.get(k), bool)
                                            for k in ("input_tokens", "output_tokens", "total_tokens")):
        return None
    return build(Usage, rest(raw, "input_tokens", "output_tokens", "total_tokens"),
                 input_token_count=raw["input_tokens"], output_token_count=raw["output_tokens"],
                 total_token_count=raw["total_tokens"])


def read_item(item: Any, pointer: str, origin: Origin, role: str | None = "user") -> Message:
    """One input or output item as a message.  An item kept whole takes the role of the
    message before it (``role``), so it stays in its turn, and is marked as a bare item."""
    message = _map_item(item, pointer, origin) if isinstance(item, dict) else None
    if message is None:
        kept = kept_whole(NAME, item)
        origin.add(kept, pointer, {"value": ()})
        message = with_extras(Message(role=role, contents=(kept,)), {FORM_KEY: "item"})
    origin.add(message, pointer, {"messageId": ("id",)})
    return message


def _map_item(item: dict[str, Any], pointer: str, origin: Origin) -> Message | None:
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message" and isinstance(item.get("role"), str) and isinstance(item.get("content"), (str, list)):
        return _read_message(item, pointer, origin)
    content: Any = None
    role = "assistant"
    names: dict[str, tuple[str, ...]] = {}
    if kind == "function_call" and all(isinstance(item.get(k), str) for k in ("call_id", "name", "arguments")):
        content = build(FunctionCallContent, rest(item, "type", "call_id", "name", "arguments"),
                        call_id=item["call_id"], name=item["name"], arguments=item["arguments"])
        names = {"callId": ("call_id",)}
    elif kind == "function_call_output" and isinstance(item.get("call_id"), str) and "output" in item:
        content = build(FunctionResultContent, rest(item, "type", "call_id", "output"), call_id=item["call_id"],
                        result=item["output"])
        role, names = "tool", {"callId": ("call_id",), "result": ("output",)}
    elif kind == "reasoning" and isinstance(item.get("summary"), list):
        content = _read_reasoning(item)
        names = {"text": ("summary",), "protectedData": ("encrypted_content",)}
    elif kind == "mcp_call" and isinstance(item.get("id"), str) and isinstance(item.get("name"), str):
        content = build(FunctionCallContent, rest(item, "id", "name", "arguments"), call_id=item["id"],
                        name=item["name"], informational_only=True,
                        **({"arguments": item["arguments"]} if "arguments" in item else {}))
        names = {"callId": ("id",), "informationalOnly": ("type",)}
    elif isinstance(kind, str) and kind.endswith("_call") and kind != "custom_tool_call" and isinstance(
            item.get("id"), str):
        content = build(FunctionCallContent, rest(item, "type", "id"), call_id=item["id"], name=kind[:-5],
                        informational_only=True)
        names = {"callId": ("id",), "name": ("type",), "informationalOnly": ("type",)}
    if content is None:
        return None
    origin.add(content, pointer, names)
    return Message(role=role, contents=(content,))


def _summary(text: str | None) -> list[dict[str, Any]]:
    return [] if text is None else [{"type": "summary_text", "text": text}]


def _read_reasoning(item: dict[str, Any]) -> ReasoningContent | None:
    summary = item["summary"]
    texts = [p["text"] for p in summary if isinstance(p, dict) and isinstance(p.get("text"), str)]
    text = "\n\n".join(texts) if texts else None
    extras = rest(item, "type", "summary", "encrypted_content")
    if summary != _summary(text):
        extras["summary"] = summary  # not what the text alone writes back
    known: dict[str, Any] = {"text": text} if text is not None else {}
    if isinstance(item.get("encrypted_content"), str):
        known["protected_data"] = item["encrypted_content"]
        extras.update(signed_by(NAME))
    elif "encrypted_content" in item:
        extras["encrypted_content"] = item["encrypted_content"]
    return build(ReasoningContent, extras, **known)


def _read_message(item: dict[str, Any], pointer: str, origin: Origin) -> Message | None:
    role = item["role"]
    content = item["content"]
    contents: list[Any] = []
    marker: dict[str, Any] = {}
    if isinstance(content, str):
        text = TextContent(text=content)
        origin.add(text, pointer + "/content", {"text": ()})
        contents.append(text)
    else:
        for index, part in enumerate(content):
            contents.append(_read_part(part, role, f"{pointer}/content/{index}", origin))
        if len(contents) == 1 and isinstance(contents[0], TextContent) and _plain(contents[0]):
            marker = {FORM_KEY: "blocks"}
    extras = rest(item, "role", "content", "id")
    known: dict[str, Any] = {"role": role, "contents": tuple(contents)}
    if isinstance(item.get("id"), str):
        known["message_id"] = item["id"]
    elif "id" in item:
        return None
    return build(Message, {**extras, **marker}, **known)


def _plain(text: TextContent) -> bool:
    return not text.extra and text.annotations is None


def _text_type(role: str | None) -> str:
    return "output_text" if role == "assistant" else "input_text"


def _read_part(part: Any, role: str, pointer: str, origin: Origin) -> Any:
    built: Any = None
    names: dict[str, tuple[str, ...]] = {}
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text") and isinstance(part.get("text"), str):
        extras = rest(part, "text", "annotations", *(("type",) if kind == _text_type(role) else ()))
        annotations = part.get("annotations")
        if isinstance(annotations, list):
            built = build(TextContent, extras, text=part["text"], annotations=tuple(map(_read_citation, annotations)))
        else:
            built = build(TextContent, {**extras, **({"annotations": annotations} if "annotations" in part else {})},
                          text=part["text"])
    elif kind == "input_image" and isinstance(part.get("image_url"), str) and "file_id" not in part:
        url = part["image_url"]
        declared = data_url_type(url)
        extras = rest(part, "type", "image_url")
        if url.startswith("data:") and declared and declared.startswith("image/"):
            built = build(DataContent, extras, uri=url, media_type=declared)
        elif not url.startswith("data:"):
            built = build(UriContent, extras, uri=url, media_type="image/*")
        names = {"uri": ("image_url",)}
    elif kind == "input_image" and isinstance(part.get("file_id"), str) and "image_url" not in part:
        built = build(HostedFileContent, rest(part, "type", "file_id"), file_id=part["file_id"], media_type="image/*")
    elif kind == "input_file":
        built = _read_file(part)
        names = {"uri": ("file_data",), "fileId": ("file_id",), "name": ("filename",)}
    if built is None:
        built = kept_whole(NAME, part)
        names = {"value": ()}
    origin.add(built, pointer, names)
    return built


def _read_file(part: dict[str, Any]) -> Any:
    sources = [k for k in ("file_id", "file_data", "file_url") if k in part]
    if len(sources) != 1 or not isinstance(part[sources[0]], str):
        return None
    value = part[sources[0]]
    if sources[0] == "file_id":
        named = {"name": part["filename"]} if isinstance(part.get("filename"), str) else {}
        return build(HostedFileContent, rest(part, "type", "file_id", *(("filename",) if named else ())),
                     file_id=value, **named)
    if sources[0] == "file_data":
        declared = data_url_type(value)
        if not value.startswith("data:") or declared is None or declared.startswith("image/"):
            return None
        return build(DataContent, rest(part, "type", "file_data"), uri=value, media_type=declared)
    return build(UriContent, rest(part, "type", "file_url"), uri=value)


def _read_citation(raw: Any) -> Any:
    if isinstance(raw, dict) and raw.get("type") in CITATION_TYPES:
        known = {attribute: raw[wire] for wire, attribute in (("title", "title"), ("url", "url"),
                                                              ("file_id", "file_id"))
                 if isinstance(raw.get(wire), str)}
        wires = {"title": "title", "url": "url", "file_id": "file_id"}
        citation = build(Citation, rest(raw, *(w for w, a in wires.items() if a in known)), **known)
        if citation is not None:
            return citation
    return with_extras(OpaqueContent(), {"$type": f"{NAME}.annotation", "value": raw})


# -- writing ------------------------------------------------------------------------------

def write(session: Session) -> dict[str, Any]:
    """The session as a Responses request body, or a response object when read from one."""
    extras = dict(session.extra)
    extras.pop(FORM_KEY, None)
    response = extras.get("object") == "response"
    key = "output" if response else "input"
    items: list[Any] = []
    document: dict[str, Any] = {}
    messages = [message for _, message in session.messages()]
    for index, message in enumerate(messages):
        first = message.items[0] if message.items else None
        if form(message) == "instructions" and index == 0 and not response and (
                first is None or isinstance(first, TextContent)):
            document["instructions"] = first.text if first is not None else ""
            continue
        if form(message) == "input" and isinstance(first, TextContent) and len(messages) - (
                1 if "instructions" in document else 0) == 1:
            document["input"] = first.text
            continue
        items.extend(write_items(message, f"/{key}/{len(items)}"))
    if key not in document:
        document[key] = items
    for name, value in extras.items():
        document.setdefault(name, value)
    head = session.entries[0] if session.entries else None
    if response and isinstance(head, (ResponseEntry, ErrorResponseEntry)) and head.usage is not None:
        usage = head.usage
        document["usage"] = {"input_tokens": usage.input_token_count, "output_tokens": usage.output_token_count,
                             "total_tokens": usage.total_token_count, **usage.extra}
    return document


def write_items(message: Message, pointer: str) -> list[Any]:
    """A message as Responses items: its parts as one message item, each call, result and
    reasoning as an item of its own, in order."""
    items: list[Any] = []
    parts: list[Any] = []

    def flush() -> None:
        if parts:
            items.append(_message_item(message, list(parts)))
            parts.clear()

    as_items = form(message) == "item"
    role = message.role
    # Tested by exact class (the model's kinds have no subclasses): this runs once per
    # content of a long history.
    for index, content in enumerate(message.items):
        if type(content) is OpaqueContent and as_items:
            flush()
            items.append(kept_value(content) if is_kept_whole(NAME, content)
                         else _refuse(content, f"{pointer}/contents/{index}"))
        elif type(content) is FunctionCallContent:
            flush()
            items.append(_write_call(content, f"{pointer}/contents/{index}"))
        elif type(content) is FunctionResultContent:
            flush()
            if content.call_id is None or not isinstance(content.result, (str, list)):
                _refuse(content, f"{pointer}/contents/{index}")
            items.append({"type": "function_call_output", "call_id": content.call_id, "output": content.result,
                          **(content.__pydantic_extra__ or {})})
        elif type(content) is ReasoningContent:
            flush()
            items.append(_write_reasoning(content))
        else:
            parts.append(_write_part(content, role, f"{pointer}/contents/{index}"))
    flush()
    if not message.items and message.role is not None:
        items.append(_message_item(message, []))
    return items


def _refuse(content: Any, pointer: str) -> Any:
    raise FormatError(f"a {getattr(content, 'kind', '?')!r} content of this shape has no Responses form; "
                      "convert the session", pointer=pointer)


def _message_item(message: Message, parts: list[Any]) -> dict[str, Any]:
    item: dict[str, Any] = {}
    extras = extras_without_form(message)
    if message.message_id is not None:
        item["id"] = message.message_id
    item["role"] = message.role
    plain = len(parts) == 1 and set(parts[0]) == {"type", "text"} and parts[0]["type"] == _text_type(message.role)
    item["content"] = parts[0]["text"] if plain and form(message) != "blocks" else parts
    return {**item, **extras}


def _write_call(call: FunctionCallContent, pointer: str) -> dict[str, Any]:
    extra = dict(call.__pydantic_extra__ or {})
    if call.informational_only:
        if "type" in extra:  # an item naming its own type (mcp_call): name and arguments are its own
            mapped = {"id": call.call_id, "name": call.name,
                      **({"arguments": call.arguments} if "arguments" in call.__pydantic_fields_set__ else {})}
            return {**mapped, **extra}
        return {"type": f"{call.name}_call", "id": call.call_id, **extra}
    if call.call_id is None or call.name is None or not isinstance(call.arguments, str):
        _refuse(call, pointer)
    return {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments,
            **extra}


def _write_reasoning(content: ReasoningContent) -> dict[str, Any]:
    extra = extras_without_form(content)
    item: dict[str, Any] = {"type": "reasoning", "summary": extra.pop("summary", _summary(content.text))}
    if content.protected_data is not None:
        item["encrypted_content"] = content.protected_data
    return {**item, **extra}


def _write_part(content: Any, role: str | None, pointer: str) -> Any:
    extra = content.__pydantic_extra__ or {}
    if type(content) is OpaqueContent and is_kept_whole(NAME, content):
        return kept_value(content)
    if type(content) is TextContent and content.text is not None:
        part: dict[str, Any] = {"type": _text_type(role), "text": content.text}
        if content.annotations is not None:
            part["annotations"] = [a.extra.get("value") if isinstance(a, OpaqueContent) else
                                   {**{k: v for k, v in (("title", a.title), ("url", a.url), ("file_id", a.file_id))
                                       if v is not None}, **a.extra} for a in content.annotations]
        return {**part, **extra}
    media = (getattr(content, "media_type", None) or "").startswith("image/")
    if isinstance(content, DataContent) and content.uri:
        return {"type": "input_image", "image_url": content.uri, **extra} if media else {
            "type": "input_file", "file_data": content.uri, **extra}
    if isinstance(content, UriContent) and content.uri:
        return {"type": "input_image", "image_url": content.uri, **extra} if media else {
            "type": "input_file", "file_url": content.uri, **extra}
    if isinstance(content, HostedFileContent) and content.file_id:
        if media:
            return {"type": "input_image", "file_id": content.file_id, **extra}
        return {"type": "input_file", "file_id": content.file_id,
                **({"filename": content.name} if content.name is not None else {}), **extra}
    return _refuse(content, pointer)


# -- lowering -----------------------------------------------------------------------------

_INPUT_PARTS = frozenset({"input_text", "input_image", "input_file"})


def _output_parts(value: Any) -> bool:
    """Whether a value is an array of input parts, which a function output may be."""
    return isinstance(value, list) and all(isinstance(p, dict) and p.get("type") in _INPUT_PARTS for p in value)


def _nearest_role(role: str | None, in_request: bool) -> str:
    if role == "function":
        return "tool"
    return "user" if in_request else "assistant"


def _generated(prefix: str, pointer: str) -> str:
    return f"{prefix}_{zlib.crc32(pointer.encode()):010d}"


def _without(content: Any, key: str) -> Any:
    copied = content.model_copy()
    object.__setattr__(copied, "__pydantic_extra__", {k: v for k, v in content.extra.items() if k != key})
    return copied


def _fix(rec: Recorder, source: Any, content: Any, pointer: str) -> Any:
    kind = content.extra.get("type")
    if kind is not None and not (isinstance(content, FunctionCallContent) and isinstance(kind, str)
                                 and kind.endswith("_call")) and not (
            isinstance(content, TextContent) and kind in ("input_text", "output_text")):
        rec.drop(source, pointer, "type", f"property 'type' ({kind!r})", "not a Responses item or part type")
        content = _without(content, "type")
    if isinstance(content, FunctionCallContent):
        if content.informational_only and "type" not in content.extra and content.name in BUILT_IN_CALLS and (
                "status" in content.extra):
            return content  # a built-in call item of ours
        if content.informational_only and "type" not in content.extra and content.name is None:
            content = content.model_copy(update={"informational_only": None})
        if content.informational_only and "type" not in content.extra:
            rec.approximate(source, pointer, "informationalOnly", "server-run call",
                            "Responses names each built-in tool call by its own item type: written as a "
                            "function call")
            content = build(FunctionCallContent, content.extra, call_id=content.call_id, name=content.name,
                            arguments=content.arguments)
        if content.informational_only:
            return content
        update: dict[str, Any] = {}
        if content.call_id is None:
            update["call_id"] = _generated("call", pointer)
            rec.approximate(source, pointer, "callId", "callId", "a function call needs a call_id: one was generated")
        if content.name is None:
            update["name"] = ""
            rec.approximate(source, pointer, "name", "name", "a function call needs a name: written as ''")
        arguments, why = string_arguments(content.arguments)
        if arguments != content.arguments:
            update["arguments"] = arguments
            if why:
                rec.approximate(source, pointer, "arguments", "arguments", why)
        return content.model_copy(update=update) if update else content
    if isinstance(content, FunctionResultContent):
        update = {}
        if content.call_id is None:
            update["call_id"] = ""
            rec.approximate(source, pointer, "callId", "callId", "a function output needs its call_id: written as ''")
        if not isinstance(content.result, str) and not _output_parts(content.result):
            update["result"] = "" if content.result is None else json_text(content.result)
            rec.approximate(source, pointer, "result", "result", "a function output is text or input parts: "
                            "written as JSON text")
        return content.model_copy(update=update) if update else content
    if isinstance(content, ReasoningContent) and "id" not in content.extra:
        if content.protected_data is not None:
            rec.drop(source, pointer, "protectedData", "protectedData", "another provider's opaque reasoning data "
                     "means nothing to OpenAI")
        rec.approximate(source, pointer, None, "reasoning id", "a reasoning item needs an id: one was generated")
        return build(ReasoningContent, {**content.extra, "id": _generated("rs", pointer)},
                     **({"text": content.text} if content.text is not None else {}))
    if isinstance(content, TextContent):
        update = {} if content.text is not None else {"text": ""}
        if content.annotations:
            kept = tuple(a for a in content.annotations if isinstance(a, Citation)
                         and a.extra.get("type") in CITATION_TYPES)
            if len(kept) != len(content.annotations):
                rec.drop(source, pointer, "annotations", "citations", "Responses citations are url_citation or "
                         "file_citation annotations with their places in the text")
                update["annotations"] = kept
        return content.model_copy(update=update) if update else content
    if isinstance(content, (DataContent, UriContent, HostedFileContent)) and (
            content.media_type or "").startswith("image/") and "detail" not in content.extra:
        rec.approximate(source, pointer, None, "image detail", 'an input image says its detail: written as "auto"')
        content = with_extras(content.model_copy(), {"detail": "auto"})
    if isinstance(content, DataContent) and not (content.uri or "").startswith("data:"):
        rec.drop(source, pointer, None, "data content", "Responses takes inline files as data: URLs")
        return None
    if isinstance(content, (DataContent, UriContent)) and not content.uri:
        rec.drop(source, pointer, None, f"{content.kind} content", "it has no URI")
        return None
    if isinstance(content, HostedFileContent) and not content.file_id:
        rec.drop(source, pointer, None, "hostedFile content", "it has no file id")
        return None
    return content


_PART = frozenset({"detail"})
_CONTENT_FIELDS: dict[type, tuple[frozenset[str], frozenset[str]]] = {
    TextContent: (frozenset({"text", "annotations"}), frozenset({"type", "logprobs"})),
    ReasoningContent: (frozenset({"text", "protectedData"}), frozenset({"id", "summary", "content", "status"})),
    FunctionCallContent: (frozenset({"callId", "name", "arguments", "informationalOnly"}),
                          frozenset({"id", "status", "type", "server_label", "output", "error", "action", "queries",
                                     "results", "code", "container_id", "outputs", "result", "pending_safety_checks",
                                     "approval_request_id"})),
    FunctionResultContent: (frozenset({"callId", "result"}), frozenset({"id", "status"})),
    DataContent: (frozenset({"uri", "mediaType"}), _PART | {"filename"}),
    UriContent: (frozenset({"uri", "mediaType"}), _PART),
    HostedFileContent: (frozenset({"fileId", "mediaType", "name"}), _PART),
}

TARGET = Target(NAME, "OpenAI Responses", ROLES, _nearest_role, _CONTENT_FIELDS,
                message_fields=frozenset({"messageId"}), message_extras=frozenset({"status", "type"}),
                session_extras=frozenset({"model", "tools", "tool_choice", "temperature", "top_p", "reasoning",
                                          "text", "metadata", "store", "include", "max_output_tokens", "truncation",
                                          "parallel_tool_calls", "previous_response_id", "service_tier", "user"}),
                fix=_fix, tools=NAME)


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Map what Responses items cannot hold onto what they can, with losses.

    A ``tool`` message holding anything but results is written as a user message (only
    function outputs stand for tools); a user's text annotations are dropped (only the
    assistant's output text carries them).
    """
    rec = Recorder(origin)
    lowered = lower_messages(session, rec, TARGET)
    messages: list[Message] = []
    for position, (message, _) in enumerate(lowered.messages):
        if message.role == "tool" and (not message.items or not all(
                isinstance(c, FunctionResultContent) for c in message.items)):
            lowered.approximate(rec, position, "role", "role 'tool'", "Responses has no tool messages, only function "
                            "outputs: written as a user message")
            message = message.model_copy(update={"role": "user"})
        if message.role == "assistant" and form(message) != "item":
            message = _output_message(rec, lowered, position, message)
        if message.message_id is not None and not message.items:
            message = message.model_copy(update={"contents": (TextContent(text=""),)})
        if message.role != "assistant" and any(isinstance(c, TextContent) and c.annotations for c in message.items):
            lowered.drop(rec, position, None, "citations", "only the assistant's output text carries annotations")
            message = message.model_copy(update={"contents": tuple(
                build(TextContent, c.extra, text=c.text) if isinstance(c, TextContent) else c for c in message.items)})
        messages.append(message)
    result = Session(data=SessionData(conversation_history=tuple(group_by_role(messages, ROLES, REQUEST_ROLES))))
    return Lowered(with_extras(result, lowered.session_extras), rec.losses)


_ITEM_CONTENTS = (FunctionCallContent, FunctionResultContent, ReasoningContent, OpaqueContent)


def _output_message(rec: Recorder, lowered: Any, position: int, message: Message) -> Message:
    """An assistant's parts as the output message the API takes back: output text only,
    with an id, a status and annotations."""
    parts = [c for c in message.items if not isinstance(c, _ITEM_CONTENTS)]
    if not parts or (message.message_id is not None and "status" in message.extra) or (
            len(parts) == 1 and isinstance(parts[0], TextContent) and _plain(parts[0]) and form(message) != "blocks"):
        return message  # already an output message, or text the API takes as a string
    contents: list[Content] = []
    for content in message.items:
        if isinstance(content, _ITEM_CONTENTS):
            contents.append(content)
        elif isinstance(content, TextContent):
            contents.append(content if content.annotations is not None else content.model_copy(
                update={"annotations": ()}))
        else:
            lowered.drop(rec, position, None, f"{content.kind} content in an assistant message",
                         "an assistant's output message holds only text")
    extras = {"type": "message", "status": "completed", **message.extra}
    if message.message_id is None:
        lowered.approximate(rec, position, "messageId", "messageId",
                            "an assistant's output message needs an id: one was generated")
    built = build(Message, extras, role="assistant", contents=tuple(contents),
                  message_id=message.message_id or _generated("msg", str(position)))
    assert built is not None, "a message's own extras never collide with its fields"
    return built


FORMAT = FunctionFormat(NAME, "OpenAI Responses", looks_like, validate, read, write, lower)
