"""The create bodies the OpenAPI document describes (``agentfolio.api.registry.bodies``) are
taken as described: requests generated from each documented body are accepted by a live
server, and each documented bound is one the server enforces."""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, positive_data_acceptance

from agentfolio.api.registry.bodies import TIMESTAMP_PATTERN
from agentfolio.registry.timestamps import parse_timestamp
from agentfolio.store import Store
from tests.storage import LiveServer

EXAMPLES = int(os.environ.get("AGENTFOLIO_TEST_FUZZ_EXAMPLES", "60"))
REGISTER, SPANS, VERSIONS = "/api/v1/agent_instance/register", "/api/v1/agent_spans", "/api/v1/agent_schema_version"


def pinned(node: Any, pins: dict[str, Any]) -> Any:
    """The schema with each named property, wherever it stands, replaced by its pin: what
    no static document can make valid (an id of your own must lie in your account's id
    partition, a key or an external identifier must be fresh, an instance must exist) is
    left out (``False``) or fixed (``{"const": …}``). Arrays of named declarations hold one
    (their names must be unique, which a schema cannot say of an array of objects)."""
    if isinstance(node, list):
        return [pinned(item, pins) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: pinned(value, pins) for key, value in node.items()}
    properties = out.get("properties")
    if isinstance(properties, dict):
        for name, pin in pins.items():
            if name in properties:
                properties[name] = pin
        for name in ("span_type_schemas", "quality_schemas"):
            if name in properties:
                properties[name] = {**properties[name], "maxItems": 1}
    return out


def _accepts(live: LiveServer, document: dict[str, Any], path: str, token: str) -> None:
    schema = schemathesis.openapi.from_dict(document)
    operation = schema[path]["POST"]

    @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case):  # type: ignore[no-untyped-def]
        case.call_and_validate(base_url=live.url, headers={"Authorization": f"Bearer {token}"},
                               checks=[not_a_server_error, positive_data_acceptance])

    run()


@pytest.mark.parametrize("path", [REGISTER, SPANS, VERSIONS])
def test_every_create_body_the_document_allows_is_taken(live: LiveServer, store: Store, path: str) -> None:
    token, _ = store.accounts.create_token("bodies")
    headers = {"Authorization": f"Bearer {token}"}
    made = httpx.post(live.url + REGISTER, headers=headers, json={"agent_id": "bodies", "agent_version": {}}).json()
    instance, agent = made["details"]["id"], made["details"]["agent_id"]
    document = httpx.get(live.url + "/openapi.json").json()
    pins = {"id": False, "idempotency_key": False, "external_identifier": False, "environment_id": False,
            "agent_instance_id": {"const": instance}, "agent_id": {"const": agent}}
    document["paths"][path]["post"] = pinned(document["paths"][path]["post"], pins)
    _accepts(live, document, path, token)


@given(st.from_regex(TIMESTAMP_PATTERN, fullmatch=True))
@settings(max_examples=300, deadline=None)
def test_every_documented_timestamp_is_read(value: str) -> None:
    assert parse_timestamp(value, "started_at") is not None
