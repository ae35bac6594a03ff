"""Writing a canonical session as a Chat Completions request body."""

from __future__ import annotations

from typing import Any

from agentfolio.formats.errors import FormatError
from agentfolio.formats.openai_chat.spec import ABSENT, AUDIO_TYPES, BARE_LIST, NULL, PARTS, STRING, TOOL_CALL_KIND
from agentfolio.formats.shared import messages_to_write
from agentfolio.model import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    Message,
    OpaqueContent,
    Session,
    TextContent,
    UriContent,
)


def write(session: Session) -> dict[str, Any] | list[Any]:
    """The session as a Chat Completions request body: ``{..., "messages": [...]}``, or the
    bare array of messages it was read from."""
    extras = dict(session.__pydantic_extra__ or {})
    messages = []
    for pointer, message in messages_to_write(session, "OpenAI"):
        messages.append(_write_message(message, pointer))
    if session.spelling == BARE_LIST and not extras:
        return messages
    document: dict[str, Any] = {}
    if "model" in extras:
        document["model"] = extras.pop("model")
    document["messages"] = messages
    document.update(extras)
    return document


def _write_message(message: Message, pointer: str) -> dict[str, Any]:
    written: dict[str, Any] = {}
    # The raw dicts rather than the read-only ``extra`` views: this runs once per message
    # and once per part of a long history.
    extras = dict(message.__pydantic_extra__ or {})
    if message.role is not None:
        written["role"] = message.role
    if message.author_name is not None:
        written["name"] = message.author_name
    parts: list[Any] = []
    calls: list[Any] = []
    results = []
    for index, content in enumerate(message.items):
        if type(content) is FunctionResultContent:
            results.append(content)
        elif type(content) is FunctionCallContent:
            if not isinstance(content.arguments, str) or content.call_id is None or content.name is None:
                raise FormatError("a tool call needs an id, a name and arguments as a string; convert the session",
                                  pointer=f"{pointer}/contents/{index}")
            calls.append({"id": content.call_id, "type": "function",
                          "function": {"name": content.name, "arguments": content.arguments},
                          **(content.__pydantic_extra__ or {})})
        elif type(content) is OpaqueContent and (content.__pydantic_extra__ or {}).get("$type") == TOOL_CALL_KIND:
            calls.append(content.extra.get("call"))
        else:
            parts.append(_write_part(content, index, pointer))
    if results:
        if len(results) != 1 or message.role != "tool" or parts or calls:
            raise FormatError("a tool message holds exactly one result; convert the session", pointer=pointer)
        written["tool_call_id"] = results[0].call_id
        if "result" in results[0].__pydantic_fields_set__:
            written["content"] = results[0].result
    elif "content" in extras:
        written["content"] = extras.pop("content")
    elif parts:
        one_text = len(parts) == 1 and parts[0].get("type") == "text" and set(parts[0]) == {"type", "text"}
        written["content"] = parts[0]["text"] if one_text and message.spelling != PARTS else parts
    elif message.spelling == PARTS:
        written["content"] = []
    elif message.spelling == STRING:
        written["content"] = ""
    elif message.spelling == NULL or (message.spelling != ABSENT and (message.role == "assistant" or calls)):
        written["content"] = None
    if calls:
        written["tool_calls"] = calls
    for key, value in extras.items():
        written.setdefault(key, value)
    return written


def _write_part(content: Any, index: int, message_pointer: str) -> dict[str, Any]:
    if type(content) is TextContent and content.text is not None:
        return {"type": "text", "text": content.text, **(content.__pydantic_extra__ or {})}
    if (type(content) is DataContent or type(content) is UriContent) and content.uri is not None:
        media = (content.media_type or "").split("/", 1)[0]
        if media == "image":
            return {"type": "image_url", "image_url": {"url": content.uri, **content.extra}}
        audio_format = next((f for f, t in AUDIO_TYPES.items() if t == content.media_type), None)
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
                      pointer=f"{message_pointer}/contents/{index}")
