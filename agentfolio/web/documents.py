"""Files opened in the viewer without being stored: what kind each is, read tolerantly.

A dropped file is parsed once and kept in process memory (a small LRU, bounded in count
and bytes) under a random token, so its pages can load a screen at a time like a stored
session.  Nothing is written to the store.

Kinds, tried in order: every session format the format registry knows (durable state,
canonical JSON, and whatever lands there later, such as Prompt Envelope), then a span
export (spans of agent instances), a schema version (span types with their schemas and
data risk), a MessageBody, and a MessageBody schema.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from agentfolio.formats import registry
from agentfolio.formats.base import ReadResult
from agentfolio.formats.errors import FormatError, Problem
from agentfolio.formats.jsonio import gc_paused, parse_json

Kind = Literal["session", "trace", "schema_version", "body", "body_schema", "invalid"]


@dataclass
class Opened:
    token: str
    name: str
    kind: Kind
    size: int
    owner: Any
    opened_at: float = field(default_factory=time.time)
    #: ``session``: the ReadResult; other kinds: the parsed document (or its parts).
    result: ReadResult | None = None
    document: Any = None
    problems: list[Problem] = field(default_factory=list)
    message: str | None = None
    detected: str | None = None
    #: Whatever a page computed once from the document (a SessionView, a Trace...).
    cache: dict[str, Any] = field(default_factory=dict)


def _is_span(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("schema_name"), str) and (
        "agent_instance_id" in value or "status" in value or "payload" in value)


def span_list(document: Any) -> list[dict[str, Any]] | None:
    """The spans of a span export: a list of spans, ``{"spans": [...]}``, an API list
    answer (``{"summaries": [...]}`` or ``{"details": {"summaries": ...}}``)."""
    candidates = [document]
    if isinstance(document, dict):
        details = document.get("details")
        candidates += [document.get(key) for key in ("spans", "summaries", "agent_spans")]
        if isinstance(details, dict):
            candidates += [details.get(key) for key in ("spans", "summaries")]
    for candidate in candidates:
        if isinstance(candidate, list) and candidate and all(isinstance(item, dict) for item in candidate) \
                and sum(_is_span(item) for item in candidate) >= max(1, len(candidate) // 2):
            return candidate
    return None


def schema_version_of(document: Any) -> dict[str, Any] | None:
    """A schema version in a document: the API's details, a create request, or a
    registration's ``agent_schema_version``."""
    if not isinstance(document, dict):
        return None
    for candidate in (document, document.get("details"), document.get("agent_schema_version"),
                      document.get("schema_version")):
        if isinstance(candidate, dict) and isinstance(candidate.get("span_type_schemas"), (dict, list)):
            return candidate
    return None


def _looks_like_body_schema(document: Any) -> bool:
    parts = document.get("parts") if isinstance(document, dict) else None
    return isinstance(parts, list) and any(isinstance(p, dict) and ("required" in p or any(
        ch in str(p.get("name", "")) + str(p.get("content_type", "")) for ch in "*?{[")) for p in parts)


def detect(document: Any, *, name: str, size: int, owner: Any) -> Opened:
    """Read a parsed document as whatever it is; never raises for bad content."""
    opened = Opened(secrets.token_urlsafe(16), name, "invalid", size, owner)
    try:
        module = registry.detect(document, source=name)
    except FormatError:
        module = None
    if module is not None and module.name == "message-body":
        module = None  # a body (or a body schema) has views of its own, below
    if module is not None:
        opened.detected = module.name
        try:
            opened.result = module.read(document, strict=False, source=name)
        except FormatError as error:
            opened.message = error.message
            opened.problems = list(error.problems) or [Problem(error.pointer or "", error.message)]
            return opened
        opened.kind = "session"
        opened.problems = list(opened.result.problems)
        return opened
    spans = span_list(document)
    if spans is not None:
        opened.kind, opened.detected, opened.document = "trace", "span export", document
        return opened
    if schema_version_of(document) is not None:
        opened.kind, opened.detected, opened.document = "schema_version", "schema version", document
        return opened
    if isinstance(document, (dict, list)) and (isinstance(document, list) or "parts" in document):
        from agentfolio.body import BodyError, MessageBody, MessageBodySchema

        schema_first = _looks_like_body_schema(document)
        attempts = [("body_schema", MessageBodySchema), ("body", MessageBody)]
        if not schema_first:
            attempts.reverse()
        errors = []
        for kind, cls in attempts:
            try:
                parsed = cls.parse(document)
            except (BodyError, ValueError) as error:
                errors.append(str(error))
                continue
            opened.kind, opened.document = kind, parsed  # type: ignore[assignment]
            opened.detected = "MessageBody schema" if kind == "body_schema" else "MessageBody"
            return opened
        opened.detected = "MessageBody schema" if schema_first else "MessageBody"
        opened.message = errors[0]
        opened.problems = [Problem("/parts", errors[0])]
        return opened
    opened.message = ("not a document the viewer knows: expected a session (" + ", ".join(registry.FORMATS)
                      + "), a span export, a schema version, a MessageBody or a MessageBody schema")
    opened.problems = [Problem("", opened.message)]
    return opened


def open_bytes(data: bytes, *, name: str, owner: Any) -> Opened:
    try:
        document = parse_json(data, source=name)
    except FormatError as error:
        opened = Opened(secrets.token_urlsafe(16), name, "invalid", len(data), owner)
        opened.message = error.message
        opened.problems = [Problem(error.pointer or "", error.message)]
        return opened
    with gc_paused():
        return detect(document, name=name, size=len(data), owner=owner)


class OpenedFiles:
    """The files opened in this process: at most ``max_files``, ``max_bytes`` in all."""

    def __init__(self, max_files: int = 32, max_bytes: int = 512 * 1024 * 1024) -> None:
        self.max_files = max_files
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, Opened] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, opened: Opened) -> Opened:
        with self._lock:
            self._items[opened.token] = opened
            while len(self._items) > self.max_files or (
                    len(self._items) > 1 and sum(item.size for item in self._items.values()) > self.max_bytes):
                self._items.popitem(last=False)
        return opened

    def get(self, token: str, owner: Any) -> Opened | None:
        with self._lock:
            opened = self._items.get(token)
            if opened is None or opened.owner != owner:
                return None
            self._items.move_to_end(token)
            return opened

    def of_kind(self, owner: Any, *kinds: str) -> list[Opened]:
        with self._lock:
            return [item for item in reversed(self._items.values()) if item.owner == owner and item.kind in kinds]
