"""What a text search sees of a history entry: one rule for the stored sessions' search
index and for finding in a file opened in the viewer, so both find the same entries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentfolio import _json
from agentfolio.settings import DEFAULT_SEARCH_TEXT_LIMIT

__all__ = ["SEARCHED_KEYS", "SessionIndex", "entry_text", "search_text"]

#: The properties of a content a search looks in: what the viewer shows of it as text
#: (never a media URI, which may be a whole file in base64).
SEARCHED_KEYS = ("text", "message", "name", "arguments", "result", "content", "fileName", "snippet", "parsedContent",
                 "description", "value", "title", "altText", "items")


def search_text(text: str) -> str:
    """Text as the search column holds it: lower-cased, NUL shown as U+FFFD.

    PostgreSQL refuses NUL in text columns; the search text is derived, not the source
    (the entry's exact JSON is kept as bytes), so queries are normalised the same way.
    """
    return text.lower().replace("\x00", "\ufffd")


def entry_text(entry: Any, limit: int, *, lower: bool = True) -> str:
    """Text of an entry's messages (texts, reasoning, errors, tool names and data), as the
    search column holds it (``lower``), or as written."""
    finish = search_text if lower else str
    if not isinstance(entry, dict):
        return ""
    parts: list[str] = []
    size = 0
    for message in _list(entry.get("messages")):
        if not isinstance(message, dict):
            continue
        for content in _list(message.get("contents")):
            if not isinstance(content, dict):
                continue
            for key in SEARCHED_KEYS:
                value = content.get(key)
                if value is None:
                    continue
                text = value if isinstance(value, str) else _json.dumps(value).decode()
                parts.append(text)
                size += len(text) + 1
                if size >= limit:
                    return finish("\n".join(parts)[:limit])
    return finish("\n".join(parts))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class SessionIndex:
    """A session held in memory (a file opened in the viewer), made searchable once: each
    entry's search text and facts, as the store keeps them for a stored session, so a
    find or a narrowed page costs a scan of short strings, not a walk of the records."""

    def __init__(self, entries: Sequence[Any], text_limit: int = DEFAULT_SEARCH_TEXT_LIMIT) -> None:
        from agentfolio.present.activity import entry_facts
        from agentfolio.present.counts import entry_json

        values = [entry_json(entry) for entry in entries]
        self.texts = [entry_text(value, text_limit) for value in values]
        self.facts = [entry_facts(value) for value in values]

    def positions(self, *, text: str | None = None, show: str | None = None, start: int = 0,
                  limit: int = 10_000) -> list[int]:
        """As ``Sessions.find_positions`` answers for a stored session."""
        from agentfolio.present.activity import entry_shows

        needle = search_text(text) if text else None
        found: list[int] = []
        for position in range(max(0, start), len(self.texts)):
            if needle is not None and needle not in self.texts[position]:
                continue
            if show and not entry_shows(self.facts[position], show):
                continue
            found.append(position)
            if len(found) >= limit:
                break
        return found

