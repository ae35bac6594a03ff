from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessageCustomToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from pydantic import TypeAdapter

from agentfolio import _json
from agentfolio.formats import durable_state, openai_chat, registry
from agentfolio.formats.convert import LossError, convert
from agentfolio.formats.errors import FormatError, InvalidDocumentError
from agentfolio.formats.jsonio import load_json_file
from agentfolio.formats.losses import ConvertOptions
from agentfolio.model import DataContent, FunctionCallContent, FunctionResultContent, TextContent, UriContent
from tests.envelope_strategies import apply_losses, differences
from tests.strategies import json_values, unknown_keys

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CHAT = FIXTURES / "openai" / "chat-request.json"


def exact(value: object) -> bytes:
    return _json.dumps(value, option=orjson.OPT_SORT_KEYS)


def test_reads_roles_parts_and_pairs_tool_calls_by_id() -> None:
    result = openai_chat.read(load_json_file(CHAT))
    session = result.session
    assert [e.kind for e in session.entries] == ["request", "response"]
    developer, user = session.entries[0].items
    assert developer.role == "developer" and user.author_name == "ana"
    text, image, audio = user.items
    assert isinstance(text, TextContent) and text.text == "Weather in Lyon?"
    assert isinstance(image, UriContent) and image.media_type == "image/*" and image.extra == {"detail": "low"}
    assert isinstance(audio, DataContent) and audio.uri == "data:audio/wav;base64,UklGRg=="
    call_message, tool, answer = session.entries[1].items
    (call,) = call_message.items
    assert isinstance(call, FunctionCallContent) and call.arguments == '{"city":"Lyon"}'  # the string, verbatim
    (result_content,) = tool.items
    assert isinstance(result_content, FunctionResultContent) and result_content.call_id == call.call_id == "call_a"
    assert session.extra["model"] == "gpt-4o" and session.extra["temperature"] == 0.2


def test_request_bodies_round_trip_exactly() -> None:
    document = load_json_file(CHAT)
    assert exact(openai_chat.write(openai_chat.read(copy.deepcopy(document)).session)) == exact(document)


text_parts = st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)})
image_parts = st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.fixed_dictionaries(
    {"url": st.sampled_from(["https://x/a.png", "data:image/png;base64,AAAA"])},
    optional={"detail": st.sampled_from(["low", "high", "auto"])})})
# A part kind this release does not know, with whatever it carries: kept whole.
unknown_parts = st.tuples(unknown_keys, st.dictionaries(unknown_keys, json_values, max_size=2)).map(
    lambda p: {"type": "future" + p[0], **p[1]})
# Either spelling of a message's text: a string, or an array of parts (one part included).
def contents(*parts: st.SearchStrategy[dict]) -> st.SearchStrategy[object]:
    return st.one_of(st.text(max_size=10), st.lists(st.one_of(*parts), min_size=1, max_size=3))


call_ids = st.text(min_size=1, max_size=6)
function_calls = st.fixed_dictionaries({"id": call_ids, "type": st.just("function"), "function": st.fixed_dictionaries(
    {"name": st.sampled_from(["f", "g"]), "arguments": st.sampled_from(['{}', '{"a": 1}', 'not json'])})})
custom_calls = st.fixed_dictionaries({"id": call_ids, "type": st.just("custom"), "custom": st.fixed_dictionaries(
    {"name": st.sampled_from(["sql", "shell"]), "input": st.text(max_size=10)})})
unknown_calls = st.tuples(call_ids, unknown_keys, json_values).map(
    lambda p: {"id": p[0], "type": "future" + p[1], p[1] or "x": p[2]})
