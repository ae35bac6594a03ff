"""Message bodies (``agentfolio.body``): ``{"parts": [{name?, content_type, content | content_url, ...}]}``.

A body is *one* message's content, so reading one gives a session with one entry holding
one message whose role is :data:`DEFAULT_ROLE` (``assistant``: a body is what an agent
produced), or ``role=`` / ``ConvertOptions.body_role``; a ``system``/``user``/
``developer`` role makes the entry a request, any other a response.  Each part becomes one
content:

=========================================================  ==================================
body part                                                   canonical content
=========================================================  ==================================
unnamed, ``text/plain`` (exactly), inline text              TextContent
unnamed, any type, inline ``base64``                        DataContent ``data:<type>;base64,…``
unnamed, ``application/json`` or ``*+json``, inline text    DataContent ``data:<type>,<%-encoded>``
unnamed, any type, ``content_url`` (``data:`` URLs too)     UriContent, mediaType = content_type
anything else: named parts, parts with metadata, other      PartContent {name, contentType,
inline text (``text/markdown``...), empty parts             content, encoding, url, metadata}
=========================================================  ==================================

so images, audio and video are data/uri contents with their media type, and JSON parts
are ``data`` contents (durable state holds those as they are).  Writing is the inverse:
body → model → body gives back the same body (``MessageBody.to_dict()``, which spells
the defaults out: ``content_type`` always, ``content_encoding`` only when ``base64``).

A body holds no roles, ids, times, entries, function calls, reasoning, usage or
presentation: :func:`lower` maps a session onto one message and reports every loss (see
``docs/conversions.md``).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote

from pydantic import ValidationError

from agentfolio.body.body import ACP_MESSAGE_FIELDS
from agentfolio.body.names import content_type_essence
from agentfolio.body.parts import FIELDS, MessagePart
from agentfolio.formats.base import FunctionFormat, ReadResult, read_lazily
from agentfolio.formats.errors import FormatError, Problem, json_pointer, validated
from agentfolio.formats.losses import (
    ConvertOptions,
    Lowered,
    Origin,
    Recorder,
    content_pointer,
    drop_entry_fields,
    drop_presentation,
    drop_provider_fields,
    entry_pointer,
    error_text,
    json_text,
    listing_text,
    message_pointer,
    set_fields,
    with_extras,
)
from agentfolio.formats.shared import data_url_type
from agentfolio.model import (
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    OpaqueContent,
    OpaqueEntry,
    PartContent,
    RequestEntry,
    ResponseEntry,
    Session,
    SessionData,
    TextContent,
    UnknownContent,
    UriContent,
)

NAME = "message-body"
# convert() hands this reader its ConvertOptions (for ``body_role``).
DEFAULT_ROLE = "assistant"
REQUEST_ROLES = frozenset({"system", "developer", "user"})
# Keys that mark the other formats' documents: a body never has them.
_OTHER_FORMATS_KEYS = frozenset({"messages", "version", "schemaVersion", "data", "agentfolio", "session"})
# Where each content's fields stand in its part.
_NAMES: dict[type, dict[str, tuple[str, ...]]] = {
    TextContent: {"text": ("content",)},
    DataContent: {"uri": ("content",), "mediaType": ("content_type",)},
    UriContent: {"uri": ("content_url",), "mediaType": ("content_type",)},
    PartContent: {"contentType": ("content_type",), "encoding": ("content_encoding",), "url": ("content_url",)},
}
_HEADER = re.compile(r"[^\s,]+")  # a content type that can stand in a data: URL's header as it is


def looks_like(document: Any) -> bool:
    return (isinstance(document, dict) and isinstance(document.get("parts"), list)
            and not _OTHER_FORMATS_KEYS & set(document))


# -- Reading -------------------------------------------------------------------------

def validate(document: Any) -> list[Problem]:
    """Every part checked with ``agentfolio.body``'s rules, each problem at its pointer."""
    if not isinstance(document, dict):
        raise FormatError('expected a message body {"parts": [...]}', pointer="")
    parts = document.get("parts")
    if not isinstance(parts, list):
        raise FormatError('a message body needs "parts", an array of parts', pointer="/parts")
    problems = []
    named: dict[str, int] = {}
    for index, raw in enumerate(parts):
        problems.extend(_part_problems(raw, index))
        name = raw.get("name") if isinstance(raw, dict) else None
        if isinstance(name, str):
            if name in named:
                problems.append(Problem(json_pointer(["parts", index, "name"]),
                                        f"name {name!r} is already used by part {named[name]}"))
            else:
                named[name] = index
    return problems + [Problem(json_pointer([key]), "a message body has only 'parts' (and, as a whole ACP "
                               "Message, role, created_at, completed_at)") for key in document
                       if key != "parts" and key not in ACP_MESSAGE_FIELDS]


