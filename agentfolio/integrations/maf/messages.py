"""Agent Framework messages as durable agent state, and back, nothing lost.

A MAF :class:`~agent_framework.Message` becomes a durable-state message: ``role``,
``authorName``, ``messageId``, ``extensionData`` (MAF's ``additional_properties``, which
durable state 1.2 keeps for exactly this) and ``contents``.  Each MAF content of a kind
durable state has a type for is written as that type (``text``, ``reasoning``, ``data``,
``uri``, ``error``, ``functionCall``, ``functionResult``, ``hostedFile``,
``hostedVectorStore``, ``usage``), so the viewer and Microsoft's own readers understand
it; whatever of the content durable state has no field for (annotations, a call's id, a
result's items...) travels beside it under :data:`MAF_FIELDS`, in MAF's own spelling.
Every other kind (hosted tool calls and results, approvals, shell and computer calls...)
is kept whole in durable state's own escape hatch, ``{"$type": "unknown", "content":
<the content's to_dict()>}``, the same shape Microsoft's durable agents write.

Reading back gives contents equal to the ones written (``Content.to_dict()`` is the
same); only what MAF itself never serializes is not kept: ``raw_representation`` (the
SDK's own object) and the text of a tool's exception, which MAF replaces with a marker
because it may hold secrets.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from agent_framework import Content, Message

# The extra property, on a durable content or message, holding what durable state has no field for.
MAF_FIELDS = "agentFramework"
DURABLE_ROLES = frozenset({"user", "assistant", "system", "tool"})
# A MAF role durable state 1.x has no value for is written as the nearest one, and the
# real role kept under MAF_FIELDS.
_NEAREST_ROLE = {"developer": "system", "function": "tool", "human": "user"}
# Entries whose messages were never part of what the model saw (durable agents replay
# neither failed runs nor their error messages).
_NOT_REPLAYED = frozenset({"errorResponse"})
_USAGE_COUNTS = (("input_token_count", "inputTokenCount"), ("output_token_count", "outputTokenCount"),
                 ("total_token_count", "totalTokenCount"))


@dataclass(frozen=True)
class _Kind:
    """How one MAF content type is written as a durable-state type."""

    durable_type: str
    fields: tuple[tuple[str, str], ...]  # (MAF name, durable name)
    required: tuple[str, ...]  # MAF names that must be strings for the durable type to be valid


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


_KINDS: dict[str, _Kind] = {
    "text": _Kind("text", (("text", "text"),), ("text",)),
    "text_reasoning": _Kind("reasoning", (("text", "text"),), ()),
    "data": _Kind("data", (("uri", "uri"), ("media_type", "mediaType")), ("uri",)),
    "uri": _Kind("uri", (("uri", "uri"), ("media_type", "mediaType")), ("uri", "media_type")),
    "error": _Kind("error", (("message", "message"), ("error_code", "errorCode"), ("error_details", "details")), ()),
    "function_call": _Kind("functionCall", (("call_id", "callId"), ("name", "name")), ("call_id", "name")),
    "function_result": _Kind("functionResult", (("call_id", "callId"), ("result", "result")), ("call_id",)),
    "hosted_file": _Kind("hostedFile", (("file_id", "fileId"),), ("file_id",)),
    "hosted_vector_store": _Kind("hostedVectorStore", (("vector_store_id", "vectorStoreId"),), ("vector_store_id",)),
    "usage": _Kind("usage", (), ()),
}
_MAF_TYPE = {kind.durable_type: maf_type for maf_type, kind in _KINDS.items()}
# Durable fields typed as strings by the schema: a MAF value of another type stays under MAF_FIELDS.
_STRING_FIELDS = frozenset({"text", "uri", "mediaType", "message", "errorCode", "callId", "name", "fileId",
                            "vectorStoreId"})


class UnreadableContentError(ValueError):
    """A durable content this module cannot turn into a MAF content (written by another producer)."""


# -- MAF -> durable state -----------------------------------------------------------------------


def content_to_durable(content: Content) -> dict[str, Any]:
    """One MAF content as a durable-state content (see the module's docstring)."""
    whole = content.to_dict()
    kind = _KINDS.get(whole.get("type", ""))
    if kind is None or not all(_is_text(whole.get(name)) for name in kind.required):
        return {"$type": "unknown", "content": whole}
    rest = {key: value for key, value in whole.items() if key != "type"}
    written: dict[str, Any] = {"$type": kind.durable_type}
    for maf_name, durable_name in kind.fields:
        if maf_name in rest and (durable_name not in _STRING_FIELDS or _is_text(rest[maf_name])):
            written[durable_name] = rest.pop(maf_name)
    if kind.durable_type == "functionCall":
        arguments = rest.get("arguments")
        if isinstance(arguments, dict):
            written["arguments"] = rest.pop("arguments")
        elif isinstance(arguments, str):
            # MAF keeps the model's argument string as it came; durable 1.x wants an object.
            # The string stays under MAF_FIELDS (read back as it was), the object beside it.
            parsed = _loads_or_none(arguments)
            if isinstance(parsed, dict):
                written["arguments"] = parsed
    elif kind.durable_type == "usage":
        written["usage"] = _usage_to_durable(rest.pop("usage_details", None) or {})
    if rest.get("additional_properties") == {}:
        del rest["additional_properties"]  # MAF's default: read back as {} all the same
    if rest:
        written[MAF_FIELDS] = rest
    return written


def message_to_durable(message: Message) -> dict[str, Any]:
    """One MAF message as a durable-state message."""
    whole = message.to_dict()
    rest = {key: value for key, value in whole.items() if key not in ("type", "role", "contents")}
    role = str(whole.get("role") or "")
    written: dict[str, Any] = {"role": role}
    if role not in DURABLE_ROLES:
        written["role"] = _NEAREST_ROLE.get(role, "assistant")
        rest["role"] = role
    if isinstance(rest.get("author_name"), str):
        written["authorName"] = rest.pop("author_name")
    if isinstance(rest.get("message_id"), str):
        written["messageId"] = rest.pop("message_id")
    written["contents"] = [content_to_durable(content) for content in message.contents]
    properties = rest.pop("additional_properties", None)
    if isinstance(properties, dict) and properties:
        written["extensionData"] = properties
    elif properties not in (None, {}):
        rest["additional_properties"] = properties
    if rest:
        written[MAF_FIELDS] = rest
    return written


def turn_entries(request: Sequence[Message], response: Sequence[Message], *, usage: Mapping[str, Any] | None = None,
                 created_at: str | None = None, response_created_at: str | None = None,
                 correlation_id: str | None = None) -> list[dict[str, Any]]:
    """One turn as durable-state entries: a ``request`` with what went in, a ``response`` with
    what came out, sharing a correlation id (either is left out when it has no messages)."""
    correlation_id = correlation_id or uuid.uuid4().hex
    now = created_at or _now()
    entries: list[dict[str, Any]] = []
    if request:
        entries.append({"$type": "request", "correlationId": correlation_id, "createdAt": now,
                        "messages": [message_to_durable(message) for message in request]})
    if response:
        entry: dict[str, Any] = {"$type": "response", "correlationId": correlation_id,
                                 "createdAt": response_created_at or _now(),
                                 "messages": [message_to_durable(message) for message in response]}
        if usage:
            entry["usage"] = _usage_to_durable(usage)
        entries.append(entry)
    return entries


def new_document(entries: Iterable[dict[str, Any]], schema_version: str = "1.2.0") -> dict[str, Any]:
    return {"schemaVersion": schema_version, "data": {"conversationHistory": list(entries)}}


def json_safe(value: Any, what: str) -> bytes:
    """``value`` as JSON bytes, or a ValueError saying which part of the turn cannot be stored."""
    try:
        return orjson.dumps(value)
    except TypeError as error:
        raise ValueError(f"{what} cannot be stored as JSON: {error}") from None


# -- durable state -> MAF -----------------------------------------------------------------------


def content_from_durable(written: Mapping[str, Any]) -> Content:
    """A durable-state content as the MAF content it was written from."""
    durable_type = written.get("$type")
    if durable_type == "unknown":
        kept_whole = written.get("content")
        if isinstance(kept_whole, dict) and isinstance(kept_whole.get("type"), str):
            return _from_dict(kept_whole)
        raise UnreadableContentError("an unknown content that is not an Agent Framework content")
    maf_type = _MAF_TYPE.get(durable_type) if isinstance(durable_type, str) else None
    if maf_type is None:
        raise UnreadableContentError(f"a content of type {durable_type!r}")
    kind = _KINDS[maf_type]
    whole: dict[str, Any] = {"type": maf_type}
    for maf_name, durable_name in kind.fields:
        if durable_name in written:
            whole[maf_name] = written[durable_name]
    if durable_type == "functionCall" and isinstance(written.get("arguments"), dict):
        whole["arguments"] = written["arguments"]
    elif durable_type == "usage":
        whole["usage_details"] = _usage_from_durable(written.get("usage"))
    kept = written.get(MAF_FIELDS)
    if isinstance(kept, dict):
        whole.update(kept)
    return _from_dict(whole)


def message_from_durable(written: Mapping[str, Any], *, on_unreadable: Callable[[str], None] | None = None) -> Message:
    """A durable-state message as the MAF message it was written from.

    Contents another producer wrote that MAF has no kind for are left out of the message
    (``on_unreadable`` hears why); the stored session keeps them.
    """
    whole: dict[str, Any] = {"type": "message", "role": written.get("role")}
    if "authorName" in written:
        whole["author_name"] = written["authorName"]
    if "messageId" in written:
        whole["message_id"] = written["messageId"]
    if isinstance(written.get("extensionData"), dict):
        whole["additional_properties"] = written["extensionData"]
    kept = written.get(MAF_FIELDS)
    if isinstance(kept, dict):
        whole.update(kept)
    contents = []
    for item in written.get("contents") or ():
        if not isinstance(item, dict):
            continue
        try:
            contents.append(content_from_durable(item))
        except UnreadableContentError as why:
            if on_unreadable is not None:
                on_unreadable(str(why))
    whole["contents"] = []
    message = Message.from_dict(whole)
    message.contents = contents
    return message


def history_messages(document: Mapping[str, Any], *,
                     on_unreadable: Callable[[str], None] | None = None) -> list[Message]:
    """Every message of a durable state's history, in order, as the model saw it."""
    data = document.get("data")
    history = data.get("conversationHistory") if isinstance(data, dict) else None
    messages: list[Message] = []
    for entry in history if isinstance(history, list) else ():
        if not isinstance(entry, dict) or entry.get("$type") in _NOT_REPLAYED:
            continue
        messages.extend(message_from_durable(written, on_unreadable=on_unreadable)
                        for written in entry.get("messages") or () if isinstance(written, dict))
    return messages


# -- helpers ------------------------------------------------------------------------------------


def _from_dict(whole: dict[str, Any]) -> Content:
    try:
        return Content.from_dict(whole)
    except (TypeError, ValueError) as error:
        raise UnreadableContentError(f"a {whole.get('type')!r} content MAF refuses: {error}") from None


def _usage_to_durable(details: Mapping[str, Any]) -> dict[str, Any]:
    usage: dict[str, Any] = {}
    others = dict(details)
    for maf_name, durable_name in _USAGE_COUNTS:
        value = others.get(maf_name)
        if isinstance(value, int) and not isinstance(value, bool):
            usage[durable_name] = others.pop(maf_name)
    if others:
        usage["extensionData"] = others
    return usage


def _usage_from_durable(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, dict):
        return {}
    details: dict[str, Any] = {}
    for maf_name, durable_name in _USAGE_COUNTS:
        if durable_name in usage:
            details[maf_name] = usage[durable_name]
    if isinstance(usage.get("extensionData"), dict):
        details.update(usage["extensionData"])
    return details


def _loads_or_none(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")
