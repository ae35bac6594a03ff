"""The formats agentfolio reads and writes, by name, and telling them apart."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from agentfolio.formats import canonical, durable_state, envelope, message_body, openai_chat
from agentfolio.formats.errors import FormatError

# Order matters for detection: the most specific shape first.
FORMATS: dict[str, ModuleType] = {
    durable_state.NAME: durable_state,
    canonical.NAME: canonical,
    envelope.NAME: envelope,
    openai_chat.NAME: openai_chat,
    # Last: only an object whose one key is a "parts" array (message_body.looks_like
    # also refuses the other formats' marker keys, so order cannot steal their documents).
    message_body.NAME: message_body,
}


def get(name: str) -> ModuleType:
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatError(f"unknown format {name!r}; known: {', '.join(FORMATS)}") from None


def detect(document: Any, *, source: str | None = None) -> ModuleType:
    """The format a parsed document is in, or a FormatError saying what was expected."""
    for module in FORMATS.values():
        if module.looks_like(document):
            return module
    raise FormatError("not a document agentfolio knows: expected one of " + ", ".join(FORMATS)
                      + " (durable state has schemaVersion and data; a Prompt Envelope has version and messages;"
                      ' a message body is {"parts": [...]})', source=source, pointer="")
