"""One conversation's LLM spans joined into one session that holds each message once.

Each chat span repeats the history so far as its input.  Spans are taken in start
order; a span's input is matched against the history built so far:

* the history is a prefix of the input (the usual case): the rest is new;
* else the longest end of the history that begins the input (an agent that trims old
  turns): what follows it is new;
* else nothing can be placed: the input is appended as it is and the session says so
  in its notes (``agentfolio.otel.notes``), while the span keeps the messages as sent.

Messages are compared by role and contents (ids, times and presentation aside, tool
arguments compared as parsed JSON), so the same message sent as a JSON string and as a
structured value is one message.  System instructions and tool definitions open the
session (a system message carrying the text and a tool catalog); a later span that
changes them adds a new system message.  Each span's answer is a response entry with
its token usage and finish time.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from agentfolio import _json
from agentfolio.formats import convert
from agentfolio.formats.losses import Loss
from agentfolio.model import (
    Content,
    FunctionCallContent,
    Message,
    RequestEntry,
    ResponseEntry,
    Session,
    SessionData,
    ToolCatalogContent,
    ToolDescription,
)
from agentfolio.otel.mapping import LLM_OPERATIONS, MappedSpan
from agentfolio.otel.messages import SpanMessages, read_span_messages

__all__ = ["BuiltSession", "Continuation", "ConversationState", "FoundConversation", "build_conversation",
           "build_session", "continue_conversation", "conversations"]

NOTES_KEY = "agentfolio.otel"
MAX_NOTES = 50


@dataclass(slots=True)
class BuiltSession:
    session: Session
    #: The session as durable agent state (what the store keeps).
    document: dict[str, Any]
    agent: str | None
    notes: list[str] = field(default_factory=list)
    #: What writing it as durable state lost (the tool catalog as text, and such).
    losses: list[Loss] = field(default_factory=list)
    #: Where the conversation stands, to continue it with later spans.
    state: ConversationState | None = None
    #: The session the document was written from (lowered to durable state), entry for entry.
    written: Session | None = None


@dataclass(slots=True)
class ConversationState:
    """Where a conversation stands after the spans taken so far: enough to continue it
    with later spans without reading the earlier ones again."""

    #: Digest of each message of the history, in order (what a later input is matched against).
    keys: list[str] = field(default_factory=list)
    #: Digest of the system message opening the conversation now.
    opening: str | None = None
    agent: str | None = None
    #: Built from agent spans: no model call has been seen yet.
    from_agents: bool = False
    #: The tools the first agent span lends to model calls that carry none (JSON).
    agent_tools: list[Any] | None = None
    #: Start (ns) of the latest span taken.
    last_start: int = 0

    def to_json(self) -> bytes:
        return _json.dumps({"keys": self.keys, "opening": self.opening, "agent": self.agent,
                            "from_agents": self.from_agents, "agent_tools": self.agent_tools,
                            "last_start": self.last_start})

    @classmethod
    def from_json(cls, raw: bytes) -> ConversationState:
        data = _json.loads(raw)
        return cls(list(data["keys"]), data["opening"], data["agent"], bool(data["from_agents"]),
                   data["agent_tools"], int(data["last_start"]))


@dataclass(slots=True)
class Continuation:
    """What later spans add to a conversation: entries to append, as durable state, and
    the canonical entries each was written from."""

    entries: list[dict[str, Any]]
    state: ConversationState
    models: list[Any] = field(default_factory=list)


def build_conversation(payloads: Iterable[Mapping[str, Any]]) -> tuple[Session, list[str], str | None] | None:
    """The canonical session of these span payloads (start order), its notes and its
    agent name; ``None`` when no span carries a message."""
    built = _build(payloads)
    if built is None:
        return None
    session, notes, state = built
    return session, notes, state.agent


def _build(payloads: Iterable[Mapping[str, Any]]) -> tuple[Session, list[str], ConversationState] | None:
    state = ConversationState()
    seen: dict[bytes, Message] = {}
    read = [(payload, read_span_messages(payload, seen)) for payload in payloads]
    notes: list[str] = []
    for payload, found in read:
        notes.extend(f"{_label(payload)}: {problem}" for problem in found.problems)
    # Agent-level spans (agents, tools, an agent loop's turns: see _kind) repeat what the
    # model calls said, or describe a tool's run; they tell the conversation only when no
    # model call does, and lend their tool definitions.
    model_calls = [(p, f) for p, f in read if not f.empty and _kind(p) != "agent"]
    lender = next((f.tools for p, f in read if _kind(p) == "agent" and f.tools), None)
    state.agent_tools = None if lender is None else [_tool_json(tool) for tool in lender]
    state.from_agents = not model_calls
    entries = _extend(state, model_calls or [(p, f) for p, f in read if not f.empty], notes)
    if not entries:
        return None
    if len(notes) > MAX_NOTES:
        notes = [*notes[:MAX_NOTES], f"and {len(notes) - MAX_NOTES} more"]
    return Session(data=SessionData(conversation_history=tuple(entries))), notes, state


def continue_conversation(state: ConversationState,
                          payloads: Iterable[Mapping[str, Any]]) -> Continuation | None:
    """The entries later spans (start order) add after ``state``, each message once;
    ``None`` when they cannot simply follow it and the conversation must be built again
    from all of its spans: a span starting before the latest one taken, the first model
    call after a conversation told by agent spans, the first tools an agent span lends,
    or anything the session must note (unreadable values, a message that cannot be placed)."""
    seen: dict[bytes, Message] = {}
    read = [(payload, read_span_messages(payload, seen)) for payload in payloads]
    telling = [(p, f) for p, f in read if not f.empty]
    if any(f.problems for _, f in read):
        return None
    if any(int(p.get("start_time_unix_nano") or 0) < state.last_start for p, _ in telling):
        return None
    model_calls = [(p, f) for p, f in telling if _kind(p) != "agent"]
    if state.agent_tools is None and any(_kind(p) == "agent" and f.tools for p, f in telling):
        return None
    if state.from_agents and model_calls:
        return None
    notes: list[str] = []
    after = ConversationState(list(state.keys), state.opening, state.agent, state.from_agents,
                              state.agent_tools, state.last_start)
    entries = _extend(after, telling if state.from_agents else model_calls, notes)
    if notes:
        return None
    if not entries:
        return Continuation([], after)
    conversion = convert.convert(Session(data=SessionData(conversation_history=tuple(entries))),
                                 to="durable-state", from_="canonical")
    written = conversion.session.entries if conversion.session is not None else ()
    return Continuation(list(conversion.result["data"]["conversationHistory"]), after, list(written))


def _extend(state: ConversationState, calls: list[tuple[Mapping[str, Any], SpanMessages]],
            notes: list[str]) -> list[RequestEntry | ResponseEntry]:
    """The entries these spans add to the conversation at ``state`` (which moves on)."""
    entries: list[RequestEntry | ResponseEntry] = []
    # Spans repeat the history so far, sharing the messages read once (see
    # read_span_messages): each message's key is worked out once, by identity (the
    # message is held beside its key, so its id cannot be reused meanwhile).
    keys: dict[int, tuple[Message, str]] = {}

    def key_of(message: Message) -> str:
        held = keys.get(id(message))
        if held is None:
            held = keys[id(message)] = (message, _key(message))
        return held[1]

    lent = [_tool_from_json(tool) for tool in state.agent_tools] if state.agent_tools else []
    for payload, found in calls:
        span_label = _label(payload)
        state.last_start = max(state.last_start, int(payload.get("start_time_unix_nano") or 0))
        if state.agent is None:
            state.agent = _agent_name(payload)
        if not found.tools and lent:
            found.tools = list(lent)
        request: list[Message] = []
        system = _system_message(found)
        if system is not None:
            system_key = key_of(system)
            if system_key != state.opening:
                state.opening = system_key
                request.append(system)
        incoming = [m for m in found.input if not (m.role == "system" and system is not None)]
        incoming_keys = [key_of(m) for m in incoming]
        start = _overlap(state.keys, incoming_keys)
        if start is None:
            notes.append(f"{span_label}: its {len(incoming)} input message(s) do not continue the conversation "
                         "so far; kept in order after it")
            start = 0
        for message, key in zip(incoming[start:], incoming_keys[start:], strict=False):
            request.append(message)
            state.keys.append(key)
        when = _iso(payload.get("end_time_unix_nano") or payload.get("start_time_unix_nano"))
        if request:
            opened: dict[str, Any] = {}
            if payload.get("start_time_unix_nano"):
                opened["created_at"] = _iso(payload.get("start_time_unix_nano"))
            entries.append(RequestEntry(messages=tuple(request), **opened))
        if found.output or found.usage is not None:
            extra: dict[str, Any] = {"created_at": when} if when else {}
            if found.usage is not None:
                extra["usage"] = found.usage
            entries.append(ResponseEntry(messages=tuple(found.output), **extra))
            state.keys.extend(key_of(message) for message in found.output)
    return entries


def build_session(payloads: Iterable[Mapping[str, Any]]) -> BuiltSession | None:
    """:func:`build_conversation` written as durable agent state through the one
    conversion path (kinds durable state has no type for, such as the tool catalog,
    lowered with their loss counted); the notes go under ``agentfolio.otel``."""
    built = _build(payloads)
    if built is None:
        return None
    session, notes, state = built
    conversion = convert.convert(session, to="durable-state", from_="canonical")
    document = dict(conversion.result)
    if notes:
        document[NOTES_KEY] = {"notes": notes}
    return BuiltSession(session, document, state.agent, notes, conversion.losses, state, conversion.session)


def _tool_json(tool: ToolDescription) -> Any:
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)


def _tool_from_json(value: Any) -> ToolDescription:
    return ToolDescription.model_validate(value)


def _system_message(found: SpanMessages) -> Message | None:
    contents: list[Content] = list(found.system)
    system_inputs = [m for m in found.input if m.role == "system"]
    if not contents:
        for message in system_inputs:
            contents.extend(message.items)
    if found.tools:
        contents.append(ToolCatalogContent(items=tuple(found.tools)))
    return Message(role="system", contents=tuple(contents)) if contents else None


def _overlap(history: list[str], incoming: list[str]) -> int | None:
    """Where the new messages of ``incoming`` start; ``None`` if it cannot be placed."""
    if not history:
        return 0
    if incoming[:len(history)] == history:
        return len(history)
    for size in range(min(len(history), len(incoming)), 0, -1):
        if history[-size:] == incoming[:size]:
            return size
    if not incoming:
        return 0
    return None


def _key(message: Message) -> str:
    """A digest of the message's role and contents (ids, times and presentation aside)."""
    return hashlib.blake2b(_json.dumps([message.role, [_content_key(content) for content in message.items]],
                                       option=orjson.OPT_SORT_KEYS), digest_size=16).hexdigest()


