"""Microsoft's own JSON-Schema-Test-Suite cases for durable agent state, every one run.

Provenance and how each group is run: tests/fixtures/microsoft_schema_tests/README.md.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson
import pytest

from agentfolio import _json
from agentfolio.formats import durable_state
from agentfolio.formats.schema_check import bundled_schema
from agentfolio.model import Session

CASES = Path(__file__).parent.parent / "fixtures" / "microsoft_schema_tests"
SCHEMA_ID = "https://github.com/microsoft/agent-framework-durable-extension/schemas/durable-agent-entity-state.json"
SHA256 = {
    "validation-cases.json": "9cc854d1dce13a896e47adfc4c53e0361b201c6a99f04a56dc75748426afb1e6",
    "versioned-envelope-cases.json": "da70d1127f601ffe5fa199f2be6eb23400a27ab06054e6db1208d5f891a8e978",
    "content-metadata-cases.json": "a4a16d4d3ddf231481054c8d52507dc712313b97bc5e2726b3938f5f7e1dbe44",
}
# Written against an earlier schema revision (legacy uri without mediaType, legacy string
# arguments); the bundled revision and its own versioned cases make both 2.0-only.
WIDENED_AT_57DBFAD = frozenset(
    ("content-metadata-cases.json", f"{kind} metadata JSON boundary", description)
    for kind in ("uriContent", "functionCallContent")
    for description in ("Content metadata preserves null", "Content metadata preserves boolean",
                        "Content metadata preserves integer", "Content metadata preserves decimal",
                        "Content metadata preserves string", "Content metadata preserves array",
                        "Content metadata preserves object", "Absent content metadata stays absent"))


def exact(value: object) -> bytes:
    return _json.dumps(value, option=orjson.OPT_SORT_KEYS)


@cache
def groups(name: str) -> list[dict[str, Any]]:
    # Our JSON reader: 18446744073709551616 must stay an exact integer.
    loaded = _json.loads((CASES / name).read_bytes())
    assert isinstance(loaded, list)
    return loaded


def cases() -> list[Any]:
    found = []
    for name in sorted(SHA256):
        for group in groups(name):
            for test in group["tests"]:
                key = (name, group["description"], test["description"])
                found.append(pytest.param(group["schema"]["$ref"], test["data"], test["valid"], key,
                                          id=" | ".join(key)))
    return found


@cache
def fragment_validator(ref: str) -> Any:
    schema = bundled_schema(durable_state.SCHEMA_FILE)
    return jsonschema_rs.validator_for({"$ref": ref}, registry=jsonschema_rs.Registry([(SCHEMA_ID, schema)]))


def ours(ref: str, data: Any) -> bool:
    """Whether agentfolio calls the case valid: whole documents through the format's own
    validator, fragments against the bundled schema."""
    if ref == SCHEMA_ID:
        return not durable_state.validate(data)[1]
    return bool(fragment_validator(ref).is_valid(data))


def test_the_cases_are_microsofts_bytes() -> None:
    for name, digest in SHA256.items():
        assert hashlib.sha256((CASES / name).read_bytes()).hexdigest() == digest, name
    assert sum(len(group["tests"]) for name in SHA256 for group in groups(name)) == 226


def test_the_bundled_schema_is_the_one_the_cases_name() -> None:
    assert bundled_schema(durable_state.SCHEMA_FILE)["$id"] == SCHEMA_ID


@pytest.mark.parametrize(("ref", "data", "valid", "key"), cases())
def test_microsoft_case(ref: str, data: Any, valid: bool, key: tuple[str, str, str]) -> None:
    if key in WIDENED_AT_57DBFAD:
        assert valid is True and ours(ref, data) is False, "the bundled schema narrowed this case to 2.0"
        return
    assert ours(ref, data) is valid


def test_exactly_the_widened_cases_disagree() -> None:
    disagree = {(name, group["description"], test["description"])
                for name in SHA256 for group in groups(name) for test in group["tests"]
                if ours(group["schema"]["$ref"], test["data"]) is not test["valid"]}
    assert disagree == WIDENED_AT_57DBFAD


# -- what a valid case holds survives a read and a write --------------------------------

_V2_EMPTY = {"terminalResults": {}, "completionReceipts": {}}


def as_document(ref: str, data: Any) -> dict[str, Any]:
    """A case's data as the whole document it belongs in."""
    if ref == SCHEMA_ID:
        return data  # type: ignore[no-any-return]
    fragment = ref.removeprefix(SCHEMA_ID + "#/$defs/")
    v2 = fragment.startswith("v2")
    if fragment in ("v2ChatMessage",):
        message = data
    elif fragment == "terminalResponse":
        outcome = {"correlationId": "c", "outcome": "succeeded", "completedAt": "2026-09-11T00:00:00Z"}
        return {"schemaVersion": "2.0.0", "data": {
            "conversationHistory": [], "terminalResults": {"c": {**outcome, "response": data}},
            "completionReceipts": {"c": {**outcome, "resultState": "available"}}}}
    elif fragment == "data/properties/ingestedPositions":
        return {"schemaVersion": "1.2.0", "data": {"conversationHistory": [], "ingestedPositions": data}}
    else:
        message = {"role": "assistant", "contents": [data]}
    history = [{"$type": "response", "messages": [message]}]
    if v2:
        return {"schemaVersion": "2.0.0", "data": {"conversationHistory": history, **_V2_EMPTY}}
    return {"schemaVersion": "1.2.0", "data": {"conversationHistory": history}}


