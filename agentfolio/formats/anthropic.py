"""Anthropic Messages: a request (``{"model", "system"?, "messages": [...], "tools"?...}``)
or a response (``{"type": "message", "role": "assistant", "content": [...], "usage"...}``).

Reading maps each content block onto the model, keeping the rest of the block (``cache_control``,
a document's ``title``...) in the content's ``extra`` under Anthropic's names:

=============================================  ===============================================
block                                          canonical content
=============================================  ===============================================
``text`` (``citations``)                       text (citations → Citation annotations)
``thinking`` / ``redacted_thinking``           reasoning; ``signature`` / ``data`` → protectedData
``image``/``document`` base64, url, file       data / uri (``image/*`` for an image URL) /
                                               hostedFile
``tool_use``                                   functionCall (``input`` kept as the object)
``server_tool_use``, ``mcp_tool_use``...       functionCall, informationalOnly
``tool_result`` (``is_error``, arrays)         functionResult (``content`` kept as read)
``web_search_tool_result``, ``*_tool_result``  functionResult, its ``type`` in ``extra``
anything else                                  kept whole
=============================================  ===============================================

``system`` becomes a leading system message; request messages are grouped into request
(user) and response (assistant) entries.  A response is one response entry holding one
message (``id`` → messageId, ``usage`` → the entry's usage, cache counts in its
``extra``).  Read → write gives the same JSON value.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
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
    flag_foreign_signature,
    form,
    is_kept_whole,
    json_arguments,
    kept_value,
    kept_whole,
    lower_messages,
    rest,
    signed_by,
    split_data_url,
)
from agentfolio.formats.shared import data_url_payload, group_by_role, require_objects
from agentfolio.model import (
    Citation,
    DataContent,
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

NAME = "anthropic"
ROLES = ("system", "user", "assistant")
# Blocks only Anthropic writes: one of them in a message marks a document as Anthropic's.
MARKER_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document",
                           "server_tool_use", "web_search_tool_result", "search_result", "container_upload",
                           "mcp_tool_use", "mcp_tool_result"})
# Citations whose title is the cited document's (``document_title``), not a page's.
# Media types Anthropic takes inline as base64.
BASE64_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp", "application/pdf"})
_DOCUMENT_CITATIONS = frozenset({"char_location", "page_location", "content_block_location"})
_SCAN = 64  # messages looked at by looks_like


def looks_like(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    if document.get("type") == "message" and isinstance(document.get("content"), list):
        return True
    messages = document.get("messages")
    if not isinstance(messages, list) or "version" in document or "schemaVersion" in document:
        return False
    if "system" in document or "anthropic_version" in document:
        return True
    for message in messages[:_SCAN]:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") in MARKER_BLOCKS
                                             for b in content[:_SCAN]):
            return True
    return False


def _is_response(document: Any) -> bool:
    return isinstance(document, dict) and document.get("type") == "message" and "messages" not in document


# -- validation ---------------------------------------------------------------------------

def validate(document: Any) -> list[Problem]:
    """The shape the Messages API accepts (types of known blocks; unknown blocks pass)."""
    problems: list[Problem] = []
    if not isinstance(document, dict):
        return [Problem("", "expected an Anthropic request or response object")]
    if _is_response(document):
        if document.get("role") != "assistant":
            problems.append(Problem("/role", 'a response\'s role is "assistant"'))
        if check_type(problems, "/content", document.get("content"), list, "an array of content blocks"):
            _check_blocks(problems, "/content", document["content"])
        return problems
    if not check_type(problems, "/messages", document.get("messages"), list, "an array of messages"):
        return problems
    system = document.get("system")
    if isinstance(system, list):
        for index, block in enumerate(system):
            if not (isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)):
                problems.append(Problem(f"/system/{index}", "expected a text block"))
    elif "system" in document and not isinstance(system, str):
        problems.append(Problem("/system", "expected a string or an array of text blocks"))
    for index, message in enumerate(document["messages"]):
        pointer = f"/messages/{index}"
        if not check_type(problems, pointer, message, dict, "a message object"):
            continue
        if message.get("role") not in ("user", "assistant"):
            problems.append(Problem(pointer + "/role", 'expected "user" or "assistant"'))
        content = message.get("content")
        if isinstance(content, list):
            _check_blocks(problems, pointer + "/content", content)
        elif not isinstance(content, str):
            problems.append(Problem(pointer + "/content", "expected a string or an array of content blocks"))
    return problems


_RESULT_BLOCKS = frozenset({"text", "image", "document", "search_result"})


def _result_content(value: Any) -> bool:
    """Whether a value is what a tool_result holds: text, or an array of text/image/document blocks."""
    return isinstance(value, str) or (isinstance(value, list) and all(
        isinstance(b, dict) and b.get("type") in _RESULT_BLOCKS for b in value))


def _check_blocks(problems: list[Problem], base: str, blocks: list[Any]) -> None:
    for index, block in enumerate(blocks):
        pointer = f"{base}/{index}"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            problems.append(Problem(pointer, 'expected a content block with a "type"'))
            continue
        kind = block["type"]
        if kind == "text":
            check_type(problems, pointer + "/text", block.get("text"), str, "a string")
        elif kind == "thinking":
            check_type(problems, pointer + "/thinking", block.get("thinking"), str, "a string")
            check_type(problems, pointer + "/signature", block.get("signature"), str, "a string")
        elif kind == "redacted_thinking":
            check_type(problems, pointer + "/data", block.get("data"), str, "a string")
        elif kind in ("tool_use", "server_tool_use"):
            check_type(problems, pointer + "/id", block.get("id"), str, "a string")
            check_type(problems, pointer + "/name", block.get("name"), str, "a string")
            check_type(problems, pointer + "/input", block.get("input"), dict, "an object")
        elif kind == "tool_result" or kind.endswith("_tool_result"):
            check_type(problems, pointer + "/tool_use_id", block.get("tool_use_id"), str, "a string")
            if kind == "tool_result" and "content" in block and not _result_content(block["content"]):
                problems.append(Problem(pointer + "/content", "expected a string or an array of content blocks"))
        elif kind in ("image", "document") and check_type(problems, pointer + "/source", block.get("source"),
                                                          dict, "a source object"):
            source = block["source"]
            if source.get("type") == "base64" and source.get("media_type") not in BASE64_TYPES:
                problems.append(Problem(pointer + "/source/media_type", "expected one of "
                                        + ", ".join(sorted(BASE64_TYPES))))


# -- reading ------------------------------------------------------------------------------

def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    problems = validated(validate, document, strict=strict, source=source)
    if not isinstance(document, dict):
        raise FormatError("expected an Anthropic request or response object", source=source, pointer="")
    origin = Origin()
    response = _is_response(document)
    if not response:
        require_objects(document, "messages", "a message object", source)

    def build() -> Session:
        session = _read_response(document, origin) if response else _read_request(document, origin)
        origin.add(session, "")
        return session

    return read_lazily(build, document, NAME, version="response" if response else "request", problems=problems,
                       origin=origin)


def _read_request(document: dict[str, Any], origin: Origin) -> Session:
    messages: list[Message] = []
    if "system" in document and isinstance(document["system"], (str, list)):
        system = _read_message({"role": "system", "content": document["system"]}, "/system", origin, content_key=False)
        origin.add(system, "/system")
        messages.append(system)
    for index, raw in enumerate(document["messages"]):
        messages.append(_read_message(raw, f"/messages/{index}", origin))
    extras = rest(document, "messages", *(("system",) if messages and messages[0].role == "system" else ()))
    entries = group_by_role(messages, ROLES, frozenset({"system", "user"}))
    session = Session(data=SessionData(conversation_history=tuple(entries)))
    return with_extras(session, extras)


def _read_response(document: dict[str, Any], origin: Origin) -> Session:
    usage = _read_usage(document.get("usage"))
    skip = ("content", "role", "id") + (("usage",) if usage is not None else ())
    message = _read_message({k: document[k] for k in ("role", "content") if k in document}, "", origin)
    extras = rest(document, *skip)
    known: dict[str, Any] = {"role": message.role, "contents": message.contents}
    if isinstance(document.get("id"), str):
        known["message_id"] = document["id"]
    else:
        extras = rest(document, "content", "role", *(("usage",) if usage is not None else ()))
    message = with_extras(Message(**known), {**extras_without_form(message), **extras})
    origin.add(message, "", {"messageId": ("id",)})
    optional: dict[str, Any] = {"usage": usage} if usage is not None else {}
    entry = ResponseEntry(messages=(message,), **optional)
    origin.add(entry, "", {"usage": ("usage",)})
    return Session(data=SessionData(conversation_history=(entry,)))


def _read_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), int) and not isinstance(raw.get(k), bool)
                                            for k in ("input_tokens", "output_tokens")):
        return None
    return build(Usage, rest(raw, "input_tokens", "output_tokens"), input_token_count=raw["input_tokens"],
                 output_token_count=raw["output_tokens"])


def _read_message(raw: dict[str, Any], pointer: str, origin: Origin, content_key: bool = True) -> Message:
    content = raw.get("content")
    contents: list[Any] = []
    marker: dict[str, Any] = {}
    content_pointer = pointer + ("/content" if content_key else "")
    if isinstance(content, str):
        text = TextContent(text=content)
        origin.add(text, content_pointer, {"text": ()})
        contents.append(text)
    elif isinstance(content, list):
        for index, block in enumerate(content):
            contents.append(read_block(block, f"{content_pointer}/{index}", origin))
        if len(contents) == 1 and isinstance(contents[0], TextContent) and _plain(contents[0]):
            marker = {FORM_KEY: "blocks"}  # a one-text array, not the string it would be written as
    extras = rest(raw, "role", "content") if content is not None or "content" not in raw else rest(raw, "role")
    if content is not None and not isinstance(content, (str, list)):
        extras["content"] = content
    known: dict[str, Any] = {"role": raw["role"]} if isinstance(raw.get("role"), str) else {}
    if "role" in raw and not known:
        extras["role_"] = raw["role"]
    if "content" in raw:
        known["contents"] = tuple(contents)
    message = with_extras(Message(**known), {**extras, **marker})
    origin.add(message, pointer)
    return message


def _plain(text: TextContent) -> bool:
    return not text.extra and text.annotations is None


def read_block(block: Any, pointer: str, origin: Origin) -> Any:
    """One content block as a canonical content (kept whole when it cannot be mapped exactly)."""
    built = _map_block(block) if isinstance(block, dict) else None
    if built is None:
        built = kept_whole(NAME, block)
        origin.add(built, pointer, {"value": ()})
    else:
        origin.add(built, pointer, _NAMES.get(type(built), {}))
    return built


_NAMES: dict[type, dict[str, tuple[str, ...]]] = {
    FunctionCallContent: {"callId": ("id",), "arguments": ("input",), "informationalOnly": ("type",)},
    FunctionResultContent: {"callId": ("tool_use_id",), "result": ("content",)},
    ReasoningContent: {"text": ("thinking",), "protectedData": ("signature",)},
    TextContent: {"annotations": ("citations",)},
    DataContent: {"uri": ("source", "data"), "mediaType": ("source", "media_type")},
    UriContent: {"uri": ("source", "url")},
    HostedFileContent: {"fileId": ("source", "file_id")},
}


def _map_block(block: dict[str, Any]) -> Any:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        citations = block.get("citations")
        if isinstance(citations, list):
            annotations = tuple(_read_citation(c) for c in citations)
            return build(TextContent, rest(block, "type", "text", "citations"), text=block["text"],
                         annotations=annotations)
        return build(TextContent, rest(block, "type", "text"), text=block["text"])
    if kind == "thinking" and isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str):
        return build(ReasoningContent, {**rest(block, "type", "thinking", "signature"), **signed_by(NAME)},
                     text=block["thinking"], protected_data=block["signature"])
    if kind == "redacted_thinking" and isinstance(block.get("data"), str):
        return build(ReasoningContent, {**rest(block, "type", "data"), **signed_by(NAME)},
                     protected_data=block["data"])
    if isinstance(kind, str) and kind.endswith("tool_use") and isinstance(block.get("id"), str) and isinstance(
            block.get("name"), str) and isinstance(block.get("input"), dict):
        server = kind != "tool_use"
        keep = ("id", "name", "input") + (("type",) if kind in ("tool_use", "server_tool_use") else ())
        return build(FunctionCallContent, rest(block, *keep), call_id=block["id"], name=block["name"],
                     arguments=block["input"], **({"informational_only": True} if server else {}))
    if isinstance(kind, str) and kind.endswith("tool_result") and isinstance(block.get("tool_use_id"), str):
        keep = ("tool_use_id", "content") + (("type",) if kind == "tool_result" else ())
        return build(FunctionResultContent, rest(block, *keep), call_id=block["tool_use_id"],
                     **({"result": block["content"]} if "content" in block else {}))
    if kind in ("image", "document") and isinstance(block.get("source"), dict):
        return _read_media(kind, block)
    return None


def _read_media(kind: str, block: dict[str, Any]) -> Any:
    source = block["source"]
    extras = rest(block, "type", "source")
    image = kind == "image"
    if source.get("type") == "base64" and set(source) == {"type", "media_type", "data"} and isinstance(
            source["media_type"], str) and isinstance(source["data"], str):
        if not image and not source["media_type"].startswith("application/"):
            return None  # written back as a document only if it is not media
        if image != source["media_type"].startswith("image/"):
            return None
        return build(DataContent, extras, uri=data_url(source["media_type"], source["data"]),
                     media_type=source["media_type"])
    if source.get("type") == "url" and set(source) == {"type", "url"} and isinstance(source["url"], str):
        return build(UriContent, extras, uri=source["url"], media_type="image/*" if image else "application/pdf")
    if source.get("type") == "file" and set(source) == {"type", "file_id"} and isinstance(source["file_id"], str):
        return build(HostedFileContent, extras, file_id=source["file_id"],
                     media_type="image/*" if image else "application/pdf")
    return None


def _read_citation(raw: Any) -> Any:
    if isinstance(raw, dict):
        title_key = "document_title" if raw.get("type") in _DOCUMENT_CITATIONS else "title"
        known: dict[str, Any] = {}
        for wire, attribute in ((title_key, "title"), ("url", "url"), ("file_id", "file_id"),
                                ("cited_text", "snippet")):
            if isinstance(raw.get(wire), str):
                known[attribute] = raw[wire]
        used = {wire for wire, attribute in ((title_key, "title"), ("url", "url"), ("file_id", "file_id"),
                                             ("cited_text", "snippet")) if attribute in known}
        if title_key == "document_title" and "title" in raw:
            used = set()  # both spellings present: keep whole rather than guess
        if used or not known:
            citation = build(Citation, rest(raw, *used), **known) if used else None
            if citation is not None:
                return citation
    return with_extras(OpaqueContent(), {"$type": f"{NAME}.citation", "value": raw})


# -- writing ------------------------------------------------------------------------------

def write(session: Session) -> dict[str, Any]:
    """The session as an Anthropic request body, or a response when it was read from one."""
    entries = session.entries
    if len(entries) == 1 and isinstance(entries[0], ResponseEntry) and len(entries[0].items) == 1 and (
            entries[0].items[0].extra.get("type") == "message"):
        return _write_response(entries[0])
    document: dict[str, Any] = {}
    messages: list[dict[str, Any]] = []
    for index, (_, message) in enumerate(session.messages()):
        if message.role == "system" and index == 0:
            document["system"] = _write_content(message, "/system")
            continue
        messages.append(_write_message(message, f"/messages/{len(messages)}"))
    extras = dict(session.extra)
    extras.pop(FORM_KEY, None)
    for key in ("model", "max_tokens"):
        if key in extras:
            document[key] = extras.pop(key)
    if "system" in document:
        document = {**{k: v for k, v in document.items() if k != "system"}, "system": document["system"]}
    document["messages"] = messages
    for key, value in extras.items():
        document.setdefault(key, value)
    return document


def _write_response(entry: ResponseEntry) -> dict[str, Any]:
    message = entry.items[0]
    document: dict[str, Any] = {}
    if message.message_id is not None:
        document["id"] = message.message_id
    extras = extras_without_form(message)
    document["type"] = extras.pop("type")
    if message.role is not None:
        document["role"] = message.role
    document["content"] = [write_block(c, f"/content/{i}") for i, c in enumerate(message.items)]
    document.update(extras)
    if entry.usage is not None:
        usage = entry.usage
        document["usage"] = {**({"input_tokens": usage.input_token_count} if usage.input_token_count is not None
                                else {}),
                             **({"output_tokens": usage.output_token_count} if usage.output_token_count is not None
                                else {}), **usage.extra}
    return document


def _write_message(message: Message, pointer: str) -> dict[str, Any]:
    written: dict[str, Any] = {}
    extras = extras_without_form(message)
    if message.role is not None:
        written["role"] = message.role
    elif "role_" in extras:
        written["role"] = extras.pop("role_")
    if "content" in extras:
        written["content"] = extras.pop("content")
    elif message.contents is not None:
        written["content"] = _write_content(message, pointer + "/content")
    written.update(extras)
    return written


def _write_content(message: Message, pointer: str) -> str | list[Any]:
    items = message.items
    if len(items) == 1 and isinstance(items[0], TextContent) and _plain(items[0]) and form(message) != "blocks" \
            and items[0].text is not None:
        return items[0].text
    return [write_block(content, f"{pointer}/{index}") for index, content in enumerate(items)]


def write_block(content: Any, pointer: str) -> Any:
    """One canonical content as a content block (FormatError when it has no Anthropic form)."""
    if type(content) is OpaqueContent and is_kept_whole(NAME, content):
        return kept_value(content)  # may be any JSON value, null included
    writer = _BLOCK_WRITERS.get(type(content))
    block = writer(content) if writer is not None else None
    if block is None:
        raise FormatError(f"a {getattr(content, 'kind', '?')!r} content of this shape has no Anthropic form; "
                          "convert the session", pointer=pointer)
    return block


# One writer per kind, picked by the content's class (a long history writes each block
# through one dict lookup, not a chain of isinstance tests); None: no Anthropic form.

def _text_block(content: TextContent) -> Any:
    if content.text is None:
        return None
    block: dict[str, Any] = {"type": "text", "text": content.text}
    if content.annotations is not None:
        block["citations"] = [_write_citation(a) for a in content.annotations]
    return add_extras(block, content)


def _reasoning_block(content: ReasoningContent) -> Any:
    if content.text is None and content.protected_data is not None:
        block = {"type": "redacted_thinking", "data": content.protected_data}
    else:
        block = {"type": "thinking", "thinking": content.text or "", "signature": content.protected_data or ""}
    return add_extras(block, content)


def _call_block(content: FunctionCallContent) -> Any:
    if not isinstance(content.arguments, dict) or content.call_id is None or content.name is None:
        return None
    block = {"type": "server_tool_use" if content.informational_only else "tool_use", "id": content.call_id,
             "name": content.name, "input": content.arguments}
    return add_extras(block, content)


def _result_block(content: FunctionResultContent) -> Any:
    if content.call_id is None:
        return None
    block = {"type": "tool_result", "tool_use_id": content.call_id}
    if "result" in content.__pydantic_fields_set__:
        block["content"] = content.result
    return add_extras(block, content)


def _media_block(content: Any) -> Any:
    return _write_media(content, extras_without_form(content))


_BLOCK_WRITERS: dict[type, Callable[[Any], Any]] = {
    TextContent: _text_block, ReasoningContent: _reasoning_block,
    FunctionCallContent: _call_block, FunctionResultContent: _result_block, DataContent: _media_block,
    UriContent: _media_block, HostedFileContent: _media_block,
}


def _write_media(content: Any, extra: dict[str, Any]) -> dict[str, Any] | None:
    media_type = content.media_type or ""
    kind = "image" if media_type.startswith("image/") else "document"
    if isinstance(content, DataContent):
        data = split_data_url(content.uri, content.media_type)
        if data is None:
            return None
        source = {"type": "base64", "media_type": media_type, "data": data}
    elif isinstance(content, UriContent) and content.uri is not None:
        source = {"type": "url", "url": content.uri}
    elif isinstance(content, HostedFileContent) and content.file_id is not None:
        source = {"type": "file", "file_id": content.file_id}
    else:
        return None
    return {"type": kind, "source": source, **extra}


def _write_citation(annotation: Any) -> Any:
    extra = annotation.__pydantic_extra__ or {}
    if type(annotation) is Citation:
        written: dict[str, Any] = {}
        if annotation.title is not None:
            written["document_title" if extra.get("type") in _DOCUMENT_CITATIONS else "title"] = annotation.title
        if annotation.url is not None:
            written["url"] = annotation.url
        if annotation.file_id is not None:
            written["file_id"] = annotation.file_id
        if annotation.snippet is not None:
            written["cited_text"] = annotation.snippet
        written.update(extra)
        return written
    return extra.get("value")


# -- lowering -----------------------------------------------------------------------------

def _nearest_role(role: str | None, in_request: bool) -> str:
    if role in ("tool", "function", "human"):
        return "user"
    if role == "developer":
        return "system"
    return "user" if in_request else "assistant"


_CITATION_TYPES = _DOCUMENT_CITATIONS | {"web_search_result_location", "search_result_location"}


def _foreign_type(rec: Recorder, source: Any, content: Any, pointer: str, suffix: str) -> Any:
    """A block ``type`` carried from another provider is not one Anthropic knows: dropped."""
    kind = content.extra.get("type")
    if kind is None or (isinstance(kind, str) and kind.endswith(suffix)):
        return content
    rec.drop(source, pointer, "type", f"property 'type' ({kind!r})", "not an Anthropic block type")
    copied = content.model_copy()
    object.__setattr__(copied, "__pydantic_extra__", {k: v for k, v in content.extra.items() if k != "type"})
    return copied


def _fix(rec: Recorder, source: Any, content: Any, pointer: str) -> Any:
    flag_foreign_signature(rec, source, content, pointer, NAME, "Anthropic")
    if isinstance(content, FunctionCallContent):
        content = _foreign_type(rec, source, content, pointer, "_tool_use")
        update: dict[str, Any] = {}
        if content.call_id is None:
            update["call_id"] = f"toolu_{zlib.crc32(pointer.encode()):010d}"
            rec.approximate(source, pointer, "callId", "callId", "a tool_use block needs an id: one was generated")
        if content.name is None:
            update["name"] = ""
            rec.approximate(source, pointer, "name", "name", "a tool_use block needs a name: written as ''")
        arguments, why = json_arguments(content.arguments)
        if why:
            update["arguments"] = arguments
            rec.approximate(source, pointer, "arguments", "arguments", f"Anthropic input is an object: {why}")
        return content.model_copy(update=update) if update else content
    if isinstance(content, FunctionResultContent):
        content = _foreign_type(rec, source, content, pointer, "_tool_result")
    if isinstance(content, FunctionResultContent) and "result" in content.model_fields_set and (
            content.extra.get("type") is None and not _result_content(content.result)):
        if content.result is None:
            rec.approximate(source, pointer, "result", "result", "a null result is written without content")
            content = build(FunctionResultContent, content.extra, call_id=content.call_id)
        else:
            rec.approximate(source, pointer, "result", "result",
                            "a tool_result holds text or content blocks: written as JSON text")
            content = content.model_copy(update={"result": json_text(content.result)})
    if isinstance(content, FunctionResultContent) and content.call_id is None:
        rec.approximate(source, pointer, "callId", "callId", "a tool_result needs its tool_use_id: written as ''")
        return content.model_copy(update={"call_id": ""})
    if isinstance(content, TextContent) and content.text is None:
        return content.model_copy(update={"text": ""})
    if isinstance(content, DataContent) and (split_data_url(content.uri, content.media_type) is None
                                             or content.media_type not in BASE64_TYPES):
        _, text = data_url_payload(content.uri or "")
        if text is not None:
            rec.approximate(source, pointer, None, "data content",
                            f"Anthropic takes inline {content.media_type or 'data'} only as a plain-text document")
            return kept_whole(NAME, {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                                     "data": text}})
        rec.drop(source, pointer, None, "data content", "Anthropic takes inline data only as base64 images "
                 f"({', '.join(sorted(BASE64_TYPES - {'application/pdf'}))}) and PDF documents")
        return None
    if isinstance(content, (UriContent, HostedFileContent)) and content.media_type is None:
        rec.approximate(source, pointer, "mediaType", "mediaType",
                        "Anthropic holds a link or file as an image or a document: written as a document")
    if isinstance(content, TextContent) and content.annotations:
        kept = tuple(a for a in content.annotations
                     if isinstance(a, Citation) and a.extra.get("type") in _CITATION_TYPES)
        if len(kept) != len(content.annotations):
            rec.drop(source, pointer, "annotations", "citations",
                     "Anthropic citations point into its own documents and search results")
            return content.model_copy(update={"annotations": kept or None})
    return content


# Block properties the Messages API knows beside those mapped onto the model.
_BLOCK_EXTRAS = {
    TextContent: frozenset({"cache_control"}),
    ReasoningContent: frozenset(),
    FunctionCallContent: frozenset({"cache_control", "type", "server_name", "caller"}),
    FunctionResultContent: frozenset({"cache_control", "type", "is_error"}),
    DataContent: frozenset({"cache_control", "citations", "title", "context"}),
    UriContent: frozenset({"cache_control", "citations", "title", "context"}),
    HostedFileContent: frozenset({"cache_control", "citations", "title", "context"}),
}


_CONTENT_FIELDS: dict[type, tuple[frozenset[str], frozenset[str]]] = {
    TextContent: (frozenset({"text", "annotations"}), _BLOCK_EXTRAS[TextContent]),
    ReasoningContent: (frozenset({"text", "protectedData"}), _BLOCK_EXTRAS[ReasoningContent]),
    FunctionCallContent: (frozenset({"callId", "name", "arguments", "informationalOnly"}),
                          _BLOCK_EXTRAS[FunctionCallContent]),
    FunctionResultContent: (frozenset({"callId", "result"}), _BLOCK_EXTRAS[FunctionResultContent]),
    DataContent: (frozenset({"uri", "mediaType"}), _BLOCK_EXTRAS[DataContent]),
    UriContent: (frozenset({"uri", "mediaType"}), _BLOCK_EXTRAS[UriContent]),
    HostedFileContent: (frozenset({"fileId", "mediaType"}), _BLOCK_EXTRAS[HostedFileContent]),
}

TARGET = Target(NAME, "Anthropic Messages", ROLES, _nearest_role, _CONTENT_FIELDS,
                session_extras=frozenset({"model", "max_tokens", "tools", "tool_choice", "temperature", "top_p",
                                          "top_k", "stop_sequences", "metadata", "thinking", "service_tier",
                                          "container", "mcp_servers"}),
                fix=_fix, tools=NAME)


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Map what Anthropic Messages cannot hold onto what they can, with losses.

    Only a leading system message is Anthropic's ``system``; a later one becomes a user
    message.  Tool results stand in user messages, so ``tool`` messages become ``user``.
    """
    rec = Recorder(origin)
    lowered = lower_messages(session, rec, TARGET)
    messages: list[Message] = []
    for position, (message, _) in enumerate(lowered.messages):
        if message.role == "system" and (position > 0 or not all(isinstance(c, TextContent) for c in message.items)):
            lowered.approximate(rec, position, "role", "role 'system'",
                            "Anthropic has a system prompt only at the start, and only text: written as a user "
                            "message")
            message = message.model_copy(update={"role": "user"})
        messages.append(message)
    entries = group_by_role(messages, ROLES, frozenset({"system", "user"}))
    result = Session(data=SessionData(conversation_history=tuple(entries)))
    return Lowered(with_extras(result, lowered.session_extras), rec.losses)


FORMAT = FunctionFormat(NAME, "Anthropic Messages", looks_like, validate, read, write, lower)
