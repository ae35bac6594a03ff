"""Benchmark: reading and writing a 10,000-message history in each provider format.

Each format's history is its gallery fixture's messages repeated to 10,000 messages (so
every block kind is in it), measured in one run beside its baselines:

* read: bytes → ``orjson.loads`` → the format's reader (validation included) → the
  canonical model, against ``orjson.loads`` of the same bytes (target ≤ 4x);
* write: the model → the format's writer → ``orjson.dumps``, against ``orjson.dumps``
  of the parsed document (target ≤ 3x);
* sdk: the provider SDK's own validation of the same parsed payload (anthropic's and
  openai's request TypedDicts through pydantic, google-genai's ``Content`` models,
  LangChain's ``messages_from_dict``, a2a-sdk's protobuf ``ParseDict``).

Each figure is the best of several runs with the cyclic garbage collector paused.
Usage: python bench/formats.py [--messages N] [--repeat K]
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from agentfolio.formats import registry
from bench._timing import best_of

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def _grown(items: list[Any], count: int) -> list[Any]:
    return [copy.deepcopy(items[i % len(items)]) for i in range(count)]


def histories(count: int) -> dict[str, tuple[dict[str, Any] | list[Any], Callable[[Any], Any]]]:
    """Each format's 10,000-message document and the SDK validation of it."""
    from a2a.types import Task
    from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming
    from google.genai import types as genai
    from google.protobuf.json_format import ParseDict
    from langchain_core.messages import messages_from_dict
    from openai.types.responses import ResponseInputParam
    from pydantic import TypeAdapter

    from tests.provider_strategies import materialized

    def load(name: str) -> Any:
        return orjson.loads((FIXTURES / name / "gallery.json").read_bytes())

    anthropic = load("anthropic")
    anthropic["messages"] = _grown(anthropic["messages"], count)
    responses = load("openai_responses")
    responses["input"] = _grown(responses["input"], count)
    gemini = load("gemini")
    gemini["contents"] = _grown(gemini["contents"], count)
    langchain = _grown(load("langchain"), count)
    a2a = load("a2a")
    a2a["history"] = _grown(a2a["history"], count)
    anthropic_params, responses_input = TypeAdapter(MessageCreateParamsNonStreaming), TypeAdapter(ResponseInputParam)
    return {
        "anthropic": (anthropic, lambda d: materialized(anthropic_params.validate_python(d))),
        "openai-responses": (responses, lambda d: materialized(responses_input.validate_python(d["input"]))),
        "gemini": (gemini, lambda d: [genai.Content.model_validate(c) for c in d["contents"]]),
        "langchain": (langchain, messages_from_dict),
        "a2a": (a2a, lambda d: ParseDict(d, Task())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.messages:,} messages per format, best of {args.repeat}; ratios against orjson in the same run")
    print(f"{'format':<18}{'MB':>6}{'loads ms':>10}{'read ms':>9}{'read/loads':>11}{'dumps ms':>10}"
          f"{'write ms':>10}{'write/dumps':>12}{'sdk ms':>9}{'sdk/read':>9}")
    for name, (document, sdk) in histories(args.messages).items():
        measure(name, document, sdk, args.repeat)


def measure(name: str, document: Any, sdk: Callable[[Any], Any], repeat: int) -> None:
    """One format's row: read and write against orjson, and the SDK's validation."""
    fmt = registry.get(name)
    data = orjson.dumps(document)
    session = fmt.read(orjson.loads(data)).session
    assert orjson.loads(orjson.dumps(fmt.write(session))) == document, f"{name}: write is not the identity"
    loads = best_of(repeat, lambda: orjson.loads(data))
    read = best_of(repeat, lambda: fmt.read(orjson.loads(data)))
    parsed = orjson.loads(data)
    dumps = best_of(repeat, lambda: orjson.dumps(parsed))
    write = best_of(repeat, lambda: orjson.dumps(fmt.write(session)))
    sdk_time = best_of(1, lambda: sdk(orjson.loads(data)))
    print(f"{name:<18}{len(data) / 1e6:>6.1f}{loads * 1e3:>10.1f}{read * 1e3:>9.1f}{read / loads:>10.1f}x"
          f"{dumps * 1e3:>10.1f}{write * 1e3:>10.1f}{write / dumps:>11.1f}x{sdk_time * 1e3:>9.1f}"
          f"{sdk_time / read:>8.2f}x")


if __name__ == "__main__":
    main()
