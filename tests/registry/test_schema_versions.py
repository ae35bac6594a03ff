"""Schema-version create requests: folding the three forms, checks reported, response shape."""

from __future__ import annotations

from datetime import UTC, datetime

import liquid  # noqa: F401  (a runtime dependency: missing is an error, not a skip)
import pytest

from agentfolio.registry.errors import RegistryError
from agentfolio.registry.ids import new_id
from agentfolio.registry.schema_versions import (
    count_external_identifier_repeats,
    load_span_types,
    normalise_schema_version,
    schema_version_details,
)

# The seed's example response body for span_type_schemas, as the create request that produces it.
SEED_REQUEST = {
    "external_identifier": "v0",
    "span_type_schemas": [
        {"name": "llm",
         "params_schema": {"properties": {"max_tokens": {"type": "integer"}, "model": {"type": "string"},
                                          "temperature": {"type": "number"}}, "type": "object"},
         "result_schema": {"properties": {"tokens": {"type": "integer"}}, "type": "object"}},
        {"name": "tool",
         "params_schema": {"properties": {"input": {"type": "object"}, "name": {"type": "string"}}, "type": "object"},
         "result_schema": {"additionalProperties": False, "type": "object"}},
    ],
}

SUCCESS = {"status": "success", "message": None}


def test_seed_example_normalises_to_the_documented_response_shape():
    draft = normalise_schema_version(SEED_REQUEST)
    now = datetime(2024, 1, 1, tzinfo=UTC)
    version_id, account_id, agent_id = new_id(), new_id(), new_id()
    details = schema_version_details(draft, id=version_id, account_id=account_id, agent_id=agent_id,
                                     inserted_at=now, external_identifier_repeats=1)
    assert details["type"] == "agent_schema_version"
    assert (details["id"], details["account_id"], details["agent_id"]) == (version_id, account_id, agent_id)
    assert details["external_identifier"] == "v0" and details["external_identifier_repeats"] == 1
    assert details["current_agent_deployment_refs"] == []
    assert details["inserted_at"] == details["updated_at"] == "2024-01-01T00:00:00.000000Z"
    llm = details["span_type_schemas"]["llm"]
    assert set(llm) >= {"name", "title", "description", "template", "data_risk", "params_schema",
                        "params_schema_validation", "result_schema", "result_schema_validation"}
    assert llm["name"] == llm["title"] == "llm"
    assert llm["params_schema"] == SEED_REQUEST["span_type_schemas"][0]["params_schema"]
    assert llm["params_schema_validation"] == llm["result_schema_validation"] == SUCCESS
    assert llm["data_risk"]["action_profile"]["read_data"] == "unknown"
    assert details["span_type_schemas"]["tool"]["result_schema"] == {"additionalProperties": False, "type": "object"}


def test_older_maps_fold_into_span_types_and_the_list_wins_a_clash():
    draft = normalise_schema_version({
        "span_type_schemas": [{"name": "agent:llm", "params_schema": {"type": "object"}, "title": "LLM Call",
                               "description": "A call", "template": "{{model}}"}],
        "span_schemas": {"agent:llm": {"type": "string"}, "agent:tool": {"type": "object"}},
        "span_result_schemas": {"agent:tool": {"type": "array"}, "agent:llm": {"type": "number"},
                                "agent:only_result": {"type": "object"}},
    })
    assert list(draft.span_types) == ["agent:llm", "agent:tool", "agent:only_result"]
    llm = draft.span_types["agent:llm"]
    assert llm.params_schema == {"type": "object"} and llm.title == "LLM Call" and llm.description == "A call"
    assert llm.result_schema == {"type": "number"}  # the list left it unset, the map supplies it
    assert draft.span_types["agent:tool"].params_schema == {"type": "object"}
    assert draft.span_types["agent:tool"].result_schema == {"type": "array"}
    only = draft.span_types["agent:only_result"]
    assert only.params_schema == {} and only.result_schema == {"type": "object"} and only.title == "agent:only_result"


def test_result_schema_defaults_to_empty_object():
    draft = normalise_schema_version({"span_type_schemas": [{"name": "x", "params_schema": {}, "result_schema": None}]})
    assert draft.span_types["x"].result_schema == {}
    assert draft.span_types["x"].result_schema_validation.ok


