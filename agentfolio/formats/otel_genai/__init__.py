"""OpenTelemetry GenAI messages: the JSON of a model call's span attributes.

A document is an object holding the GenAI attributes of one call — what the OpenTelemetry
semantic conventions define and publish JSON Schemas for (bundled: ``schemas/otel-genai-*``)::

    {"gen_ai.system_instructions": [parts],   "gen_ai.tool.definitions": [tools],
     "gen_ai.input.messages": [messages],     "gen_ai.output.messages": [messages],
     "gen_ai.usage.input_tokens": 12, ...any other attribute}

Each of the four may be the structured value or the JSON text of it (instrumentations
set span attributes as strings; the spelling of the text is remembered, so it is written
back as read).  Messages are ``{"role", "parts", "name"?, "finish_reason"?}``:

===========================  ================================================================
part                         canonical content
===========================  ================================================================
``text`` / ``reasoning``     text / reasoning (``content``)
``tool_call``                functionCall (``id``, ``name``, ``arguments`` as given)
``tool_call_response``       functionResult (``response``; ``result`` too, as Pydantic AI writes
                             it against the schema: read leniently, written as ``response``)
``server_tool_call``         functionCall, informationalOnly (``server_tool_call`` as arguments)
``server_tool_call_response``  functionResult (its ``type`` kept)
``blob`` / ``uri`` / ``file``  data (base64 ``content`` as a ``data:`` URL) / uri / hostedFile,
                             ``mime_type`` → mediaType, ``modality`` kept
anything else                kept whole
===========================  ================================================================

System instructions and tool definitions (a tool catalog) open the session as one system
message; input messages are grouped into request and response entries by role; output
messages are the last response entry, with the usage attributes as its usage.  Read →
write gives the same JSON value; everything not mapped rides in ``extra`` as read.
"""

from __future__ import annotations

from agentfolio.formats.base import FunctionFormat
from agentfolio.formats.otel_genai.document import looks_like, read, validate, write
from agentfolio.formats.otel_genai.lowering import lower
from agentfolio.formats.otel_genai.parts import read_messages, read_parts, write_parts
from agentfolio.formats.otel_genai.spec import INPUT, NAME, OUTPUT, SYSTEM, TOOLS

__all__ = ["FORMAT", "INPUT", "OUTPUT", "SYSTEM", "TOOLS", "looks_like", "lower", "read", "read_messages",
           "read_parts", "validate", "write", "write_parts"]

FORMAT = FunctionFormat(NAME, "OpenTelemetry GenAI messages", looks_like, validate, read, write, lower)
