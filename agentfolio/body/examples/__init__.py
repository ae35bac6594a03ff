"""The four agents of the MessageBody design as example schemas with example bodies.

``<agent>.schema.json`` is the agent's output schema; ``<agent>.body.json`` a body
it might produce (valid under its schema).
"""

from __future__ import annotations

from pathlib import Path

from ..body import MessageBody
from ..schema import MessageBodySchema

HERE = Path(__file__).resolve().parent

#: In the order docs/body.md introduces them.
EXAMPLES = ("chat", "multimodal-chat", "software-writer", "researcher")


def schema_path(name: str) -> Path:
    return HERE / f"{name}.schema.json"


def body_path(name: str) -> Path:
    return HERE / f"{name}.body.json"


def load_schema(name: str) -> MessageBodySchema:
    if name not in EXAMPLES:
        raise KeyError(f"no example {name!r}; examples: {', '.join(EXAMPLES)}")
    return MessageBodySchema.load(schema_path(name))


def load_body(name: str) -> MessageBody:
    if name not in EXAMPLES:
        raise KeyError(f"no example {name!r}; examples: {', '.join(EXAMPLES)}")
    return MessageBody.load(body_path(name))
