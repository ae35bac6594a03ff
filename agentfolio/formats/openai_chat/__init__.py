"""OpenAI Chat Completions messages: ``{"model"?, "messages": [...], ...}`` or a bare list.

What most agent code already holds.  Reading maps each message onto the model:

* ``role`` → role, ``name`` → authorName; other message properties (``refusal``,
  ``audio``, ``annotations``...) are kept in the message's ``extra``;
* ``content``: a string → one text content; an array of parts → one content per part
  (``text`` → text, ``image_url`` → data/uri with ``image/*`` or the data URL's own type
  and ``detail`` kept in ``extra``, ``input_audio`` → a ``data:audio/<format>`` URI,
  ``file`` → hostedFile (``file_id``) or data (``file_data``), ``filename`` in ``extra``;
  any other part kept whole);
* ``tool_calls`` → functionCall contents (call id, name, the arguments string verbatim);
  a call of another type (``custom``, or one added later) is kept whole, and converted
  to durable state inside its ``{"$type": "unknown", "content": ...}`` escape hatch;
* a ``tool`` message → one functionResult whose callId is its ``tool_call_id``, which
  pairs it with its call (a tool message answering no earlier call is a problem: the
  API refuses it, and a conversion never writes one).

Runs of system/developer/user messages become request entries, assistant/tool runs
response entries.  Request-body properties beside ``messages`` (``model``, ``tools``,
``temperature``...) stay in the session's ``extra``.  A read followed by a write gives the
same JSON value: each message remembers how its content was spelled (a string, an
array of parts, ``null`` or absent) and the document whether it was a bare array
(``Message.spelling``, ``Session.spelling``).

The package splits by responsibility: :mod:`.spec` (roles and known properties),
:mod:`.reader`, :mod:`.writer` and :mod:`.lowering` (any canonical session → one the
writer holds, with a loss report); everything other code uses is importable from
``agentfolio.formats.openai_chat`` itself.
"""

from __future__ import annotations

from agentfolio.formats.base import FunctionFormat
from agentfolio.formats.openai_chat.lowering import lower
from agentfolio.formats.openai_chat.reader import group_entries, looks_like, read, validate
from agentfolio.formats.openai_chat.spec import (
    MESSAGE_EXTRA_KEYS,
    MESSAGE_KEYS,
    NAME,
    PART_EXTRA_KEYS,
    REQUEST_KEYS,
    REQUEST_ROLES,
    ROLES,
)
from agentfolio.formats.openai_chat.writer import write

__all__ = [
    "FORMAT",
    "MESSAGE_EXTRA_KEYS",
    "MESSAGE_KEYS",
    "NAME",
    "PART_EXTRA_KEYS",
    "REQUEST_KEYS",
    "REQUEST_ROLES",
    "ROLES",
    "group_entries",
    "looks_like",
    "lower",
    "read",
    "validate",
    "write",
]

FORMAT = FunctionFormat(NAME, "OpenAI Chat Completions messages", looks_like, validate, read, write, lower)
