"""Values a client marked sensitive: ``{"$sensitive": TYPE, "value": V, "labels": [...]}``
wrappers anywhere in a span's payload or result (``sensitive_encoding``).

At rest a wrapper keeps its type and labels and its value *encoded* (base64 of its JSON
in ``encoded``), so the value never sits in the database as plain text a query or a
dump shows in passing; nothing is lost (the encoding is reversible, not a secret).
Every answer shows a wrapper *masked*: type and labels, ``"masked": true``, no value.
"""

from __future__ import annotations

import base64
from typing import Any

from agentfolio import _json

__all__ = ["MARK", "decode_at_rest", "encode_at_rest", "labels_of", "load_masked", "masked", "mentions_sensitive"]

MARK = "$sensitive"
_MARK_BYTES = b'"$sensitive"'


def mentions_sensitive(raw: bytes | None) -> bool:
    """Whether serialized JSON may hold a wrapper (a cheap test before walking it)."""
    return raw is not None and _MARK_BYTES in raw


def _is_wrapper(value: Any) -> bool:
    return isinstance(value, dict) and MARK in value


def _walk(value: Any, change: Any) -> Any:
    if _is_wrapper(value):
        return change(value)
    if isinstance(value, dict):
        return {key: _walk(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_walk(item, change) for item in value]
    return value


def _encode(wrapper: dict[str, Any]) -> dict[str, Any]:
    if "value" not in wrapper:
        return wrapper
    kept = {key: item for key, item in wrapper.items() if key != "value"}
    kept["encoded"] = base64.b64encode(_json.dumps(wrapper["value"])).decode("ascii")
    return kept


def _decode(wrapper: dict[str, Any]) -> dict[str, Any]:
    if "encoded" not in wrapper:
        return wrapper
    kept = {key: item for key, item in wrapper.items() if key != "encoded"}
    kept["value"] = _json.loads(base64.b64decode(wrapper["encoded"]))
    return kept


def _mask(wrapper: dict[str, Any]) -> dict[str, Any]:
    kept = {key: item for key, item in wrapper.items() if key not in ("value", "encoded")}
    kept["masked"] = True
    return kept


def encode_at_rest(value: Any) -> Any:
    """``value`` with every wrapper's value encoded."""
    return _walk(value, _encode)


def decode_at_rest(value: Any) -> Any:
    """What :func:`encode_at_rest` was given."""
    return _walk(value, _decode)


def masked(value: Any) -> Any:
    """``value`` with every wrapper's value (plain or encoded) taken out."""
    return _walk(value, _mask)


def load_masked(raw: bytes) -> Any:
    """Stored JSON as answers show it: every wrapper masked (most values hold none, and
    are not walked)."""
    value = _json.loads(raw)
    return masked(value) if mentions_sensitive(raw) else value


def labels_of(value: Any) -> set[str]:
    """The labels of every wrapper in ``value``."""
    found: set[str] = set()

    def collect(wrapper: dict[str, Any]) -> dict[str, Any]:
        labels = wrapper.get("labels")
        if isinstance(labels, list):
            found.update(label for label in labels if isinstance(label, str))
        return wrapper

    _walk(value, collect)
    return found
