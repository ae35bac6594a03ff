"""A2A v1 (``a2a-sdk`` 1.x, ProtoJSON): a ``Message``, a ``Task`` (status, history,
artifacts) or an ``Artifact``.

A task reads as a session: its ``history`` messages in order (``ROLE_USER`` → user,
``ROLE_AGENT`` → assistant), then its status message, then one assistant message per
artifact (its ``artifactId``, ``name``... in the message's ``extra``), so the viewer shows
a task as a conversation with its results.  Parts:

=============================================  =============================================
A2A part                                        canonical content
=============================================  =============================================
``text`` (``mediaType`` text/plain or none)     text
``url`` / ``raw`` with a ``mediaType``          uri / data (``data:<type>;base64,…``)
``data`` (a JSON value)                         data (``data:application/json,…``)
any part with a ``filename``, or text of        part: ``filename`` → name (kept in
another type                                    ``metadata.a2a_filename`` when it is not a
                                                valid part name), ``mediaType`` → contentType,
                                                as MessageBody's own parts do
=============================================  =============================================

``metadata`` rides in each content's ``extra``.  A stream of events (what a streaming call
yields) reads as its messages in order; the chunks of one artifact (an ``artifactUpdate``
with ``append``, until ``lastChunk``) join the artifact they extend, as the task holding them
would, into one message with every part; where each later chunk stood, and its own update
fields, ride in that message's ``artifactChunks``.  Read → write gives the same JSON value.
"""

from __future__ import annotations

import base64
import itertools
import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote

import orjson

from agentfolio import _json
from agentfolio.body.names import is_valid_name
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
    form,
    is_kept_whole,
    kept_value,
    kept_whole,
    lower_messages,
    rest,
    split_data_url,
)
from agentfolio.formats.shared import group_by_role
from agentfolio.model import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    OpaqueContent,
    PartContent,
    ResponseEntry,
    Session,
    SessionData,
    TextContent,
    UriContent,
)

NAME = "a2a"
ROLE_OF = {"ROLE_USER": "user", "ROLE_AGENT": "assistant"}
A2A_ROLE = {role: wire for wire, role in ROLE_OF.items()}
ROLES = ("user", "assistant")
A2A_FILENAME = "a2a_filename"  # as agentfolio.body.interop keeps a filename that is no part name
_JSON_PREFIX = "data:application/json,"
_CONTENT_KEYS = ("text", "raw", "url", "data")


_EVENTS = frozenset({"task", "message", "statusUpdate", "artifactUpdate"})


def _is_stream(document: Any) -> bool:
    """A list of ``StreamResponse`` events, as a streaming call yields them."""
    return isinstance(document, list) and bool(document) and all(
        isinstance(event, dict) and len(event) == 1 and next(iter(event)) in _EVENTS for event in document[:64])


def _kind(document: Any) -> str | None:
    if _is_stream(document):
        return "stream"
    if not isinstance(document, dict):
        return None
    if isinstance(document.get("parts"), list) and "messageId" in document and "role" in document:
        return "message"
    if isinstance(document.get("parts"), list) and "artifactId" in document:
        return "artifact"
    if "id" in document and (isinstance(document.get("status"), dict) or isinstance(document.get("history"), list)
                             or isinstance(document.get("artifacts"), list)) and "contextId" in document:
        return "task"
    return None


def looks_like(document: Any) -> bool:
    return _kind(document) is not None


# -- validation ---------------------------------------------------------------------------

