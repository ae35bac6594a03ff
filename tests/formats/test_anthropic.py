from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest
from anthropic.types import Message as SdkMessage
from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming
from hypothesis import HealthCheck, given, settings
from pydantic import TypeAdapter

from agentfolio import _json
from agentfolio.formats import anthropic, registry
from agentfolio.formats.convert import convert
from agentfolio.model import FunctionCallContent, ReasoningContent, Session, TextContent
from tests.provider_strategies import anthropic_requests, anthropic_responses, materialized
from tests.strategies import durable_states

GALLERY = Path(__file__).resolve().parents[1] / "fixtures" / "anthropic" / "gallery.json"
REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)


def gallery() -> dict:
    return orjson.loads(GALLERY.read_bytes())


def sdk_request(document: dict) -> dict:
    """The document as the SDK's own request params type validates it (raises if refused)."""
    return materialized(REQUEST.validate_python(document))


def test_gallery_is_a_request_the_sdk_accepts_and_reads_back_whole() -> None:
    document = gallery()
    sdk_request(document)
    assert registry.detect(document) is anthropic.FORMAT
    assert anthropic.validate(document) == []
    read = anthropic.read(copy.deepcopy(document))
    assert anthropic.write(read.session) == document


def test_thinking_signatures_and_server_tools_map_onto_the_shared_model() -> None:
    session = anthropic.read(gallery()).session
    contents = [c for _, m in session.messages() for c in m.items]
    reasoning = [c for c in contents if isinstance(c, ReasoningContent)]
    assert [(r.text is None, r.protected_data[:6]) for r in reasoning] == [(False, "EqQBCg"), (True, "EmwKAh")]
    server = [c.name for c in contents if isinstance(c, FunctionCallContent) and c.informational_only]
    assert server == ["web_search", "lookup"]
    cited = next(c for c in contents if isinstance(c, TextContent) and c.annotations)
    assert [(a.title, a.url, a.snippet) for a in cited.annotations] == [
        ("Paris forecast", "https://example.com/paris", "15 degrees, cloudy"),
        ("Q3 report", None, "Revenue grew 12%")]


@pytest.mark.parametrize("via", ["durable-state", "canonical"])
def test_through_durable_state_and_back_the_provider_data_survives(via: str) -> None:
    document = gallery()
    there = convert(copy.deepcopy(document), to=via)
    back = convert(there.result, to="anthropic")
    assert back.result == document  # signatures, redacted data, cache hints, ids, unknown blocks
    # Besides the version, only the entry times and correlation ids durable state made up.
    assert {loss.what for loss in back.losses} <= {"schemaVersion", "createdAt", "correlationId"}


def test_a_lossy_conversion_names_what_it_lost() -> None:
    conversion = convert(gallery(), to="openai-chat")
    dropped = {(loss.what, loss.pointer) for loss in conversion.losses if not loss.approximated}
    assert ("reasoning content", "/messages/2/content/0") in dropped
    assert ("property 'cache_control'", "/system/0/cache_control") in dropped


def test_a_response_reads_with_its_usage_and_writes_back_whole() -> None:
    response = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "thinking", "thinking": "hm", "signature": "c2ln"},
                            {"type": "text", "text": "Hello"}],
                "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 12, "output_tokens": 7, "cache_read_input_tokens": 5,
                          "cache_creation_input_tokens": 0}}
    SdkMessage.model_validate(response)
    read = anthropic.read(copy.deepcopy(response))
    entry = read.session.entries[0]
    assert (entry.usage.input_token_count, entry.usage.extra["cache_read_input_tokens"]) == (12, 5)
    written = anthropic.write(read.session)
    assert written == response
    assert SdkMessage.model_validate(written).model_dump(exclude_unset=True) == SdkMessage.model_validate(
        response).model_dump(exclude_unset=True)


def test_bad_documents_are_refused_with_a_pointer() -> None:
    bad = {"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_use", "id": "x"}]}]}
    problems = anthropic.validate(bad)
    assert [p.pointer for p in problems] == ["/messages/0/content/0/name", "/messages/0/content/0/input"]
    with pytest.raises(Exception, match="name"):
        anthropic.read(bad)


_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(anthropic_requests)
def test_any_request_reads_and_writes_back_the_same_json(document: dict) -> None:
    assert anthropic.validate(document) == []
    read = anthropic.read(copy.deepcopy(document))
    assert anthropic.write(read.session) == document
    # Through the model's own JSON too (a copy that forgets where it was read from).
    copied = Session.model_validate(_json.loads(_json.dumps(read.session.to_json_value())))
    assert anthropic.write(copied) == document


@_SETTINGS
@given(anthropic_responses)
def test_any_response_reads_and_writes_back_the_same_json(document: dict) -> None:
    read = anthropic.read(copy.deepcopy(document))
    assert anthropic.write(read.session) == document


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(durable_states)
def test_whatever_is_converted_in_is_a_request_the_validator_and_the_sdk_accept(document: dict) -> None:
    conversion = convert(document, to="anthropic", strict_read=False)
    assert anthropic.validate(conversion.result) == []
    sdk_request({"model": "m", "max_tokens": 1, **conversion.result})


def test_a_signature_another_provider_made_is_flagged_where_anthropic_would_refuse_it() -> None:
    gemini = orjson.loads((GALLERY.parents[1] / "gemini" / "gallery.json").read_bytes())
    conversion = convert(gemini, to="anthropic")
    flagged = [loss for loss in conversion.losses if loss.what == "reasoning signature"]
    assert flagged and all(loss.approximated and "made by gemini" in loss.why for loss in flagged)
    # Anthropic's own signatures, through durable state and back, are its own: nothing flagged.
    there = convert(gallery(), to="durable-state")
    assert not [loss for loss in convert(there.result, to="anthropic").losses if loss.what == "reasoning signature"]
    # Nor does the marker that says whose they are ever reach a request.
    assert "$form" not in orjson.dumps(convert(there.result, to="anthropic").result).decode()
