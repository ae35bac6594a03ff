"""The formats agentfolio reads and writes, listed once: everything that names formats
(CLI choices, the API's ``?format=``, the viewer's open-a-file) takes them from here."""

from __future__ import annotations

from typing import Any

from agentfolio.formats import (
    a2a,
    anthropic,
    canonical,
    durable_state,
    envelope,
    gemini,
    langchain,
    message_body,
    openai_chat,
    openai_responses,
)
from agentfolio.formats.base import Format
from agentfolio.formats.errors import FormatError

__all__ = ["FORMATS", "detect", "get", "names"]

# Order matters for detection: the most specific shape first.
FORMATS: dict[str, Format] = {
    fmt.name: fmt for fmt in (
        durable_state.FORMAT,
        canonical.FORMAT,
        envelope.FORMAT,
        # Before openai-chat, which takes any object with "messages": these look for
        # their own marker keys and block types.
        anthropic.FORMAT,
        openai_responses.FORMAT,
        gemini.FORMAT,
        langchain.FORMAT,
        openai_chat.FORMAT,
        a2a.FORMAT,
        # Last: only an object whose one key is a "parts" array (message_body.looks_like
        # also refuses the other formats' marker keys, so order cannot steal their documents).
        message_body.FORMAT,
    )
}


def names() -> list[str]:
    return list(FORMATS)


def get(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatError(f"unknown format {name!r}; known: {', '.join(FORMATS)}") from None


def detect(document: Any, *, source: str | None = None) -> Format:
    """The format a parsed document is in, or a FormatError saying what was expected."""
    for fmt in FORMATS.values():
        if fmt.looks_like(document):
            return fmt
    raise FormatError("not a document agentfolio knows: expected one of " + ", ".join(FORMATS)
                      + " (durable state has schemaVersion and data; a Prompt Envelope has version and messages;"
                      ' a message body is {"parts": [...]})', source=source, pointer="")
