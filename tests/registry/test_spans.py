"""Span validation (flag, never drop), compile-once caching, lifecycle rules, timestamps."""

from __future__ import annotations

from datetime import UTC, datetime

import liquid  # noqa: F401  (a runtime dependency: missing is an error, not a skip)
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfolio.registry import jsonschemas
from agentfolio.registry.errors import RegistryError
from agentfolio.registry.schema_versions import normalise_schema_version
from agentfolio.registry.spans import (
    CompiledSchemaVersion,
    SchemaVersionCache,
    check_create,
    check_finish,
    check_instance_finish,
    span_counts,
    validate_without_version,
)
from agentfolio.registry.timestamps import format_timestamp, parse_timestamp

VERSION = normalise_schema_version({"span_type_schemas": [
    {"name": "agent:llm",
     "params_schema": {"type": "object", "required": ["model", "prompt"],
                       "properties": {"model": {"type": "string"}, "prompt": {"type": "string"},
                                      "a/b~c": {"type": "integer"}}},
     "result_schema": {"type": "object", "required": ["response"], "properties": {"response": {"type": "string"}}},
     "template": "{{model}}: {{prompt}} → {{response}}"},
    {"name": "broken", "params_schema": {"type": "objekt"}, "result_schema": {"type": "object"}},
    {"name": "free", "params_schema": {}},
]})


@pytest.fixture
def version() -> CompiledSchemaVersion:
    return CompiledSchemaVersion.from_draft(VERSION, "0" * 32)


def test_matching_span_is_valid(version):
    assert version.validate("agent:llm", {"model": "m", "prompt": "p"}, {"response": "r"}).status == "valid"
    assert version.validate("agent:llm", {"model": "m", "prompt": "p"}, None, status="active").status == "valid"


def test_mismatches_are_reported_at_json_pointers_for_payload_and_result(version):
    checked = version.validate("agent:llm", {"model": 3, "a/b~c": "x"}, {"response": 1})
    assert checked.status == "invalid" and checked.flagged
    found = {(p.part, p.pointer) for p in checked.problems}
    assert ("payload", "/model") in found and ("payload", "/a~1b~0c") in found
    assert ("payload", "") in found  # required "prompt" is missing at the root
    assert ("result_payload", "/response") in found
    model = next(p for p in checked.problems if p.pointer == "/model")
    assert model.schema_pointer == "/properties/model/type" and "not of type" in model.message
    assert checked.to_json()["problems"][0]["part"] in {"payload", "result_payload"}


def test_undeclared_span_type_is_flagged_not_refused(version):
    checked = version.validate("agent:ghost", {"x": 1})
    assert checked.status == "invalid"
    assert checked.problems[0].part == "schema_name" and "'agent:ghost' is not declared" in checked.problems[0].message


def test_span_of_a_type_with_an_invalid_schema_is_unchecked_with_the_reason(version):
    checked = version.validate("broken", {"anything": True}, {"not": "an array"})
    assert checked.status == "unchecked"
    assert "params schema is invalid" in checked.note
    bad_result = version.validate("broken", {}, ["not an object"])
    assert bad_result.status == "invalid" and bad_result.problems[0].part == "result_payload"


def test_never_started_spans_are_not_held_to_the_params_schema(version):
    assert version.validate("agent:llm", {}, status="pending").status == "valid"
    assert version.validate("agent:llm", {}, None, status="cancelled").status == "valid"
    assert version.validate("agent:llm", {}, None, status="active").status == "invalid"


def test_problem_lists_are_bounded(version):
    wide = CompiledSchemaVersion.from_draft(normalise_schema_version({"span_schemas": {
        "wide": {"type": "object", "additionalProperties": {"type": "string"}}}}))
    checked = wide.validate("wide", {f"k{i}": i for i in range(100)})
    assert len(checked.problems) == 21 and "not listed" in checked.problems[-1].message


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20),
       st.sampled_from(["agent:llm", "broken", "free", "nope"]))
def test_validation_never_raises_for_any_json(payload, name):
    version = CompiledSchemaVersion.from_draft(VERSION)
    checked = version.validate(name, payload, payload)
    assert checked.status in {"valid", "invalid", "unchecked"}


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20))
def test_a_span_type_without_schema_keywords_takes_every_payload_as_the_schema_library_would(payload):
    """``{}`` schemas (every OTel span type's) are not handed to the library: the answer
    must still be the library's, for payload and result alike."""
    library = jsonschemas.compile_schema({})
    version = CompiledSchemaVersion.from_draft(VERSION)
    checked = version.validate("free", payload, payload)
    assert checked.status == ("valid" if library.is_valid(payload) else "invalid")
    assert checked.problems == ()


