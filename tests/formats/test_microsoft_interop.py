"""agentfolio against Microsoft's own durable-state classes (agent-framework-durabletask).

Both directions must agree on every message and content; and where the Microsoft
classes lose data (unknown properties, unknown contents, createdAt spelling, 2.0
fields, foreign majors), these tests show it, and show that agentfolio does not.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

# A dev dependency: installed by `make test`, so a missing package fails loudly.
import agent_framework_durabletask._durable_agent_state as ms_state
import orjson
import pytest

from agentfolio.formats import durable_state
from agentfolio.formats.convert import convert
from agentfolio.formats.errors import UnsupportedVersionError
from agentfolio.formats.jsonio import load_json_file
from agentfolio.model import (
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ReasoningContent,
    RequestEntry,
    ResponseEntry,
    Session,
    SessionData,
    TextContent,
    UriContent,
    Usage,
)

DurableAgentState = ms_state.DurableAgentState


def microsoft_round_trip(document: dict) -> dict:
    # json round trip: Microsoft's to_dict holds str-Enum $type values.
    return json.loads(json.dumps(DurableAgentState.from_dict(json.loads(json.dumps(document))).to_dict()))


def describe_agentfolio(session: Session) -> list:
    """Every message as (entry kind, role, author, [(content kind, payload...)])."""
    described = []
    for entry, message in session.messages():
        contents = []
        for content in message.items:
            if isinstance(content, TextContent):
                contents.append(("text", content.text))
            elif isinstance(content, FunctionCallContent):
                contents.append(("functionCall", content.call_id, content.name, content.arguments))
            elif isinstance(content, FunctionResultContent):
                contents.append(("functionResult", content.call_id, content.result))
            elif isinstance(content, ReasoningContent):
                contents.append(("reasoning", content.text))
            elif isinstance(content, UriContent):
                contents.append(("uri", content.uri, content.media_type))
            else:
                contents.append((content.kind,))
        described.append((entry.kind, message.role, message.author_name, contents))
    return described


def describe_microsoft(state: object) -> list:
    names = {
        "DurableAgentStateTextContent": lambda c: ("text", c.text),
        "DurableAgentStateFunctionCallContent": lambda c: ("functionCall", c.call_id, c.name, c.arguments),
        "DurableAgentStateFunctionResultContent": lambda c: ("functionResult", c.call_id, c.result),
        "DurableAgentStateTextReasoningContent": lambda c: ("reasoning", c.text),
        "DurableAgentStateUriContent": lambda c: ("uri", c.uri, c.media_type),
    }
    described = []
    for entry in state.data.conversation_history:
        kind = "request" if type(entry).__name__.endswith("Request") else "response"
        for message in entry.messages:
            contents = [names[type(c).__name__](c) for c in message.contents]
            described.append((kind, message.role, message.author_name, contents))
    return described


def agentfolio_session() -> Session:
    return Session(data=SessionData(conversation_history=[
        RequestEntry(correlation_id="corr-1", created_at="2025-11-04T19:33:05.1+00:00", response_type="text",
                     orchestration_id="orch-1", messages=[
                         Message(role="user", contents=[TextContent(text="Weather in Paris?"),
                                                        UriContent(uri="https://x.test/a.png", media_type="image/png")])]),
        ResponseEntry(correlation_id="corr-1", created_at="2025-11-04T19:33:10.47008+00:00",
                      usage=Usage(input_token_count=10, output_token_count=5, total_token_count=15), messages=[
            Message(role="assistant", author_name="WeatherAgent", contents=[
                ReasoningContent(text="need the weather tool"),
                FunctionCallContent(call_id="call_1", name="get_weather", arguments={"city": "Paris"})]),
            Message(role="tool", contents=[FunctionResultContent(call_id="call_1", result="sunny, 21C")]),
            Message(role="assistant", author_name="WeatherAgent", contents=[TextContent(text="Sunny, 21C.")]),
        ]),
    ]))


def test_state_written_by_agentfolio_is_read_by_microsoft_classes() -> None:
    session = agentfolio_session()
    written = durable_state.write(session)
    state = DurableAgentState.from_dict(json.loads(orjson.dumps(written)))
    assert describe_microsoft(state) == describe_agentfolio(session)
    response = state.data.conversation_history[1]
    assert (response.usage.input_token_count, response.usage.output_token_count) == (10, 5)
    assert state.data.conversation_history[0].orchestration_id == "orch-1"


def test_state_serialized_by_microsoft_classes_is_read_by_agentfolio() -> None:
    from agent_framework import AgentResponse, Content, UsageDetails
    from agent_framework import Message as FrameworkMessage
    from agent_framework_durabletask._models import RunRequest

    state = DurableAgentState()
    request = RunRequest(message="What's the weather in Paris?", correlation_id="corr-1",
                         created_at=datetime(2025, 11, 4, 19, 33, 5, tzinfo=UTC), orchestration_id="orch-1")
    state.data.conversation_history.append(ms_state.DurableAgentStateRequest.from_run_request(request))
    response = AgentResponse(messages=[
        FrameworkMessage(role="assistant", author_name="WeatherAgent", contents=[
            Content.from_function_call(call_id="call_1", name="get_weather", arguments='{"city": "Paris"}')]),
        FrameworkMessage(role="tool", contents=[Content.from_function_result(call_id="call_1", result="sunny")]),
        FrameworkMessage(role="assistant", contents=[Content.from_text("It is sunny in Paris.")]),
    ], usage_details=UsageDetails(input_token_count=10, output_token_count=5, total_token_count=15),
        created_at="2025-11-04T19:33:10.47008+00:00")
    state.data.conversation_history.append(ms_state.DurableAgentStateResponse.from_run_response("corr-1", response))
    serialized = state.to_json() if hasattr(state, "to_json") else json.dumps(state.to_dict())

    result = durable_state.read_bytes(serialized, strict=True)
    assert result.version == "1.1.0"
    assert describe_agentfolio(result.session) == describe_microsoft(state)
    assert result.session.entries[1].usage.total_token_count == 15
    # And back out unchanged.
    assert durable_state.write(result.session) == json.loads(serialized)


def test_microsoft_rewrites_created_at_agentfolio_does_not(sample_path) -> None:
    document = load_json_file(sample_path)
    assert document["data"]["conversationHistory"][1]["createdAt"] == "2025-11-04T19:33:10.47008+00:00"
    assert microsoft_round_trip(document)["data"]["conversationHistory"][1]["createdAt"] == \
        "2025-11-04T19:33:10.470080+00:00"
    assert durable_state.write(durable_state.read(document).session) == document


def test_microsoft_drops_unknown_properties_agentfolio_keeps_them() -> None:
    document = {"schemaVersion": "1.1.0", "rootNote": 1, "data": {"dataNote": 2, "conversationHistory": [
        {"$type": "request", "entryNote": 3, "messages": [
            {"role": "user", "messageNote": 4, "contents": [{"$type": "text", "text": "hi", "contentNote": 5}]}]}]}}
    ms = microsoft_round_trip(document)
    assert "rootNote" not in ms and "dataNote" not in ms["data"]
    assert "contentNote" not in ms["data"]["conversationHistory"][0]["messages"][0]["contents"][0]
    assert durable_state.write(durable_state.read(document, strict=True).session) == document


def test_agentfolio_keeps_unknown_contents_whole() -> None:
    sticker = {"$type": "sticker", "stickerId": "s-1", "pack": {"name": "cats"}}
    document = {"schemaVersion": "1.3.0", "data": {"conversationHistory": [
        {"$type": "response", "messages": [{"role": "assistant", "contents": [sticker]}]}]}}
    microsoft_round_trip(document)  # Microsoft's classes read it (what they keep is theirs to decide)
    ours = durable_state.write(durable_state.read(document, strict=True).session)
    assert ours["data"]["conversationHistory"][0]["messages"][0]["contents"][0] == sticker


# -- State converted from every other format -----------------------------------------

ROOT = Path(__file__).resolve().parents[2]
CONVERTED_SOURCES = {
    "openai-chat": ROOT / "tests" / "fixtures" / "openai" / "chat-request.json",
    "envelope": ROOT / "tests" / "fixtures" / "envelope" / "gallery.json",
    "message-body": ROOT / "agentfolio" / "body" / "examples" / "researcher.body.json",
}
CUSTOM_TOOL_CHAT = {"messages": [
    {"role": "user", "content": "How many?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "call_sql", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}]},
    {"role": "tool", "tool_call_id": "call_sql", "content": "1"}]}


def converted_sources() -> list:
    return [pytest.param(load_json_file(path), id=name) for name, path in CONVERTED_SOURCES.items()] + [
        pytest.param(CUSTOM_TOOL_CHAT, id="openai-custom-tool"), pytest.param(
            {"parts": [{"name": "/answer", "content_type": "text/plain", "content": "hi"}]}, id="message-body-named")]


@pytest.mark.parametrize("source", converted_sources())
def test_state_converted_from_other_formats_is_read_by_microsoft_without_a_warning(
        source: dict, caplog: pytest.LogCaptureFixture) -> None:
    converted = convert(source, to="durable-state")
    assert durable_state.problems(converted.result) == []
    with caplog.at_level(logging.WARNING):
        state = DurableAgentState.from_dict(json.loads(orjson.dumps(converted.result)))
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []
    # What Microsoft's classes write back is valid durable state, and the conversation ours.
    rewritten = json.loads(json.dumps(state.to_dict()))
    assert durable_state.problems(rewritten) == []
    ours = durable_state.read(converted.result).session
    assert [(m.role, len(m.items)) for _, m in durable_state.read(rewritten).session.messages()] == [
        (m.role, len(m.items)) for _, m in ours.messages()]
    # Each time and correlation id we made up is in the report.
    for index, entry in enumerate(converted.result["data"]["conversationHistory"]):
        assert isinstance(entry["createdAt"], str) and isinstance(entry["correlationId"], str)
    reported = {loss.what.split()[-1] for loss in converted.losses if loss.approximated}
    if "createdAt" not in json.dumps(source) and "timestamp" not in json.dumps(source):
        assert {"createdAt", "correlationId"} <= reported


def test_a_custom_tool_call_in_the_escape_hatch_survives_microsofts_classes() -> None:
    converted = convert(CUSTOM_TOOL_CHAT, to="durable-state")
    back = convert(microsoft_round_trip(converted.result), to="openai-chat")
    assert back.result["messages"][1]["tool_calls"] == CUSTOM_TOOL_CHAT["messages"][1]["tool_calls"]


def test_microsoft_accepts_any_major_agentfolio_refuses_foreign_ones_and_keeps_2_0(durable_fixtures) -> None:
    foreign = {"schemaVersion": "3.0.0", "data": {"conversationHistory": []}}
    assert microsoft_round_trip(foreign)["schemaVersion"] == "3.0.0"
    with pytest.raises(UnsupportedVersionError, match="major version 3"):
        durable_state.read(foreign, strict=False)

    v2 = load_json_file(durable_fixtures / "shared-durable-agent-state-2.0.json")
    ms = microsoft_round_trip(v2)
    assert ms["schemaVersion"] == "2.0.0" and "terminalResults" not in ms["data"]
    ours = durable_state.write(durable_state.read(v2, strict=True).session)
    assert ours == v2 and ours["data"]["terminalResults"] == v2["data"]["terminalResults"]