def _content_key(content: Any) -> Any:
    value = content.to_json_value() if hasattr(content, "to_json_value") else dict(content.extra)
    value.pop("presentation", None)
    if isinstance(content, FunctionCallContent) and isinstance(content.arguments, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            value["arguments"] = _json.loads(content.arguments)
    return value


def _label(payload: Mapping[str, Any]) -> str:
    return f"span {payload.get('span_id')} ({payload.get('name')})"


def _kind(payload: Mapping[str, Any]) -> str:
    """``model`` for model calls; ``agent`` for the spans around or beside them that an
    operation names (an agent, a workflow, a tool, an agent loop's turn), whose messages
    repeat or describe what the model calls said; ``other`` for spans naming no operation."""
    attributes = payload.get("attributes") or {}
    operation = attributes.get("gen_ai.operation.name")
    kind = attributes.get("openinference.span.kind")
    kind = kind.upper() if isinstance(kind, str) else None
    if operation in LLM_OPERATIONS or kind == "LLM":
        return "model"
    if (isinstance(operation, str) and operation) or kind in ("AGENT", "CHAIN", "TOOL"):
        return "agent"
    return "other"


def _agent_name(payload: Mapping[str, Any]) -> str | None:
    attributes = payload.get("attributes") or {}
    for key in ("gen_ai.agent.name", "gen_ai.agent.id"):
        if isinstance(attributes.get(key), str) and attributes[key]:
            return str(attributes[key])[:200]
    service = ((payload.get("resource") or {}).get("attributes") or {}).get("service.name")
    return service[:200] if isinstance(service, str) and service else None


def _iso(nanos: Any) -> str | None:
    if not isinstance(nanos, int) or nanos <= 0:
        return None
    moment = datetime.fromtimestamp(nanos // 1_000_000_000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos % 1_000_000_000 // 1000:06d}Z"


@dataclass(slots=True)
class FoundConversation:
    """One conversation found in a batch of spans (a file of them): the session id the
    OTLP receiver would store it under, and the session built."""

    session_id: str
    built: BuiltSession
    spans: int


def conversations(spans: Iterable[MappedSpan]) -> list[FoundConversation]:
    """The conversations of a batch of spans, each built as the OTLP receiver builds a
    stored one: the spans of each session id in start order, sessions in the order their
    first span appears, only those with a span that carries messages."""
    groups: dict[str, list[MappedSpan]] = {}
    for mapped in spans:
        groups.setdefault(mapped.session_id, []).append(mapped)
    found = []
    for session_id, members in groups.items():
        if not any(member.is_llm for member in members):
            continue
        payloads = sorted((member.span.to_json() for member in members),
                          key=lambda p: (p.get("start_time_unix_nano") or 0, p.get("end_time_unix_nano") or 0))
        built = build_session(payloads)
        if built is None:
            continue
        # The agent the receiver files it under: one its spans (or their ancestors) name.
        named = next((member.agent_hint for member in members if member.agent_hint), None)
        built.agent = named or built.agent or members[0].service_name
        found.append(FoundConversation(session_id, built, len(members)))
    return found
