from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.formats import openai_chat, registry
from agentfolio.formats.convert import convert
from agentfolio.formats.errors import InvalidDocumentError
from agentfolio.formats.jsonio import load_json_file
from agentfolio.model import DataContent, FunctionCallContent, FunctionResultContent, TextContent, UriContent
from tests.envelope_strategies import apply_losses, differences

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CHAT = FIXTURES / "openai" / "chat-request.json"


def exact(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


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
calls = st.fixed_dictionaries({"id": st.text(min_size=1, max_size=6), "type": st.just("function"),
                               "function": st.fixed_dictionaries({"name": st.sampled_from(["f", "g"]),
                                                                  "arguments": st.sampled_from(['{}', '{"a": 1}'])})})
# As the API takes them: images only in user messages.
chat_messages = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "developer"]),
                           "content": st.one_of(st.text(max_size=10), st.lists(text_parts, min_size=2, max_size=3))},
                          optional={"name": st.text(min_size=1, max_size=5)}),
    st.fixed_dictionaries({"role": st.just("user"),
                           "content": st.one_of(st.text(max_size=10),
                                                st.lists(st.one_of(text_parts, image_parts), min_size=2, max_size=3))},
                          optional={"name": st.text(min_size=1, max_size=5)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.one_of(st.none(), st.text(max_size=10))},
                          optional={"tool_calls": st.lists(calls, min_size=1, max_size=2), "refusal": st.none()}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": st.text(min_size=1, max_size=6),
                           "content": st.text(max_size=10)}),
)
chat_documents = st.fixed_dictionaries({"messages": st.lists(chat_messages, min_size=1, max_size=5)},
                                       optional={"model": st.just("gpt-4o"), "temperature": st.just(0.5)})


@settings(max_examples=150, deadline=None)
@given(chat_documents)
def test_random_chats_round_trip_exactly(document: dict) -> None:
    original = copy.deepcopy(document)
    assert exact(openai_chat.write(openai_chat.read(document).session)) == exact(original)


@settings(max_examples=100, deadline=None)
@given(chat_documents)
def test_chat_to_durable_and_back_differs_only_where_the_report_says(document: dict) -> None:
    original = copy.deepcopy(document)
    there = convert(document, to="durable-state")
    back = convert(there.result, to="openai-chat")
    assert {loss.what for loss in back.losses} <= {"schemaVersion"}
    assert differences(apply_losses(original, there.losses), back.result) == []


def test_envelope_to_chat_writes_text_for_what_chat_has_no_kind_for() -> None:
    conversion = convert(load_json_file(FIXTURES / "envelope" / "gallery.json"), to="openai-chat")
    messages = conversion.result["messages"]
    assert conversion.result["model"] == "gpt-4o-2024-08-06"
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    system = messages[0]["content"]
    assert [p["type"] for p in system] == ["text"] * 5 and system[1]["text"] == "Paris"
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
