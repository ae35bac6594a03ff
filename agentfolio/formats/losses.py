"""What a conversion could not carry: losses at JSON pointers into the source document.

Every format's ``lower(session, ...)`` step maps the canonical kinds its writer cannot
hold into ones it can and reports, field by field, what was dropped or approximated.
Losses point into the *source* document, so a reader records where each record stood
(:class:`Origin`); a session with no origin (built in Python, or read from durable state,
whose wire layout is the model's own) is pointed into with the model's own JSON paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentfolio import _json
from agentfolio.formats.errors import json_pointer
from agentfolio.model import (
    DocumentContent,
    MemoryContent,
    Record,
    SkillsContent,
    TemplateVariableContent,
    ToolCatalogContent,
)

_R = TypeVar("_R", bound=Record)

#: The property provider readers use to remember a source's spelling (see
#: agentfolio.formats.provider): never reported as a loss.
FORM_KEY = "$form"


@dataclass(frozen=True, slots=True)
class Loss:
    """One field a conversion dropped (``approximated`` False) or approximated."""

    pointer: str  # into the source document
    what: str
    why: str
    approximated: bool = False

    def __str__(self) -> str:
        verb = "approximated" if self.approximated else "dropped"
        return f"{self.pointer or '/'}: {verb} {self.what}: {self.why}"

    def to_json(self) -> dict[str, Any]:
        return {"pointer": self.pointer, "what": self.what, "why": self.why, "approximated": self.approximated}


class Origin:
    """Where each record of a session stood in the document it was read from.

    ``names`` maps a field's canonical wire name (``text``, ``callId``, or a nested
    ``presentation/collapsed``) to the path of that field in the source, relative to the
    record (``("content",)``); a field missing from ``names`` has the same path in the
    source, and one mapped to ``()`` has no place of its own there (a generated call id),
    so its loss points at the record.  Records never added are pointed into with the
    model's own JSON paths, after ``prefix`` (where the session sits in its document).
    """

    def __init__(self, prefix: str = "", *, presentation: bool = False) -> None:
        self.prefix = prefix
        # The source records how contents are shown (a plain text vs a system prompt).
        self.presentation = presentation
        self._where: dict[int, tuple[str, Mapping[str, Sequence[str | int]]]] = {}
        self._alive: list[Any] = []  # keeps ids stable while the origin lives

    def add(self, record: Any, pointer: str, names: Mapping[str, Sequence[str | int]] | None = None) -> None:
        self._where[id(record)] = (pointer, names or {})
        self._alive.append(record)

    def locates(self, record: Any) -> bool:
        """Whether the source has a place of its own for ``record``: one added here, or any
        record of a source laid out as the model is (nothing added).  A record a reader
        made up (an entry grouped from role runs) has none."""
        return not self._where or id(record) in self._where

    def pointer(self, record: Any, default: str, key: str | None = None) -> str:
        base, names = self._where.get(id(record), (self.prefix + default, {}))
        if key is None:
            return base
        # A key is one property name ("x/y" included: escaped as x~1y), except the one
        # nested form losses use, "presentation/<field>".
        nested = key.startswith("presentation/") and key.count("/") == 1
        return base + json_pointer(names.get(key, key.split("/") if nested else [key]))


class Recorder:
    """Collects the losses of one lowering, pointing them into the source."""

    def __init__(self, origin: Origin | None) -> None:
        self.origin = origin or Origin()
        self.losses: list[Loss] = []

    def at(self, record: Any, default: str, key: str | None = None) -> str:
        return self.origin.pointer(record, default, key)

    def drop(self, record: Any, default: str, key: str | None, what: str, why: str) -> None:
        if key == FORM_KEY:
            return  # how a provider spelled the source, not data (agentfolio.formats.provider)
        self.losses.append(Loss(self.at(record, default, key), what, why, False))

    def approximate(self, record: Any, default: str, key: str | None, what: str, why: str) -> None:
        self.losses.append(Loss(self.at(record, default, key), what, why, True))


def drop_presentation(rec: Recorder, content: Any, pointer: str, why: str) -> None:
    """Report each given presentation field of a content the target does not keep."""
    if content.presentation is not None:
        for key in set_fields(content.presentation):
            rec.drop(content, pointer, f"presentation/{key}", f"presentation {key}", why)


def drop_provider_fields(rec: Recorder, content: Any, pointer: str, target: str) -> None:
    """Report the fields providers share that ``target`` has no place for: a text's
    citations, a call's being run by the provider, a hosted file's media type and name.
    (Reasoning and its protected data are dropped whole by such targets, and reported so.)"""
    from agentfolio.model import FunctionCallContent, HostedFileContent, TextContent

    shared: dict[type[Any], tuple[str, ...]] = {
        TextContent: ("annotations",), FunctionCallContent: ("informationalOnly",),
        HostedFileContent: ("mediaType", "name")}
    fields = shared.get(type(content), ())
    given = set(set_fields(content)) if fields else set()
    for key in fields:
        if key in given:
            what = {"annotations": "citations", "informationalOnly": "server-run call"}.get(key, key)
            rec.drop(content, pointer, key, what, f"{target} has no place for it")


def drop_entry_fields(rec: Recorder, entry: Any, pointer: str, why: str) -> None:
    """Report an entry's own fields and unknown properties, for targets that have messages
    but no entries."""
    for key in set_fields(entry, skip=("$type", "messages")):
        rec.drop(entry, pointer, key, key, why)
    for key in entry.extra:
        rec.drop(entry, pointer, key, f"entry property {key!r}", why)


def model_pointer(*steps: str | int) -> str:
    """A pointer into the model's own JSON (durable state's layout)."""
    return json_pointer(steps)


# Spelled out rather than escaped step by step: the steps are our own names and indexes,
# which need no escaping, and writers make one of these per message.
def entry_pointer(entry_index: int) -> str:
    return f"/data/conversationHistory/{entry_index}"


def message_pointer(entry_index: int, message_index: int) -> str:
    return f"/data/conversationHistory/{entry_index}/messages/{message_index}"


def content_pointer(entry_index: int, message_index: int, content_index: int) -> str:
    return f"/data/conversationHistory/{entry_index}/messages/{message_index}/contents/{content_index}"


def set_fields(record: Any, skip: Iterable[str] = ()) -> list[str]:
    """The wire names of a record's declared fields that were given, in declaration order."""
    skipped = set(skip)
    given = record.model_fields_set
    return [info.alias or name for name, info in type(record).model_fields.items()
            if name in given and (info.alias or name) not in skipped and name not in skipped]