def test_invalid_json_schemas_are_accepted_and_reported_not_refused():
    draft = normalise_schema_version({"span_type_schemas": [
        {"name": "bad_type", "params_schema": {"type": "objekt"}},
        {"name": "bad_regex", "params_schema": {"type": "string", "pattern": "(["}},
        {"name": "remote", "params_schema": {"$ref": "https://example.com/schema.json"}},
        {"name": "bad_result", "params_schema": {}, "result_schema": {"required": "tokens"}},
    ]})
    types = draft.span_types
    assert "'objekt' is not a JSON type" in types["bad_type"].params_schema_validation.message
    assert types["bad_type"].params_schema_validation.status == "error"
    assert "regex" in types["bad_regex"].params_schema_validation.message
    assert "not fetch" in types["remote"].params_schema_validation.message.lower() or \
        "retrieval is disabled" in types["remote"].params_schema_validation.message.lower()
    assert types["bad_result"].params_schema_validation.ok
    assert "/required" in types["bad_result"].result_schema_validation.message
    assert draft.invalid_span_types == ["bad_type", "bad_regex", "remote", "bad_result"]


def test_invalid_template_is_reported_with_its_reason():
    draft = normalise_schema_version({"span_type_schemas": [
        {"name": "x", "params_schema": {}, "template": "{{ model | shout }}"}]})
    entry = draft.span_type_schemas_json()["x"]
    assert entry["template_validation"]["status"] == "error"
    assert "unknown filter 'shout'" in entry["template_validation"]["message"]


def test_structural_problems_are_all_reported_naming_fields():
    with pytest.raises(RegistryError) as caught:
        normalise_schema_version({
            "id": "not-an-id",
            "span_type_schemas": [
                {"params_schema": {}},
                {"name": "ok", "params_schema": "string"},
                {"name": "dup", "params_schema": {}},
                {"name": "dup", "params_schema": {}},
                {"name": "risky", "params_schema": {}, "data_risk": {"action_profile": {"read_data": "yes"}}},
                {"name": "t", "params_schema": {}, "title": 5},
                {"name": "np"},
            ],
            "span_schemas": ["not", "a", "map"],
        }, field_path="details")
    errors = caught.value.errors
    assert "not a valid ID" in errors["details.id"]
    assert errors["details.span_type_schemas[0].name"] == "is required"
    assert "must be a JSON Schema object, found a string" in errors["details.span_type_schemas[1].params_schema"]
    assert "duplicate span type 'dup' (first declared at details.span_type_schemas[2])" in \
        errors["details.span_type_schemas[3].name"]
    assert "'yes' is not one of" in errors["details.span_type_schemas[4].data_risk.action_profile.read_data"]
    assert "must be a string or null" in errors["details.span_type_schemas[5].title"]
    assert "is required" in errors["details.span_type_schemas[6].params_schema"]
    assert "must be an object mapping" in errors["details.span_schemas"]
    assert caught.value.to_json()["status"] == "error"


def test_missing_name_is_required_value_code():
    with pytest.raises(RegistryError) as caught:
        normalise_schema_version({"span_type_schemas": [{"params_schema": {}}]})
    assert caught.value.code == "required_value"


def test_quality_schemas_are_normalised_like_span_types():
    draft = normalise_schema_version({"quality_schemas": [
        {"name": "judge", "schema": {"type": "object", "properties": {"score": {"type": "number"}}},
         "template": "score {{score}}"}]})
    judge = draft.quality_schemas_json()["judge"]
    assert judge["title"] == "judge" and judge["schema_validation"] == SUCCESS


def test_stored_span_types_load_back_identically():
    draft = normalise_schema_version(SEED_REQUEST)
    assert load_span_types(draft.span_type_schemas_json()) == draft.span_types


def test_fingerprint_ignores_identity_but_sees_content():
    a = normalise_schema_version({**SEED_REQUEST, "external_identifier": "a"})
    b = normalise_schema_version({**SEED_REQUEST, "external_identifier": "b"})
    c = normalise_schema_version({"span_schemas": {"llm": {}}})
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_external_identifier_repeats_counts_rows_sharing_it():
    assert count_external_identifier_repeats("v1", ["v1", "v2", "v1", None]) == 2
    assert count_external_identifier_repeats(None, [None, None]) == 0
