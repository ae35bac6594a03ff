from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings

from agentfolio import _json
from agentfolio.formats import canonical, durable_state
from agentfolio.formats.errors import FormatError, InvalidDocumentError, UnsupportedVersionError
from agentfolio.formats.jsonio import load_json_file
from agentfolio.model import (
    FunctionCallContent,
    MemoryContent,
    MemoryItem,
    Message,
    OpaqueContent,
    OpaqueEntry,
    RequestEntry,
    Session,
    SessionData,
    TextContent,
)
from tests.strategies import durable_states


def exact(value: object) -> bytes:
    """JSON value identity: key order aside, but 1 and 1.0 and true kept apart."""
    return _json.dumps(value, option=orjson.OPT_SORT_KEYS)


def round_trip(document: dict, *, strict: bool = False) -> dict:
    return durable_state.write(durable_state.read(document, strict=strict).session)


def test_seed_sample_round_trips_exactly(sample_path: Path) -> None:
    document = load_json_file(sample_path)
    written = round_trip(document, strict=True)
    assert exact(written) == exact(document)
    assert next(iter(written)) == "schemaVersion"
    entries = written["data"]["conversationHistory"]
    assert all(next(iter(entry)) == "$type" for entry in entries)
    assert entries[1]["createdAt"] == "2025-11-04T19:33:10.47008+00:00"


@pytest.mark.parametrize("name", [
    "python-durable-agent-state-1.2.json",
    "shared-durable-agent-state-2.0.json",
    "shared-durable-agent-state-2.0-pruned.json",
    "shared-durable-agent-state-2.0-lossless.json",
])
def test_published_fixtures_are_valid_and_round_trip(durable_fixtures: Path, name: str) -> None:
    document = load_json_file(durable_fixtures / name)
    result = durable_state.read(document, strict=True)
    assert result.problems == []
    assert exact(durable_state.write(result.session)) == exact(document)


def test_version_2_keeps_its_terminal_results(durable_fixtures: Path) -> None:
    document = load_json_file(durable_fixtures / "shared-durable-agent-state-2.0.json")
    session = durable_state.read(document).session
    assert session.schema_version == "2.0.0"
    assert session.data.extra["terminalResults"] == document["data"]["terminalResults"]
    assert session.data.extra["completionReceipts"] == document["data"]["completionReceipts"]


@given(durable_states)
@settings(max_examples=300, deadline=None)
def test_any_state_round_trips_exactly(document: dict) -> None:
    original = copy.deepcopy(document)
    written = round_trip(document)
    assert exact(written) == exact(original)
    assert next(iter(written)) == "schemaVersion"
    assert document == original  # reading never mutates the caller's document
    # Again through the model's own serializer: entries that forgot the JSON they were
    # read from (a plain write reuses it, which would compare the document with itself).
    session = durable_state.read(copy.deepcopy(original), strict=False).session
    forgetful = [entry.model_copy(deep=True) for entry in session.entries]
    assert all(entry.source is None for entry in forgetful)
    if session.data is not None and "conversation_history" in session.data.model_fields_set:
        session = session.model_copy(update={"data": session.data.model_copy(
            update={"conversation_history": tuple(forgetful)})})
    assert exact(durable_state.write(session)) == exact(original)


@given(durable_states)
@settings(max_examples=100, deadline=None)
def test_canonical_json_round_trips_exactly(document: dict) -> None:
    session = durable_state.read(document, strict=False).session
    again = canonical.read(_json.loads(_json.dumps(canonical.write(session)))).session
    assert exact(durable_state.write(again)) == exact(document)


@pytest.mark.parametrize(("version", "expected"), [
    (None, "no schemaVersion"),
    ("1.0", "not a semantic version"),
    ("01.0.0", "not a semantic version"),
    ("1.0.0\n", "not a semantic version"),
    (1, "not a semantic version"),
    ("0.9.0", "major version 0"),
    ("3.0.0", "major version 3"),
])
def test_unsupported_versions_are_refused_naming_found_and_supported(version: object, expected: str) -> None:
    document: dict = {"data": {"conversationHistory": [{"$type": "request", "messages": []}]}}
    if version is not None:
        document["schemaVersion"] = version
    with pytest.raises(UnsupportedVersionError) as raised:
        durable_state.read(document, strict=False)
    message = str(raised.value)
    assert expected in message
    assert "supported: 1.x.y" in message and "2.0.x" in message
    assert raised.value.pointer == "/schemaVersion"


