"""Small facts about parsed JSON values that every layer states the same way."""

from __future__ import annotations

from typing import Any

__all__ = ["json_type", "too_deep"]


def json_type(value: object) -> str:
    """A JSON value's type as messages say it: ``null``, ``a boolean``, ``a number``,
    ``a string``, ``an array``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    return "an object"


def too_deep(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than ``limit`` levels (the root is level 1).

    Visits containers only, and iteratively, so a wide document of thousands of
    objects costs little and a deep one cannot exhaust the stack.
    """
    if type(value) not in (dict, list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if type(node) is dict else node
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
    return False