def _part_problems(raw: Any, index: int) -> list[Problem]:
    pointer = f"/parts/{index}"
    if not isinstance(raw, dict):
        return [Problem(pointer, f"expected a part object with fields {', '.join(FIELDS)}")]
    try:
        MessagePart.model_validate(raw)
    except ValidationError as error:
        problems = []
        for issue in error.errors(include_url=False):
            where = [step for step in issue["loc"] if isinstance(step, (str, int))][:1]
            message = issue["msg"].removeprefix("Value error, ")
            if issue["type"] == "extra_forbidden":
                message = f"unknown field (allowed: {', '.join(FIELDS)})"
            problems.append(Problem(pointer + json_pointer(where), message))
        return problems
    return []


def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None, role: str | None = None) -> ReadResult:
    """A body as a session of one message (role: ``role``, else ``options.body_role``,
    else :data:`DEFAULT_ROLE`).  A tolerant read keeps a part that breaks the rules as an
    OpaqueContent and unknown root properties in the session's ``extra``."""
    problems = validated(validate, document, strict=strict, source=source)
    own_role, author = _message_role(document)
    role = role or own_role or (options.body_role if options else None) or DEFAULT_ROLE
    flagged = {problem.pointer for problem in problems}
    origin = Origin()
    return read_lazily(lambda: _read_session(document, origin, flagged, role, author), document, NAME,
                       problems=problems, origin=origin)


def _read_session(document: dict[str, Any], origin: Origin, flagged: set[str], role: str,
                  author: str | None) -> Session:
    contents = []
    for index, raw in enumerate(document["parts"]):
        pointer = json_pointer(["parts", index])
        if any(p == pointer or p.startswith(pointer + "/") for p in flagged):
            content: Any = OpaqueContent.model_validate(raw) if isinstance(raw, dict) else OpaqueContent()
            origin.add(content, pointer)
        else:
            content = content_of(MessagePart.model_validate(raw))
            origin.add(content, pointer, _NAMES.get(type(content), {}))
        contents.append(content)
    message = Message(role=role, author_name=author, contents=tuple(contents)) if author else \
        Message(role=role, contents=tuple(contents))
    origin.add(message, "", {"contents": ("parts",)})
    entry = (RequestEntry if role in REQUEST_ROLES else ResponseEntry)(messages=(message,))
    origin.add(entry, "", {"messages": ("parts",)})
    session = Session(data=SessionData(conversation_history=(entry,)))
    origin.add(session, "")
    return with_extras(session, {key: value for key, value in document.items() if key != "parts"})


def _message_role(document: dict[str, Any]) -> tuple[str | None, str | None]:
    """The role an ACP message gives itself (``user``, ``agent`` or ``agent/<name>``, an
    assistant called <name>), and that name; ``(None, None)`` for a plain body."""
    role = document.get("role")
    if not isinstance(role, str) or not role.strip():
        return None, None
    if role == "agent" or role.startswith("agent/"):
        return "assistant", role[6:] or None
    return role, None


def _is_json(essence: str) -> bool:
    return essence == "application/json" or essence.endswith("+json")


