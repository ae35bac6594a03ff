"""Bundled sample records and a generator of realistic large ones (for demos and benchmarks)."""

from __future__ import annotations

import random
from importlib import resources
from pathlib import Path
from typing import Any


def sample_path(name: str) -> Path:
    """Path of a bundled sample file, e.g. ``durable-agent-state.sample.json``."""
    return Path(str(resources.files(__package__).joinpath(name)))


_WORDS = ["agent", "tool", "weather", "forecast", "coffee", "product", "documentation", "workflow", "order",
          "status", "customer", "invoice", "report", "summary", "search", "result", "source", "draft",
          "review", "plan", "step"]


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def synthetic_durable_state(entries: int, *, seed: int = 7, schema_version: str = "1.1.0") -> dict[str, Any]:
    """A durable agent state of ``entries`` entries, alternating request and response.

    Responses call a tool, get its result and answer in text, as agent turns do; about
    600 bytes an entry, so 10,000 entries make a document of about 6 MB.
    """
    rng = random.Random(seed)
    history: list[dict[str, Any]] = []
    for index in range(entries):
        correlation = f"{rng.getrandbits(128):032x}"
        stamp = f"2025-11-04T19:{index // 60 % 60:02d}:{index % 60:02d}.{rng.randrange(10**6):06d}+00:00"
        if index % 2 == 0:
            history.append({
                "$type": "request",
                "responseType": "text",
                "correlationId": correlation,
                "createdAt": stamp,
                "messages": [{"role": "user", "contents": [{"$type": "text", "text": _sentence(rng, 24)}]}],
            })
            continue
        call_id = f"call_{rng.getrandbits(64):016x}"
        history.append({
            "$type": "response",
            "usage": {"inputTokenCount": rng.randrange(50, 900), "outputTokenCount": rng.randrange(10, 200),
                      "totalTokenCount": rng.randrange(60, 1100)},
            "correlationId": correlation,
            "createdAt": stamp,
            "messages": [
                {"authorName": "Agent", "createdAt": stamp, "role": "assistant", "contents": [
                    {"$type": "functionCall", "callId": call_id, "name": "lookup",
                     "arguments": {"query": rng.choice(_WORDS), "limit": rng.randrange(1, 10)}}]},
                {"authorName": "Agent", "createdAt": stamp, "role": "tool", "contents": [
                    {"$type": "functionResult", "callId": call_id, "result": _sentence(rng, 8)}]},
                {"authorName": "Agent", "createdAt": stamp, "role": "assistant", "contents": [
                    {"$type": "text", "text": _sentence(rng, 40)}]},
            ],
        })
    return {"schemaVersion": schema_version, "data": {"conversationHistory": history}}
