"""OpenAI Chat Completions: roles, and the properties a message, part and request may have."""

from __future__ import annotations

NAME = "openai-chat"
ROLES = ("system", "developer", "user", "assistant", "tool")
REQUEST_ROLES = frozenset({"system", "developer", "user"})
MESSAGE_KEYS = ("role", "name", "content", "tool_calls", "tool_call_id")
AUDIO_TYPES = {"wav": "audio/wav", "mp3": "audio/mpeg"}
# Properties the Chat Completions API knows beside the ones mapped onto the model: kept by
# a conversion (the API refuses any other, so those are dropped and reported).
REQUEST_KEYS = frozenset({
    "model", "tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p", "n", "stop", "seed",
    "max_tokens", "max_completion_tokens", "response_format", "frequency_penalty", "presence_penalty",
    "logit_bias", "logprobs", "top_logprobs", "user", "metadata", "store", "stream", "stream_options",
    "reasoning_effort", "modalities", "audio", "prediction", "service_tier", "web_search_options", "verbosity"})
MESSAGE_EXTRA_KEYS = frozenset({"refusal", "audio", "annotations", "function_call"})
PART_EXTRA_KEYS = {"image": frozenset({"detail"}), "file": frozenset({"filename"})}

# How a message spells its content, and a document its messages (Message.spelling,
# Session.spelling): kept by a read, so the write gives back the same JSON.
STRING, PARTS, NULL, ABSENT = "string", "parts", "null", "absent"
BARE_LIST = "list"
# The marker an OpenAI tool call with no canonical kind (a ``custom`` tool's call, or a
# type added later) is kept under, whole, in an OpaqueContent: {"$type": ..., "call": {...}}.
TOOL_CALL_KIND = "openai.tool_call"
