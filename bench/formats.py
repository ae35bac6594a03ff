"""Benchmark: reading and writing a 10,000-message history in each format.

Each format's history is its gallery fixture's messages repeated to 10,000 messages (so
every block kind is in it; a MessageBody holds one message, so it gets 10,000 parts),
measured in one run beside its baselines:

* read: ``orjson.loads`` of the bytes → the format's reader (the whole document checked
  against the format's rules; the session's records are built on first use), against
  ``orjson.loads`` of the same bytes (target ≤ 4x);
* build: the same read with every record of the session built (what ``show``,
  ``convert`` and the viewer pay), against the same ``orjson.loads``;
* write: the session read → the format's writer → ``orjson.dumps``, against
  ``orjson.dumps`` of the parsed document (target ≤ 3x).  A session read in a format
  writes back the document it was read from (records are immutable, so it is exactly
  what they would write); "records" writes a copy that forgot it, through the writer's
  own code;
* floor: what pure Python can do at all: the parsed document rebuilt down to its
  blocks (every dict and list of the document, its messages, their content arrays and
  each block made anew by a dict/list comprehension; what lies inside a block is reused,
  as the writers reuse extras) → ``orjson.dumps``, against ``orjson.dumps``.  A writer
  from records cannot beat it: it builds the same dicts and has records to read first;
* sdk: the provider SDK's own validation of the same parsed payload (anthropic's and
  openai's request TypedDicts through pydantic, google-genai's ``Content`` models,
  LangChain's ``messages_from_dict``, a2a-sdk's protobuf ``ParseDict``), against our
  build.

Each figure is the best of several runs with the cyclic garbage collector paused.
Usage: python bench/formats.py [--messages N] [--repeat K] [--only NAME ...]
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


# How deep the containers a writer builds go: document → messages → message → contents
# → block (a MessageBody: document → parts → part).
FLOOR_DEPTH = {"message-body": 3}


def rebuilt(value: Any, depth: int) -> Any:
    """``value`` with its dicts and lists made anew down to ``depth`` levels (the floor):
    a comprehension per container, a plain copy at the last level."""
    if type(value) is dict:
        if depth == 1:
            return value.copy()
        return {key: rebuilt(item, depth - 1) for key, item in value.items()}
    if type(value) is list:
        if depth == 1:
            return value.copy()
        return [rebuilt(item, depth - 1) for item in value]
    return value


def histories(count: int) -> dict[str, tuple[Any, Callable[[Any], Any] | None]]:
    """Each format's 10,000-message document and the SDK validation of it (None: no SDK)."""
    from a2a.types import Task
    from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming
    from google.genai import types as genai
    from google.protobuf.json_format import ParseDict
    from langchain_core.messages import messages_from_dict
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.responses import ResponseInputParam
    from pydantic import TypeAdapter

    from tests.provider_strategies import materialized

    def load(name: str) -> Any:
        return orjson.loads((FIXTURES / name).read_bytes())

    anthropic = load("anthropic/gallery.json")
    anthropic["messages"] = _grown(anthropic["messages"], count)
    responses = load("openai_responses/gallery.json")
    responses["input"] = _grown(responses["input"], count)
    gemini = load("gemini/gallery.json")
    gemini["contents"] = _grown(gemini["contents"], count)
    langchain = _grown(load("langchain/gallery.json"), count)
    a2a = load("a2a/gallery.json")
    a2a["history"] = _grown(a2a["history"], count)
    chat = load("openai/chat-request.json")
    chat["messages"] = _grown(chat["messages"], count)
    envelope = load("envelope/gallery.json")
    envelope["messages"] = _grown(envelope["messages"], count)
    body = load("message_body/gallery.json")
    body["parts"] = [{**part, "name": f"/parts/{index}"} if "name" in part else part
                     for index, part in enumerate(_grown(body["parts"], count))]
    anthropic_params, responses_input = TypeAdapter(MessageCreateParamsNonStreaming), TypeAdapter(ResponseInputParam)
    chat_messages = TypeAdapter(list[ChatCompletionMessageParam])
    return {
        "anthropic": (anthropic, lambda d: materialized(anthropic_params.validate_python(d))),
        "openai-responses": (responses, lambda d: materialized(responses_input.validate_python(d["input"]))),
        "gemini": (gemini, lambda d: [genai.Content.model_validate(c) for c in d["contents"]]),
        "langchain": (langchain, messages_from_dict),
        "a2a": (a2a, lambda d: ParseDict(d, Task())),
        "openai-chat": (chat, lambda d: materialized(chat_messages.validate_python(d["messages"]))),
        "envelope": (envelope, None),
        "message-body": (body, None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", metavar="NAME", help="measure only these formats")
    args = parser.parse_args()
    print(f"{args.messages:,} messages per format, best of {args.repeat}; ratios against orjson in the same run")
    print(f"{'format':<17}{'MB':>5}{'loads ms':>9}{'read/loads':>11}{'build/loads':>12}{'dumps ms':>9}"
          f"{'write/dumps':>12}{'records/dumps':>14}{'floor/dumps':>12}{'sdk/build':>10}")
    for name, (document, sdk) in histories(args.messages).items():
        if not args.only or name in args.only:
            measure(name, document, sdk, args.repeat)


def measure(name: str, document: Any, sdk: Callable[[Any], Any] | None, repeat: int) -> None:
    """One format's row: read, build and write against orjson, and the SDK's validation."""
    fmt = registry.get(name)
    data = orjson.dumps(document)
    result = fmt.read(orjson.loads(data))
    assert result.problems == [], f"{name}: {result.problems[:3]}"
    session = result.session
    forgetful = session.model_copy(deep=True)  # writes through the writer's own code
    assert forgetful.document_read_as(name) is None
    for written in (fmt.write(session), fmt.write(forgetful)):
        assert orjson.loads(orjson.dumps(written)) == document, f"{name}: write is not the identity"
    loads = best_of(repeat, lambda: orjson.loads(data))
    read = best_of(repeat, lambda: fmt.read(orjson.loads(data)))
    build = best_of(repeat, lambda: fmt.read(orjson.loads(data)).session)
    parsed = orjson.loads(data)
    dumps = best_of(repeat, lambda: orjson.dumps(parsed))
    write = best_of(repeat, lambda: orjson.dumps(fmt.write(session)))
    records = best_of(repeat, lambda: orjson.dumps(fmt.write(forgetful)))
    depth = FLOOR_DEPTH.get(name, 5)
    assert rebuilt(parsed, depth) == parsed
    floor = best_of(repeat, lambda: orjson.dumps(rebuilt(parsed, depth)))
    sdk_ratio = f"{best_of(1, lambda: sdk(orjson.loads(data))) / build:>9.2f}x" if sdk else f"{'—':>10}"
    print(f"{name:<17}{len(data) / 1e6:>5.1f}{loads * 1e3:>9.1f}{read / loads:>10.1f}x{build / loads:>11.1f}x"
          f"{dumps * 1e3:>9.1f}{write / dumps:>11.1f}x{records / dumps:>13.1f}x"
          f"{floor / dumps:>11.1f}x{sdk_ratio}")


if __name__ == "__main__":
    main()
