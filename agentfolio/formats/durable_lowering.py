"""Lowering any canonical session to what durable agent state can hold, with losses.

Durable state's writer refuses kinds it has no ``$type`` for; a conversion maps them here:

* template variables, memory, skills, tool catalogs, documents and body parts become
  ``text`` contents (worded by :mod:`agentfolio.formats.losses`), approximated;
* presentation (collapsed flags, system-prompt and long-text looks) is dropped;
* contents of kinds we do not know are wrapped in durable state's own ``unknown``;
* roles durable 1.x does not have (``developer``, ``function``...) become the nearest
  one, and string function arguments are parsed into the object 1.x requires.

Unknown properties travel with their record, as durable state's own policy asks, unless
their name is one the record writes itself.
"""

from __future__ import annotations

from typing import Any, TypeVar

import orjson

from agentfolio import _json
from agentfolio.formats.losses import (
    ConvertOptions,
    Loss,
    Lowered,
    Origin,
    Recorder,
    content_pointer,
    drop_presentation,
    entry_pointer,
    listing_text,
    message_pointer,
    with_extras,
)
from agentfolio.model import (
    DURABLE_CONTENT_KINDS,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    OpaqueContent,
    OpaqueEntry,
    PartContent,
    Record,
    Session,
    TextContent,
    UnknownContent,
    UriContent,
)

NAME = "durable-state"
ROLES_1X = ("user", "assistant", "system", "tool")
_NEAREST_ROLE = {"developer": "system", "function": "tool"}
_R = TypeVar("_R", bound=Record)


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    rec = Recorder(origin)
    session = _give_call_ids(rec, session)
    version = session.schema_version or ""
    roles = ROLES_1X + (("developer",) if version.startswith("2.") else ())
    entries = []
    stamps = _EntryStamps(rec)
    for entry_index, entry in enumerate(session.entries):
        if isinstance(entry, OpaqueEntry):
            entries.append(entry)
            continue
        if entry.messages is not None:
            messages = tuple(_message(rec, message, message_pointer(entry_index, index), entry_index, index, roles,
                                      version)
                             for index, message in enumerate(entry.messages))
            if any(new is not old for new, old in zip(messages, entry.messages, strict=False)):
                entry = entry.model_copy(update={"messages": messages})
        entries.append(stamps.stamp(entry, session.entries[entry_index], entry_pointer(entry_index)))
    if session.data is not None and any(new is not old for new, old in zip(entries, session.entries, strict=False)):
        session = session.model_copy(update={"data": session.data.model_copy(
            update={"conversation_history": tuple(entries)})})
    session = _drop_colliding(rec, session, session, "", {"schemaVersion", "data"})
    if session.data is not None:
        data = _drop_colliding(rec, session.data, session.data, "/data", {"conversationHistory"})
        if data is not session.data:
            session = session.model_copy(update={"data": data})
    return Lowered(session, rec.losses)


def _give_call_ids(rec: Recorder, session: Session) -> Session:
    """Durable state requires a callId on every call and result; sources without one
    (Gemini's code execution, its older function calls) get a generated id, each result
    taking that of the latest id-less call before it, so they stay paired."""
    waiting: list[str] = []
    generated = 0
    entries = list(session.entries)
    changed = False
    for entry_index, entry in enumerate(entries):
        if isinstance(entry, OpaqueEntry) or not entry.messages:
            continue
        messages = list(entry.messages)
        for index, message in enumerate(messages):
            contents = list(message.items)
            for position, content in enumerate(contents):
                if not isinstance(content, (FunctionCallContent, FunctionResultContent)) or content.call_id is not None:
                    continue
                pointer = content_pointer(entry_index, index, position)
                if isinstance(content, FunctionCallContent) or not waiting:
                    generated += 1
                    call_id = f"call_{generated}"
                    if isinstance(content, FunctionCallContent):
                        waiting.append(call_id)
                else:
                    call_id = waiting.pop()
                rec.approximate(content, pointer, "callId", "callId",
                                "durable state requires a call id: one was generated, pairing results with calls")
                contents[position] = content.model_copy(update={"call_id": call_id})
            if any(a is not b for a, b in zip(contents, message.items, strict=True)):
                messages[index] = message.model_copy(update={"contents": tuple(contents)})
        if any(a is not b for a, b in zip(messages, entry.messages, strict=True)):
            entries[entry_index] = entry.model_copy(update={"messages": tuple(messages)})
            changed = True
    if not changed or session.data is None:
        return session
    return session.model_copy(update={"data": session.data.model_copy(update={"conversation_history": tuple(entries)})})


