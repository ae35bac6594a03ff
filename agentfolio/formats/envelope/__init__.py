"""Prompt Envelope 1.0: ``{version, model?, messages: [{id, role, segments, timestamp}]}``.

A message is a list of typed segments, each with its own look.  Reading maps every
segment onto a canonical content, so a read followed by a write gives back the same
JSON value:

==================  ===============================================================
segment             canonical content
==================  ===============================================================
text                TextContent
system_prompt       TextContent, presentation ``style="system_prompt"``, collapsed
long_text           TextContent, presentation ``style="long_text"``, charCount, collapsed
static_var          TemplateVariableContent
memory              MemoryContent (+ collapsed)
skills              SkillsContent (+ collapsed)
tool_overview       ToolCatalogContent (+ collapsed)
tool_call_request   FunctionCallContent, callId generated ``call_<message>_<segment>``
tool_call_result    FunctionResultContent paired with the earliest open request of the
                    same toolName (its callId); ``success`` kept in ``extra``, and
                    ``toolName`` too when no request matches
document            DocumentContent
media               DataContent (``data:`` URL) or UriContent, mediaType ``image/*``
                    (or the data URL's own type when it is of that class); altText in
                    ``extra``
==================  ===============================================================

Messages: ``id`` → messageId, ``timestamp`` (Unix epoch milliseconds) → createdAt as an
ISO 8601 UTC string that encodes the number exactly (see :func:`ms_to_iso`).  Runs of
system/user messages become request entries and runs of assistant/tool messages
response entries; writing flattens them again.  Unknown properties at every level are
kept in the records' ``extra`` and written back.

The package splits by responsibility: :mod:`.spec` (name, version, what each level
owns), :mod:`.timestamps`, :mod:`.reader`, :mod:`.writer` and :mod:`.lowering` (any
canonical session → one the writer holds, with a loss report).  Everything other code
uses is importable from ``agentfolio.formats.envelope`` itself.
"""

from __future__ import annotations

from agentfolio.formats.base import FunctionFormat
from agentfolio.formats.envelope.lowering import lower
from agentfolio.formats.envelope.reader import group_entries, looks_like, read, validate
from agentfolio.formats.envelope.spec import (
    MEDIA_TYPES,
    MESSAGE_KEYS,
    NAME,
    REQUEST_ROLES,
    ROLES,
    ROOT_KEYS,
    SCHEMA,
    SEGMENT_KEYS,
    VERSION,
)
from agentfolio.formats.envelope.timestamps import MAX_MS, iso_to_ms, ms_to_iso, timestamp_problem
from agentfolio.formats.envelope.writer import dumps, write
from agentfolio.formats.losses import document_text

__all__ = [
    "FORMAT",
    "MAX_MS",
    "MEDIA_TYPES",
    "MESSAGE_KEYS",
    "NAME",
    "REQUEST_ROLES",
    "ROLES",
    "ROOT_KEYS",
    "SCHEMA",
    "SEGMENT_KEYS",
    "VERSION",
    "document_text",
    "dumps",
    "group_entries",
    "iso_to_ms",
    "looks_like",
    "lower",
    "ms_to_iso",
    "read",
    "timestamp_problem",
    "validate",
    "write",
]

FORMAT = FunctionFormat(NAME, "Prompt Envelope 1.0", looks_like, validate, read, write, lower)
