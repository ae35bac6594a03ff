"""Schemathesis over the served OpenAPI document: no 5xx, answers as documented, and every
error in the error envelope."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agentfolio.store import Store
from tests.storage import LiveServer

EXAMPLES = int(os.environ.get("AGENTFOLIO_TEST_FUZZ_EXAMPLES", "60"))


@schemathesis.check
def errors_use_the_envelope(ctx, response, case):  # type: ignore[no-untyped-def]
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body, dict) and body.get("status") == "error", body
        assert isinstance(body.get("code"), str) and isinstance(body.get("message"), str), body


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance, errors_use_the_envelope]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
def test_served_openapi(live: LiveServer, store: Store, mode: GenerationMode) -> None:
    token, account = store.accounts.create_token("fuzz")
    store.sessions.of(account).create({"schemaVersion": "1.0.0", "data": {"conversationHistory": []}}, session_id="a")
    schema = schemathesis.openapi.from_url(live.url + "/openapi.json")
    headers = {"Authorization": f"Bearer {token}"}
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 6
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case):  # type: ignore[no-untyped-def]
            case.call_and_validate(headers=headers, checks=CHECKS)

        try:
            run()
        except Exception as error:  # collect every operation's failure, then report them together
            failures.append(f"{operation.label}: {str(error)[:3000]}")
    assert not failures, "\n\n".join(failures)


#: Operations whose every documented-valid request the server takes (2xx, 404 for an id
#: that names nothing, 409 for a conflict with what is stored): their documents give the
#: types of the query parameters, the sort fields, the required fields, the idempotency
#: key's bounds, /agent/show's one-of-two selector, a session read in a format its content
#: cannot be written in (409). Not in it: the create bodies (a name already taken, an id of
#: nothing), appends (a stale If-Match is a 412 no document can rule out) and /render,
#: whose ``strict=true`` refuses a document that breaks its format (400, as documented:
#: a query parameter cannot narrow the body's schema).
ACCEPTING = ["GET /api/v1/sessions", "GET /api/v1/agent", "GET /api/v1/agent_instance", "GET /api/v1/agent_spans",
             "GET /api/v1/alerts", "GET /api/v1/risk_profile", "GET /api/v1/agent_instance/{agent_instance_id}",
             "GET /api/v1/agent_spans/{agent_span_id}", "POST /api/v1/alerts/acknowledge",
             "POST /api/v1/agent_instance/{agent_instance_id}/record_quality", "GET /api/v1/agent/show",
             "GET /api/v1/sessions/{session_id}", "POST /api/v1/bulk",
             "POST /api/v1/agent/{agent_id}/retire", "DELETE /api/v1/agent/{agent_id}"]


def test_what_the_openapi_document_allows_is_accepted(live: LiveServer, store: Store) -> None:
    token, _ = store.accounts.create_token("accepting")
    schema = schemathesis.openapi.from_url(live.url + "/openapi.json")
    headers = {"Authorization": f"Bearer {token}"}
    operations = {result.ok().label: result.ok() for result in schema.get_all_operations()}
    assert set(ACCEPTING) <= set(operations), set(ACCEPTING) - set(operations)
    failures: list[str] = []
    for label in ACCEPTING:

        @given(case=operations[label].as_strategy(generation_mode=GenerationMode.POSITIVE))
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case):  # type: ignore[no-untyped-def]
            case.call_and_validate(headers=headers, checks=[not_a_server_error, positive_data_acceptance])

        try:
            run()
        except Exception as error:
            failures.append(f"{label}: {str(error)[:3000]}")
    assert not failures, "\n\n".join(failures)