request_messages = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "developer"]), "content": contents(text_parts)},
                          optional={"name": st.text(min_size=1, max_size=5)}),
    st.fixed_dictionaries({"role": st.just("user"), "content": contents(text_parts, image_parts, unknown_parts)},
                          optional={"name": st.text(min_size=1, max_size=5)}),
)
assistant_messages = st.fixed_dictionaries(
    {"role": st.just("assistant")},
    optional={"content": st.one_of(st.none(), contents(text_parts)), "refusal": st.none(),
              "tool_calls": st.lists(st.one_of(function_calls, custom_calls, unknown_calls), min_size=1, max_size=2,
                                     unique_by=lambda call: call["id"])})


@st.composite
def chat_documents(draw: st.DrawFn) -> object:
    """Chat requests as the API takes them: images only in user messages, and every tool
    message answering a call of an earlier assistant message."""
    messages: list[dict] = []
    for _ in range(draw(st.integers(1, 5))):
        message = draw(st.one_of(request_messages, assistant_messages))
        messages.append(message)
        for call in message.get("tool_calls", []) if draw(st.booleans()) else []:
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": draw(st.one_of(st.text(max_size=10), st.lists(text_parts, min_size=1,
                                                                                      max_size=2)))})
    if draw(st.booleans()):
        return messages  # the bare array agent code holds
    return draw(st.fixed_dictionaries({"messages": st.just(messages)},
                                      optional={"model": st.just("gpt-4o"), "temperature": st.just(0.5)}))


@settings(max_examples=150, deadline=None)
@given(chat_documents())
def test_random_chats_round_trip_exactly(document: dict) -> None:
    original = copy.deepcopy(document)
    assert exact(openai_chat.write(openai_chat.read(document).session)) == exact(original)


@settings(max_examples=100, deadline=None)
@given(chat_documents())
def test_chat_to_durable_and_back_differs_only_where_the_report_says(document: object) -> None:
    original = copy.deepcopy(document)
    there = convert(document, to="durable-state")
    assert durable_state.problems(there.result) == []
    back = convert(there.result, to="openai-chat")
    # Besides the version, only the entry times and correlation ids durable state made up.
    assert {loss.what for loss in back.losses} <= {"schemaVersion", "createdAt", "correlationId"}
    assert {loss.what for loss in back.losses} & {"createdAt", "correlationId"} <= {
        loss.what.split()[-1] for loss in there.losses}
    assert openai_chat.validate(back.result) == []
    expected = apply_losses(original, there.losses)
    expected = expected if isinstance(expected, dict) else {"messages": expected}
    assert differences(same_spelling(expected), same_spelling(back.result)) == []


def same_spelling(document: dict) -> dict:
    """The chat with each content in one spelling: OpenAI reads a string and an array of
    one text part alike, and an absent content, null and [] alike; only a conversion
    through OpenAI itself keeps which one was written."""
    messages = []
    for message in document.get("messages", []):
        if isinstance(message, dict):
            message = dict(message)
            content = message.get("content")
            if isinstance(content, str):
                message["content"] = [{"type": "text", "text": content}]
            elif content is None or content == []:
                message.pop("content", None)
        messages.append(message)
    return {**document, "messages": messages}


def test_envelope_to_chat_writes_text_for_what_chat_has_no_kind_for() -> None:
    conversion = convert(load_json_file(FIXTURES / "envelope" / "gallery.json"), to="openai-chat")
    messages = conversion.result["messages"]
    assert conversion.result["model"] == "gpt-4o-2024-08-06"
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    system = messages[0]["content"]
    assert [p["type"] for p in system] == ["text"] * 4 and system[1]["text"] == "Paris"
    # The tool overview is the request's tool definitions, not text in the system message.
    assert [tool["function"]["name"] for tool in conversion.result["tools"]] == ["get_weather", "search_trains"]
    user_parts = messages[1]["content"]
    assert user_parts[2] == {"type": "image_url", "image_url": {"url": "https://example.com/lyon.jpg"}}
    calls = messages[2]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "search_trains"]
    assert [m["tool_call_id"] for m in messages[3:5]] == [c["id"] for c in calls]  # paired by id
    assert orjson.loads(calls[0]["function"]["arguments"]) == {"city": "Lyon"}
    lost = {(loss.pointer, loss.what) for loss in conversion.losses}
    assert ("/messages/3/segments/1/success", "property 'success'") in lost
    assert ("/messages/1/segments/2/altText", "property 'altText'") in lost
    assert ("/messages/0/segments/2", "memory content") in lost


