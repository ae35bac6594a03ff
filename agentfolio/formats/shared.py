"""Logic more than one format uses the same way: checking a document's array of objects,
grouping messages into entries by role runs, flattening them again for writers without
entries, and taking ``data:`` URLs apart."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any

from agentfolio.formats.errors import FormatError
from agentfolio.formats.losses import entry_pointer, message_pointer
from agentfolio.model import Message, OpaqueEntry, RequestEntry, ResponseEntry, Session


def require_objects(document: dict[str, Any], key: str, item: str, source: str | None) -> None:
    """FormatError unless ``document[key]`` is an array of objects: what a reader cannot
    read at all is refused by the read, before any record is built."""
    values = document.get(key)
    if not isinstance(values, list):
        raise FormatError(f'expected "{key}": an array', source=source, pointer=f"/{key}")
    for index, value in enumerate(values):
        if not isinstance(value, dict):
            raise FormatError(f"expected {item}", source=source, pointer=f"/{key}/{index}")


def group_by_role(messages: Iterable[Message], roles: Collection[str],
                  request_roles: Collection[str]) -> list[RequestEntry | ResponseEntry]:
    """Runs of request-role messages → request entries, runs of the other known roles →
    response entries.  A message with a role outside ``roles`` joins the run before it
    (a request if it is first)."""
    entries: list[RequestEntry | ResponseEntry] = []
    run: list[Message] = []
    run_is_request: bool | None = None
    for message in messages:
        is_request = message.role in request_roles if message.role in roles else (
            run_is_request if run_is_request is not None else True)
        if run and is_request != run_is_request:
            entries.append((RequestEntry if run_is_request else ResponseEntry)(messages=tuple(run)))
            run = []
        run.append(message)
        run_is_request = is_request
    if run:
        entries.append((RequestEntry if run_is_request else ResponseEntry)(messages=tuple(run)))
    return entries


def messages_to_write(session: Session, form: str) -> Iterator[tuple[str, Message]]:
    """Every message with its pointer, for writers whose format has messages but no
    entries; an entry of a kind we do not know has no such form (FormatError)."""
    for entry_index, entry in enumerate(session.entries):
        if isinstance(entry, OpaqueEntry):
            raise FormatError(f"an entry of kind {entry.kind!r} has no {form} form; convert the session",
                              pointer=entry_pointer(entry_index))
        for message_index, message in enumerate(entry.items):
            yield message_pointer(entry_index, message_index), message


def data_url_type(uri: str) -> str | None:
    """The media type a ``data:`` URL declares (None if it declares none or is not one)."""
    if not uri.startswith("data:"):
        return None
    declared = uri[5:].split(",", 1)[0].split(";", 1)[0]
    return declared or None


def data_url_payload(uri: str) -> tuple[int | None, str | None]:
    """Size in bytes of a ``data:`` URL's payload, and its text if it is text."""
    if not uri.startswith("data:") or "," not in uri:
        return None, None
    header, _, payload = uri[5:].partition(",")
    if header.endswith(";base64"):
        import base64
        import binascii

        try:
            data = base64.b64decode(payload, validate=False)
        except (binascii.Error, ValueError):
            return None, None
    else:
        from urllib.parse import unquote_to_bytes

        data = unquote_to_bytes(payload)
    mime = header.split(";", 1)[0]
    if mime.startswith("text/") or mime in ("application/json", ""):
        try:
            return len(data), data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return len(data), None