@pytest.mark.parametrize(("ref", "data", "valid", "key"), [case for case in cases() if case.values[2]])
def test_what_a_valid_case_holds_survives_a_round_trip(ref: str, data: Any, valid: bool,
                                                         key: tuple[str, str, str]) -> None:
    document = as_document(ref, data)
    read = durable_state.read(document, strict=False)
    written = durable_state.write(read.session)
    assert exact(written) == exact(document)
    # ...and through the model's own serializer too, not only the entries' remembered JSON.
    rebuilt = Session.model_validate(document)
    assert exact(durable_state.write(rebuilt)) == exact(document)


# -- the Python prototype's 2.0 spellings ---------------------------------------------

PROTOTYPE_STATE = {
    "schemaVersion": "2.0.0",
    "data": {
        "conversationHistory": [
            {"$type": "request", "correlationId": "c1", "createdAt": "2026-09-08T12:00:00.123456+00:00",
             "messages": [{"role": "user", "contents": [{"$type": "text", "text": "hello"}], "messageId": "u1"}]}],
        "responseMailbox": {"c1": {
            "response": {"messages": [{"role": "assistant", "contents": [{"$type": "text", "text": "hi"}]}],
                         "metadata": {"v": [1]}},
            "createdAt": "2026-09-08T12:00:00.123456+00:00", "expiresAt": "2026-09-08T12:01:00.123456+00:00",
            "futureMailboxField": {"keep": True}}},
        "completedCorrelations": {"c1": {"completedAt": "2026-09-08T12:00:00.123456+00:00", "outcome": "succeeded",
                                         "futureReceiptField": [1, 3]}},
    },
}


def test_a_prototype_state_is_read_whole_and_named_by_its_shared_spelling() -> None:
    version, problems, notes = durable_state.validate(PROTOTYPE_STATE)
    # Microsoft's shared schema requires the shared maps: the prototype's state breaks it...
    assert any(p.pointer == "/data" and "terminalResults" in p.message for p in problems)
    # ...and the notes say which shared name each prototype map stands for.
    assert {(n.pointer, "terminalResults" in n.message or "completionReceipts" in n.message) for n in notes} == {
        ("/data/responseMailbox", True), ("/data/completedCorrelations", True)}
    result = durable_state.read(PROTOTYPE_STATE, strict=False)
    assert exact(durable_state.write(result.session)) == exact(PROTOTYPE_STATE)


def test_a_state_with_the_shared_maps_has_no_prototype_note() -> None:
    shared = {"schemaVersion": "2.0.0", "data": {"conversationHistory": [], **_V2_EMPTY}}
    assert durable_state.validate(shared)[1:] == ([], [])