def test_newer_minor_keeps_what_it_adds_and_says_so() -> None:
    document = {
        "schemaVersion": "1.7.0",
        "data": {"conversationHistory": [
            {"$type": "hologram", "frames": [1, 2]},
            {"$type": "request", "messages": [{"role": "user", "contents": [
                {"$type": "sticker", "id": "s1"}, {"$type": "text", "text": "hi"}]}]},
        ], "newThing": {"a": 1}},
        "rootThing": True,
    }
    result = durable_state.read(document, strict=True)
    assert result.problems == []
    assert [n.pointer for n in result.notes] == [
        "/schemaVersion", "/data/conversationHistory/0/$type",
        "/data/conversationHistory/1/messages/0/contents/0/$type"]
    assert isinstance(result.session.entries[0], OpaqueEntry)
    assert isinstance(result.session.entries[1].messages[0].contents[0], OpaqueContent)
    assert exact(durable_state.write(result.session)) == exact(document)


def test_unknown_type_in_a_known_version_is_a_schema_problem_but_still_kept() -> None:
    document = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "request", "messages": [{"role": "user", "contents": [{"$type": "sticker", "id": "s1"}]}]}]}}
    with pytest.raises(InvalidDocumentError) as raised:
        durable_state.read(document, strict=True)
    assert raised.value.problems[0].pointer == "/data/conversationHistory/0/messages/0/contents/0/$type"
    assert "unknown $type \"sticker\"" in raised.value.problems[0].message
    assert exact(round_trip(document)) == exact(document)


def test_messy_real_world_state_is_reported_and_still_readable() -> None:
    document = {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "response", "correlationId": None, "messages": [
            {"role": "agent", "authorName": None, "contents": [{"$type": "functionCall"}, {}]}]}]}}
    _, problems, _ = durable_state.validate(document)
    by_pointer: dict[str, list[str]] = {}
    for problem in problems:
        by_pointer.setdefault(problem.pointer, []).append(problem.message)
    base = "/data/conversationHistory/0/messages/0"
    assert by_pointer["/data/conversationHistory/0/correlationId"] == ["expected string, found null"]
    assert by_pointer[f"{base}/role"][0].startswith('"agent" is not one of')
    assert by_pointer[f"{base}/authorName"] == ["expected string, found null"]
    assert by_pointer[f"{base}/contents/0"] == ['missing required property "callId"',
                                               'missing required property "name"']
    assert by_pointer[f"{base}/contents/1"][0].startswith('missing "$type": expected one of data, error,')
    result = durable_state.read(document, strict=False)
    assert result.problems == problems
    message = result.session.entries[0].messages[0]
    assert message.role == "agent" and message.author_name is None
    assert exact(durable_state.write(result.session)) == exact(document)
    with pytest.raises(InvalidDocumentError):
        durable_state.read(document, strict=True)


def test_version_specific_schemas_apply() -> None:
    developer = {"role": "developer", "contents": [{"$type": "text", "text": "be brief"}]}
    v1 = {"schemaVersion": "1.2.0", "data": {"conversationHistory": [{"$type": "request", "messages": [developer]}]}}
    assert any(p.pointer.endswith("/role") for p in durable_state.validate(v1)[1])
    v2 = {"schemaVersion": "2.0.0", "data": {"conversationHistory": [
        {"$type": "request", "correlationId": "c1", "messages": [developer]}],
        "terminalResults": {}, "completionReceipts": {}}}
    assert durable_state.validate(v2)[1] == []


