"""Cutting a durable state into a head and entry rows, and splicing it back, byte-exact.

The head is the document's JSON with the history array cut out; ``history_at`` is the
byte offset where it goes back.  Each entry is kept as its own JSON bytes, so reading a
session back is ``head[:at] + b"[" + b",".join(entries) + b"]" + head[at:]`` with no
parse or re-serialisation of the history, and gives the JSON value that was written
(object key order included).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agentfolio import _json
from agentfolio.present.search import entry_text

BLOB_KEY = "$agentfolio:blob"
# MessageBody parts: their payloads go to the blob store whatever their size.
ALWAYS_BLOB_KINDS = frozenset({"part"})
# The bytes each such kind's name makes in an entry's JSON: an entry whose JSON has none
# of them holds none of those contents (one search for any of them, in C).
_ALWAYS_BLOB_MARKS = re.compile(b"|".join(re.escape(_json.dumps(kind)) for kind in sorted(ALWAYS_BLOB_KINDS)))


def split_document(document: dict[str, Any]) -> tuple[bytes, int | None, list[Any]]:
    """``(head, history_at, history)``: the head bytes, where the history goes, the entries."""
    data = document.get("data")
    if isinstance(data, dict) and isinstance(data.get("conversationHistory"), list):
        marker = "\u0000agentfolio-history-" + secrets.token_hex(12)
        head_document = {**document, "data": {**data, "conversationHistory": marker}}
        head = _json.dumps(head_document)
        cut = _json.dumps(marker)
        at = head.index(cut)
        return head[:at] + head[at + len(cut):], at, data["conversationHistory"]
    return _json.dumps(document), None, []


def assemble(head: bytes, history_at: int | None, entries: Iterable[bytes]) -> bytes:
    if history_at is None:
        return head
    return b"".join((head[:history_at], b"[", b",".join(entries), b"]", head[history_at:]))


def head_with_history(head: bytes, history_at: int | None) -> tuple[bytes, int]:
    """A head for a document that had no history array, now given an empty one."""
    if history_at is not None:
        return head, history_at
    document = _json.loads(head)
    data = document.get("data")
    if not isinstance(data, dict):
        document["data"] = data = {}
    data["conversationHistory"] = []
    new_head, at, _ = split_document(document)
    assert at is not None
    return new_head, at


@dataclass(slots=True)
class PackedEntry:
    body: bytes
    kind: str | None
    created_at: float | None
    text: str
    # (reference written in the body, sha256 of the content, the content's JSON bytes)
    blobs: list[tuple[str, str, bytes]] = field(default_factory=list)

    @property
    def blob_refs(self) -> str | None:
        return _json.dumps([ref for ref, _, _ in self.blobs]).decode() if self.blobs else None


#: The longest text a derived short column (an entry's kind, its roles) keeps.
COLUMN_TEXT_CHARS = 100


def column_text(value: str) -> str:
    """A text derived from an entry for a short column of its row: cut to
    COLUMN_TEXT_CHARS, NUL shown as U+FFFD (PostgreSQL refuses NUL in a text column; the
    entry's exact JSON is in its body, so nothing is lost)."""
    return value[:COLUMN_TEXT_CHARS].replace("\x00", "\ufffd")


def pack_entry(entry: Any, *, blob_threshold: int, text_limit: int, created_at: float | None) -> PackedEntry:
    """An entry cut into its row: its JSON (contents moved to blobs when large), kind,
    search text, and ``created_at``, its own time as its facts read it
    (``present.activity.entry_facts``)."""
    body = _json.dumps(entry)
    kind = entry.get("$type") if isinstance(entry, dict) else None
    packed = PackedEntry(body=body, kind=column_text(kind) if isinstance(kind, str) else None, created_at=created_at,
                         text=entry_text(entry, text_limit))
    # Only an entry naming an always-blob kind somewhere can hold one: most are not walked.
    if isinstance(entry, dict) and (len(body) > blob_threshold
                                    or (_ALWAYS_BLOB_MARKS.search(body) and _has_always_blob(entry))):
        _move_blobs(entry, packed, blob_threshold)
    return packed


def _has_always_blob(entry: dict[str, Any]) -> bool:
    for message in _list(entry.get("messages")):
        if isinstance(message, dict):
            for content in _list(message.get("contents")):
                if isinstance(content, dict) and content.get("$type") in ALWAYS_BLOB_KINDS:
                    return True
    return False


def _move_blobs(entry: dict[str, Any], packed: PackedEntry, threshold: int) -> None:
    messages = entry.get("messages")
    if not isinstance(messages, list):
        return
    new_messages: list[Any] = []
    for message in messages:
        contents = message.get("contents") if isinstance(message, dict) else None
        if not isinstance(contents, list):
            new_messages.append(message)
            continue
        new_contents: list[Any] = []
        for content in contents:
            data = _json.dumps(content)
            if isinstance(content, dict) and (len(data) > threshold or content.get("$type") in ALWAYS_BLOB_KINDS):
                digest = hashlib.sha256(data).hexdigest()
                # The nonce makes the reference one no client could have written itself.
                ref = f"{digest}#{secrets.token_hex(8)}"
                packed.blobs.append((ref, digest, data))
                new_contents.append({BLOB_KEY: ref})
            else:
                new_contents.append(content)
        new_messages.append({**message, "contents": new_contents})
    if packed.blobs:
        packed.body = _json.dumps({**entry, "messages": new_messages})


def unpack_body(body: bytes, refs: str | None, fetch: Callable[[str], bytes]) -> bytes:
    """The entry's JSON as written: blob references replaced by the contents they stand for."""
    if not refs:
        return body
    for ref in _json.loads(refs):
        stub = _json.dumps({BLOB_KEY: ref})
        body = body.replace(stub, fetch(ref.split("#", 1)[0]), 1)
    return body


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
