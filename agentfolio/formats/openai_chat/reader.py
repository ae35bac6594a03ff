"""Reading OpenAI Chat Completions messages into the canonical model."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentfolio import _json
from agentfolio.formats.base import ReadResult, read_lazily
from agentfolio.formats.errors import FormatError, Problem, json_pointer, validated
from agentfolio.formats.losses import ConvertOptions, Origin, with_extras
from agentfolio.formats.openai_chat.spec import (
    ABSENT,
    AUDIO_TYPES,
    BARE_LIST,
    MESSAGE_KEYS,
    NAME,
    NULL,
    PARTS,
    REQUEST_ROLES,
    ROLES,
    STRING,
    TOOL_CALL_KIND,
)
from agentfolio.formats.shared import data_url_type, group_by_role
from agentfolio.model import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    Message,
    OpaqueContent,
    RequestEntry,
    ResponseEntry,
    Session,
    SessionData,
    TextContent,
    UriContent,
)


def looks_like(document: Any) -> bool:
    if isinstance(document, list):
        return bool(document) and all(isinstance(m, dict) and "role" in m for m in document)
    return (isinstance(document, dict) and isinstance(document.get("messages"), list)
            and "version" not in document and "schemaVersion" not in document)


def validate(document: Any) -> list[Problem]:
    """Structural checks (OpenAI publishes no schema for stored messages)."""
    messages, base = _messages_of(document)
    problems = []
    open_calls: set[str] = set()
    prefix = json_pointer(base)
    for index, message in enumerate(messages):
        pointer = f"{prefix}/{index}"
        if not isinstance(message, dict):
            problems.append(Problem(pointer, "expected a message object"))
            continue
        role = message.get("role")
        if role not in ROLES and role != "function":
            problems.append(Problem(pointer + "/role", f"role {_json.dumps(role).decode()} is not one of "
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
                    problems.extend(_call_problems(call, f"{pointer}/tool_calls/{c_index}"))
                    if isinstance(call, dict) and isinstance(call.get("id"), str):
                        open_calls.add(call["id"])
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                problems.append(Problem(pointer, 'a tool message needs a string "tool_call_id"'))
            elif call_id not in open_calls:
                # The API refuses a tool message that answers no earlier assistant tool call.
                problems.append(Problem(pointer + "/tool_call_id", f"no earlier assistant tool call has id "
                                        f"{_json.dumps(call_id).decode()}"))
    return problems


def _call_problems(call: Any, pointer: str) -> list[Problem]:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str):
        return [Problem(pointer, 'a tool call needs a string "id"')]
    kind = call.get("type", "function")
    if kind == "function":
        function = call.get("function")
        if not (isinstance(function, dict) and isinstance(function.get("name"), str)
                and isinstance(function.get("arguments"), str)):
            return [Problem(pointer + "/function", "a function call needs a string name and arguments")]
    elif kind == "custom":
        custom = call.get("custom")
        if not (isinstance(custom, dict) and isinstance(custom.get("name"), str)
                and isinstance(custom.get("input"), str)):
            return [Problem(pointer + "/custom", "a custom tool call needs a string name and input")]
    return []


def _messages_of(document: Any) -> tuple[list[Any], list[str]]:
    if isinstance(document, list):
        return document, []
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        return document["messages"], ["messages"]
    raise FormatError('expected OpenAI chat messages: an array, or an object with "messages"', pointer="")


def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    problems = validated(validate, document, strict=strict, source=source)
    messages, base = _messages_of(document)
    if not all(isinstance(m, dict) for m in messages):
        raise FormatError("messages must be objects", source=source, pointer=json_pointer(base))
    origin = Origin()

    def build() -> Session:
        prefix = json_pointer(base)
        read_messages = [_read_message(m, f"{prefix}/{i}", origin) for i, m in enumerate(messages)]
        session = Session(data=SessionData(conversation_history=tuple(group_entries(read_messages))))
        extras = {k: v for k, v in document.items() if k != "messages"} if isinstance(document, dict) else {}
        if isinstance(document, list):
            session.remember_spelling(BARE_LIST)
        origin.add(session, "")
        return with_extras(session, extras)

    return read_lazily(build, document, NAME, version="request" if isinstance(document, dict) else "messages",
                       problems=problems, origin=origin)


def content_spelling(raw: dict[str, Any]) -> str:
    """How a message spells its content: a string, an array of parts, null, or absent."""
    if "content" not in raw:
        return ABSENT
    content = raw["content"]
    return NULL if content is None else STRING if isinstance(content, str) else PARTS


def group_entries(messages: Iterable[Message]) -> list[RequestEntry | ResponseEntry]:
    return group_by_role(messages, ROLES, REQUEST_ROLES)


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
        optional: dict[str, Any] = {"result": content} if "content" in raw else {}
        result = FunctionResultContent(call_id=raw["tool_call_id"], **optional)
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
    message.remember_spelling(content_spelling(raw))
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
                "type", "input_audio"} and part["input_audio"].get("format") in AUDIO_TYPES and isinstance(
                part["input_audio"].get("data"), str) and set(part["input_audio"]) == {"data", "format"}:
            audio = part["input_audio"]
            media_type = AUDIO_TYPES[audio["format"]]
            built = DataContent(uri=f"data:{media_type};base64,{audio['data']}", media_type=media_type)
            names = {"uri": ("input_audio", "data")}
        elif kind == "file" and isinstance(part.get("file"), dict) and set(part) == {"type", "file"}:
            file = part["file"]
            if isinstance(file.get("file_id"), str) and "file_data" not in file:
                built = with_extras(HostedFileContent(file_id=file["file_id"]), _rest(file, "file_id"))
            elif isinstance(file.get("file_data"), str) and "file_id" not in file:
                built = with_extras(DataContent(uri=file["file_data"], media_type=data_url_type(file["file_data"])),
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



def _media_content(url: str, media: str) -> Any:
    if url.startswith("data:"):
        declared = data_url_type(url)
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
    kept = with_extras(OpaqueContent(), {"$type": TOOL_CALL_KIND, "call": call})
    origin.add(kept, pointer)
    return kept