def test_a_schema_with_any_keyword_is_still_checked():
    strict = CompiledSchemaVersion.from_draft(normalise_schema_version({"span_type_schemas": [
        {"name": "typed", "params_schema": {"type": "object"}, "result_schema": {"not": {}}}]}))
    assert strict.validate("typed", ["not an object"]).status == "invalid"
    assert strict.validate("typed", {}, {"anything": 1}).problems[0].part == "result_payload"


def test_summary_renders_the_span_types_template(version):
    assert version.summary("agent:llm", {"model": "gpt", "prompt": "hi"}, {"response": "yo"}) == "gpt: hi → yo"
    assert version.summary("free", {"a": 1}) is None
    assert version.title("agent:llm") == "agent:llm" and version.title("ghost") == "ghost"


def test_schemas_compile_once_and_validate_every_span():
    jsonschemas.VALIDATORS.clear()
    CompiledSchemaVersion.from_draft(VERSION)
    compiled = len(jsonschemas.VALIDATORS._items)
    CompiledSchemaVersion.from_draft(VERSION)  # same schemas again: served from the cache
    assert len(jsonschemas.VALIDATORS._items) == compiled
    version = CompiledSchemaVersion.from_draft(VERSION)
    # Each span is checked against its own payloads (bench/checks.py times the rate).
    verdicts = [version.validate("agent:llm", {"model": "m", "prompt": str(i) if i % 3 else i},
                                 {"response": "r"}).status for i in range(300)]
    assert verdicts == ["invalid" if i % 3 == 0 else "valid" for i in range(300)]


def test_schema_version_cache_loads_each_version_once():
    loads = []

    def loader(version_id):
        loads.append(version_id)
        return CompiledSchemaVersion.from_draft(VERSION, version_id) if version_id != "missing" else None

    cache = SchemaVersionCache(loader, size=2)
    assert cache.get("a") is cache.get("a")
    assert cache.get("missing") is None
    cache.get("b"), cache.get("c"), cache.get("a")  # "a" was evicted by size 2
    assert loads == ["a", "missing", "b", "c", "a"]


def test_compiled_version_loads_from_stored_details():
    stored = {"id": "1" * 32, "span_type_schemas": VERSION.span_type_schemas_json()}
    loaded = CompiledSchemaVersion.from_details(stored)
    assert loaded.validate("agent:llm", {"model": 1}).status == "invalid"
    assert validate_without_version().status == "unchecked"


def test_create_rules():
    assert check_create("active") == "active"
    assert check_create("complete", result_payload={"r": 1}, finished_at="2024-01-01T00:00:00Z") == "complete"
    with pytest.raises(RegistryError, match="details.status: 'running' is not one of"):
        check_create("running")
    with pytest.raises(RegistryError, match="only a finished span"):
        check_create("active", result_payload={"r": 1})


def test_finish_rules():
    assert check_finish("active") == "complete"
    assert check_finish("active", "failed") == "failed"
    assert check_finish("active", "cancelled") == "cancelled"  # the Python SDK cancels started spans
    assert check_finish("pending", "cancelled") == "cancelled"
    with pytest.raises(RegistryError) as caught:
        check_finish("complete", "failed")
    assert caught.value.code == "invalid_action"  # HTTP 409, which both SDKs tolerate
    with pytest.raises(RegistryError) as caught:
        check_finish("active", "done")
    assert caught.value.code == "invalid_value"
    with pytest.raises(RegistryError, match="terminated"):
        check_instance_finish("terminated")


def test_span_counts_shape():
    assert span_counts(["active", "complete", "failed", "cancelled", "complete", "pending"]) == {
        "total": 6, "pending": 1, "active": 1, "complete": 2, "failed": 1, "cancelled": 1, "finished": 4}


@pytest.mark.parametrize("text", [
    "2024-01-01T00:00:00Z", "2024-01-01T00:00:00+00:00", "2024-01-01T00:00:00.000000+00:00", "2024-01-01T00:00:00",
    "2024-01-01T02:00:00+02:00",
])
def test_timestamps_in_every_sdk_spelling_parse_to_the_same_instant(text):
    parsed = parse_timestamp(text)
    assert parsed == datetime(2024, 1, 1, tzinfo=UTC)
    assert format_timestamp(parsed) == "2024-01-01T00:00:00.000000Z"


def test_null_timestamp_means_default_and_junk_is_refused_naming_the_field():
    now = datetime(2030, 5, 5, tzinfo=UTC)
    assert parse_timestamp(None, default=now) is now
    with pytest.raises(RegistryError, match="details.started_at: 'yesterday' is not an ISO 8601 date-time"):
        parse_timestamp("yesterday", "details.started_at")
    with pytest.raises(RegistryError, match="timestamp: must be an ISO 8601 date-time string, found int"):
        parse_timestamp(5)
