"""The messages of one LLM span, read into the canonical model under every convention
instrumentations use:

* **OTel GenAI** (semantic conventions 1.37+, read by the ``otel-genai`` format's part and
  message readers): ``gen_ai.system_instructions``,
  ``gen_ai.input.messages``, ``gen_ai.output.messages`` and ``gen_ai.tool.definitions``
  as structured attribute values or as JSON strings, on the span or on its
  ``gen_ai.client.inference.operation.details`` event (parts: ``text``, ``reasoning``,
  ``tool_call``, ``tool_call_response``, ``blob``, ``uri``, ``file``);
* **legacy GenAI attributes**: ``gen_ai.prompt.N.role/content/tool_calls.M.*`` and
  ``gen_ai.completion.N.*``;
* **legacy GenAI events**: ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice`` (content as
  text, parts, or Bedrock Converse blocks as Strands Agents writes it), and the older
  ``gen_ai.content.prompt`` / ``gen_ai.content.completion``;
* **OpenInference**: ``llm.input_messages.N.message.*``, ``llm.output_messages.N.*``,
  ``llm.tools.N.tool.json_schema``, ``llm.token_count.*``.

Chat-completion-shaped messages are read by the OpenAI chat format's reader (one
implementation of that shape); GenAI parts are read here.  What cannot be read is
reported in :attr:`SpanMessages.problems`, never dropped silently: the span keeps it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentfolio import _json as jsonvalues
from agentfolio.formats import openai_chat, otel_genai
from agentfolio.formats import tools as tool_spellings
from agentfolio.formats.errors import FormatError
from agentfolio.model import (
    Content,
    Message,
    TextContent,
    ToolDescription,
    Usage,
)

__all__ = ["SpanMessages", "read_span_messages"]

INFERENCE_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_LEGACY_ROLE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                       "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
_INDEXED = re.compile(r"^(?P<prefix>gen_ai\.prompt|gen_ai\.completion|llm\.input_messages|llm\.output_messages"
                      r"|llm\.tools)\.(?P<index>\d{1,6})\.(?P<rest>.+)$")
MAX_INDEX = 100_000


@dataclass(slots=True)
class SpanMessages:
    """What an LLM span says was sent and answered."""

    system: list[Content] = field(default_factory=list)
    tools: list[ToolDescription] = field(default_factory=list)
    input: list[Message] = field(default_factory=list)
    output: list[Message] = field(default_factory=list)
    usage: Usage | None = None
    model: str | None = None
    #: Messages or values found but not readable, one line each.
    problems: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.system or self.tools or self.input or self.output)


def read_span_messages(payload: Mapping[str, Any], seen: dict[bytes, Message] | None = None) -> SpanMessages:
    """The messages of a stored span payload (``OtelSpan.to_json``).

    ``seen`` (shared by the spans of one conversation) holds the GenAI messages already
    read, by their JSON: each chat span repeats the history so far, and a message read
    once is not read again (messages are immutable, so the same one can be shared)."""
    attributes = _obj(payload.get("attributes"))
    events = [e for e in payload.get("events") or () if isinstance(e, dict)]
    found = SpanMessages()
    # One details event as the conventions have it, or (Strands Agents) one per attribute.
    details: dict[str, Any] = {}
    for event in events:
        if event.get("name") == INFERENCE_DETAILS_EVENT:
            for key, value in _obj(event.get("attributes")).items():
                details.setdefault(key, value)
    genai = {**details, **{k: v for k, v in attributes.items() if k.startswith("gen_ai.")}}
    if any(key in genai for key in ("gen_ai.input.messages", "gen_ai.output.messages",
                                    "gen_ai.system_instructions")):
        _read_genai(genai, found, seen)
    else:
        indexed = _indexed(attributes)
        if "gen_ai.prompt" in indexed or "gen_ai.completion" in indexed:
            _read_legacy_attributes(indexed, found)
        elif "llm.input_messages" in indexed or "llm.output_messages" in indexed:
            _read_openinference(indexed, found)
        else:
            _read_legacy_events(events, found)
        if "llm.tools" in indexed:
            found.tools.extend(_openinference_tools(indexed["llm.tools"], found))
    if not found.tools and "gen_ai.tool.definitions" in genai:
        found.tools.extend(_tool_definitions(genai["gen_ai.tool.definitions"], found))
    found.usage = _usage(attributes)
    model = attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model") \
        or attributes.get("llm.model_name")
    found.model = model if isinstance(model, str) else None
    return found


# --------------------------------------------------------------------------- OTel GenAI


def _json(value: Any, what: str, found: SpanMessages) -> Any:
    if isinstance(value, (bytes, str)):
        try:
            return jsonvalues.loads(value)
        except orjson.JSONDecodeError as error:
            found.problems.append(f"{what} is not JSON ({error})")
            return None
    return value


def _read_genai(attributes: Mapping[str, Any], found: SpanMessages, seen: dict[bytes, Message] | None) -> None:
    system = _json(attributes.get("gen_ai.system_instructions"), "gen_ai.system_instructions", found)
    if isinstance(system, list):
        found.system.extend(otel_genai.read_parts(system))
    elif isinstance(system, str):  # some emitters send the plain text
        found.system.append(TextContent(text=system))
    for key, into in (("gen_ai.input.messages", found.input), ("gen_ai.output.messages", found.output)):
        value = _json(attributes.get(key), key, found)
        if value is None:
            continue
        if not isinstance(value, list):
            found.problems.append(f"{key} is not an array of messages")
            continue
        into.extend(_genai_messages(value, key, found, seen))


def _genai_messages(values: list[Any], key: str, found: SpanMessages,
                    seen: dict[bytes, Message] | None) -> list[Message]:
    if seen is None or not all(isinstance(raw, dict) and isinstance(raw.get("role"), str) for raw in values):
        return otel_genai.read_messages(values, key, problems=found.problems)  # says which ones it skips
    out = []
    for raw in values:
        try:
            spelled = orjson.dumps(raw)
        except TypeError:  # a value JSON cannot spell the same way again (an integer past 64 bits)
            out.extend(otel_genai.read_messages([raw], key))
            continue
        message = seen.get(spelled)
        if message is None:
            message = seen[spelled] = otel_genai.read_messages([raw], key)[0]
        out.append(message)
    return out


def _tool_definitions(value: Any, found: SpanMessages) -> list[ToolDescription]:
    value = _json(value, "gen_ai.tool.definitions", found)
    if not isinstance(value, list):
        return []
    out = []
    for raw in value:
        tools = tool_spellings.read_any(raw)
        if tools is None:
            found.problems.append("a gen_ai.tool.definitions entry is not a function tool with a name")
        else:
            out.extend(tools)
    return out


# --------------------------------------------------------------------------- chat-completion shapes


def _indexed(attributes: Mapping[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """``prefix.N.rest`` attributes grouped: prefix → N → rest → value."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in attributes.items():
        match = _INDEXED.match(key)
        if match is None:
            continue
        index = int(match["index"])
        if index <= MAX_INDEX:
            out.setdefault(match["prefix"], {}).setdefault(index, {})[match["rest"]] = value
    return out


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"tool_calls.0.id": x}`` → ``{"tool_calls": {0: {"id": x}}}`` (numeric steps as ints)."""
    out: dict[Any, Any] = {}
    for key, value in flat.items():
        steps = key.split(".")
        node = out
        for step in steps[:-1]:
            step_key: Any = int(step) if step.isdigit() else step
            child = node.get(step_key)
            if not isinstance(child, dict):
                child = node[step_key] = {}
            node = child
        node[int(steps[-1]) if steps[-1].isdigit() else steps[-1]] = value
    return out


def _ordered(mapping: Any) -> list[Any]:
    if not isinstance(mapping, dict):
        return []
    return [mapping[k] for k in sorted(k for k in mapping if isinstance(k, int))]


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else jsonvalues.dumps(value).decode()


def _chat_messages(raw: list[dict[str, Any]], where: str, found: SpanMessages) -> list[Message]:
    if not raw:
        return []
    try:
        read = openai_chat.FORMAT.read(raw, strict=False)
    except FormatError as error:
        found.problems.append(f"{where}: {error.message}")
        return []
    return [message for _, message in read.session.messages()]


def _content_value(value: Any) -> Any:
    """Legacy content: a string, or a JSON array of parts as a string."""
    return _as_parts(_json_array(value), value)


def _json_array(value: Any) -> Any:
    """A string holding a JSON array, parsed; anything else (or unparseable) as it is."""
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        try:
            return jsonvalues.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _as_parts(parsed: Any, value: Any) -> Any:
    """``parsed`` (``value``'s JSON) when it is an array of typed parts, else ``value``."""
    if parsed is not value and isinstance(parsed, list) and all(isinstance(p, dict) and "type" in p for p in parsed):
        return parsed
    return value


def _read_legacy_attributes(indexed: dict[str, dict[int, dict[str, Any]]], found: SpanMessages) -> None:
    for prefix, into in (("gen_ai.prompt", found.input), ("gen_ai.completion", found.output)):
        raw = []
        for index in sorted(indexed.get(prefix, {})):
            fields = _nested(indexed[prefix][index])
            message: dict[str, Any] = {"role": fields.get("role") if isinstance(fields.get("role"), str)
                                       else ("assistant" if prefix == "gen_ai.completion" else "user")}
            if "content" in fields:
                message["content"] = _content_value(fields["content"])
            calls = [{"id": str(call.get("id", "")), "type": "function",
                      "function": {"name": str(call.get("name", "")), "arguments": _arguments(call.get("arguments",
                                                                                                     "{}"))}}
                     for call in _ordered(fields.get("tool_calls")) if isinstance(call, dict)]
            if calls:
                message["tool_calls"] = calls
            if isinstance(fields.get("tool_call_id"), str):
                message["tool_call_id"] = fields["tool_call_id"]
            raw.append(message)
        into.extend(_chat_messages(raw, prefix, found))


def _read_openinference(indexed: dict[str, dict[int, dict[str, Any]]], found: SpanMessages) -> None:
    for prefix, into in (("llm.input_messages", found.input), ("llm.output_messages", found.output)):
        raw = []
        for index in sorted(indexed.get(prefix, {})):
            fields = _nested(indexed[prefix][index]).get("message")
            if not isinstance(fields, dict):
                found.problems.append(f"{prefix}.{index} has no message.* attributes")
                continue
            message: dict[str, Any] = {"role": fields.get("role") if isinstance(fields.get("role"), str) else "user"}
            if isinstance(fields.get("name"), str):
                message["name"] = fields["name"]
            if "content" in fields:
                message["content"] = fields["content"]
            parts = []
            for item in _ordered(fields.get("contents")):
                content = item.get("message_content") if isinstance(item, dict) else None
                if not isinstance(content, dict):
                    continue
                if content.get("type") == "image":
                    image = content.get("image")
                    url = image.get("image", {}).get("url") if isinstance(image, dict) else None
                    if isinstance(url, str):
                        parts.append({"type": "image_url", "image_url": {"url": url}})
                elif isinstance(content.get("text"), str):
                    parts.append({"type": "text", "text": content["text"]})
            if parts and "content" not in message:
                message["content"] = parts
            calls = []
            for item in _ordered(fields.get("tool_calls")):
                call = item.get("tool_call") if isinstance(item, dict) else None
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict):
                    calls.append({"id": str(call.get("id", "")), "type": "function",  # type: ignore[union-attr]
                                  "function": {"name": str(function.get("name", "")),
                                               "arguments": _arguments(function.get("arguments", "{}"))}})
            if calls:
                message["tool_calls"] = calls
            if isinstance(fields.get("tool_call_id"), str):
                message["tool_call_id"] = fields["tool_call_id"]
            raw.append(message)
        into.extend(_chat_messages(raw, prefix, found))