def content_of(part: MessagePart) -> Any:
    """The canonical content a valid part reads as (the module docstring's table)."""
    inline = part.content is not None and part.content_url is None
    if part.name is None and part.metadata is None:
        if inline and part.content_encoding == "plain" and part.content_type == "text/plain":
            return TextContent(text=part.content)
        if inline and _HEADER.fullmatch(part.content_type):
            if part.content_encoding == "base64":
                return DataContent(uri=f"data:{part.content_type};base64,{part.content}", media_type=part.content_type)
            if _is_json(part.essence) and part.content is not None and _utf8(part.content):
                return DataContent(uri=f"data:{part.content_type},{quote(part.content, safe='')}",
                                   media_type=part.content_type)
        if part.content_url is not None:
            return UriContent(uri=part.content_url, media_type=part.content_type)
    optional: dict[str, Any] = {"name": part.name} if part.name is not None else {}
    if part.content is not None:
        optional["content"] = part.content
        if part.content_encoding != "plain":
            optional["encoding"] = part.content_encoding
    if part.content_url is not None:
        optional["url"] = part.content_url
    if part.metadata is not None:
        optional["metadata"] = part.metadata
    return PartContent(content_type=part.content_type, **optional)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# -- Writing -------------------------------------------------------------------------

def write(session: Session) -> dict[str, Any]:
    """The session's one message as a body.  Raises FormatError for what a body cannot
    hold (several messages, function calls...): ``agentfolio.formats.convert`` lowers
    those first, with a loss report."""
    messages = list(session.messages())
    if len(messages) > 1:
        raise FormatError("a message body holds one message; convert the session to join them",
                          pointer=entry_pointer(0))
    parts = []
    if messages:
        (entry_index, message_index), message = _position(session), messages[0][1]
        for index, content in enumerate(message.items):
            parts.append(_write_part(content, content_pointer(entry_index, message_index, index)))
    document: dict[str, Any] = {"parts": parts}
    for key, value in session.extra.items():
        document.setdefault(key, value)
    return document


def _position(session: Session) -> tuple[int, int]:
    for entry_index, entry in enumerate(session.entries):
        if not isinstance(entry, OpaqueEntry) and entry.items:
            return entry_index, 0
    return 0, 0


def _write_part(content: Any, pointer: str) -> dict[str, Any]:
    if isinstance(content, OpaqueContent):
        return dict(content.extra)
    try:
        return part_of(content).to_dict()
    except (ValidationError, ValueError) as error:
        why = _pydantic_messages(error) if isinstance(error, ValidationError) else str(error)
        raise FormatError(f"{getattr(content, 'kind', '?')!r} content is not a valid body part: {why}; "
                          "convert the session", pointer=pointer) from None


def part_of(content: Any) -> MessagePart:
    """The body part a content is written as (ValueError when it has no part form)."""
    if isinstance(content, TextContent) and content.text is not None:
        return MessagePart(content_type="text/plain", content=content.text)
    if isinstance(content, DataContent) and content.uri is not None and content.media_type:
        for marker, encoding in ((";base64,", "base64"), (",", "plain")):
            prefix = f"data:{content.media_type}{marker}"
            if content.uri.startswith(prefix):
                payload = content.uri[len(prefix):]
                text = payload if encoding == "base64" else unquote(payload)
                return MessagePart(content_type=content.media_type, content=text, content_encoding=encoding)
        return MessagePart(content_type=content.media_type, content_url=content.uri)
    if isinstance(content, UriContent) and content.uri is not None and content.media_type:
        return MessagePart(content_type=content.media_type, content_url=content.uri)
    if isinstance(content, PartContent):
        return MessagePart(name=content.name, content_type=content.content_type or "text/plain",
                           content=content.content, content_encoding=content.encoding or "plain",
                           content_url=content.url, metadata=content.metadata)
    raise ValueError(f"{getattr(content, 'kind', '?')!r} has no body part form")


# -- Lowering ------------------------------------------------------------------------

