"""What a text search sees of a history entry: one rule for the stored sessions' search
index and for finding in a file opened in the viewer, so both find the same entries."""

from __future__ import annotations

from typing import Any

from agentfolio import _json

__all__ = ["entry_text", "search_text"]


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
            for key in ("text", "message", "name", "arguments", "result", "content", "fileName", "snippet"):
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
