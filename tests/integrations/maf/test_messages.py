"""MAF messages to durable agent state and back: every content kind kept, valid durable state."""

from __future__ import annotations

import warnings
from typing import Any

import orjson
import pytest
from agent_framework import Content, Message
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.formats import durable_state
from agentfolio.integrations.maf.messages import (
    MAF_FIELDS,
    content_from_durable,
    content_to_durable,
    history_messages,
    message_from_durable,
    message_to_durable,
    new_document,
    turn_entries,
)
from tests.integrations.maf.kinds import every_kind

pytestmark = pytest.mark.filterwarnings("ignore::Warning")

# The MAF kinds durable state has a type for, and the type each is written as.
DURABLE_TYPES = {"text": "text", "text_reasoning": "reasoning", "data": "data", "uri": "uri", "error": "error",
                 "function_call": "functionCall", "function_result": "functionResult", "usage": "usage",
                 "hosted_file": "hostedFile", "hosted_vector_store": "hostedVectorStore"}


def through_json(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def assert_valid(document: dict[str, Any]) -> None:
    _, problems, _ = durable_state.validate(document)
    assert problems == [], problems
    durable_state.read(document, strict=True)  # agentfolio reads it as a session


@pytest.mark.parametrize("content", every_kind(), ids=lambda c: c.type)
def test_each_kind_comes_back_identical(content: Content) -> None:
    written = through_json(content_to_durable(content))
    back = content_from_durable(written)
    assert back.to_dict() == content.to_dict()
    assert back == content
    expected = DURABLE_TYPES.get(content.type, "unknown")
    assert written["$type"] == expected
    if expected == "unknown":
        # Kept whole, in the shape Microsoft's durable agents write: never emptied.
        assert written == {"$type": "unknown", "content": through_json(content.to_dict())}
    assert_valid(new_document([{"$type": "response", "messages": [{"role": "assistant", "contents": [written]}]}]))


def test_known_kinds_are_written_in_durable_terms() -> None:
    by_kind = {content.type: through_json(content_to_durable(content)) for content in every_kind()}
    assert by_kind["function_call"]["arguments"] == {"city": "Paris"}
    assert by_kind["function_call"][MAF_FIELDS]["arguments"] == '{"city":  "Paris"}'  # the model's spelling
    assert by_kind["usage"]["usage"] == {"inputTokenCount": 3, "outputTokenCount": 5, "totalTokenCount": 8,
                                         "extensionData": {"cached_tokens": 2}}
    assert by_kind["error"] == {"$type": "error", "message": "boom", "errorCode": "E42", "details": "stack"}
    assert by_kind["text"]["text"] == "hello ✓" and by_kind["text"][MAF_FIELDS]["annotations"][0]["title"] == "Doc"
    assert sum(1 for written in by_kind.values() if written["$type"] == "unknown") == 16


def test_a_message_keeps_role_author_id_and_properties() -> None:
    message = Message("developer", every_kind(), author_name="ops", message_id="m1",
                      additional_properties={"tenant": "t1", "nested": {"a": [1, 2]}})
    written = through_json(message_to_durable(message))
    assert written["role"] == "system" and written[MAF_FIELDS] == {"role": "developer"}
    assert (written["authorName"], written["messageId"]) == ("ops", "m1")
    assert written["extensionData"] == {"tenant": "t1", "nested": {"a": [1, 2]}}
    assert message_from_durable(written).to_dict() == message.to_dict()


def test_a_turn_is_a_request_and_a_response_sharing_a_correlation_id() -> None:
    request = [Message("user", ["hi"])]
    response = [Message("assistant", ["hello"], author_name="bot")]
    entries = turn_entries(request, response, usage={"input_token_count": 4, "output_token_count": 2})
    assert [entry["$type"] for entry in entries] == ["request", "response"]
    assert entries[0]["correlationId"] == entries[1]["correlationId"]
    assert entries[1]["usage"] == {"inputTokenCount": 4, "outputTokenCount": 2}
    document = through_json(new_document(entries))
    assert_valid(document)
    assert [m.to_dict() for m in history_messages(document)] == [m.to_dict() for m in request + response]
    assert [entry["$type"] for entry in turn_entries([], response)] == ["response"]


def test_what_other_producers_wrote_is_read_where_it_can_be() -> None:
    document = new_document([
        {"$type": "request", "messages": [{"role": "user", "contents": [
            {"$type": "text", "text": "from .NET"}, {"$type": "hologram", "frames": 3},
            {"$type": "unknown", "content": {"kind": "not an agent framework content"}}]}]},
        {"$type": "errorResponse", "messages": [{"role": "assistant", "contents": [{"$type": "error"}]}]},
        {"$type": "response", "messages": [{"role": "assistant", "contents": [
            {"$type": "functionCall", "callId": "c", "name": "f", "arguments": {"x": 1}}]}]},
    ])
    skipped: list[str] = []
    messages = history_messages(document, on_unreadable=skipped.append)
    # The failed run's error is not replayed (as durable agents do); foreign kinds are left out.
    assert [(m.role, [c.type for c in m.contents]) for m in messages] == [("user", ["text"]),
                                                                       ("assistant", ["function_call"])]
    assert messages[1].contents[0].arguments == {"x": 1}
    assert len(skipped) == 2 and any("hologram" in why for why in skipped)


def test_microsofts_durable_agent_classes_read_what_is_written() -> None:
    from agent_framework_durabletask._durable_agent_state import DurableAgentState

    contents = every_kind()
    document = through_json(new_document(turn_entries([Message("user", ["q"])], [Message("assistant", contents)])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = DurableAgentState.from_dict(document)
        read = state.data.conversation_history[1].messages[0].to_chat_message()
    assert [c.type for c in read.contents] == [c.type for c in contents]
    for theirs, ours in zip(read.contents, contents, strict=True):
        if DURABLE_TYPES.get(ours.type) is None:  # their unknown reader rebuilds our content whole
            assert theirs.to_dict() == ours.to_dict()


# -- any message ----------------------------------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**53), max_value=2**53),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=6)
properties = st.dictionaries(st.from_regex(r"x[a-z]{0,6}", fullmatch=True), json_values, max_size=3)


@st.composite
def contents(draw: st.DrawFn) -> Content:
    content = draw(st.sampled_from(every_kind()))
    fields = content.to_dict()
    fields["additional_properties"] = draw(properties)
    kind = fields["type"]
    if kind in ("text", "text_reasoning"):
        fields["text"] = draw(st.text(max_size=30))
    elif kind == "function_call":
        fields["arguments"] = draw(st.one_of(st.dictionaries(st.text(max_size=5), json_values, max_size=3),
                                             st.text(max_size=20), json_values.map(lambda v: orjson.dumps(v).decode())))
    elif kind == "function_result":
        fields["result"] = draw(json_values)
    elif kind == "usage":
        fields["usage_details"] = draw(st.dictionaries(
            st.sampled_from(["input_token_count", "output_token_count", "total_token_count", "x_other"]),
            st.one_of(st.integers(min_value=0, max_value=2**40), st.none()), max_size=4))
    elif kind == "error":
        fields["error_details"] = draw(st.one_of(st.none(), st.text(max_size=10)))
    return Content.from_dict({key: value for key, value in fields.items() if value is not None})


messages = st.builds(
    lambda role, author, message_id, props, items: Message(role, items, author_name=author, message_id=message_id,
                                                             additional_properties=props),
    st.sampled_from(["user", "assistant", "system", "tool", "developer", "critic"]),
    st.one_of(st.none(), st.text(max_size=10)), st.one_of(st.none(), st.text(max_size=10)), properties,
    st.lists(contents(), max_size=4))


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, min_size=1, max_size=4), st.integers(min_value=0, max_value=4))
def test_any_turn_comes_back_identical_and_is_valid_durable_state(turn: list[Message], split: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        document = through_json(new_document(turn_entries(turn[:split], turn[split:])))
        assert_valid(document)
        back = history_messages(document)
    assert [m.to_dict() for m in back] == [m.to_dict() for m in turn]