def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Every message's contents joined into one body, each thing a body cannot hold
    reported at its source pointer."""
    options = options or ConvertOptions()
    rec = Recorder(origin)
    role = options.body_role or DEFAULT_ROLE
    for key in session.extra:
        rec.drop(session, "", key, f"property {key!r}", "a message body has only parts")
    if session.schema_version is not None:
        rec.drop(session, "", "schemaVersion", "schemaVersion", "a message body has no version")
    if session.data is not None:
        for key in session.data.extra:
            rec.drop(session.data, "/data", key, f"data property {key!r}", "a message body has no session state")
    contents: list[Any] = []
    names: set[str] = set()
    first: str | None = None  # where the first message stood in the source
    for entry_index, entry in enumerate(session.entries):
        pointer = entry_pointer(entry_index)
        if isinstance(entry, OpaqueEntry):
            rec.drop(entry, pointer, None, f"entry of unknown kind {entry.kind!r}", "a message body has no entries")
            continue
        drop_entry_fields(rec, entry, pointer, "a message body has no entries, only parts")
        kind = "request" if role in REQUEST_ROLES else "response"
        if entry.kind != kind and rec.origin.locates(entry):  # not for entries a reader grouped
            rec.approximate(entry, pointer, "$type", f"entry kind {entry.kind!r}",
                            f"a message body has no entries: it reads back as one {kind} entry")
        for index, message in enumerate(entry.items):
            where = message_pointer(entry_index, index)
            if first is None:
                first = rec.at(message, where) or "/"
            else:
                rec.approximate(message, where, None, "message boundary",
                                f"a message body is one message: its parts join those of {first}")
            _lower_message_fields(rec, message, where, role)
            for position, content in enumerate(message.items):
                lowered = _lower_content(rec, content, content_pointer(entry_index, index, position), names)
                if lowered is not None:
                    contents.append(lowered)
    message = Message(role=role, contents=tuple(contents))
    entry = (RequestEntry if role in REQUEST_ROLES else ResponseEntry)(messages=(message,))
    return Lowered(Session(data=SessionData(conversation_history=(entry,))), rec.losses)


def _lower_message_fields(rec: Recorder, message: Message, pointer: str, role: str) -> None:
    if message.role is not None and message.role != role:
        rec.approximate(message, pointer, "role", f"role {message.role!r}",
                        f"a message body has no role: it reads back as {role!r}")
    for key in set_fields(message, skip=("role", "contents")):
        rec.drop(message, pointer, key, key, "a message body has no such field, only parts")
    for key in message.extra:
        rec.drop(message, pointer, key, f"message property {key!r}", "a message body has only parts")


def _lower_content(rec: Recorder, content: Any, pointer: str, names: set[str]) -> Any:
    content = _out_of_escape_hatch(content)
    if isinstance(content, OpaqueContent) or content.kind in ("reasoning", "usage", "unknown", "hostedFile",
                                                              "hostedVectorStore"):
        rec.drop(content, pointer, None, f"{getattr(content, 'kind', None) or 'unknown'} content",
                 "a message body has no place for it")
        return None
    drop_presentation(rec, content, pointer, "a message body does not record how a content is shown")
    drop_provider_fields(rec, content, pointer, "a message body")
    for key in content.extra:
        rec.drop(content, pointer, key, f"property {key!r}", "a body part has no unknown properties")
    lowered = _body_form(rec, content, pointer, names)
    if lowered is None:
        return None
    try:
        part = part_of(lowered)
    except ValidationError as error:
        rec.drop(content, pointer, None, f"{content.kind} content",
                 f"not a valid body part: {_pydantic_messages(error)}")
        return None
    except ValueError as error:
        rec.drop(content, pointer, None, f"{content.kind} content", f"not a valid body part: {error}")
        return None
    if part.name is not None:
        if part.name in names:
            rec.drop(content, pointer, "name", f"{content.kind} content",
                     f"a body's part names are unique and {part.name!r} is already used")
            return None
        names.add(part.name)
    read_back = content_of(part)
    if read_back.kind != lowered.kind:
        rec.approximate(content, pointer, "$type", f"{content.kind} content",
                        f"written as a body part, it reads back as {read_back.kind!r} content")
    elif read_back.to_json_value() != lowered.to_json_value():
        changed = sorted(key for key in {*read_back.to_json_value(), *lowered.to_json_value()}
                         if read_back.to_json_value().get(key) != lowered.to_json_value().get(key))
        rec.approximate(content, pointer, None, f"{content.kind} content",
                        f"written as a body part, its {', '.join(changed)} read(s) back spelled differently")
    return read_back


def _out_of_escape_hatch(content: Any) -> Any:
    """A body part another format kept whole in its escape hatch (durable state's
    ``{"$type": "unknown", "content": {"$type": "part", ...}}``) is that part again."""
    inner = content.content if isinstance(content, UnknownContent) else None
    if isinstance(inner, dict) and inner.get("$type") == "part":
        try:
            return PartContent.model_validate(inner)
        except ValidationError:
            return content
    return content


def _body_form(rec: Recorder, content: Any, pointer: str, names: set[str]) -> Any:
    """The content as one a body part holds (text, data, uri, part), reporting the change."""
    if isinstance(content, TextContent):
        if content.text is None:
            rec.approximate(content, pointer, "text", "text", "missing text written as an empty string")
        return TextContent(text=content.text or "")
    if isinstance(content, (DataContent, UriContent)):
        if content.uri is None:
            rec.drop(content, pointer, None, f"{content.kind} content without a uri", "nothing to link to")
            return None
        if not _media_type(content.media_type):
            declared = data_url_type(content.uri)
            media_type = declared if _media_type(declared) else "application/octet-stream"
            rec.approximate(content, pointer, "mediaType", "mediaType",
                            f"a body part needs a content type (type/subtype): written as {media_type}")
            return type(content)(uri=content.uri, media_type=media_type)
        return type(content)(uri=content.uri, media_type=content.media_type)
    if isinstance(content, PartContent):
        update: dict[str, Any] = {}
        if content.content_type is None:
            rec.approximate(content, pointer, "contentType", "contentType",
                            "a body part needs a content type: written as text/plain (ACP's default)")
            update["content_type"] = "text/plain"
        if content.encoding not in (None, "plain", "base64"):
            rec.approximate(content, pointer, "encoding", "encoding",
                            f"a body part's encoding is plain or base64: {content.encoding!r} written as plain")
            update["encoding"] = None
        return content.model_copy(update=update) if update else content
    if isinstance(content, ErrorContent):
        rec.approximate(content, pointer, None, "error content", "a message body has no errors: written as text"
                        + ("; its details are dropped" if "details" in content.model_fields_set else ""))
        return TextContent(text=error_text(content))
    if isinstance(content, (FunctionCallContent, FunctionResultContent)):
        return _call_part(rec, content, pointer, names)
    text = listing_text(content)
    if text is not None:
        rec.approximate(content, pointer, None, f"{content.kind} content",
                        "a message body has no such kind: written as text")
        return TextContent(text=text)
    rec.drop(content, pointer, None, f"{content.kind} content", "a message body has no place for it")
    return None


def _pydantic_messages(error: ValidationError) -> str:
    return "; ".join(issue["msg"].removeprefix("Value error, ") for issue in error.errors(include_url=False))


def _media_type(value: str | None) -> bool:
    if not value:
        return False
    try:
        return bool(content_type_essence(value))
    except ValueError:
        return False


def _call_part(rec: Recorder, content: Any, pointer: str, names: set[str]) -> PartContent:
    """A function call or result as a named JSON part: ``/tool-calls/<callId>`` or
    ``/tool-results/<callId>``, its fields (wire names) as the JSON content."""
    folder = "tool-calls" if isinstance(content, FunctionCallContent) else "tool-results"
    call_id = content.call_id or ""
    segment = re.sub(r"[^A-Za-z0-9._\-]", "_", call_id) if call_id else ""
    if not segment or segment.strip(".") == "" or segment[0] == ".":
        segment = "call" + segment
    name, number = f"/{folder}/{segment}", 1
    while name in names:
        number += 1
        name = f"/{folder}/{segment}-{number}"
    value = content.model_copy(update={"presentation": None}).to_json_value()
    value.pop("presentation", None)
    for key in content.extra:
        value.pop(key, None)
    rec.approximate(content, pointer, None, f"{content.kind} content",
                    f"a message body has no {'calls' if folder == 'tool-calls' else 'results'}: written as the "
                    f"JSON part {name}")
    return PartContent(name=name, content_type="application/json", content=json_text(value))


__all__ = ["DEFAULT_ROLE", "NAME", "content_of", "looks_like", "lower", "part_of", "read", "validate", "write"]


FORMAT = FunctionFormat(NAME, "MessageBody (parts with names, content types and content)", looks_like, validate, read,
                        write, lower)
