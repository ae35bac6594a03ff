"""Conversations from LLM spans: every convention reads the same messages, and a session
built from chat spans that each repeat the history holds each message once, in order."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.formats import convert, durable_state
from agentfolio.otel.conversation import build_conversation, build_session
from agentfolio.otel.messages import read_span_messages

# A message as the tests think of it: (role, text or None, tool call (id, name, args) or None, tool result id).
Msg = tuple[str, str | None, tuple[str, str, dict[str, Any]] | None, str | None]


def genai(message: Msg) -> dict[str, Any]:
    role, text, call, result_for = message
    parts: list[dict[str, Any]] = []
    if result_for is not None:
        parts.append({"type": "tool_call_response", "id": result_for, "response": text})
    elif text is not None:
        parts.append({"type": "text", "content": text})
    if call is not None:
        parts.append({"type": "tool_call", "id": call[0], "name": call[1], "arguments": call[2]})
    return {"role": role, "parts": parts}


def chat_style(message: Msg) -> dict[str, Any]:
    role, text, call, result_for = message
    out: dict[str, Any] = {"role": role}
    if text is not None:
        out["content"] = text
    if call is not None:
        out["tool_calls"] = [{"id": call[0], "name": call[1], "arguments": json.dumps(call[2])}]
    if result_for is not None:
        out["tool_call_id"] = result_for
    return out


def attributes_for(convention: str, system: str, inputs: list[Msg], outputs: list[Msg]) -> dict[str, Any]:
    if convention in ("genai-json", "genai-structured"):
        encode = json.dumps if convention == "genai-json" else (lambda value: value)
        return {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                "gen_ai.system_instructions": encode([{"type": "text", "content": system}]),
                "gen_ai.input.messages": encode([genai(m) for m in inputs]),
                "gen_ai.output.messages": encode([genai(m) for m in outputs])}
    attributes: dict[str, Any] = {}
    if convention == "legacy":
        attributes["gen_ai.operation.name"] = "chat"
        for prefix, messages in (("gen_ai.prompt", [("system", system, None, None), *inputs]),
                                 ("gen_ai.completion", outputs)):
            for index, message in enumerate(messages):
                flat = chat_style(message)
                for key, value in flat.items():
                    if key == "tool_calls":
                        for c_index, call in enumerate(value):
                            for c_key, c_value in call.items():
                                attributes[f"{prefix}.{index}.tool_calls.{c_index}.{c_key}"] = c_value
                    else:
                        attributes[f"{prefix}.{index}.{key}"] = value
        return attributes
    attributes["openinference.span.kind"] = "LLM"
    for prefix, messages in (("llm.input_messages", [("system", system, None, None), *inputs]),
                             ("llm.output_messages", outputs)):
        for index, message in enumerate(messages):
            flat = chat_style(message)
            base = f"{prefix}.{index}.message"
            for key, value in flat.items():
                if key == "tool_calls":
                    for c_index, call in enumerate(value):
                        attributes[f"{base}.tool_calls.{c_index}.tool_call.id"] = call["id"]
                        attributes[f"{base}.tool_calls.{c_index}.tool_call.function.name"] = call["name"]
                        attributes[f"{base}.tool_calls.{c_index}.tool_call.function.arguments"] = call["arguments"]
                else:
                    attributes[f"{base}.{key}"] = value
    return attributes


CONVENTIONS = ["genai-json", "genai-structured", "legacy", "openinference"]


def payload(index: int, attributes: dict[str, Any]) -> dict[str, Any]:
    return {"span_id": f"{index:016x}", "name": "chat m", "attributes": attributes, "events": [],
            "start_time_unix_nano": 1_700_000_000 * 10**9 + index * 1000,
            "end_time_unix_nano": 1_700_000_000 * 10**9 + index * 1000 + 500}


def shape(session: Any) -> list[tuple[str, list[Any]]]:
    out = []
    for entry in session.entries:
        for message in entry.items:
            contents = []
            for content in message.items:
                value = content.to_json_value()
                if value.get("$type") == "functionCall" and isinstance(value.get("arguments"), str):
                    value["arguments"] = json.loads(value["arguments"])
                contents.append(value)
            out.append((message.role, contents))
    return out


def expected_shape(system: str, conversation: list[Msg]) -> list[tuple[str, list[Any]]]:
    out: list[tuple[str, list[Any]]] = [("system", [{"$type": "text", "text": system}])]
    for role, text, call, result_for in conversation:
        contents: list[Any] = []
        if result_for is not None:
            contents.append({"$type": "functionResult", "callId": result_for, "result": text})
        elif text is not None:
            contents.append({"$type": "text", "text": text})
        if call is not None:
            contents.append({"$type": "functionCall", "callId": call[0], "name": call[1], "arguments": call[2]})
        out.append((role, contents))
    return out


words = st.text(alphabet="abcdefgh ", min_size=1, max_size=12)


@st.composite
def conversations(draw: Any) -> tuple[list[list[Msg]], list[Msg]]:
    """Turns of (inputs the caller adds, outputs the model answers); each call's input
    will be the whole history so far."""
    calls: list[tuple[list[Msg], list[Msg]]] = []
    for turn in range(draw(st.integers(1, 4))):
        added: list[Msg] = [("user", draw(words), None, None)]
        if draw(st.booleans()):
            call_id = f"call-{turn}"
            calls.append((added, [("assistant", None, (call_id, "lookup", {"q": draw(words)}), None)]))
            added = [("tool", draw(words), None, call_id)]
        calls.append((added, [("assistant", draw(words), None, None)]))
    flat: list[Msg] = []
    for added, answered in calls:
        flat += added + answered
    return [c[0] for c in calls], [c[1] for c in calls], flat  # type: ignore[return-value]


@settings(max_examples=60, deadline=None)
@given(conversations(), st.lists(st.sampled_from(CONVENTIONS), min_size=8, max_size=8), words)
def test_chat_spans_repeating_history_give_each_message_once(data: Any, conventions: list[str], system: str) -> None:
    inputs, outputs, flat = data
    history: list[Msg] = []
    payloads = []
    for index, (added, answered) in enumerate(zip(inputs, outputs, strict=False)):
        history += added
        payloads.append(payload(index, attributes_for(conventions[index % 8], system, list(history), answered)))
        history += answered
    built = build_conversation(payloads)
    assert built is not None
    session, notes, _ = built
    assert notes == []
    assert shape(session) == expected_shape(system, flat)


def test_a_message_said_again_word_for_word_is_kept_each_time() -> None:
    # Spans share the messages read once (by their JSON): a message repeated in the
    # history is still two messages, in its places.
    turns = [("user", "yes", None, None), ("assistant", "ok", None, None)] * 3
    payloads, history = [], []
    for index in range(3):
        history.append(turns[2 * index])
        payloads.append(payload(index, attributes_for("genai-json", "sys", list(history), [turns[2 * index + 1]])))
        history.append(turns[2 * index + 1])
    session, notes, _ = build_conversation(payloads)  # type: ignore[misc]
    assert notes == []
    assert shape(session) == expected_shape("sys", turns)


@settings(max_examples=30, deadline=None)
@given(conversations(), st.sampled_from(["genai-json", "genai-structured"]), words)
def test_messages_read_with_those_already_seen_are_the_messages_read_alone(data: Any, convention: str,
                                                                           system: str) -> None:
    inputs, outputs, _ = data
    seen: dict[bytes, Any] = {}
    history: list[Msg] = []
    for index, (added, answered) in enumerate(zip(inputs, outputs, strict=False)):
        history += added
        span = payload(index, attributes_for(convention, system, list(history), answered))
        assert read_span_messages(span, seen) == read_span_messages(span)
        history += answered


def test_a_trimmed_history_still_gives_each_message_once() -> None:
    turns = [("user", f"q{i}", None, None) for i in range(4)]
    answers = [("assistant", f"a{i}", None, None) for i in range(4)]
    payloads = []
    history: list[Msg] = []
    for index in range(4):
        history += [turns[index]]
        payloads.append(payload(index, attributes_for("genai-json", "sys", history[-3:], [answers[index]])))
        history += [answers[index]]
    session, notes, _ = build_conversation(payloads)  # type: ignore[misc]
    assert notes == []
    assert [text for _, contents in shape(session)[1:] for text in [contents[0]["text"]]] == [
        "q0", "a0", "q1", "a1", "q2", "a2", "q3", "a3"]


def test_a_message_that_cannot_be_placed_is_kept_and_noted() -> None:
    first = payload(0, attributes_for("genai-json", "sys", [("user", "hello", None, None)],
                                      [("assistant", "hi", None, None)]))
    unrelated = payload(1, attributes_for("genai-json", "sys", [("user", "other thread", None, None),
                                                                ("assistant", "x", None, None),
                                                                ("user", "y", None, None)],
                                          [("assistant", "z", None, None)]))
    session, notes, _ = build_conversation([first, unrelated])  # type: ignore[misc]
    assert len(notes) == 1 and "do not continue" in notes[0]
    assert [c[0]["text"] for _, c in shape(session)[1:]] == ["hello", "hi", "other thread", "x", "y", "z"]
    built = build_session([first, unrelated])
    assert built is not None and built.document["agentfolio.otel"] == {"notes": notes}
    assert durable_state.problems(built.document) == []


def test_legacy_events_and_media_parts() -> None:
    events = [
        {"name": "gen_ai.system.message", "attributes": {"content": "be brief"}},
        {"name": "gen_ai.user.message", "attributes": {"content": "look"}},
        {"name": "gen_ai.choice", "attributes": {"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": "ok"}}},
    ]
    found = read_span_messages({"attributes": {"gen_ai.operation.name": "chat"}, "events": events})
    assert [(m.role, m.items[0].text) for m in found.input + found.output] == [
        ("system", "be brief"), ("user", "look"), ("assistant", "ok")]
    parts = [{"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0KGgo="},
             {"type": "uri", "uri": "https://example.com/a.png", "mime_type": "image/png"},
             {"type": "file", "file_id": "file-1"}, {"type": "server_tool_call", "name": "x"}]
    found = read_span_messages({"attributes": {"gen_ai.input.messages": json.dumps([{"role": "user",
                                                                                     "parts": parts}])}})
    kinds = [content.kind for content in found.input[0].items]
    # A server tool call without its server_tool_call object is not one: kept whole, as sent.
    assert kinds == ["data", "uri", "hostedFile", "otel-genai.server_tool_call"]
    assert found.input[0].items[3].extra["value"] == parts[3]
    assert found.input[0].items[0].uri == "data:image/png;base64,iVBORw0KGgo="


def test_unreadable_values_are_reported_not_dropped_silently() -> None:
    found = read_span_messages({"attributes": {"gen_ai.input.messages": "[not json",
                                               "gen_ai.output.messages": json.dumps([{"parts": []}])}})
    assert any("not JSON" in problem for problem in found.problems)
    assert any("not a message with a role" in problem for problem in found.problems)


def test_the_built_session_is_valid_durable_state_and_converts() -> None:
    attributes = attributes_for("genai-json", "sys", [("user", "q", None, None)],
                                [("assistant", None, ("c1", "lookup", {"q": "x"}), None)])
    attributes["gen_ai.tool.definitions"] = json.dumps([{"type": "function", "name": "lookup", "description": "Find",
                                                         "parameters": {"type": "object"}}])
    attributes["gen_ai.usage.input_tokens"] = 3
    built = build_session([payload(0, attributes)])
    assert built is not None
    assert durable_state.problems(built.document) == []
    assert any(loss.what.startswith("tool catalog") for loss in built.losses)  # lowered to text for durable state
    envelope = convert.convert(built.document, to="envelope")
    assert envelope.result["messages"]


def test_pydantic_ais_tool_responses_become_results_paired_with_their_calls() -> None:
    # The chat spans of an agent run under Pydantic AI's instrumentation: the tool's
    # response under "result" (not the schema's "response"), in a user message.
    question = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "pyd_ai_tool_call_id__get_weather",
                                            "name": "get_weather", "arguments": {"city": "a"}}]}
    response = {"role": "user", "parts": [{"type": "tool_call_response", "id": "pyd_ai_tool_call_id__get_weather",
                                           "name": "get_weather", "result": "18C in a"}]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": '{"get_weather":"18C in a"}'}],
              "finish_reason": "stop"}
    spans = [payload(0, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([question]),
                         "gen_ai.output.messages": json.dumps([call])}),
             payload(1, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([question, call, response]),
                         "gen_ai.output.messages": json.dumps([answer])})]
    built = build_session(spans)
    assert built is not None and built.document is not None
    contents = [(message["role"], content["$type"], content.get("callId"))
                for entry in built.document["data"]["conversationHistory"] for message in entry["messages"]
                for content in message["contents"]]
    assert contents == [("user", "text", None), ("assistant", "functionCall", "pyd_ai_tool_call_id__get_weather"),
                        ("user", "functionResult", "pyd_ai_tool_call_id__get_weather"), ("assistant", "text", None)]
    assert durable_state.problems(built.document) == []


def _strands_span(index: int, name: str, operation: str, events: list[tuple[str, dict[str, Any]]],
                  **attributes: Any) -> dict[str, Any]:
    span = payload(index, {"gen_ai.operation.name": operation, **attributes})
    span["name"] = name
    span["events"] = [{"name": event, "attributes": values} for event, values in events]
    return span


def test_strands_agents_per_message_events_give_each_message_once() -> None:
    # The spans of a Strands Agents run (1.62, default conventions) calling one tool, as its
    # exporter sent them: message events hold Bedrock Converse blocks as JSON text, and the
    # agent, each turn of its loop and the tool's span repeat or describe what the model
    # calls (the chat spans) said.
    system = ("gen_ai.system.message", {"content": '[{"text": "You are a weather bot."}]'})
    user = ("gen_ai.user.message", {"content": '[{"text": "Weather in Paris?"}]'})
    use = '[{"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}}]'
    result = ('[{"toolResult": {"toolUseId": "tooluse_1", "status": "success", '
              '"content": [{"text": "18C in Paris"}]}}]')
    usage = {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 3}
    spans = [
        _strands_span(0, "invoke_agent strands-weather", "invoke_agent", [
            system, user, ("gen_ai.choice", {"message": "It is 18C in Paris.\n", "finish_reason": "end_turn"})],
            **{"gen_ai.agent.name": "strands-weather"}),
        _strands_span(1, "execute_event_loop_cycle", "execute_event_loop_cycle", [
            user, ("gen_ai.choice", {"message": use, "tool.result": result})]),
        _strands_span(2, "chat", "chat", [
            system, user, ("gen_ai.choice", {"finish_reason": "tool_use", "message": use})], **usage),
        _strands_span(3, "execute_tool get_weather", "execute_tool", [
            ("gen_ai.tool.message", {"role": "tool", "content": '{"city": "Paris"}', "id": "tooluse_1"}),
            ("gen_ai.choice", {"message": '[{"text": "18C in Paris"}]', "id": "tooluse_1"})]),
        _strands_span(4, "execute_event_loop_cycle", "execute_event_loop_cycle", [
            user, ("gen_ai.assistant.message", {"content": use}), ("gen_ai.tool.message", {"content": result})]),
        _strands_span(5, "chat", "chat", [
            system, user, ("gen_ai.assistant.message", {"content": use}), ("gen_ai.tool.message", {"content": result}),
            ("gen_ai.choice", {"finish_reason": "end_turn", "message": '[{"text": "It is 18C in Paris."}]'})],
            **usage),
    ]
    built = build_session(spans)
    assert built is not None and built.document is not None and built.notes == []
    said = [(message["role"], [(content["$type"], content.get("text") or content.get("callId"))
                               for content in message["contents"]])
            for entry in built.document["data"]["conversationHistory"] for message in entry["messages"]]
    assert said == [("system", [("text", "You are a weather bot.")]), ("user", [("text", "Weather in Paris?")]),
                    ("assistant", [("functionCall", "tooluse_1")]), ("tool", [("functionResult", "tooluse_1")]),
                    ("assistant", [("text", "It is 18C in Paris.")])]
    contents = [content for entry in built.document["data"]["conversationHistory"] for message in entry["messages"]
                for content in message["contents"]]
    assert contents[2]["name"] == "get_weather" and contents[2]["arguments"] == {"city": "Paris"}
    assert contents[3]["result"] == "18C in Paris"
    assert [entry["usage"]["totalTokenCount"] for entry in built.document["data"]["conversationHistory"]
            if "usage" in entry] == [13, 13]
    assert durable_state.problems(built.document) == []


def test_strands_agents_latest_conventions_one_details_event_per_attribute() -> None:
    # OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental: the GenAI messages, but each
    # attribute in a details event of its own (the conventions have one event holding all).
    def details(key: str, value: Any) -> tuple[str, dict[str, Any]]:
        return "gen_ai.client.inference.operation.details", {key: json.dumps(value)}

    system = details("gen_ai.system_instructions", [{"type": "text", "content": "You are a weather bot."}])
    user = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    call = {"role": "assistant", "parts": [{"type": "tool_call", "name": "get_weather", "id": "tooluse_1",
                                            "arguments": {"city": "Paris"}}]}
    response = {"role": "user", "parts": [{"type": "tool_call_response", "id": "tooluse_1",
                                           "response": [{"text": "18C in Paris"}]}]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "It is 18C in Paris."}],
              "finish_reason": "end_turn"}
    spans = [
        _strands_span(0, "invoke_agent strands-weather", "invoke_agent", [
            details("gen_ai.input.messages", [user]), details("gen_ai.output.messages", [answer])]),
        _strands_span(1, "chat", "chat", [system, details("gen_ai.input.messages", [user]),
                                          details("gen_ai.output.messages", [{**call, "finish_reason": "tool_use"}])]),
        _strands_span(2, "execute_tool get_weather", "execute_tool", [
            details("gen_ai.input.messages", [{**call, "role": "tool"}]),
            details("gen_ai.output.messages", [{**response, "role": "tool"}])]),
        _strands_span(3, "chat", "chat", [system, details("gen_ai.input.messages", [user, call, response]),
                                          details("gen_ai.output.messages", [answer])]),
    ]
    built = build_session(spans)
    assert built is not None and built.document is not None and built.notes == []
    said = [(message["role"], [content["$type"] for content in message["contents"]])
            for entry in built.document["data"]["conversationHistory"] for message in entry["messages"]]
    assert said == [("system", ["text"]), ("user", ["text"]), ("assistant", ["functionCall"]),
                    ("user", ["functionResult"]), ("assistant", ["text"])]
    assert durable_state.problems(built.document) == []
