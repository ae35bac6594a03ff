"""Facts about records that more than one layer needs: when a text counts as long,
whether a tool result reports a failure, what kind of media a content holds.

Formats use them to decide what a record becomes in another format; the presentation
rules (:mod:`agentfolio.present.rules`) use the same facts to decide how it looks, so a
converted record and a shown one never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentfolio.model.contents import FunctionResultContent

__all__ = ["LONG_TEXT_CHARS", "MEDIA_CLASSES", "call_failed", "media_class", "result_failed"]

#: Text longer than this is folded, showing its character count (envelope ``long_text``).
LONG_TEXT_CHARS = 2000


def call_failed(result: FunctionResultContent | None) -> bool:
    """Whether a tool result reports a failure (shown in red): :func:`result_failed` of
    its unknown properties and its result."""
    return result is not None and result_failed(result.extra, result.result)


def result_failed(properties: Mapping[str, Any], result: Any) -> bool:
    """Whether a tool result with these properties (its JSON object, or just the ones
    the model does not know: the names read here are none of its known ones) and this
    ``result`` value reports a failure.

    The envelope says so with ``success: false``, Anthropic with ``is_error``, LangChain
    with ``status: "error"``; durable state has no field for it, so
    an ``exception``/``error`` property, or a result object with ``error``/``isError``,
    counts as one too.
    """
    if properties.get("success") is False or properties.get("exception") or properties.get("error"):
        return True
    # Anthropic's tool_result says ``is_error``; LangChain's tool message ``status: "error"``.
    if properties.get("is_error") is True or properties.get("status") == "error":
        return True
    return isinstance(result, dict) and bool(result.get("isError") or result.get("is_error")
                                            or (result.get("error") and len(result) <= 3))


# -- media ------------------------------------------------------------------------------

MEDIA_CLASSES = ("image", "audio", "video")
_EXTENSIONS = {"png": "image", "jpg": "image", "jpeg": "image", "gif": "image", "webp": "image",
               "svg": "image", "bmp": "image", "avif": "image", "mp3": "audio", "wav": "audio", "ogg": "audio",
               "oga": "audio", "m4a": "audio", "flac": "audio", "mp4": "video", "webm": "video",
               "mov": "video", "ogv": "video"}


def media_class(media_type: str | None, uri: str | None = None) -> str | None:
    """``image``, ``audio``, ``video`` or None, from a media type or else the URI."""
    if media_type:
        major = media_type.split("/", 1)[0].strip().lower()
        if major in MEDIA_CLASSES:
            return major
    if uri:
        if uri.startswith("data:"):
            return media_class(uri[5:].split(";", 1)[0].split(",", 1)[0] or None)
        path = uri.split("?", 1)[0].split("#", 1)[0]
        extension = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
        return _EXTENSIONS.get(extension)
    return None