def _message(rec: Recorder, message: Message, pointer: str, entry_index: int, index: int, roles: tuple[str, ...],
             version: str) -> Message:
    update: dict[str, Any] = {}
    if message.role is not None and message.role not in roles:
        role = _NEAREST_ROLE.get(message.role, "assistant" if message.role not in ("human",) else "user")
        rec.approximate(message, pointer, "role", f"role {message.role!r}",
                        f"durable state {version or '1.x'} roles are {', '.join(roles)}: written as {role!r}")
        update["role"] = role
    if message.contents is not None:
        contents = tuple(_content(rec, content, content_pointer(entry_index, index, position), version)
                         for position, content in enumerate(message.contents))
        if rec.origin.presentation:
            _plain_text_looks(rec, message, entry_index, index)
        if any(new is not old for new, old in zip(contents, message.contents, strict=False)):
            update["contents"] = contents
    lowered = message.model_copy(update=update) if update else message
    return _drop_colliding(rec, message, lowered, pointer, set(_wire_names(Message)))


def _content(rec: Recorder, content: Any, pointer: str, version: str) -> Any:
    if isinstance(content, OpaqueContent):
        tag = content.extra.get("$type")
        if isinstance(tag, str) and (tag in DURABLE_CONTENT_KINDS or _newer_minor(version)):
            # A durable content that did not fit its kind (reported by validation), or a
            # kind a newer minor may add: written back as it is.
            return content
        what = f"content of kind {tag!r}" if isinstance(tag, str) else "content of unknown kind"
        rec.approximate(content, pointer, None, what,
                        'durable state has no type for it: kept whole inside {"$type": "unknown", "content": ...}')
        return UnknownContent(content=dict(content.extra))
    lowered = content
    if content.kind not in DURABLE_CONTENT_KINDS:
        text, what = _as_text(content)
        if text is None:
            lowered = _part_as_content(rec, content, pointer)
        else:
            rec.approximate(content, pointer, None, what, "durable state has no type for it: written as text")
            lowered = TextContent(text=text)
        return with_extras(lowered, _kept_extras(rec, content, pointer, lowered))
    if content.presentation is not None:
        drop_presentation(rec, content, pointer, "durable state does not record how a content is shown")
        lowered = content.model_copy(update={"presentation": None})
        object.__setattr__(lowered, "__pydantic_fields_set__", lowered.model_fields_set - {"presentation"})
    if isinstance(content, FunctionCallContent) and isinstance(content.arguments, str) and not version.startswith("2."):
        try:
            parsed = _json.loads(content.arguments)
        except orjson.JSONDecodeError:
            parsed = None
        arguments = parsed if isinstance(parsed, dict) else {"_raw": content.arguments}
        if not isinstance(parsed, dict) or _json.dumps(parsed).decode() != content.arguments:
            rec.approximate(content, pointer, "arguments", "arguments",
                            "durable state 1.x keeps arguments as an object: "
                            + ("the string was parsed" if isinstance(parsed, dict) else 'kept as {"_raw": ...}'))
        lowered = lowered.model_copy(update={"arguments": arguments})
    if isinstance(content, UriContent) and content.media_type is None and not version.startswith("2."):
        rec.approximate(content, pointer, "mediaType", "mediaType",
                        "durable state 1.x requires a media type: written as application/octet-stream")
        lowered = lowered.model_copy(update={"media_type": "application/octet-stream"})
    return _drop_colliding(rec, content, lowered, pointer, set(_wire_names(type(content))))


# The time written for an entry when nothing in the source says when it happened: the
# Unix epoch, plainly not a real time, and the same on every run (a conversion is a pure
# function of its input).
UNKNOWN_TIME = "1970-01-01T00:00:00Z"


class _EntryStamps:
    """Gives every entry the ``createdAt`` and ``correlationId`` durable state readers rely
    on (Microsoft's classes log a warning and invent the time without the first; its
    writer emits a null the schema refuses without the second), reporting each one made.

    A time comes from the entry's first timed message, else the entry before it; a
    correlation id is generated per request, and a response takes its request's.
    """

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.last_time: str | None = None
        self.correlation: str | None = None
        self.generated = 0

    def stamp(self, entry: Any, source: Any, pointer: str) -> Any:
        update: dict[str, Any] = {}
        if isinstance(entry.created_at, str):
            self.last_time = entry.created_at
        else:
            timed = next((m.created_at for m in entry.items if isinstance(m.created_at, str)), None)
            why = ("took its first message's time" if timed else "took the previous entry's time"
                   if self.last_time not in (None, UNKNOWN_TIME) else f"nothing says when: written as {UNKNOWN_TIME}")
            update["created_at"] = self.last_time = timed or self.last_time or UNKNOWN_TIME
            self._report(source, pointer, "createdAt", f"durable state entries need a time; {why}")
        if isinstance(entry.correlation_id, str):
            self.correlation = entry.correlation_id
        else:
            made = entry.kind == "request" or self.correlation is None
            if made:
                self.generated += 1
                self.correlation = f"agentfolio-{self.generated}"
            update["correlation_id"] = self.correlation
            self._report(source, pointer, "correlationId", "durable state pairs a response with its request by a "
                         "correlation id: " + ("one was generated" if made else "took its request's"))
        return entry.model_copy(update=update) if update else entry

    def _report(self, entry: Any, pointer: str, key: str, why: str) -> None:
        origin = self.rec.origin
        first = entry.items[0] if entry.items else None
        if origin.locates(entry) or first is None:
            self.rec.approximate(entry, pointer, key, key, why)
        else:
            # An entry the source did not have (grouped from a run of messages): the
            # field belongs to where its first message stood.
            where = origin.pointer(first, pointer + "/messages/0")
            self.rec.losses.append(Loss(f"{where}/{key}", f"entry {key}", why, approximated=True))


