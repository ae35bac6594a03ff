"""GenAI messages and parts ↔ canonical messages and contents: shared by the ``otel-genai``
format and by the OTLP receiver, which reads the same parts off a span."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentfolio.formats.errors import FormatError
from agentfolio.formats.losses import Origin, with_extras
from agentfolio.formats.otel_genai.spec import DEFAULT_FINISH, NAME
from agentfolio.formats.provider import (
    FORM_KEY,
    build,
    data_url,
    extras_without_form,
    form,
    is_kept_whole,
    kept_value,
    kept_whole,
    rest,
)
from agentfolio.model import (
    Content,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    Message,
    OpaqueContent,
    ReasoningContent,
    TextContent,
    UriContent,
)

__all__ = ["read_messages", "read_parts", "write_message", "write_parts"]


def read_messages(values: Iterable[Any], pointer: str = "", origin: Origin | None = None,
                  problems: list[str] | None = None) -> list[Message]:
    """GenAI messages (``{"role", "parts", "name"?, ...}``) as canonical messages.  With
    ``problems``, one that is not an object with a role is reported there and skipped;
    without, it is kept whole."""
    out = []
    for index, raw in enumerate(values):
        where = f"{pointer}/{index}"
        if problems is not None and not (isinstance(raw, dict) and isinstance(raw.get("role"), str)):
            problems.append(f"{pointer.strip('/')}[{index}] is not a message with a role")
            continue
        out.append(_read_message(raw, where, origin))
    return out


def _read_message(raw: Any, pointer: str, origin: Origin | None) -> Message:
    message = _map_message(raw, pointer, origin) if isinstance(raw, dict) else None
    if message is None:  # not a message, or a property named like one of ours: kept whole
        role = raw.get("role") if isinstance(raw, dict) and isinstance(raw.get("role"), str) else None
        message = with_extras(Message(role=role, contents=(kept_whole(NAME, raw, "message"),)),
                              {FORM_KEY: "whole"})
    if origin is not None:
        origin.add(message, pointer, {"authorName": ("name",)})
    return message


def _map_message(raw: dict[str, Any], pointer: str, origin: Origin | None) -> Message | None:
    parts = raw.get("parts")
    contents = read_parts(parts, pointer + "/parts", origin) if isinstance(parts, list) else None
    known: dict[str, Any] = {}
    if isinstance(raw.get("role"), str):
        known["role"] = raw["role"]
    if contents is not None:
        known["contents"] = tuple(contents)
    if "name" in raw and (raw["name"] is None or isinstance(raw["name"], str)):
        known["author_name"] = raw["name"]
    extras = rest(raw, *(k for k, attribute in (("role", "role"), ("parts", "contents"), ("name", "author_name"))
                         if attribute in known))
    return build(Message, extras, **known)


def read_parts(parts: Iterable[Any], pointer: str = "", origin: Origin | None = None) -> list[Content]:
    """GenAI parts as canonical contents; a part that cannot be mapped exactly is kept whole."""
    out: list[Content] = []
    for index, part in enumerate(parts):
        built = _map_part(part) if isinstance(part, dict) else None
        if built is None:
            built = kept_whole(NAME, part)
            if origin is not None:
                origin.add(built, f"{pointer}/{index}", {"value": ()})
        elif origin is not None:
            origin.add(built, f"{pointer}/{index}", _NAMES.get(type(built), {}))
        out.append(built)
    return out


_NAMES: dict[type, dict[str, tuple[str, ...]]] = {
    TextContent: {"text": ("content",)},
    ReasoningContent: {"text": ("content",)},
    FunctionCallContent: {"callId": ("id",), "informationalOnly": ("type",)},
    FunctionResultContent: {"callId": ("id",), "result": ("response",)},
    DataContent: {"uri": ("content",), "mediaType": ("mime_type",)},
    UriContent: {"mediaType": ("mime_type",)},
    HostedFileContent: {"fileId": ("file_id",), "mediaType": ("mime_type",)},
}
_MEDIA = {"blob": DataContent, "uri": UriContent, "file": HostedFileContent}


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _id(part: dict[str, Any]) -> dict[str, Any]:
    return {"call_id": part["id"]} if "id" in part and (part["id"] is None or _str(part["id"])) else {}


def _map_part(part: dict[str, Any]) -> Any:
    kind = part.get("type")
    if kind in ("text", "reasoning") and _str(part.get("content")):
        cls = TextContent if kind == "text" else ReasoningContent
        return build(cls, rest(part, "type", "content"), text=part["content"])
    if kind == "tool_call" and _str(part.get("name")) and ("id" not in part or _id(part)):
        return build(FunctionCallContent, rest(part, "type", "id", "name", "arguments"), **_id(part),
                     name=part["name"], **({"arguments": part["arguments"]} if "arguments" in part else {}))
    if kind == "tool_call_response" and "response" in part and ("id" not in part or _id(part)):
        return build(FunctionResultContent, rest(part, "type", "id", "response"), **_id(part),
                     result=part["response"])
    if kind == "tool_call_response" and "result" in part and ("id" not in part or _id(part)):
        # Pydantic AI's instrumentation puts the response under "result", which the
        # published schema does not allow: read as the response, written as one.
        return build(FunctionResultContent, rest(part, "type", "id", "result"), **_id(part), result=part["result"])
    if kind == "server_tool_call" and _str(part.get("name")) and "server_tool_call" in part and (
            "id" not in part or _id(part)):
        return build(FunctionCallContent, rest(part, "type", "id", "name", "server_tool_call"), **_id(part),
                     name=part["name"], arguments=part["server_tool_call"], informational_only=True)
    if kind == "server_tool_call_response" and "server_tool_call_response" in part and (
            "id" not in part or _id(part)):
        return build(FunctionResultContent, rest(part, "id", "server_tool_call_response"), **_id(part),
                     result=part["server_tool_call_response"])
    if kind in _MEDIA:
        return _map_media(kind, part)
    return None


def _map_media(kind: str, part: dict[str, Any]) -> Any:
    mime = part.get("mime_type")
    media: dict[str, Any] = {"media_type": mime} if _str(mime) else {}
    extras = rest(part, "type", "mime_type", "content", "uri", "file_id") if media else rest(
        part, "type", "content", "uri", "file_id")
    if kind == "blob" and _str(part.get("content")):
        modality = part.get("modality")
        declared = str(mime) if _str(mime) else f"{modality if _str(modality) else 'application'}/*"
        return build(DataContent, extras, uri=data_url(declared, part["content"]), **media)
    if kind == "uri" and _str(part.get("uri")):
        return build(UriContent, extras, uri=part["uri"], **media)
    if kind == "file" and _str(part.get("file_id")):
        return build(HostedFileContent, extras, file_id=part["file_id"], **media)
    return None


def write_message(message: Message, pointer: str, *, output: bool) -> dict[str, Any]:
    if form(message) == "whole" and len(message.items) == 1 and is_kept_whole(NAME, message.items[0]):
        return kept_value(message.items[0])  # type: ignore[no-any-return]
    written: dict[str, Any] = {"role": message.role if message.role is not None else "user",
                               "parts": write_parts(message.items, pointer + "/parts")}
    if "author_name" in message.model_fields_set:
        written["name"] = message.author_name
    extras = extras_without_form(message)
    if output and "finish_reason" not in extras:
        extras["finish_reason"] = DEFAULT_FINISH
    return {**written, **extras}


def write_parts(contents: Iterable[Any], pointer: str = "") -> list[Any]:
    """Canonical contents as GenAI parts (FormatError for one that has no GenAI form)."""
    return [_write_part(content, f"{pointer}/{index}") for index, content in enumerate(contents)]


def _write_part(content: Any, pointer: str) -> Any:
    extra = extras_without_form(content)
    if isinstance(content, OpaqueContent) and is_kept_whole(NAME, content):
        return kept_value(content)
    if isinstance(content, (TextContent, ReasoningContent)) and content.text is not None:
        return {"type": "text" if isinstance(content, TextContent) else "reasoning", "content": content.text,
                **extra}
    if isinstance(content, FunctionCallContent) and content.name is not None:
        ident = {"id": content.call_id} if "call_id" in content.model_fields_set else {}
        if content.informational_only:
            return {"type": "server_tool_call", **ident, "name": content.name,
                    "server_tool_call": content.arguments, **extra}
        arguments = {"arguments": content.arguments} if "arguments" in content.model_fields_set else {}
        return {"type": "tool_call", **ident, "name": content.name, **arguments, **extra}
    if isinstance(content, FunctionResultContent):
        ident = {"id": content.call_id} if "call_id" in content.model_fields_set else {}
        if extra.get("type") == "server_tool_call_response":
            return {"type": extra.pop("type"), **ident, "server_tool_call_response": content.result, **extra}
        return {"type": "tool_call_response", **ident, "response": content.result, **extra}
    if isinstance(content, (DataContent, UriContent, HostedFileContent)):
        media = _write_media(content, extra)
        if media is not None:
            return media
    raise FormatError(f"a {getattr(content, 'kind', '?')!r} content of this shape has no OpenTelemetry GenAI form; "
                      "convert the session", pointer=pointer)


def _write_media(content: Any, extra: dict[str, Any]) -> dict[str, Any] | None:
    mime = {"mime_type": content.media_type} if content.media_type is not None else {}
    modality = extra.pop("modality", None) or _modality(content.media_type)
    if isinstance(content, DataContent) and content.uri and content.uri.startswith("data:") and (
            ";base64," in content.uri):
        return {"type": "blob", **mime, "modality": modality, "content": content.uri.split(";base64,", 1)[1],
                **extra}
    if isinstance(content, UriContent) and content.uri is not None:
        return {"type": "uri", **mime, "modality": modality, "uri": content.uri, **extra}
    if isinstance(content, HostedFileContent) and content.file_id is not None:
        return {"type": "file", **mime, "modality": modality, "file_id": content.file_id, **extra}
    return None


def _modality(media_type: str | None) -> str:
    """GenAI's modality for a media type: image, video, audio, or its top-level type."""
    top = (media_type or "application/octet-stream").split("/", 1)[0]
    return top or "application"