def _openinference_tools(tools: dict[int, dict[str, Any]], found: SpanMessages) -> list[ToolDescription]:
    out: list[ToolDescription] = []
    for index in sorted(tools):
        schema = _json(tools[index].get("tool.json_schema"), f"llm.tools.{index}.tool.json_schema", found)
        out.extend(tool_spellings.read_any(schema) or ())
    return out


def _read_legacy_events(events: list[dict[str, Any]], found: SpanMessages) -> None:
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for event in events:
        name = event.get("name")
        attributes = _obj(event.get("attributes"))
        if name == "gen_ai.content.prompt":
            value = _json(attributes.get("gen_ai.prompt"), "gen_ai.content.prompt", found)
            inputs.extend(m for m in value or () if isinstance(m, dict)) if isinstance(value, list) else None
        elif name == "gen_ai.content.completion":
            value = _json(attributes.get("gen_ai.completion"), "gen_ai.content.completion", found)
            outputs.extend(m for m in value or () if isinstance(m, dict)) if isinstance(value, list) else None
        elif name in _LEGACY_ROLE_EVENTS:
            body = _event_body(attributes, found)
            inputs.extend(_legacy_messages(body, _LEGACY_ROLE_EVENTS[name]))
        elif name == "gen_ai.choice":
            body = _event_body(attributes, found)
            said = body.get("message")
            # The message object; or, as Strands Agents sets it, its content alone.
            inner = {"content": said} if isinstance(said, str) else (_obj(said) or body)
            messages = _legacy_messages(inner, "assistant")
            if body.get("finish_reason") is not None:
                messages[0]["finish_reason"] = body["finish_reason"]
            outputs.extend(messages)
    found.input.extend(_chat_messages(inputs, "gen_ai events", found))
    found.output.extend(_chat_messages(outputs, "gen_ai.choice events", found))


