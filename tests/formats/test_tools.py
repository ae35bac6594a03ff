"""Tool definitions between providers: each spelling reads into the canonical tool and is
written in every other one, checked by the providers' own types; what cannot be carried
(built-in tools, provider-only properties, Gemini's OpenAPI schema dialect) is reported."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from agentfolio.formats import tools
from agentfolio.formats.convert import convert
from agentfolio.formats.losses import Recorder
from agentfolio.model import ToolDescription
from tests.strategies import json_values, text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture(path: str) -> Any:
    return orjson.loads((FIXTURES / path).read_bytes())


def sdk_accepts(spelling: str, written: list[Any]) -> None:
    """The provider's own types take the list (raise if they refuse it)."""
    if spelling == "openai-chat":
        from openai.types.chat import ChatCompletionToolParam

        TypeAdapter(list[ChatCompletionToolParam]).validate_python(written)
    elif spelling == "openai-responses":
        from openai.types.responses import ToolParam

        TypeAdapter(list[ToolParam]).validate_python(written)
    elif spelling == "anthropic":
        from anthropic.types import ToolUnionParam

        TypeAdapter(list[ToolUnionParam]).validate_python(written)
    elif spelling == "gemini":
        from google.genai import types

        for tool in written:
            types.Tool.model_validate(tool)


_GALLERIES = {"anthropic": "anthropic/gallery.json", "openai-responses": "openai_responses/gallery.json",
              "gemini": "gemini/gallery.json", "openai-chat": "openai/chat-request.json"}


@pytest.mark.parametrize("target", list(_GALLERIES))
@pytest.mark.parametrize("source", [*_GALLERIES, "otel-genai", "envelope"])
def test_every_gallery_s_tools_arrive_in_the_target_s_spelling(source: str, target: str) -> None:
    if source == target:
        return
    path = {"otel-genai": "otel_genai/gallery.json", "envelope": "envelope/gallery.json"}.get(source,
                                                                                            _GALLERIES.get(source))
    conversion = convert(fixture(str(path)), to=target)
    written = conversion.result["tools"]
    sdk_accepts(target, written)
    names = [tool.name for tool in tools.function_tools(written)]
    assert "get_weather" in names
    # A tool with no form in the target is reported where it stood, not silently dropped.
    assert all(loss.pointer for loss in conversion.losses if loss.what.startswith("tool"))


def test_built_in_tools_and_provider_only_properties_are_reported() -> None:
    responses = fixture("openai_responses/gallery.json")
    conversion = convert(responses, to="anthropic")
    reported = {(loss.pointer, loss.what) for loss in conversion.losses}
    assert ("/tools/1", "tool 'web_search'") in reported
    assert ("/tools/0/strict", "tool property 'strict'") in reported
    assert conversion.result["tools"] == [{"name": "get_weather", "description": "Weather for a city",
                                           "input_schema": responses["tools"][0]["parameters"]}]


def test_gemini_openapi_schemas_become_json_schema_and_say_so() -> None:
    gemini = fixture("gemini/gallery.json")
    conversion = convert(gemini, to="openai-chat")
    parameters = conversion.result["tools"][0]["function"]["parameters"]
    assert parameters == {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert any(loss.approximated and "OpenAPI" in loss.why for loss in conversion.losses)


def test_tools_in_the_target_s_own_spelling_stay_as_read() -> None:
    anthropic = fixture("anthropic/gallery.json")
    back = convert(convert(copy.deepcopy(anthropic), to="durable-state").result, to="anthropic")
    assert back.result["tools"] == anthropic["tools"]  # server tool, cache hints and all


def test_an_envelope_tool_overview_becomes_the_request_s_tools() -> None:
    envelope = fixture("envelope/gallery.json")
    conversion = convert(envelope, to="anthropic")
    assert [tool["name"] for tool in conversion.result["tools"]] == ["get_weather", "search_trains"]
    moved = [loss for loss in conversion.losses if loss.what in ("tool catalog", "message")]
    assert moved and all(loss.approximated for loss in moved)
    # Its parameters line is no schema: reported, and an empty object schema stands in.
    assert any(loss.what == "tool 'search_trains' parameters line" for loss in conversion.losses)
    assert conversion.result["tools"][1]["input_schema"] == {"type": "object"}


_schemas = st.one_of(st.none(), st.just({"type": "object", "properties": {"q": {"type": "string"}}}),
                     st.dictionaries(st.sampled_from(["type", "description", "x-extra"]), json_values, max_size=2))


@settings(max_examples=60, deadline=None)
# Responses writes an absent schema as "parameters": null; Anthropic needs one.
@example("0", None, None, "openai-responses", "anthropic")
@given(st.text(min_size=1, max_size=20), st.one_of(st.none(), text), _schemas,
       st.sampled_from(["openai-chat", "openai-responses", "anthropic", "gemini", "otel-genai"]),
       st.sampled_from(["openai-chat", "openai-responses", "anthropic", "gemini", "otel-genai"]))
def test_a_tool_written_in_one_spelling_reads_back_in_another(name: str, description: str | None, schema: Any,
                                                               first: str, second: str) -> None:
    known: dict[str, Any] = {"name": name, "description": description or ""}
    if schema is not None:
        known["json_schema"] = schema
    tool = ToolDescription(**known)
    once = tools.lower_tools(Recorder(None), None, "tools", "", None, tools.SPELLINGS[first], [(tool, None, "")])
    rec = Recorder(None)
    twice = tools.lower_tools(rec, None, "tools", "", once, tools.SPELLINGS[second])
    read = tools.function_tools(twice or ())
    assert [(t.name, t.description) for t in read] == [(name, description or "")]
    if schema is not None:
        assert read[0].json_schema == schema
    elif tools.SPELLINGS[first].needs_schema or tools.SPELLINGS[second].needs_schema:
        assert read[0].json_schema == {"type": "object"}  # supplied, and reported
        assert rec.losses or tools.SPELLINGS[first].needs_schema
