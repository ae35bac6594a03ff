"""OpenTelemetry GenAI messages as a format: the published schemas, every part kind, JSON
text spelled as instrumentations spell it, and the one conversion path."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from agentfolio import _json
from agentfolio.formats import otel_genai, registry
from agentfolio.formats.convert import convert
from agentfolio.model import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    OpaqueContent,
    ReasoningContent,
    Session,
    TextContent,
    ToolCatalogContent,
    UriContent,
)
from tests.provider_strategies import otel_documents
from tests.strategies import durable_states

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GALLERY = FIXTURES / "otel_genai" / "gallery.json"
SAMPLE = FIXTURES / "durable_state" / "durable-agent-state.sample.json"


def gallery() -> dict:
    return orjson.loads(GALLERY.read_bytes())


def exact(value: object) -> bytes:
    return _json.dumps(value, option=orjson.OPT_SORT_KEYS)


def test_the_gallery_is_detected_valid_and_written_back_byte_for_byte() -> None:
    document = gallery()
    assert registry.detect(document) is otel_genai.FORMAT
    assert otel_genai.validate(document) == []
    read = otel_genai.read(copy.deepcopy(document))
    assert read.notes == []
    written = otel_genai.write(read.session)
    # The input messages are JSON text in util-genai's spelling (compact, "type" last):
    # the same string comes back, not just the same value.
    assert written["gen_ai.input.messages"] == document["gen_ai.input.messages"]
    assert exact(written) == exact(document)


def test_every_part_kind_maps_onto_the_shared_model() -> None:
    session = otel_genai.read(gallery()).session
    system, *_ = [m for _, m in session.messages()]
    assert [type(c) for c in system.items] == [TextContent, ToolCatalogContent]
    catalog = system.items[1]
    assert [(t.name, t.json_schema is not None) for t in catalog.items] == [("get_weather", True), ("web_search", False)]
    contents = [c for _, m in session.messages() for c in m.items]
    kinds = {type(c) for c in contents}
    assert {TextContent, ReasoningContent, FunctionCallContent, FunctionResultContent, DataContent, UriContent,
            HostedFileContent, OpaqueContent} <= kinds
    server = next(c for c in contents if isinstance(c, FunctionCallContent) and c.informational_only)
    assert (server.call_id, server.name, server.arguments["query"]) == ("srv_1", "web_search", "Paris weather today")
    blob = next(c for c in contents if isinstance(c, DataContent))
    assert blob.uri.startswith("data:image/png;base64,iVBOR") and blob.extra["modality"] == "image"
    unknown = next(c for c in contents if isinstance(c, OpaqueContent))
    assert unknown.kind == "otel-genai.x_citation_marker"
    output = session.entries[-1]
    assert [c.text for c in output.items[0].items] == ["It is sunny and 21°C in Paris."]
    assert (output.usage.input_token_count, output.usage.output_token_count) == (412, 18)


@pytest.mark.parametrize("spelling", ["compact", "compact-ascii", "python", "python-ascii"])
def test_json_text_comes_back_in_the_spelling_it_was_written_in(spelling: str) -> None:
    messages = [{"role": "user", "parts": [{"type": "text", "content": "héllo \"quoted\" ✓"}]}]
    options = {"compact": {"separators": (",", ":"), "ensure_ascii": False}, "compact-ascii": {"separators": (",", ":")},
               "python": {"ensure_ascii": False}, "python-ascii": {}}[spelling]
    document = {"gen_ai.input.messages": json.dumps(messages, **options)}  # type: ignore[arg-type]
    read = otel_genai.read(document)
    assert read.notes == []
    assert otel_genai.write(read.session) == document


def test_json_text_in_another_spelling_keeps_its_value_and_says_so() -> None:
    document = {"gen_ai.input.messages": '[ {"role":"user",  "parts":[]} ]'}
    read = otel_genai.read(document)
    assert [note.pointer for note in read.notes] == ["/gen_ai.input.messages"]
    written = otel_genai.write(read.session)
    assert json.loads(written["gen_ai.input.messages"]) == json.loads(document["gen_ai.input.messages"])


def test_a_tool_response_in_pydantic_ais_spelling_is_read_as_a_function_result_and_written_valid() -> None:
    # As Pydantic AI's instrumentation sets it (2.x, every format version): the response
    # under "result", which the published schema does not allow, the tool's name beside it.
    messages = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "pyd_ai_1", "name": "get_weather",
                                                 "arguments": {"city": "Paris"}}]},
                {"role": "user", "parts": [{"type": "tool_call_response", "id": "pyd_ai_1", "name": "get_weather",
                                            "result": "18C in Paris"}]}]
    document = {"gen_ai.input.messages": messages}
    assert [problem.pointer for problem in otel_genai.validate(document)] == ["/gen_ai.input.messages/1/parts/0"]
    read = otel_genai.read(copy.deepcopy(document), strict=False)
    result = read.session.entries[-1].items[-1].items[0]
    assert isinstance(result, FunctionResultContent)
    assert (result.call_id, result.result, result.extra) == ("pyd_ai_1", "18C in Paris", {"name": "get_weather"})
    written = otel_genai.write(read.session)
    assert written["gen_ai.input.messages"][1]["parts"] == [{"type": "tool_call_response", "id": "pyd_ai_1",
                                                             "response": "18C in Paris", "name": "get_weather"}]
    assert otel_genai.validate(written) == []
    durable = convert(copy.deepcopy(document), to="durable-state", strict_read=False).result
    contents = [content for entry in durable["data"]["conversationHistory"] for message in entry["messages"]
                for content in message["contents"]]
    assert [(content["$type"], content["callId"]) for content in contents] == [("functionCall", "pyd_ai_1"),
                                                                               ("functionResult", "pyd_ai_1")]
    assert contents[1]["result"] == "18C in Paris"


def test_schema_problems_point_into_the_attribute() -> None:
    bad = {"gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": 5}]}],
           "gen_ai.output.messages": [{"role": "assistant", "parts": []}],
           "gen_ai.tool.definitions": [{"type": "function"}],
           "gen_ai.usage.input_tokens": "12"}
    problems = {problem.pointer: problem.message for problem in otel_genai.validate(bad)}
    # A known part type is held to its own definition, not let through as a generic part.
    assert "string" in problems["/gen_ai.input.messages/0/parts/0/content"]
    assert "finish_reason" in problems["/gen_ai.output.messages/0"]
    assert "/gen_ai.tool.definitions/0" in problems
    assert problems["/gen_ai.usage.input_tokens"] == "expected an integer"
    assert otel_genai.validate({"gen_ai.input.messages": "[not json"})[0].pointer == "/gen_ai.input.messages"
    with pytest.raises(Exception, match="content"):
        otel_genai.read(bad)


def test_durable_state_converts_to_attributes_the_schemas_accept() -> None:
    document = orjson.loads(SAMPLE.read_bytes())
    conversion = convert(document, to="otel-genai")
    written = conversion.result
    assert otel_genai.validate(written) == []
    assert [m["role"] for m in written["gen_ai.input.messages"]][:2] == ["user", "assistant"]
    assert written["gen_ai.output.messages"][0]["finish_reason"] == "stop"
    assert written["gen_ai.usage.input_tokens"] == document["data"]["conversationHistory"][3]["usage"][
        "inputTokenCount"]
    what = {(loss.what, loss.approximated) for loss in conversion.losses}
    assert ("finish_reason", True) in what and ("totalTokenCount", False) in what
    assert "$form" not in written


def test_through_canonical_json_and_back_the_attributes_survive() -> None:
    document = gallery()
    there = convert(copy.deepcopy(document), to="canonical")
    back = convert(there.result, to="otel-genai", from_="canonical")
    assert there.losses == [] and back.losses == []
    assert exact(back.result) == exact(document)


def test_through_durable_state_and_back_only_what_was_reported_changes() -> None:
    document = gallery()
    there = convert(copy.deepcopy(document), to="durable-state")
    back = convert(there.result, to="otel-genai", from_="durable-state").result
    # Durable state has no type for tool definitions: written as text, and said so.
    reported = {(loss.pointer, loss.approximated) for loss in there.losses}
    assert ("/gen_ai.tool.definitions", True) in reported
    assert "gen_ai.tool.definitions" not in back
    assert back["gen_ai.system_instructions"][0] == document["gen_ai.system_instructions"][0]
    assert back["gen_ai.system_instructions"][1]["content"].startswith("Tools:\n- get_weather")
    # Everything else comes back as it was: parts, ids, server calls, JSON text spelling, usage.
    unchanged = {k: v for k, v in document.items() if k not in ("gen_ai.tool.definitions",
                                                                  "gen_ai.system_instructions")}
    assert exact({k: back[k] for k in unchanged}) == exact(unchanged)


def test_provider_tools_and_tool_overviews_become_tool_definitions() -> None:
    anthropic = orjson.loads((FIXTURES / "anthropic" / "gallery.json").read_bytes())
    conversion = convert(anthropic, to="otel-genai")
    tools = conversion.result["gen_ai.tool.definitions"]
    assert tools == [{"type": "function", "name": "get_weather", "description": "Weather for a city",
                      "parameters": anthropic["tools"][0]["input_schema"]}]
    # Anthropic's server tool has no GenAI function form: reported, not silently dropped.
    assert any(loss.pointer == "/tools/1" for loss in conversion.losses)
    envelope = orjson.loads((FIXTURES / "envelope" / "gallery.json").read_bytes())
    from_envelope = convert(envelope, to="otel-genai").result
    assert otel_genai.validate(from_envelope) == []
    assert from_envelope.get("gen_ai.tool.definitions")


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(otel_documents())
def test_any_document_reads_and_writes_back_the_same_json(document: dict) -> None:
    assert otel_genai.validate(document) == []
    read = otel_genai.read(copy.deepcopy(document))
    assert exact(otel_genai.write(read.session)) == exact(document)
    # Through the model's own JSON too (a copy that forgets where it was read from).
    copied = Session.model_validate(_json.loads(_json.dumps(read.session.to_json_value())))
    assert exact(otel_genai.write(copied)) == exact(document)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(durable_states)
def test_whatever_is_converted_in_is_what_the_schemas_accept(document: dict) -> None:
    conversion = convert(document, to="otel-genai", strict_read=False)
    assert otel_genai.validate(conversion.result) == []
