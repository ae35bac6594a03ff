"""Prompt Envelope 1.0: its name, version, roles and the properties each level owns."""

from __future__ import annotations

NAME = "envelope"
VERSION = "1.0"
SCHEMA = "prompt-envelope-1.0.json"

ROLES = ("system", "user", "assistant", "tool")
REQUEST_ROLES = frozenset({"system", "user"})
MEDIA_TYPES = ("image", "audio", "video")

# Segment kind → the properties it owns (everything else on a segment is an unknown
# property, kept in the content's ``extra``).
SEGMENT_KEYS: dict[str, tuple[str, ...]] = {
    "text": ("kind", "content"),
    "system_prompt": ("kind", "content", "collapsed"),
    "long_text": ("kind", "content", "charCount", "collapsed"),
    "static_var": ("kind", "name", "value", "description"),
    "memory": ("kind", "description", "items", "collapsed"),
    "skills": ("kind", "description", "items", "collapsed"),
    "tool_overview": ("kind", "items", "collapsed"),
    "tool_call_request": ("kind", "toolName", "arguments", "collapsed"),
    "tool_call_result": ("kind", "toolName", "result", "success", "collapsed"),
    "document": ("kind", "fileName", "mimeType", "snippet", "sizeBytes", "parsedContent"),
    "media": ("kind", "mediaType", "url", "altText"),
}
MESSAGE_KEYS = ("id", "role", "segments", "timestamp")
ROOT_KEYS = ("version", "model", "messages")
# Kinds folded when a record does not say (agentfolio.present.rules.FOLDED_KINDS).
FOLDED_BY_DEFAULT = frozenset({"system_prompt", "memory", "skills", "tool_overview", "long_text"})