def _newer_minor(version: str) -> bool:
    """Whether ``version`` is a 1.x minor newer than any we know (its additions are legal)."""
    from agentfolio.formats.durable_state import KNOWN_MINORS

    major, _, rest = version.partition(".")
    minor = rest.partition(".")[0]
    return major.isdigit() and minor.isdigit() and int(major) in KNOWN_MINORS and (
        int(minor) > max(KNOWN_MINORS[int(major)]))


def _plain_text_looks(rec: Recorder, message: Message, entry_index: int, index: int) -> None:
    """A plain text that formats with a look will read back with one: say so.

    Without presentation, a system message's text reads back as a system prompt, and a
    long text as long text (agentfolio.model.analysis decides both).
    """
    from agentfolio.model.analysis import LONG_TEXT_CHARS

    for position, content in enumerate(message.items):
        if not isinstance(content, TextContent) or (content.presentation and content.presentation.style):
            continue
        look = ("system_prompt" if message.role == "system"
                else "long_text" if len(content.text or "") > LONG_TEXT_CHARS else None)
        if look:
            rec.approximate(content, content_pointer(entry_index, index, position), None,
                            "plain text look", f"durable state does not record how a content is shown: read back, "
                            f"this text takes the {look} look")


# What the loss report calls each kind written as text (what the text leaves out).
_AS_TEXT_WHAT = {"templateVariable": "template variable (its name and description)", "memory": "memory",
                 "skills": "skills", "toolCatalog": "tool catalog (parameter schemas)", "document": "document card"}


def _as_text(content: Any) -> tuple[str | None, str]:
    text = listing_text(content)
    return text, _AS_TEXT_WHAT.get(content.kind, "") if text is not None else ""


def _part_as_content(rec: Recorder, part: PartContent, pointer: str) -> Any:
    if part.metadata is not None or part.name is not None:
        # What durable state has no field for (ACP's trajectory and citation metadata, the
        # part's name): the whole part goes into durable state's own escape hatch, which
        # Microsoft's classes keep, and a message body takes it back out.
        rec.approximate(part, pointer, None, "body part", "durable state has no type for a named part or one with "
                        'metadata: kept whole inside {"$type": "unknown", "content": ...}')
        return UnknownContent(content=part.to_json_value())
    if part.url:
        rec.approximate(part, pointer, None, "body part", "durable state has no body parts: written as a uri")
        return UriContent(uri=part.url, media_type=part.content_type or "application/octet-stream")
    if part.content is not None and part.encoding == "base64":
        rec.approximate(part, pointer, None, "body part", "durable state has no body parts: written as data")
        media_type = part.content_type or "application/octet-stream"
        return DataContent(uri=f"data:{media_type};base64,{part.content}", media_type=media_type)
    rec.approximate(part, pointer, None, "body part", "durable state has no body parts: written as plain text, "
                    "its content type not kept")
    return TextContent(text=part.content or "")


def _kept_extras(rec: Recorder, source: Any, pointer: str, lowered: Any) -> dict[str, Any]:
    owned = set(_wire_names(type(lowered)))
    kept = {}
    for key, value in source.extra.items():
        if key in owned:
            rec.drop(source, pointer, key, f"property {key!r}", f"a durable {lowered.kind} content uses that name")
        else:
            kept[key] = value
    return kept


def _drop_colliding(rec: Recorder, source: Record, lowered: _R, pointer: str, owned: set[str]) -> _R:
    """Unknown properties named like a field the record writes cannot travel with it."""
    colliding = [key for key in source.extra if key in owned]
    if not colliding:
        return lowered
    for key in colliding:
        rec.drop(source, pointer, key, f"property {key!r}", "durable state uses that name for its own field")
    if lowered is source:
        lowered = lowered.model_copy()
    object.__setattr__(lowered, "__pydantic_extra__", {k: v for k, v in lowered.extra.items() if k not in colliding})
    return lowered


def _wire_names(cls: type[Record]) -> list[str]:
    return [info.alias or name for name, info in cls.model_fields.items()]


__all__ = ["NAME", "entry_pointer", "lower"]