def validate(document: Any) -> list[Problem]:
    problems: list[Problem] = []
    kind = _kind(document)
    if kind is None:
        return [Problem("", "expected an A2A Message, Task or Artifact")]
    if kind == "stream":
        for index, event in enumerate(document):
            (name, value), = event.items()
            if name == "message":
                _check_message(problems, f"/{index}/message", value)
            elif name == "artifactUpdate" and check_type(problems, f"/{index}/artifactUpdate", value, dict,
                                                         "an artifact update"):
                artifact = value.get("artifact")
                where = f"/{index}/artifactUpdate/artifact"
                if check_type(problems, where, artifact, dict, "an artifact") and check_type(
                        problems, where + "/parts", artifact.get("parts"), list, "an array of parts"):
                    _check_parts(problems, where + "/parts", artifact["parts"])
    elif kind == "message":
        _check_message(problems, "", document)
    elif kind == "artifact":
        _check_parts(problems, "/parts", document["parts"])
    else:
        check_type(problems, "/id", document.get("id"), str, "a string")
        for index, message in enumerate(document.get("history") or []):
            _check_message(problems, f"/history/{index}", message)
        status = document.get("status")
        if isinstance(status, dict):
            check_type(problems, "/status/state", status.get("state"), str, "a task state")
            if "message" in status:
                _check_message(problems, "/status/message", status["message"])
        for index, artifact in enumerate(document.get("artifacts") or []):
            where = f"/artifacts/{index}"
            if check_type(problems, where, artifact, dict, "an artifact object"):
                check_type(problems, where + "/artifactId", artifact.get("artifactId"), str, "a string")
                if check_type(problems, where + "/parts", artifact.get("parts"), list, "an array of parts"):
                    _check_parts(problems, where + "/parts", artifact["parts"])
    return problems


def _check_message(problems: list[Problem], pointer: str, message: Any) -> None:
    if not check_type(problems, pointer, message, dict, "a message object"):
        return
    check_type(problems, pointer + "/messageId", message.get("messageId"), str, "a string")
    if message.get("role") not in ROLE_OF:
        problems.append(Problem(pointer + "/role", "expected ROLE_USER or ROLE_AGENT"))
    if check_type(problems, pointer + "/parts", message.get("parts"), list, "an array of parts"):
        _check_parts(problems, pointer + "/parts", message["parts"])


def _check_parts(problems: list[Problem], pointer: str, parts: list[Any]) -> None:
    for index, part in enumerate(parts):
        where = f"{pointer}/{index}"
        if not check_type(problems, where, part, dict, "a part object"):
            continue
        present = [key for key in _CONTENT_KEYS if key in part]
        if len(present) != 1:
            problems.append(Problem(where, "a part holds exactly one of text, raw, url or data"))
        elif present[0] != "data":
            check_type(problems, f"{where}/{present[0]}", part[present[0]], str, "a string")


# -- reading ------------------------------------------------------------------------------

def read(document: Any, *, strict: bool = True, source: str | None = None,
         options: ConvertOptions | None = None) -> ReadResult:
    problems = validated(validate, document, strict=strict, source=source)
    kind = _kind(document)
    if kind is None:
        raise FormatError("expected an A2A Message, Task or Artifact", source=source, pointer="")
    origin = Origin()
    return read_lazily(lambda: _read_session(document, origin, kind), document, NAME, version=kind,
                       problems=problems, origin=origin)


def _read_session(document: Any, origin: Origin, kind: str) -> Session:
    forms = [kind]
    extras: dict[str, Any] = {}
    if kind == "stream":
        messages = _joined([_read_event(event, f"/{index}", origin) for index, event in enumerate(document)],
                           origin)
    elif kind == "message":
        messages = [_read_message(document, "", origin)]
    elif kind == "artifact":
        messages = [_read_artifact(document, "", origin)]
    else:
        messages = [_read_message(m, f"/history/{i}", origin) for i, m in enumerate(document.get("history") or [])]
        status = document.get("status")
        extras = rest(document, "history", "artifacts")
        if isinstance(status, dict) and "message" in status:
            message = with_extras(_read_message(status["message"], "/status/message", origin), {FORM_KEY: "status"})
            messages.append(message)
            extras["status"] = rest(status, "message")
        artifacts = document.get("artifacts")
        if isinstance(artifacts, list):
            messages.extend(_read_artifact(a, f"/artifacts/{i}", origin) for i, a in enumerate(artifacts))
        elif "artifacts" in document:
            extras["artifacts"] = artifacts
        if isinstance(document.get("history"), list):
            forms.append("history")
        elif "history" in document:
            extras["history"] = document["history"]
        if isinstance(artifacts, list):
            forms.append("artifacts")
    entries = group_by_role(messages, ROLES, frozenset({"user"})) if kind != "artifact" else [
        ResponseEntry(messages=tuple(messages))]
    session = with_extras(Session(data=SessionData(conversation_history=tuple(entries))),
                          {**extras, FORM_KEY: " ".join(forms)})
    origin.add(session, "")
    return session


