"""Reading and writing the parts of ACP and A2A messages.

* **ACP** (``acp-sdk``): our fields are ACP's ``MessagePart`` fields, so the mapping
  is one to one. ACP's ``metadata`` is a citation or trajectory object (tagged by
  ``kind``); other metadata cannot be written to ACP and is refused with an error.
  Extra fields on ACP parts (ACP allows them) are refused, as they are in a body's
  JSON: nothing is dropped silently.  Names must be paths (``/report.md``), also for
  an ``Artifact``: an ACP name without the leading ``/`` is refused with that hint.
* **A2A 1.x** (``a2a-sdk``'s protobuf ``Part``: one of text / raw / url / data, plus
  ``filename``, ``media_type`` and ``metadata``).
* **A2A 0.3** (``a2a.compat.v0_3.types``: ``TextPart``, ``FilePart`` with
  ``FileWithBytes`` or ``FileWithUri``, ``DataPart``).

A2A has file names, not paths: a ``filename`` that is a valid part name becomes the
name; any other filename is kept in ``metadata["a2a_filename"]`` and written back
from there, so main content with a filename stays unnamed and nothing is lost.
JSON parts (``application/json`` or ``*+json`` with JSON content) map to A2A data
parts. The SDKs are optional: they are imported only when these functions run.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import orjson

from agentfolio import _json
from .body import MessageBody
from .errors import BodyError, PartError
from .names import is_valid_name
from .parts import MessagePart

A2A_FILENAME = "a2a_filename"


# -- ACP ---------------------------------------------------------------------------


def from_acp(message_or_parts: Any) -> MessageBody:
    """A body from an ACP ``Message``, ``Artifact`` list or ``MessagePart`` list."""
    parts = getattr(message_or_parts, "parts", message_or_parts)
    out = []
    for i, p in enumerate(parts):
        # ACP parts allow extra fields; a body refuses them, from JSON and from the SDK alike.
        extra = sorted(getattr(p, "model_extra", None) or {})
        if extra:
            raise PartError(i, f"unknown field(s) {', '.join(extra)} (a body part has only ACP's own fields: "
                               "name, content_type, content, content_encoding, content_url, metadata)")
        # exclude_unset: fields the sender gave (even as null) survive, defaults do not,
        # so our metadata comes back exactly as we wrote it.
        meta = p.metadata.model_dump(mode="json", exclude_unset=True) if p.metadata is not None else None
        if meta is not None:
            meta.setdefault("kind", p.metadata.kind)
        out.append(MessagePart.parse({
            "name": p.name,
            "content_type": p.content_type,
            "content": p.content,
            "content_encoding": p.content_encoding,
            "content_url": None if p.content_url is None else str(p.content_url),
            "metadata": meta,
        }, i))
    return MessageBody.of(out)


def to_acp_parts(body: MessageBody) -> list[Any]:
    """ACP ``MessagePart`` objects (``Artifact`` is the named subclass; use it if you
    need artifacts: ``Artifact(**part.model_dump())``)."""
    from acp_sdk.models import MessagePart as AcpPart
    from pydantic import ValidationError

    out = []
    for i, part in enumerate(body.parts):
        fields: dict[str, Any] = {
            "name": part.name,
            "content_type": part.content_type,
            "content": part.content,
            "content_encoding": part.content_encoding,
            "content_url": part.content_url,
        }
        if part.metadata is not None:
            fields["metadata"] = part.metadata
        try:
            out.append(AcpPart(**fields))
        except ValidationError as exc:
            raise PartError(i, f"cannot be written as an ACP part: {exc.errors()[0]['msg']} "
                               "(ACP metadata must be a citation or trajectory object)") from None
    return out


def to_acp_message(body: MessageBody, role: str = "agent") -> Any:
    from acp_sdk.models import Message

    return Message(role=role, parts=to_acp_parts(body))


# -- A2A ---------------------------------------------------------------------------


def _is_json_type(essence: str) -> bool:
    return essence == "application/json" or essence.endswith("+json")


def _name_and_meta(filename: str | None, metadata: dict[str, Any] | None) -> tuple[str | None, dict | None]:
    meta = dict(metadata) if metadata else None
    if not filename:
        return None, meta
    if is_valid_name(filename):
        return filename, meta
    meta = meta or {}
    meta[A2A_FILENAME] = filename
    return None, meta


def _filename_and_meta(part: MessagePart) -> tuple[str | None, dict[str, Any] | None]:
    meta = dict(part.metadata) if part.metadata else None
    filename = part.name
    if meta and A2A_FILENAME in meta:
        stored = meta.pop(A2A_FILENAME)
        filename = filename or stored
    return filename, meta or None


def _json_content(part: MessagePart) -> Any:
    """Parsed JSON of an inline JSON part, or a sentinel if it is not JSON."""
    if part.content_url is not None or not _is_json_type(part.essence):
        return _NOT_JSON
    try:
        return _json.loads(part.data())
    except (orjson.JSONDecodeError, BodyError):
        return _NOT_JSON


_NOT_JSON = object()


def _ints(value: Any) -> Any:
    """protobuf Struct stores every number as a double; give integers back as ints
    (exact below 2**53, which is all a double can hold exactly anyway)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def from_a2a(parts_or_message: Any) -> MessageBody:
    """A body from A2A parts: 1.x protobuf ``Part`` objects, 0.3 pydantic parts
    (``Part``/``TextPart``/``FilePart``/``DataPart``), or a message holding them."""
    parts = getattr(parts_or_message, "parts", parts_or_message)
    out = []
    for i, p in enumerate(parts):
        if hasattr(p, "WhichOneof"):
            out.append(_from_a2a_v1(p, i))
        else:
            out.append(_from_a2a_v03(getattr(p, "root", p), i))
    return MessageBody.of(out)


