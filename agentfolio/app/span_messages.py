"""The conversation one span carries, as a session the conversation presentation draws.

* An OpenTelemetry span (stored whole as its payload): every GenAI convention
  :mod:`agentfolio.otel.messages` reads (``gen_ai.input/output.messages``, system
  instructions, legacy attributes and events, OpenInference), joined by
  :func:`agentfolio.otel.conversation.build_conversation`.
* A Prefactor span whose params or result hold messages: a ``messages`` array found in
  the params (the request, with a ``system`` text beside it) and in the result (the
  answer, with ``token_usage``), as the Prefactor LangChain middleware writes them
  (``inputs.messages`` / ``outputs.messages``) or any chat-shaped array: LangChain's
  ``messages_to_dict`` form, OpenAI chat messages, or LangChain message types as roles
  (``human``, ``ai``) with ``{name, args}`` tool calls.

What cannot be read leaves the span as it is (its params and result are still drawn as
JSON); the notes say why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentfolio import _json
from agentfolio.formats.errors import FormatError
from agentfolio.model import Message, RequestEntry, ResponseEntry, Session, SessionData, TextContent, Usage

__all__ = ["SpanConversation", "is_otel_span", "span_conversation"]

#: How deep into params/result a ``messages`` array is looked for.
_SEARCH_DEPTH = 3
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "user": "user",
          "assistant": "assistant", "developer": "developer", "function": "tool", "chat": "assistant"}


@dataclass(slots=True)
class SpanConversation:
    session: Session
    notes: list[str] = field(default_factory=list)

    @property
    def message_count(self) -> int:
        return sum(1 for _ in self.session.messages())


def is_otel_span(payload: Any) -> bool:
    """Whether a span's payload is an OpenTelemetry span kept whole (OTLP ingest)."""
    return isinstance(payload, Mapping) and "trace_id" in payload and "span_id" in payload \
        and "start_time_unix_nano" in payload and isinstance(payload.get("attributes"), Mapping)


def span_conversation(payload: Any, result: Any = None) -> SpanConversation | None:
    """The messages a span carries as a session, or ``None`` when it carries none."""
    if is_otel_span(payload):
        from agentfolio.otel.conversation import build_conversation

        built = build_conversation([payload])
        if built is None:
            return None
        session, notes, _ = built
        return SpanConversation(session, notes)
    return _prefactor_conversation(payload, result)


def _prefactor_conversation(payload: Any, result: Any) -> SpanConversation | None:
    notes: list[str] = []
    request_raw, where_in = _find_messages(payload)
    answer_raw, where_out = _find_messages(result)
    request = _read_messages(request_raw, f"params{where_in}", notes) if request_raw else []
    answer = _read_messages(answer_raw, f"result{where_out}", notes) if answer_raw else []
    if not request and not answer:
        return None
    system = _system_text(payload)
    if system and not any(message.role == "system" for message in request):
        request.insert(0, Message(role="system", contents=(TextContent(text=system),)))
    if not answer:
        text = _answer_text(result)
        if text:
            answer = [Message(role="assistant", contents=(TextContent(text=text),))]
    entries: list[RequestEntry | ResponseEntry] = []
    if request:
        entries.append(RequestEntry(messages=tuple(request)))
    usage = _usage(result)
    if answer or usage is not None:
        entries.append(ResponseEntry(messages=tuple(answer), usage=usage))
    return SpanConversation(Session(data=SessionData(conversation_history=tuple(entries))), notes)


def _find_messages(value: Any, depth: int = 0, where: str = "") -> tuple[list[Any] | None, str]:
    """The first chat-shaped ``messages`` array in ``value`` (breadth first) and its pointer."""
    if not isinstance(value, Mapping) or depth > _SEARCH_DEPTH:
        return None, ""
    found = value.get("messages")
    if isinstance(found, list) and found and all(_chat_shaped(item) for item in found[:64]):
        return found, f"{where}/messages"
    for key in ("inputs", "input", "outputs", "output", "request", "response", "data"):
        inner, pointer = _find_messages(value.get(key), depth + 1, f"{where}/{key}")
        if inner is not None:
            return inner, pointer
    return None, ""


def _chat_shaped(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    if isinstance(item.get("type"), str) and isinstance(item.get("data"), Mapping):
        return True  # LangChain's messages_to_dict
    return isinstance(item.get("role"), str)


def _read_messages(raw: list[Any], where: str, notes: list[str]) -> list[Message]:
    from agentfolio.formats import langchain, openai_chat

    try:
        if langchain.looks_like(raw):
            read = langchain.FORMAT.read(raw, strict=False)
        else:
            read = openai_chat.FORMAT.read([_chat_message(item) for item in raw], strict=False)
    except FormatError as error:
        notes.append(f"{where}: {error.message}")
        return []
    return [message for _, message in read.session.messages()]


def _chat_message(item: Mapping[str, Any]) -> dict[str, Any]:
    """A message as OpenAI chat spells it: LangChain types as roles, ``{name, args}`` calls."""
    message = dict(item)
    role = str(message.get("role"))
    message["role"] = _ROLES.get(role.lower(), role)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        message["tool_calls"] = [_tool_call(call, index) for index, call in enumerate(calls)]
    if message["role"] == "tool" and not isinstance(message.get("tool_call_id"), str):
        message["tool_call_id"] = str(message.get("tool_call_id") or message.get("id") or "")
    if "content" not in message:
        message["content"] = None if message.get("tool_calls") else ""
    return message


def _tool_call(call: Any, index: int) -> Any:
    if not isinstance(call, Mapping) or isinstance(call.get("function"), Mapping):
        return call
    arguments = call.get("args", call.get("arguments", {}))
    return {"id": str(call.get("id") or f"call_{index}"), "type": "function",
            "function": {"name": str(call.get("name", "")),
                         "arguments": arguments if isinstance(arguments, str) else _json.dumps(arguments).decode()}}


def _system_text(payload: Any) -> str | None:
    for holder in (payload, payload.get("inputs") if isinstance(payload, Mapping) else None):
        if isinstance(holder, Mapping) and isinstance(holder.get("system"), str) and holder["system"].strip():
            return str(holder["system"])
    return None


def _answer_text(result: Any) -> str | None:
    if not isinstance(result, Mapping):
        return None
    outputs = result.get("outputs")
    for holder in (outputs, result):
        if isinstance(holder, Mapping):
            for key in ("content", "response", "text", "output"):
                if isinstance(holder.get(key), str) and holder[key]:
                    return str(holder[key])
    return None


def _usage(result: Any) -> Usage | None:
    if not isinstance(result, Mapping):
        return None
    raw = result.get("token_usage") or result.get("usage")
    if not isinstance(raw, Mapping):
        return None

    def number(*keys: str) -> int | None:
        for key in keys:
            value = raw.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    counts = {"input_token_count": number("prompt_tokens", "input_tokens"),
              "output_token_count": number("completion_tokens", "output_tokens"),
              "total_token_count": number("total_tokens")}
    counts = {key: value for key, value in counts.items() if value is not None}
    return Usage(**counts) if counts else None
