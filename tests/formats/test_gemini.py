from __future__ import annotations

import copy
from pathlib import Path

import orjson
from google.genai import types as genai
from hypothesis import HealthCheck, given, settings

from agentfolio import _json
from agentfolio.formats import gemini, registry
from agentfolio.formats.convert import convert
from agentfolio.model import FunctionCallContent, ReasoningContent, Session
from tests.provider_strategies import gemini_requests, gemini_responses
from tests.strategies import durable_states

GALLERY = Path(__file__).resolve().parents[1] / "fixtures" / "gemini" / "gallery.json"


def gallery() -> dict:
    return orjson.loads(GALLERY.read_bytes())


def sdk_accepts(document: dict) -> None:
    """Every content (and the system instruction) as google-genai's own types read it."""
    for content in document["contents"]:
        genai.Content.model_validate(content)
    for key in ("systemInstruction", "system_instruction"):
        if key in document:
            genai.Content.model_validate(document[key])


def test_gallery_is_what_the_sdk_accepts_and_reads_back_whole() -> None:
    document = gallery()
    sdk_accepts(document)
    assert registry.detect(document) is gemini.FORMAT
    assert gemini.validate(document) == []
    assert gemini.write(gemini.read(copy.deepcopy(document)).session) == document


def test_thoughts_and_signatures_map_onto_the_shared_model() -> None:
    session = gemini.read(gallery()).session
    contents = [c for _, m in session.messages() for c in m.items]
    thought = next(c for c in contents if isinstance(c, ReasoningContent))
    assert thought.protected_data == "Q2lRQjBlMktiMFozbTJXMXJZ"
    call = next(c for c in contents if isinstance(c, FunctionCallContent) and not c.informational_only)
    assert (call.call_id, call.arguments, call.extra["thoughtSignature"]) == ("call-1", {"city": "Paris"},
                                                                              "Q2l3QjBlMktiN2Y2WHg5d0xx")
    assert [m.role for _, m in session.messages()][:3] == ["system", "user", "assistant"]


def test_a_history_through_durable_state_comes_back_as_gemini_accepts_it() -> None:
    """Signatures on thoughts and calls, id-less code execution, unknown parts: all back."""
    document = gallery()
    durable = convert(copy.deepcopy(document), to="durable-state")
    assert registry.get("durable-state").validate(durable.result) == []
    back = convert(durable.result, to="gemini")
    assert back.result == document
    sdk_accepts(back.result)


def test_snake_case_documents_are_written_back_in_snake_case() -> None:
    document = {"system_instruction": {"parts": [{"text": "Be brief."}]},
                "contents": [{"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": "aGk="}}]},
                             {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}},
                                                          "thought_signature": "c2ln"}]}]}
    sdk_accepts(document)
    read = gemini.read(copy.deepcopy(document))
    assert gemini.write(read.session) == document
    assert convert(convert(document, to="durable-state").result, to="gemini").result == document


def test_a_response_reads_with_its_usage_and_writes_back_whole() -> None:
    response = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "finishReason": "STOP",
                                "index": 0}],
                "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 1, "totalTokenCount": 9,
                                  "thoughtsTokenCount": 4},
                "modelVersion": "gemini-2.5-pro", "responseId": "abc"}
    genai.GenerateContentResponse.model_validate(response)
    read = gemini.read(copy.deepcopy(response))
    assert read.session.entries[0].usage.total_token_count == 9
    assert gemini.write(read.session) == response


_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(gemini_requests)
def test_any_request_reads_and_writes_back_the_same_json(document: dict) -> None:
    assert gemini.validate(document) == []
    read = gemini.read(copy.deepcopy(document))
    assert gemini.write(read.session) == document
    copied = Session.model_validate(_json.loads(_json.dumps(read.session.to_json_value())))
    assert gemini.write(copied) == document


@_SETTINGS
@given(gemini_responses)
def test_any_response_reads_and_writes_back_the_same_json(document: dict) -> None:
    assert gemini.write(gemini.read(copy.deepcopy(document)).session) == document


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(durable_states)
def test_whatever_is_converted_in_is_what_the_validator_and_the_sdk_accept(document: dict) -> None:
    conversion = convert(document, to="gemini", strict_read=False)
    assert gemini.validate(conversion.result) == []
    sdk_accepts(conversion.result)


def test_a_signature_another_provider_made_is_flagged_where_gemini_would_refuse_it() -> None:
    anthropic = orjson.loads((GALLERY.parents[1] / "anthropic" / "gallery.json").read_bytes())
    flagged = [loss for loss in convert(anthropic, to="gemini").losses if loss.what == "reasoning signature"]
    assert flagged and all("made by anthropic" in loss.why for loss in flagged)
    there = convert(gallery(), to="durable-state")
    assert not [loss for loss in convert(there.result, to="gemini").losses if loss.what == "reasoning signature"]