def _read_event(event: dict[str, Any], pointer: str, origin: Origin) -> Message:
    """One streamed event as a message: a message as itself, an artifact chunk as an
    artifact message (the update's own fields under ``artifactUpdate``), a status update
    with a message as that message; any other event kept whole."""
    (name, value), = event.items()
    message: Message | None = None
    if name == "message":
        message = _read_message(value, f"{pointer}/message", origin)
        token, update = "stream-message", None
    elif name == "artifactUpdate" and isinstance(value, dict) and isinstance(value.get("artifact"), dict):
        message = _read_artifact(value["artifact"], f"{pointer}/artifactUpdate/artifact", origin)
        token, update = "artifact-update", {"artifactUpdate": rest(value, "artifact")}
    elif name == "statusUpdate" and isinstance(value, dict) and isinstance(value.get("status"), dict) and (
            "message" in value["status"]):
        message = _read_message(value["status"]["message"], f"{pointer}/statusUpdate/status/message", origin)
        token = "status-update"
        update = {"statusUpdate": {**value, "status": rest(value["status"], "message")}}
    if message is None or (update and any(key in message.extra for key in update)):
        kept = kept_whole(NAME, event, "event")
        origin.add(kept, pointer, {"value": ()})
        return with_extras(Message(role="assistant", contents=(kept,)), {FORM_KEY: "kept event"})
    tokens = " ".join(filter(None, (str(form(message) or ""), token)))
    return with_extras(message, {**(update or {}), FORM_KEY: tokens})


CHUNKS = "artifactChunks"


def _joined(messages: list[Message], origin: Origin) -> list[Message]:
    """Streamed messages with each appended artifact chunk joined to the artifact it
    extends (its parts after the artifact's), as far as its ``lastChunk``.  A chunk's event
    index, part count, update fields and own artifact fields go in ``artifactChunks``."""
    out: list[Message] = []
    extending: dict[str, int] = {}  # artifactId → where in ``out`` its artifact stands
    for index, message in enumerate(messages):
        update = message.extra.get("artifactUpdate") if "artifact-update" in str(form(message) or "") else None
        artifact_id = message.extra.get("artifactId")
        if not isinstance(update, dict) or not isinstance(artifact_id, str) or CHUNKS in message.extra:
            out.append(message)
            continue
        position = extending.get(artifact_id) if update.get("append") is True else None
        if position is None:
            extending.pop(artifact_id, None)
            if update.get("lastChunk") is not True:
                extending[artifact_id] = len(out)
            out.append(message)
            continue
        joined = out[position]
        chunk = {"at": index, "parts": len(message.items), "artifactUpdate": update,
                 "artifact": {k: v for k, v in message.extra.items() if k not in (FORM_KEY, "artifactUpdate")}}
        extended = with_extras(joined.model_copy(update={"contents": (*joined.items, *message.items)}),
                               {CHUNKS: [*joined.extra.get(CHUNKS, ()), chunk]})
        origin.add(extended, origin.pointer(joined, ""))
        out[position] = extended
        if update.get("lastChunk") is True:
            del extending[artifact_id]
    return out


def _read_message(raw: Any, pointer: str, origin: Origin) -> Message:
    if isinstance(raw, dict) and raw.get("role") in ROLE_OF and isinstance(raw.get("parts"), list) and isinstance(
            raw.get("messageId"), str):
        contents = tuple(read_part(p, f"{pointer}/parts/{i}", origin) for i, p in enumerate(raw["parts"]))
        message = build(Message, rest(raw, "role", "parts", "messageId"), role=ROLE_OF[raw["role"]],
                        message_id=raw["messageId"], contents=contents)
        if message is not None:
            origin.add(message, pointer, {"messageId": ("messageId",)})
            return message
    kept = kept_whole(NAME, raw, "message")
    origin.add(kept, pointer, {"value": ()})
    return with_extras(Message(role="assistant", contents=(kept,)), {FORM_KEY: "kept"})


