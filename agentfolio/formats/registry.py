"""The formats agentfolio reads and writes, listed once: everything that names formats
(CLI choices, the API's ``?format=``, the viewer's open-a-file) takes them from here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import Any

from agentfolio.formats.base import Format
from agentfolio.formats.errors import FormatError

__all__ = ["FORMATS", "detect", "get", "names"]

# Name → module, in detection order: the most specific shape first. A format's module is
# imported the first time it is needed, so reading a durable state never loads the
# provider formats (a command line pays only for what it reads).
_MODULES: dict[str, str] = {
    "durable-state": "agentfolio.formats.durable_state",
    "canonical": "agentfolio.formats.canonical",
    # Its marker keys (gen_ai.input.messages...) are no other format's.
    "otel-genai": "agentfolio.formats.otel_genai",
    "envelope": "agentfolio.formats.envelope",
    # Before openai-chat, which takes any object with "messages": these look for their
    # own marker keys and block types.
    "anthropic": "agentfolio.formats.anthropic",
    "openai-responses": "agentfolio.formats.openai_responses",
    "gemini": "agentfolio.formats.gemini",
    "langchain": "agentfolio.formats.langchain",
    "openai-chat": "agentfolio.formats.openai_chat",
    "a2a": "agentfolio.formats.a2a",
    # Last: only an object whose one key is a "parts" array (message_body.looks_like also
    # refuses the other formats' marker keys, so order cannot steal their documents).
    "message-body": "agentfolio.formats.message_body",
}


class _Formats(Mapping[str, Format]):
    """The registered formats by name, each loaded on first use."""

    def __init__(self) -> None:
        self._loaded: dict[str, Format] = {}

    def __getitem__(self, name: str) -> Format:
        found = self._loaded.get(name)
        if found is None:
            found = import_module(_MODULES[name]).FORMAT
            assert found.name == name, f"{_MODULES[name]} registers as {found.name!r}, not {name!r}"
            self._loaded[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


FORMATS: Mapping[str, Format] = _Formats()


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
