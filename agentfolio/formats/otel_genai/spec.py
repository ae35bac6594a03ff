"""The names the OpenTelemetry GenAI conventions give a model call's attributes, and the
markers agentfolio leaves on a session read from them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

NAME = "otel-genai"
SYSTEM = "gen_ai.system_instructions"
TOOLS = "gen_ai.tool.definitions"
INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
KEYS = (SYSTEM, TOOLS, INPUT, OUTPUT)
SCHEMAS = {SYSTEM: "otel-genai-system-instructions.json", TOOLS: "otel-genai-tool-definitions.json",
           INPUT: "otel-genai-input-messages.json", OUTPUT: "otel-genai-output-messages.json"}
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
ROLES = ("system", "user", "assistant", "tool")
#: Markers (see agentfolio.formats.provider.FORM_KEY): the message holding the system
#: instructions and tool definitions, and the entry holding the output messages.
SYSTEM_FORM = "otel-genai.system"
OUTPUT_FORM = "otel-genai.output"
#: A finish reason for output messages that had none (the schema requires one).
DEFAULT_FINISH = "stop"

# How instrumentations spell an attribute's JSON text, so it is written back as read:
# OpenTelemetry's util-genai (compact, ASCII), Agent Framework (Python's defaults, not ASCII)...
TEXT_SPELLINGS: dict[str, Callable[[Any], str]] = {
    "compact": lambda value: json.dumps(value, separators=(",", ":"), ensure_ascii=False),
    "compact-ascii": lambda value: json.dumps(value, separators=(",", ":")),
    "python": lambda value: json.dumps(value, ensure_ascii=False),
    "python-ascii": lambda value: json.dumps(value),
}