def _read_artifact(raw: Any, pointer: str, origin: Origin) -> Message:
    if isinstance(raw, dict) and isinstance(raw.get("parts"), list):
        contents = tuple(read_part(p, f"{pointer}/parts/{i}", origin) for i, p in enumerate(raw["parts"]))
        message = build(Message, {**rest(raw, "parts"), FORM_KEY: "artifact"}, role="assistant", contents=contents)
        if message is not None:
            origin.add(message, pointer)
            return message
    kept = kept_whole(NAME, raw, "artifact")
    origin.add(kept, pointer, {"value": ()})
    return with_extras(Message(role="assistant", contents=(kept,)), {FORM_KEY: "kept artifact"})


def read_part(part: Any, pointer: str, origin: Origin) -> Any:
    built = _map_part(part) if isinstance(part, dict) else None
    if built is None:
        built = kept_whole(NAME, part, "part")
        origin.add(built, pointer, {"value": ()})
    else:
        origin.add(built, pointer, {"uri": ("url",), "mediaType": ("mediaType",), "contentType": ("mediaType",),
                                    "name": ("filename",), "content": ("text",)})
    return built


def _map_part(part: dict[str, Any]) -> Any:
    present = [key for key in _CONTENT_KEYS if key in part]
    if len(present) != 1:
        return None
    key = present[0]
    value = part[key]
    media_type = part.get("mediaType")
    metadata = part.get("metadata")
    if (media_type is not None and not isinstance(media_type, str)) or (
            metadata is not None and not isinstance(metadata, dict)) or (key != "data" and not isinstance(value, str)):
        return None
    if "filename" in part or (key == "text" and media_type not in (None, "text/plain")):
        return _named_part(part, key, value)
    extras = rest(part, key, "mediaType")
    if key == "text":
        return build(TextContent, {**extras, **({"mediaType": media_type} if media_type else {})}, text=value)
    if key == "url" and media_type:
        return build(UriContent, extras, uri=value, media_type=media_type)
    if key == "raw" and media_type:
        return build(DataContent, extras, uri=data_url(media_type, value), media_type=media_type)
    if key == "data" and media_type in (None, "application/json"):
        typed = {"mediaType": media_type} if media_type else {}
        return build(DataContent, {**extras, **({FORM_KEY: "typed"} if typed else {})},
                     uri=_JSON_PREFIX + quote(_json.dumps(value).decode(), safe=""), media_type="application/json")
    return None


def _named_part(part: dict[str, Any], key: str, value: Any) -> Any:
    if key == "data":
        return None
    filename = part.get("filename")
    metadata = part.get("metadata")
    if filename is not None and not isinstance(filename, str):
        return None
    named: dict[str, Any] = {}
    if isinstance(filename, str) and is_valid_name(filename) and not (metadata and A2A_FILENAME in metadata):
        named["name"] = filename
    elif isinstance(filename, str):
        if (metadata and A2A_FILENAME in metadata) or metadata == {}:
            return None  # the name could not be told apart from metadata on the way back: kept whole
        metadata = {**(metadata or {}), A2A_FILENAME: filename}
    if metadata is not None:
        named["metadata"] = metadata
    if "mediaType" in part:
        named["content_type"] = part["mediaType"]
    if key == "text":
        named["content"] = value
    elif key == "raw":
        named.update(content=value, encoding="base64")
    else:
        named["url"] = value
    return build(PartContent, rest(part, key, "mediaType", "filename", "metadata"), **named)


# -- writing ------------------------------------------------------------------------------

def write(session: Session) -> Any:
    value = session.extra.get(FORM_KEY)
    forms = set(value.split()) if isinstance(value, str) else set()
    messages = [message for _, message in session.messages()]
    if "stream" in forms:
        return _write_stream(messages)
    if "message" in forms and len(messages) == 1:
        return _write_message(messages[0], "")
    if "artifact" in forms and len(messages) == 1:
        return _write_artifact(messages[0], "")
    extras = extras_without_form(session)
    document: dict[str, Any] = dict(extras)
    history, artifacts = [], []
    for index, message in enumerate(messages):
        message_forms = set(str(form(message) or "").split())
        pointer = f"/messages/{index}"
        if "artifact" in message_forms:
            artifacts.append(_write_artifact(message, pointer))
        elif "status" in message_forms:
            document["status"] = {**document.get("status", {}), "message": _write_message(message, pointer)}
        else:
            history.append(_write_message(message, pointer))
    if history or "history" in forms:
        document["history"] = history
    if artifacts or "artifacts" in forms:
        document["artifacts"] = artifacts
    return document