def _event_body(attributes: Mapping[str, Any], found: SpanMessages) -> dict[str, Any]:
    for key in ("gen_ai.event.content", "event.body", "body"):
        if key in attributes:
            value = _json(attributes[key], key, found)
            if isinstance(value, dict):
                return value
    return dict(attributes)


def _legacy_messages(body: Mapping[str, Any], role: str) -> list[dict[str, Any]]:
    """The chat-shaped message of a legacy event's body; more than one when its content
    is Bedrock Converse blocks holding tool results (each its own ``tool`` message)."""
    message: dict[str, Any] = {"role": body.get("role") if isinstance(body.get("role"), str) else role}
    results: list[dict[str, Any]] = []
    if "content" in body:
        parsed = _json_array(body["content"])  # read once: Converse blocks, else typed parts or text
        blocks = _converse_blocks(parsed)
        if blocks is None:
            message["content"] = _as_parts(parsed, body["content"])
        else:
            message["content"], calls, results = _from_converse(blocks)
            if calls:
                message["tool_calls"] = calls
    calls = _json_list(body.get("tool_calls"))
    if calls:
        message["tool_calls"] = [_legacy_call(call) for call in calls if isinstance(call, dict)]
    call_id = body.get("id", body.get("tool_call_id"))
    if message["role"] == "tool" and isinstance(call_id, str):
        message["tool_call_id"] = call_id
    if results and not message["content"] and "tool_calls" not in message:
        return results  # only tool results: no empty message before them
    return [message, *results]


