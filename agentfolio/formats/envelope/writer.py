"""Writing a canonical session as a Prompt Envelope."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from agentfolio import _json
from agentfolio.formats.envelope.spec import FOLDED_BY_DEFAULT, MEDIA_TYPES, MESSAGE_KEYS, VERSION
from agentfolio.formats.envelope.timestamps import iso_to_ms
from agentfolio.formats.errors import FormatError
from agentfolio.formats.shared import messages_to_write
from agentfolio.model import (
    DataContent,
    DocumentContent,
    FunctionCallContent,
    FunctionResultContent,
    MemoryContent,
    Message,
    OpaqueContent,
    Presentation,
    Session,
    SkillsContent,
    TemplateVariableContent,
    TextContent,
    ToolCatalogContent,
    UriContent,
)


def write(session: Session) -> dict[str, Any]:
    """The session as a Prompt Envelope.

    Raises FormatError for what an envelope cannot hold (reasoning, usage, entry
    properties...): ``agentfolio.formats.convert`` lowers those first, with a loss
    report.  Presentation a record leaves open takes the kind's default.
    """
    extras = dict(session.__pydantic_extra__ or {})
    document: dict[str, Any] = {"version": VERSION}
    if "model" in extras:
        document["model"] = extras.pop("model")
    call_names = {c.call_id: c.name for _, m in session.messages() for c in m.items
                  if type(c) is FunctionCallContent and c.call_id is not None}
    messages = []
    for pointer, message in messages_to_write(session, "envelope"):
        messages.append(_write_message(message, call_names, pointer))
    document["messages"] = messages
    for key, value in extras.items():
        document.setdefault(key, value)
    return document


def dumps(session: Session, *, indent: bool = True) -> bytes:
    return _json.dumps(write(session), option=orjson.OPT_INDENT_2 if indent else 0)


def _write_message(message: Message, call_names: dict[str, str | None], pointer: str) -> dict[str, Any]:
    extras = message.__pydantic_extra__ or {}
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
            raise FormatError(f"createdAt {message.created_at!r} is not an ISO 8601 time",
                              pointer=pointer + "/createdAt")
        written["timestamp"] = stamp
    for key in MESSAGE_KEYS:
        if key not in written and key not in extras:
            raise FormatError(f"an envelope message needs {key!r}; convert the session to generate it",
                              pointer=pointer)
    for key, value in extras.items():
        written.setdefault(key, value)
    return written


def _collapsed(content: Any, kind: str) -> bool:
    presentation: Presentation | None = content.presentation
    if presentation is not None and presentation.collapsed is not None:
        return presentation.collapsed
    return kind in FOLDED_BY_DEFAULT


def _write_segment(content: Any, call_names: dict[str, str | None], pointer: str) -> dict[str, Any]:
    extra = content.__pydantic_extra__ or {}
    if type(content) is OpaqueContent:
        return dict(extra)
    writer = _SEGMENT_WRITERS.get(type(content))
    segment = writer(content, call_names) if writer is not None else None
    if segment is None:
        raise FormatError(f"{content.kind!r} has no envelope segment; convert the session instead of writing it "
                          "directly", pointer=pointer)
    for key, value in extra.items():
        segment.setdefault(key, value)
    return segment


# One writer per kind, picked by the content's class (one dict lookup per segment of a
# long history, not a chain of isinstance tests); None: no envelope segment.

def _text_segment(content: TextContent, call_names: dict[str, str | None]) -> dict[str, Any] | None:
    if content.text is None:
        return None
    presentation = content.presentation
    style = presentation.style if presentation else None
    if style == "system_prompt":
        return {"kind": style, "content": content.text, "collapsed": _collapsed(content, style)}
    if style == "long_text" and presentation is not None:
        count = presentation.char_count
        return {"kind": style, "content": content.text, "charCount": len(content.text) if count is None else count,
                "collapsed": _collapsed(content, style)}
    return {"kind": "text", "content": content.text}


def _variable_segment(content: TemplateVariableContent, call_names: dict[str, str | None]) -> dict[str, Any] | None:
    return {"kind": "static_var", "name": content.name, "value": content.value,
            **({"description": content.description} if content.description is not None else {})}


def _listing_segment(content: MemoryContent | SkillsContent,
                     call_names: dict[str, str | None]) -> dict[str, Any] | None:
    if not content.items:
        return None
    kind = "memory" if isinstance(content, MemoryContent) else "skills"
    return {"kind": kind, **({"description": content.description} if content.description is not None else {}),
            "items": [item.to_json_value() for item in content.items], "collapsed": _collapsed(content, kind)}


def _catalog_segment(content: ToolCatalogContent, call_names: dict[str, str | None]) -> dict[str, Any] | None:
    if not content.items:
        return None
    return {"kind": "tool_overview", "items": [item.to_json_value() for item in content.items],
            "collapsed": _collapsed(content, "tool_overview")}


def _call_segment(content: FunctionCallContent, call_names: dict[str, str | None]) -> dict[str, Any] | None:
    if content.name is None or not isinstance(content.arguments, dict):
        return None
    return {"kind": "tool_call_request", "toolName": content.name, "arguments": content.arguments,
            "collapsed": _collapsed(content, "tool_call_request")}


def _result_segment(content: FunctionResultContent, call_names: dict[str, str | None]) -> dict[str, Any] | None:
    if not isinstance(content.result, str):
        return None
    extra = content.__pydantic_extra__ or {}
    name = extra.get("toolName", call_names.get(content.call_id or ""))
    success = extra.get("success")
    if not isinstance(name, str) or not isinstance(success, bool):
        return None
    return {"kind": "tool_call_result", "toolName": name, "result": content.result, "success": success,
            "collapsed": _collapsed(content, "tool_call_result")}


def _document_segment(content: DocumentContent, call_names: dict[str, str | None]) -> dict[str, Any] | None:
    if content.size_bytes is None or content.uri is not None:
        return None
    return {"kind": "document", "fileName": content.file_name, "mimeType": content.media_type,
            "snippet": content.snippet, "sizeBytes": content.size_bytes,
            **({"parsedContent": content.parsed_content} if content.parsed_content is not None else {})}


def _media_segment(content: DataContent | UriContent, call_names: dict[str, str | None]) -> dict[str, Any] | None:
    if content.uri is None:
        return None
    media = (content.media_type or "").split("/", 1)[0]
    return {"kind": "media", "mediaType": media, "url": content.uri} if media in MEDIA_TYPES else None


_SEGMENT_WRITERS: dict[type, Callable[[Any, dict[str, str | None]], dict[str, Any] | None]] = {
    TextContent: _text_segment, TemplateVariableContent: _variable_segment, MemoryContent: _listing_segment,
    SkillsContent: _listing_segment, ToolCatalogContent: _catalog_segment, FunctionCallContent: _call_segment,
    FunctionResultContent: _result_segment, DocumentContent: _document_segment, DataContent: _media_segment,
    UriContent: _media_segment,
}