def with_extras(record: _R, extras: Mapping[str, Any]) -> _R:
    """The record carrying ``extras`` as unknown properties (read-only records: built here)."""
    if extras:
        stored = record.__pydantic_extra__
        if stored is None:  # every Record allows extras; only a foreign model lands here
            raise TypeError(f"{type(record).__name__} keeps no unknown properties")
        stored.update(extras)
        forget = getattr(record, "forget_document", None)
        if forget is not None:
            forget()  # the session no longer writes the document it was read from
    return record


# -- Text renderings: how a kind a target cannot hold is written as plain text ----------
#
# One place, so every target that falls back to text writes the same words.

def memory_text(content: Any) -> str:
    head = f"Memory: {content.description}" if content.description else "Memory:"
    return "\n".join([head, *(f"- {item.title}: {item.content}" for item in content.items)])


def skills_text(content: Any) -> str:
    head = f"Skills: {content.description}" if content.description else "Skills:"
    return "\n".join([head, *(f"- {item.name}: {item.description}" for item in content.items)])


def tools_text(content: Any) -> str:
    lines = ["Tools:"]
    for item in content.items:
        signature = f"({item.parameters})" if item.parameters else ""
        lines.append(f"- {item.name}{signature}: {item.description}")
    return "\n".join(lines)


def document_text(content: Any) -> str:
    size = f", {content.size_bytes:,} bytes" if isinstance(content.size_bytes, (int, float)) else ""
    body = content.parsed_content if content.parsed_content is not None else content.snippet
    return f"[document {content.file_name} ({content.media_type}{size})]" + (f"\n{body}" if body else "")


def error_text(content: Any) -> str:
    code = f" [{content.error_code}]" if content.error_code else ""
    return f"Error{code}: {content.message or ''}"


def listing_text(content: Any) -> str | None:
    """A template variable, memory, skills, tool catalog or document card as the text a
    target without that kind writes; None for any other content."""
    if isinstance(content, TemplateVariableContent):
        return content.value
    renderings: dict[type[Any], Callable[[Any], str]] = {
        MemoryContent: memory_text, SkillsContent: skills_text, ToolCatalogContent: tools_text,
        DocumentContent: document_text}
    rendering = renderings.get(type(content))
    return rendering(content) if rendering else None


def json_text(value: Any) -> str:
    """A JSON value as compact text (a string stays itself)."""
    if isinstance(value, str):
        return value
    return _json.dumps(value).decode()


@dataclass(slots=True)
class Lowered:
    """A lowering's result: a session the target's writer accepts, and what it cost."""

    session: Any
    losses: list[Loss] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ConvertOptions:
    """Choices a conversion makes where the target leaves room."""

    # Text longer than this becomes an envelope ``long_text`` segment (None: the
    # presentation rules' own threshold, agentfolio.model.analysis.LONG_TEXT_CHARS).
    long_text_chars: int | None = None
    # Refuse (LossError) instead of converting when anything would be lost.
    strict: bool = False
    # The role a message body's one message is read with, and the one a body is
    # lowered to (None: agentfolio.formats.message_body.DEFAULT_ROLE, "assistant").
    body_role: str | None = None