#: Bedrock Converse content blocks (one key each), as Strands Agents puts them, JSON
#: encoded, in the content of its per-message events.
_CONVERSE_BLOCKS = frozenset({"text", "toolUse", "toolResult", "reasoningContent", "image", "document", "video",
                              "cachePoint", "guardContent", "citationsContent", "json"})


def _converse_blocks(value: Any) -> list[dict[str, Any]] | None:
    """``value`` (content, its JSON text parsed) as Converse blocks, or None when it is something else."""
    if isinstance(value, list) and value and all(
            isinstance(block, dict) and len(block) == 1 and next(iter(block)) in _CONVERSE_BLOCKS for block in value):
        return value
    return None


def _from_converse(blocks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                            list[dict[str, Any]]]:
    """Converse blocks as chat-shaped parts, tool calls and tool messages (a block with no
    chat form is kept whole as a part of its own kind)."""
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for block in blocks:
        (kind, value), = block.items()
        if kind == "text" and isinstance(value, str):
            parts.append({"type": "text", "text": value})
        elif kind == "toolUse" and isinstance(value, dict) and isinstance(value.get("name"), str):
            calls.append(_legacy_call({"id": value.get("toolUseId", ""), "name": value["name"],
                                       "arguments": value.get("input", {})}))
        elif kind == "toolResult" and isinstance(value, dict):
            results.append({"role": "tool", "tool_call_id": str(value.get("toolUseId", "")),
                            "content": _converse_text(value.get("content"))})
        else:
            parts.append({"type": kind, kind: value})
    return parts, calls, results


def _converse_text(content: Any) -> str:
    """A tool result's content blocks as text: texts as written, other blocks as JSON."""
    if isinstance(content, str):
        return content
    texts = [block["text"] if isinstance(block, dict) and isinstance(block.get("text"), str)
             else jsonvalues.dumps(block.get("json", block) if isinstance(block, dict) else block).decode()
             for block in content or ()] if isinstance(content, list) else [jsonvalues.dumps(content).decode()]
    return "\n".join(texts)


def _json_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        try:
            value = jsonvalues.loads(value)
        except orjson.JSONDecodeError:
            return []
    return value if isinstance(value, list) else []


def _legacy_call(call: dict[str, Any]) -> dict[str, Any]:
    function = _obj(call.get("function")) or call
    return {"id": str(call.get("id", "")), "type": "function",
            "function": {"name": str(function.get("name", "")), "arguments": _arguments(function.get("arguments",
                                                                                                    "{}"))}}


# --------------------------------------------------------------------------- usage


def _usage(attributes: Mapping[str, Any]) -> Usage | None:
    def number(*keys: str) -> int | None:
        for key in keys:
            value = attributes.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    input_tokens = number("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
    output_tokens = number("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                           "llm.token_count.completion")
    total = number("llm.token_count.total", "gen_ai.usage.total_tokens")
    if total is None and input_tokens is not None and output_tokens is not None:
        total = input_tokens + output_tokens
    if input_tokens is None and output_tokens is None and total is None:
        return None
    return Usage(**_some(input_token_count=input_tokens, output_token_count=output_tokens, total_token_count=total))


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _some(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