def _from_a2a_v1(p: Any, index: int) -> MessagePart:
    from google.protobuf.json_format import MessageToDict

    kind = p.WhichOneof("content")
    meta = _ints(MessageToDict(p.metadata)) if p.HasField("metadata") else None
    name, meta = _name_and_meta(p.filename or None, meta)
    fields: dict[str, Any] = {"name": name, "metadata": meta}
    media = p.media_type or None
    if kind == "text":
        fields.update(content_type=media or "text/plain", content=p.text)
    elif kind == "raw":
        fields.update(content_type=media or "application/octet-stream",
                      content=base64.b64encode(p.raw).decode(), content_encoding="base64")
    elif kind == "url":
        fields.update(content_type=media or "application/octet-stream", content_url=p.url)
    elif kind == "data":
        value = _ints(MessageToDict(p.data))
        fields.update(content_type=media or "application/json", content=_json.dumps(value).decode())
    else:
        raise PartError(index, "A2A part has no content (text, raw, url or data)")
    return MessagePart.parse(fields, index)


def _from_a2a_v03(p: Any, index: int) -> MessagePart:
    kind = getattr(p, "kind", None)
    if kind == "text":
        name, meta = _name_and_meta(None, p.metadata)
        return MessagePart.parse({"content": p.text, "metadata": meta}, index)
    if kind == "data":
        name, meta = _name_and_meta(None, p.metadata)
        return MessagePart.parse(
            {"content_type": "application/json", "content": _json.dumps(p.data).decode(), "metadata": meta}, index)
    if kind == "file":
        f = p.file
        name, meta = _name_and_meta(f.name, p.metadata)
        fields: dict[str, Any] = {"name": name, "metadata": meta,
                                  "content_type": f.mime_type or "application/octet-stream"}
        if hasattr(f, "bytes"):
            fields.update(content=f.bytes, content_encoding="base64")
        else:
            fields.update(content_url=f.uri)
        return MessagePart.parse(fields, index)
    raise PartError(index, f"not an A2A part: {type(p).__name__}")


def to_a2a_parts(body: MessageBody) -> list[Any]:
    """A2A 1.x protobuf ``Part`` objects."""
    from a2a.types import Part
    from google.protobuf import struct_pb2

    out = []
    for part in body.parts:
        filename, meta = _filename_and_meta(part)
        common: dict[str, Any] = {"media_type": part.content_type}
        if filename:
            common["filename"] = filename
        if meta:
            common["metadata"] = meta
        if part.content_url is not None:
            out.append(Part(url=part.content_url, **common))
            continue
        value = _json_content(part)
        if value is not _NOT_JSON:
            pb = struct_pb2.Value()
            from google.protobuf.json_format import ParseDict

            ParseDict(value, pb)
            out.append(Part(data=pb, **common))
        elif part.content_encoding == "base64":
            out.append(Part(raw=part.data(), **common))
        else:
            out.append(Part(text=part.content or "", **common))
    return out


def to_a2a_v03_parts(body: MessageBody) -> list[Any]:
    """A2A 0.3 pydantic ``Part`` objects. Text parts there carry no media type, so only
    unnamed ``text/plain`` content becomes a ``TextPart``; other text travels as a file
    with its MIME type, which keeps the content type and the name."""
    from a2a.compat.v0_3.types import DataPart, FilePart, FileWithBytes, FileWithUri, Part, TextPart

    out = []
    for part in body.parts:
        filename, meta = _filename_and_meta(part)
        if part.content_url is not None:
            f: Any = FileWithUri(uri=part.content_url, mime_type=part.content_type, name=filename)
            out.append(Part(root=FilePart(file=f, metadata=meta)))
            continue
        value = _json_content(part)
        if filename is None and part.essence == "application/json" and isinstance(value, dict):
            out.append(Part(root=DataPart(data=value, metadata=meta)))
        elif filename is None and part.content_type == "text/plain" and part.content_encoding == "plain":
            out.append(Part(root=TextPart(text=part.content or "", metadata=meta)))
        else:
            raw = base64.b64encode(part.data()).decode()
            out.append(Part(root=FilePart(file=FileWithBytes(bytes=raw, mime_type=part.content_type, name=filename),
                                          metadata=meta)))
    return out


def parts_to_body(parts: Iterable[Any]) -> MessageBody:
    """Any of the above, detected per part (ACP parts have ``content_type``)."""
    parts = list(parts)
    if parts and all(hasattr(p, "content_type") and hasattr(p, "content_encoding") for p in parts):
        return from_acp(parts)
    return from_a2a(parts)