def _write_stream(messages: list[Message]) -> list[Any]:
    """The events of a stream: each message's, with a joined artifact split back into its
    chunks, each at the place in the stream it came from."""
    events: list[Any] = []
    placed: dict[int, list[Any]] = {}
    for index, message in enumerate(messages):
        pointer = f"/messages/{index}"
        chunks = _chunks(message)
        if chunks is None:
            events.append(_write_event(message, pointer))
            continue
        items = message.items
        first = len(items) - sum(chunk["parts"] for chunk in chunks)
        bare = _without_extra(message, CHUNKS).model_copy(update={"contents": items[:first]})
        events.append(_write_event(bare, pointer))
        offset = first
        for chunk in chunks:
            part = with_extras(Message(role=message.role, contents=items[offset:offset + chunk["parts"]]),
                               {**chunk["artifact"], "artifactUpdate": chunk["artifactUpdate"],
                                FORM_KEY: form(message)})
            placed.setdefault(chunk["at"], []).append(_write_event(part, pointer))
            offset += chunk["parts"]
    stream: list[Any] = []
    pending = iter(events)
    for position in range(len(events) + sum(len(group) for group in placed.values())):
        if position in placed:
            stream.extend(placed.pop(position))
        else:
            stream.extend(itertools.islice(pending, 1))
    stream.extend(pending)
    for group in placed.values():  # a chunk whose place no longer exists (messages taken out) goes last
        stream.extend(group)
    return stream


def _chunks(message: Message) -> list[dict[str, Any]] | None:
    """A joined artifact's later chunks, when they are what the reader put there."""
    chunks = message.extra.get(CHUNKS)
    if not isinstance(chunks, list) or "artifact-update" not in str(form(message) or ""):
        return None
    if not all(isinstance(c, dict) and isinstance(c.get("at"), int) and isinstance(c.get("parts"), int)
               and c["parts"] >= 0 and isinstance(c.get("artifactUpdate"), dict) and isinstance(c.get("artifact"), dict)
               for c in chunks):
        return None
    return chunks if sum(chunk["parts"] for chunk in chunks) <= len(message.items) else None


def _write_event(message: Message, pointer: str) -> Any:
    tokens = set(str(form(message) or "").split())
    if "event" in tokens and message.items and is_kept_whole(NAME, message.items[0]):
        return kept_value(message.items[0])
    if "artifact-update" in tokens:
        update = message.extra.get("artifactUpdate")
        bare = _without_extra(message, "artifactUpdate")
        return {"artifactUpdate": {**(update if isinstance(update, dict) else {}),
                                   "artifact": _write_artifact(bare, pointer)}}
    if "status-update" in tokens:
        update = dict(message.extra.get("statusUpdate") or {})
        bare = _without_extra(message, "statusUpdate")
        status = {**update.get("status", {}), "message": _write_message(bare, pointer)}
        return {"statusUpdate": {**update, "status": status}}
    return {"message": _write_message(message, pointer)}


def _without_extra(message: Message, key: str) -> Message:
    copied = message.model_copy()
    object.__setattr__(copied, "__pydantic_extra__", {k: v for k, v in message.extra.items() if k != key})
    return copied


def _write_message(message: Message, pointer: str) -> Any:
    if "kept" in str(form(message) or "") and message.items and is_kept_whole(NAME, message.items[0]):
        return kept_value(message.items[0])
    if message.role not in A2A_ROLE or message.message_id is None:
        raise FormatError("an A2A message needs a messageId and the role user or agent; convert the session",
                          pointer=pointer)
    parts = [write_part(c, f"{pointer}/contents/{i}") for i, c in enumerate(message.items)]
    return {"messageId": message.message_id, "role": A2A_ROLE[message.role], "parts": parts,
            **extras_without_form(message)}


def _write_artifact(message: Message, pointer: str) -> Any:
    if "kept" in str(form(message) or "") and message.items and is_kept_whole(NAME, message.items[0]):
        return kept_value(message.items[0])
    return {**extras_without_form(message),
            "parts": [write_part(c, f"{pointer}/contents/{i}") for i, c in enumerate(message.items)]}