def test_results_in_one_message_become_one_tool_message_each() -> None:
    document = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [{"$type": "response", "messages": [
        {"role": "assistant", "contents": [{"$type": "functionCall", "callId": "a", "name": "f"},
                                           {"$type": "functionCall", "callId": "b", "name": "f",
                                            "arguments": {"x": 1}}]},
        {"role": "tool", "contents": [{"$type": "functionResult", "callId": "a", "result": "one"},
                                      {"$type": "functionResult", "callId": "b", "result": {"ok": True}}]}]}]}}
    conversion = convert(document, to="openai-chat")
    tools = [m for m in conversion.result["messages"] if m["role"] == "tool"]
    assert tools == [{"role": "tool", "tool_call_id": "a", "content": "one"},
                     {"role": "tool", "tool_call_id": "b", "content": '{"ok":true}'}]
    lost = {loss.pointer: loss for loss in conversion.losses}
    assert lost["/data/conversationHistory/0/messages/1"].what == "message structure"
    assert lost["/data/conversationHistory/0/messages/1/contents/1/result"].approximated


def test_detection_and_bad_input() -> None:
    assert registry.detect(load_json_file(CHAT)) is openai_chat.FORMAT
    assert registry.detect([{"role": "user", "content": "hi"}]) is openai_chat.FORMAT
    with pytest.raises(InvalidDocumentError) as caught:
        openai_chat.read({"messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"},
                                       {"role": "robot", "content": 5}]})
    found = {(p.pointer, p.message) for p in caught.value.problems}
    assert ("/messages/1", 'a tool message needs a string "tool_call_id"') in found
    assert any(pointer == "/messages/2/role" for pointer, _ in found)
    assert ("/messages/2/content", "expected a string, an array of parts or null") in found


# -- Driven by the OpenAI SDK's own request types -------------------------------------

OPENAI_MESSAGES = TypeAdapter(list[ChatCompletionMessageParam])


def custom_tool_chat() -> dict:
    call = ChatCompletionMessageCustomToolCallParam(id="call_sql", type="custom",
                                                    custom={"name": "sql", "input": "SELECT 1"})
    messages: list[ChatCompletionMessageParam] = [
        ChatCompletionUserMessageParam(role="user", content="How many?"),
        ChatCompletionAssistantMessageParam(role="assistant", content=None, tool_calls=[call]),
        ChatCompletionToolMessageParam(role="tool", tool_call_id="call_sql", content="1"),
    ]
    return {"model": "gpt-5", "messages": messages}


def test_a_custom_tool_call_goes_into_durable_states_escape_hatch_and_comes_back() -> None:
    document = custom_tool_chat()
    with pytest.raises(LossError):
        convert(copy.deepcopy(document), to="durable-state", options=ConvertOptions(strict=True))
    there = convert(copy.deepcopy(document), to="durable-state")
    assert durable_state.problems(there.result) == []
    (kept,) = [c for e in there.result["data"]["conversationHistory"] for m in e["messages"] for c in m["contents"]
               if c["$type"] == "unknown"]
    assert kept["content"]["call"] == document["messages"][1]["tool_calls"][0]
    assert [(loss.pointer, loss.approximated) for loss in there.losses if "tool_calls" in loss.pointer] == [
        ("/messages/1/tool_calls/0", True)]
    assert all(loss.approximated for loss in there.losses)  # and the entry times and ids it made up
    back = convert(there.result, to="openai-chat")
    assert back.result["messages"] == document["messages"]
    assert openai_chat.validate(back.result) == []
    OPENAI_MESSAGES.validate_python(back.result["messages"])


