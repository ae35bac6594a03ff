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
* a ``tool`` message → one functionResult whose callId is its ``tool_call_id``, which
  pairs it with its call.

Runs of system/developer/user messages become request entries, assistant/tool runs
response entries.  Request-body properties beside ``messages`` (``model``, ``tools``,
``temperature``...) stay in the session's ``extra``.  A read followed by a write gives the
same JSON value, except that a bare list is written as ``{"messages": [...]}``, a content
array holding exactly one plain text part is written as a string, and an assistant
message without text says ``"content": null``.

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

__all__ = ["FORMAT", "NAME", "ROLES", "REQUEST_ROLES", "MESSAGE_KEYS", "REQUEST_KEYS", "MESSAGE_EXTRA_KEYS", "PART_EXTRA_KEYS",
           "looks_like", "validate", "read", "write", "lower", "group_entries"]

FORMAT = FunctionFormat(NAME, "OpenAI Chat Completions messages", looks_like, validate, read, write, lower)