def write_part(content: Any, pointer: str) -> Any:
    if type(content) is OpaqueContent and is_kept_whole(NAME, content):
        return kept_value(content)
    writer = _PART_WRITERS.get(type(content))
    part = writer(content, pointer) if writer is not None else None
    if part is None:
        raise FormatError(f"a {getattr(content, 'kind', '?')!r} content of this shape has no A2A part form; "
                          "convert the session", pointer=pointer)
    return part


# One writer per kind, picked by the content's class (one dict lookup per part of a long
# history, not a chain of isinstance tests); None: no A2A form.

def _text_part(content: TextContent, pointer: str) -> Any:
    return None if content.text is None else add_extras({"text": content.text}, content)


def _data_part(content: DataContent, pointer: str) -> Any:
    uri = content.uri
    if uri and uri.startswith(_JSON_PREFIX):
        try:
            value = _json.loads(unquote(uri[len(_JSON_PREFIX):]))
        except orjson.JSONDecodeError:
            raise FormatError("a JSON data part that is not JSON", pointer=pointer) from None
        part: dict[str, Any] = {"data": value}
        if form(content) == "typed":
            part["mediaType"] = "application/json"
    elif content.media_type:
        data = split_data_url(uri, content.media_type)
        if data is None:
            return None
        part = {"raw": data, "mediaType": content.media_type}
    else:
        return None
    return add_extras(part, content)


def _uri_part(content: UriContent, pointer: str) -> Any:
    if not content.uri or not content.media_type:
        return None
    part = {"url": content.uri, "mediaType": content.media_type}
    return add_extras(part, content)


def _part_part(content: PartContent, pointer: str) -> Any:
    return _write_named_part(content, extras_without_form(content), pointer)


_PART_WRITERS: dict[type, Callable[[Any, str], Any]] = {
    TextContent: _text_part, DataContent: _data_part, UriContent: _uri_part, PartContent: _part_part,
}


def _write_named_part(content: PartContent, extra: dict[str, Any], pointer: str) -> Any:
    part: dict[str, Any] = {}
    if content.url is not None:
        part["url"] = content.url
    elif content.encoding == "base64":
        part["raw"] = content.content or ""
    elif content.content is not None:
        part["text"] = content.content
    else:
        raise FormatError("a part with no content or URL has no A2A form", pointer=pointer)
    if content.content_type is not None:
        part["mediaType"] = content.content_type
    metadata = content.metadata
    if content.name is not None:
        part["filename"] = content.name
    elif isinstance(metadata, dict) and A2A_FILENAME in metadata:
        part["filename"] = metadata[A2A_FILENAME]
        metadata = {k: v for k, v in metadata.items() if k != A2A_FILENAME} or None  # the reader put it there
    if metadata is not None:
        part["metadata"] = metadata
    return {**part, **extra}


# -- lowering -----------------------------------------------------------------------------

def _nearest_role(role: str | None, in_request: bool) -> str:
    return "user" if in_request or role in ("system", "developer") else "assistant"


def _generated(prefix: str, pointer: str) -> str:
    return f"{prefix}-{zlib.crc32(pointer.encode()):010d}"


