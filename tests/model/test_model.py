from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentfolio.model import (
    FunctionCallContent,
    Message,
    OpaqueContent,
    RequestEntry,
    ResponseEntry,
    Session,
    SessionData,
    TextContent,
)


def test_built_records_write_their_kind_and_only_what_was_given() -> None:
    assert TextContent(text="hi").to_json_value() == {"$type": "text", "text": "hi"}
    assert FunctionCallContent(call_id="c", name="f").to_json_value() == {"$type": "functionCall", "callId": "c",
                                                                          "name": "f"}
    # An explicit null is a value; an absence is not.
    assert Message(role="user", author_name=None).to_json_value() == {"role": "user", "authorName": None}


def test_reads_use_wire_names_only_and_keep_unknowns_in_order() -> None:
    message = Message.model_validate({"role": "user", "authorName": "a", "zeta": 1, "alpha": [2]})
    assert message.author_name == "a"
    assert list(message.extra) == ["zeta", "alpha"]
    # A snake_case spelling is not our field: it is an unknown property, kept.
    other = Message.model_validate({"role": "user", "createdAt": "t", "message_id": "m"})
    assert other.message_id is None and other.extra == {"message_id": "m"}


def test_content_that_does_not_fit_its_kind_is_kept_whole() -> None:
    message = Message.model_validate({"role": "assistant", "contents": [
        {"$type": "text", "text": 5}, {"$type": "functionCall"}, {"$type": "hologram", "x": 1}, {}]})
    assert [type(c) for c in message.items] == [OpaqueContent, FunctionCallContent, OpaqueContent, OpaqueContent]
    assert [c.kind for c in message.items] == ["text", "functionCall", "hologram", "?"]
    assert [c.to_json_value() for c in message.items] == [
        {"$type": "text", "text": 5}, {"$type": "functionCall"}, {"$type": "hologram", "x": 1}, {}]


def test_strict_reads_never_coerce() -> None:
    entry = ResponseEntry.model_validate({"$type": "response", "usage": {"inputTokenCount": 1}})
    assert entry.usage.input_token_count == 1
    with pytest.raises(ValidationError):
        ResponseEntry.model_validate({"$type": "response", "usage": {"inputTokenCount": "1"}})


def test_records_are_immutable_and_change_by_copy() -> None:
    text = TextContent(text="a")
    with pytest.raises(ValidationError):
        text.text = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        text.extra["x"] = 1  # type: ignore[index]
    assert text.model_copy(update={"text": "b"}).text == "b" and text.text == "a"
    message = Message(role="user", contents=[text])
    assert isinstance(message.contents, tuple)


def test_equality_is_json_equality() -> None:
    read = RequestEntry.model_validate({"$type": "request", "correlationId": "c"})
    read.remember_source({"$type": "request", "correlationId": "c"})
    assert read == RequestEntry(correlation_id="c")
    assert Message(role="user") != Message(role="user", author_name=None)


def test_session_messages_walk_entries_in_order() -> None:
    session = Session(data=SessionData(conversation_history=[
        RequestEntry(messages=[Message(role="user")]),
        ResponseEntry(messages=[Message(role="assistant"), Message(role="tool")])]))
    assert [(entry.kind, message.role) for entry, message in session.messages()] == [
        ("request", "user"), ("response", "assistant"), ("response", "tool")]