def test_a_result_whose_call_is_lost_is_never_a_lone_tool_message() -> None:
    document = custom_tool_chat()
    there = convert(copy.deepcopy(document), to="envelope")  # the envelope has no custom tool calls
    back = convert(there.result, to="openai-chat")
    assert openai_chat.validate(back.result) == []
    assert [m["role"] for m in back.result["messages"]] == ["user", "user"]
    assert any(loss.what == "tool result" for loss in back.losses)


def test_validate_refuses_a_tool_message_answering_no_call() -> None:
    problems = openai_chat.validate({"messages": [{"role": "user", "content": "q"},
                                                  {"role": "tool", "tool_call_id": "x", "content": "1"}]})
    assert [p.pointer for p in problems] == ["/messages/1/tool_call_id"]
    bad_custom = {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]}]}
    assert [p.pointer for p in openai_chat.validate(bad_custom)] == ["/messages/0/tool_calls/0/custom"]


def test_every_spelling_of_content_is_written_back_as_read() -> None:
    messages: list[ChatCompletionMessageParam] = [
        ChatCompletionUserMessageParam(role="user", content=[{"type": "text", "text": "one part"}]),
        ChatCompletionUserMessageParam(role="user", content="a string"),
        ChatCompletionUserMessageParam(role="user", content=[]),
        ChatCompletionAssistantMessageParam(role="assistant"),
        ChatCompletionAssistantMessageParam(role="assistant", content=None),
        ChatCompletionAssistantMessageParam(role="assistant", content=[{"type": "text", "text": "x"}]),
    ]
    for document in (list(messages), {"messages": list(messages)}):
        assert openai_chat.write(openai_chat.read(copy.deepcopy(document), strict=False).session) == document


@settings(max_examples=100, deadline=None)
@given(chat_documents())
def test_what_we_write_is_what_the_openai_sdk_types_accept(document: object) -> None:
    for target in ("durable-state", "envelope", "message-body", "canonical"):
        try:
            there = convert(copy.deepcopy(document), to=target)
        except FormatError:  # a clear refusal (an envelope needs a message it can hold)
            continue
        back = convert(there.result, to="openai-chat")
        assert openai_chat.validate(back.result) == []
        OPENAI_MESSAGES.validate_python(back.result["messages"])


def test_media_types_come_back_or_are_reported_with_the_right_reason() -> None:
    def uri(kind: str, address: str, media_type: str) -> dict:
        return {"$type": kind, "uri": address, "mediaType": media_type}

    contents = [uri("uri", "https://x.test/a.jpg", "image/jpeg"), uri("uri", "https://x.test/a.mp3", "audio/mpeg"),
                uri("data", "data:image/png;base64,AAAA", "image/png"),
                uri("data", "data:application/pdf;base64,AAAA", "application/pdf"),
                uri("data", "data:;base64,AAAA", "application/pdf")]
    document = {"schemaVersion": "1.2.0", "data": {"conversationHistory": [
        {"$type": "request", "correlationId": "c", "createdAt": "2025-01-01T00:00:00Z",
         "messages": [{"role": "user", "contents": contents}]}]}}
    there = convert(copy.deepcopy(document), to="openai-chat")
    back = convert(there.result, to="durable-state").result
    came_back = back["data"]["conversationHistory"][0]["messages"][0]["contents"]
    reported = {loss.pointer: loss for loss in there.losses}
    base = "/data/conversationHistory/0/messages/0/contents"
    for index, content in enumerate(contents):
        kept = next((c for c in came_back if c.get("uri") == content["uri"]), None)
        if kept is not None and kept.get("mediaType") == content["mediaType"]:
            assert not any(p.startswith(f"{base}/{index}") for p in reported), index
        else:
            assert f"{base}/{index}" in reported or f"{base}/{index}/mediaType" in reported, index
    assert "image/jpeg" in reported[f"{base}/0/mediaType"].why
    assert "never by URL" in reported[f"{base}/1"].why and "only user messages" not in reported[f"{base}/1"].why
