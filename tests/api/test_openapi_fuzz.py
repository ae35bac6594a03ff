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