def test_built_session_writes_kinds_and_default_version() -> None:
    session = Session(data=SessionData(conversation_history=[RequestEntry(correlation_id="c1", messages=[
        Message(role="user", contents=[TextContent(text="hi"), FunctionCallContent(call_id="x", name="f")])])]))
    written = durable_state.write(session)
    assert written == {"schemaVersion": durable_state.DEFAULT_VERSION, "data": {"conversationHistory": [
        {"correlationId": "c1", "$type": "request", "messages": [{"role": "user", "contents": [
            {"$type": "text", "text": "hi"}, {"$type": "functionCall", "callId": "x", "name": "f"}]}]}]}}
    assert durable_state.read(written, strict=True).problems == []


def test_writing_a_kind_durable_state_has_no_type_for_is_refused_not_mislabelled() -> None:
    session = Session(schema_version="1.1.0", data=SessionData(conversation_history=[RequestEntry(messages=[
        Message(role="user", contents=[MemoryContent(items=[MemoryItem(title="t", content="c")])])])]))
    with pytest.raises(FormatError) as raised:
        durable_state.write(session)
    assert raised.value.pointer == "/data/conversationHistory/0/messages/0/contents/0"
    assert "'memory' has no durable-state type" in str(raised.value)


def test_ill_fitting_entry_is_kept_whole_and_unreadable_structure_is_refused_with_pointer() -> None:
    document = {"schemaVersion": "1.0.0", "data": {"conversationHistory": [{"$type": "request", "messages": "x"}]}}
    result = durable_state.read(document, strict=False)
    assert isinstance(result.session.entries[0], OpaqueEntry)
    assert exact(durable_state.write(result.session)) == exact(document)
    broken = {"schemaVersion": "1.0.0", "data": {"conversationHistory": "x"}}
    with pytest.raises(FormatError) as raised:
        durable_state.read(broken, strict=False, source="s.json")
    assert str(raised.value).startswith("s.json: /data/conversationHistory: cannot read")


def test_in_place_edits_of_json_values_are_written_back(sample_path: Path) -> None:
    document = load_json_file(sample_path)
    session = durable_state.read(document).session
    call = session.entries[1].messages[0].contents[0]
    call.arguments["productName"] = "Silverbrew Tea"  # JSON values are the document's own
    written = durable_state.write(session)
    assert written["data"]["conversationHistory"][1]["messages"][0]["contents"][0]["arguments"] == {
        "productName": "Silverbrew Tea"}


def test_changed_copies_do_not_reuse_the_source_they_came_from(sample_path: Path) -> None:
    document = load_json_file(sample_path)
    session = durable_state.read(document).session
    first = session.entries[0]
    changed = first.model_copy(update={"correlation_id": "changed", "messages": (
        Message(role="user", contents=[TextContent(text="new words")]),)})
    assert changed.source is None and first.source is document["data"]["conversationHistory"][0]
    appended = RequestEntry(correlation_id="c9", messages=[Message(role="user", contents=[TextContent(text="more")])])
    history = (changed, *session.entries[1:], appended)
    updated = session.model_copy(update={"data": session.data.model_copy(update={"conversation_history": history})})
    written = durable_state.write(updated)["data"]["conversationHistory"]
    assert written[0] == {"$type": "request", "correlationId": "changed", "createdAt": "2025-11-04T19:33:05.245476+00:00",
                          "messages": [{"role": "user", "contents": [{"$type": "text", "text": "new words"}]}],
                          "responseType": "text"}
    assert written[1:4] == document["data"]["conversationHistory"][1:4]
    assert written[4] == {"$type": "request", "correlationId": "c9",
                          "messages": [{"role": "user", "contents": [{"$type": "text", "text": "more"}]}]}
    assert durable_state.read(durable_state.write(updated), strict=True).problems == []


def test_unknown_key_spelled_like_an_attribute_survives_a_durable_round_trip() -> None:
    document = {"schemaVersion": "1.0.0", "data": {"conversationHistory": [
        {"$type": "response", "messages": [{"role": "assistant", "author_name": "q", "contents": []}]}]}}
    assert exact(round_trip(document)) == exact(document)


def test_the_entry_types_validation_knows_are_the_models() -> None:
    # Spelled twice so that checking a file never loads the model: kept the same here.
    from agentfolio.model import ENTRY_KINDS

    assert durable_state.ENTRY_TYPES == ENTRY_KINDS