def _fix(rec: Recorder, source: Any, content: Any, pointer: str) -> Any:
    if isinstance(content, FunctionCallContent):
        rec.approximate(source, pointer, None, "functionCall content", "A2A has no tool calls: written as a data "
                        "part")
        value = {"functionCall": {k: v for k, v in (("callId", content.call_id), ("name", content.name),
                                                     ("arguments", content.arguments)) if v is not None}}
        return DataContent(uri=_JSON_PREFIX + quote(json_text(value) if not isinstance(value, str) else value,
                                                    safe=""), media_type="application/json")
    if isinstance(content, FunctionResultContent):
        rec.approximate(source, pointer, None, "functionResult content", "A2A has no tool results: written as a "
                        "data part")
        value = {"functionResult": {k: v for k, v in (("callId", content.call_id), ("result", content.result))
                                    if v is not None}}
        return DataContent(uri=_JSON_PREFIX + quote(json_text(value), safe=""), media_type="application/json")
    if isinstance(content, TextContent) and content.text is None:
        return content.model_copy(update={"text": ""})
    if isinstance(content, DataContent) and not (content.media_type and (
            split_data_url(content.uri, content.media_type) is not None or (content.uri or "").startswith(
                _JSON_PREFIX))):
        text = None
        if content.uri and content.uri.startswith("data:") and "," in content.uri:
            header, _, payload = content.uri[5:].partition(",")
            media_type = header.split(";", 1)[0] or "application/octet-stream"
            raw = payload if header.endswith(";base64") else base64.b64encode(unquote(payload).encode()).decode()
            text = (media_type, raw)
        if text is None:
            rec.drop(source, pointer, None, "data content", "it is not a data: URL")
            return None
        rec.approximate(source, pointer, "uri", "uri", "A2A raw parts are base64 with a media type")
        return DataContent(uri=data_url(text[0], text[1]), media_type=text[0])
    if isinstance(content, UriContent) and content.media_type is None:
        rec.approximate(source, pointer, "mediaType", "mediaType", "an A2A url part here carries a media type: "
                        "written as application/octet-stream")
        return content.model_copy(update={"media_type": "application/octet-stream"})
    if isinstance(content, UriContent) and not content.uri:
        rec.drop(source, pointer, None, "uri content", "it has no URI")
        return None
    return content


_PART = frozenset({"metadata", "filename"})
_CONTENT_FIELDS: dict[type, tuple[frozenset[str], frozenset[str]]] = {
    TextContent: (frozenset({"text"}), _PART | {"mediaType"}),
    DataContent: (frozenset({"uri", "mediaType"}), _PART),
    UriContent: (frozenset({"uri", "mediaType"}), _PART),
    PartContent: (frozenset({"name", "contentType", "content", "encoding", "url", "metadata"}), frozenset()),
    FunctionCallContent: (frozenset({"callId", "name", "arguments"}), frozenset()),
    FunctionResultContent: (frozenset({"callId", "result"}), frozenset()),
}
TARGET = Target(NAME, "A2A", ROLES, _nearest_role, _CONTENT_FIELDS, message_fields=frozenset({"messageId"}),
                message_extras=frozenset({"contextId", "taskId", "metadata", "extensions", "referenceTaskIds",
                                          "artifactId", "name", "description", "artifactUpdate", "statusUpdate",
                                          CHUNKS}),
                session_extras=frozenset({"id", "contextId", "status", "metadata"}), fix=_fix, citations=False)


def lower(session: Session, *, origin: Origin | None = None, options: ConvertOptions | None = None) -> Lowered:
    """Any session as an A2A Task: its messages the task's history (each with a messageId),
    with what A2A cannot hold reported."""
    rec = Recorder(origin)
    lowered = lower_messages(session, rec, TARGET)
    messages = []
    for position, (message, _) in enumerate(lowered.messages):
        if message.message_id is None and "artifact" not in str(form(message) or ""):
            lowered.approximate(rec, position, "messageId", "messageId", "an A2A message needs an id: one was "
                                "generated")
            message = message.model_copy(update={"message_id": _generated("msg", str(position))})
        messages.append(message)
    extras = dict(lowered.session_extras)
    value = extras.pop(FORM_KEY, None)
    forms = set(value.split()) if isinstance(value, str) else set()
    single = len(messages) == 1
    if not ({"task", "stream"} & forms or ({"message", "artifact"} & forms and single)):
        if "id" not in extras:
            rec.approximate(session, "", None, "task id", "an A2A task needs an id: one was generated")
        extras = {"id": extras.get("id", _generated("task", str(len(messages)))),
                  "contextId": extras.get("contextId", "agentfolio"),
                  "status": extras.get("status", {"state": "TASK_STATE_COMPLETED"}), **extras}
        forms = {"task", "history"}
    extras[FORM_KEY] = " ".join(sorted(forms))
    result = Session(data=SessionData(conversation_history=tuple(group_by_role(messages, ROLES, frozenset({"user"})))))
    return Lowered(with_extras(result, extras), rec.losses)


FORMAT = FunctionFormat(NAME, "A2A v1 Message / Task / Artifact", looks_like, validate, read, write, lower)
