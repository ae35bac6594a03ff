from __future__ import annotations

import copy
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from openai.types.responses import Response, ResponseInputParam
from pydantic import TypeAdapter

from agentfolio import _json
from agentfolio.formats import openai_responses, registry
from agentfolio.formats.convert import convert
from agentfolio.model import FunctionCallContent, ReasoningContent, Session, TextContent
from tests.formats.sdk_check import accepted
from tests.provider_strategies import responses_requests, responses_responses
from tests.strategies import durable_states

GALLERY = Path(__file__).resolve().parents[1] / "fixtures" / "openai_responses" / "gallery.json"
INPUT = TypeAdapter(ResponseInputParam)


def gallery() -> dict:
    return orjson.loads(GALLERY.read_bytes())


def test_gallery_is_input_the_sdk_accepts_and_reads_back_whole() -> None:
    document = gallery()
    accepted(INPUT, document["input"])
    assert registry.detect(document) is openai_responses.FORMAT
    assert openai_responses.validate(document) == []
    assert openai_responses.write(openai_responses.read(copy.deepcopy(document)).session) == document


def test_items_map_onto_the_shared_model() -> None:
    session = openai_responses.read(gallery()).session
    contents = [c for _, m in session.messages() for c in m.items]
    reasoning = next(c for c in contents if isinstance(c, ReasoningContent))
    assert (reasoning.text, reasoning.protected_data) == ("The user wants the weather; call get_weather.",
                                                          "gAAAAABor0BAXtD6d3hh8kVbD2p8")
    assert [c.name for c in contents if isinstance(c, FunctionCallContent) and c.informational_only] == [
        "web_search", "file_search", "code_interpreter", "lookup"]
    cited = next(c for c in contents if isinstance(c, TextContent) and c.annotations)
    assert [(a.url, a.file_id) for a in cited.annotations] == [("https://example.com/paris", None),
                                                               (None, "file-abc123")]
    assert next(session.messages())[1].role == "system"  # the instructions


def test_through_canonical_and_back_nothing_changes() -> None:
    document = gallery()
    there = convert(copy.deepcopy(document), to="canonical")
    back = convert(there.result, to="openai-responses")
    assert back.result == document and back.losses == []


def test_a_response_object_reads_with_its_usage_and_writes_back_whole() -> None:
    response = {"id": "resp_1", "object": "response", "created_at": 1741476542, "status": "completed",
                "model": "gpt-5", "output": [
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                          "input_tokens_details": {"cached_tokens": 2, "cache_write_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 3}}}
    Response.model_validate(response)
    read = openai_responses.read(copy.deepcopy(response))
    assert read.session.entries[0].usage.total_token_count == 15
    written = openai_responses.write(read.session)
    assert written == response
    Response.model_validate(written)


def test_anthropic_thinking_converts_with_its_foreign_signature_reported() -> None:
    document = orjson.loads((GALLERY.parents[1] / "anthropic" / "gallery.json").read_bytes())
    conversion = convert(document, to="openai-responses")
    assert openai_responses.validate(conversion.result) == []
    accepted(INPUT, conversion.result["input"])
    assert ("protectedData", "/messages/2/content/0/signature") in {(loss.what, loss.pointer)
                                                                    for loss in conversion.losses}


_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(responses_requests)
def test_any_request_reads_and_writes_back_the_same_json(document: dict) -> None:
    assert openai_responses.validate(document) == []
    read = openai_responses.read(copy.deepcopy(document))
    assert openai_responses.write(read.session) == document
    copied = Session.model_validate(_json.loads(_json.dumps(read.session.to_json_value())))
    assert openai_responses.write(copied) == document


@_SETTINGS
@given(responses_responses)
def test_any_response_reads_and_writes_back_the_same_json(document: dict) -> None:
    assert openai_responses.write(openai_responses.read(copy.deepcopy(document)).session) == document


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(durable_states)
def test_whatever_is_converted_in_is_input_the_validator_and_the_sdk_accept(document: dict) -> None:
    conversion = convert(document, to="openai-responses", strict_read=False)
    assert openai_responses.validate(conversion.result) == []
    items = conversion.result["input"]
    accepted(INPUT, [{"role": "user", "content": items}] if isinstance(items, str) else items)
