"""Risk profiles (kept, listed, created, assigned: an agent is scored under its own) and
alerts (raised once when what they are about is written, counted until acknowledged),
each within its account; sensitive values encoded at rest and answered masked; the
fields the open dashboard reads (quality_payload, quality_summary, a span's purpose)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from agentfolio.app.registry import (
    AgentUpdate,
    AlertAcknowledge,
    AlertCount,
    AlertList,
    BulkItem,
    InstanceGet,
    InstanceRecordQuality,
    InstanceRegister,
    InstanceTerminate,
    InvalidValue,
    NotFound,
    NotPermitted,
    PageRequest,
    Principal,
    RegistryService,
    RiskProfileCreate,
    RiskProfileGet,
    RiskProfileList,
    Sorting,
    SpanCreate,
    SpanFinish,
    SpanGet,
)
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.registry.sensitive import decode_at_rest
from agentfolio.store import Store
from agentfolio.store.registry_tables import registry_spans

SCHEMA = {
    "span_type_schemas": [
        {"name": "lookup", "params_schema": {"type": "object", "required": ["q"],
                                             "properties": {"q": {"type": "string"}}},
         "data_risk": {"action_profile": {"read_data": "allowed"},
                       "params_data_categories": {"personal_identifiers": "included"}}},
        {"name": "mailer", "params_schema": {},
         "data_risk": {"action_profile": {"external_communication": "allowed"},
                       "params_data_categories": {"health_and_medical": "included"}}},
    ],
    "quality_schemas": [{"name": "accuracy", "schema": {"type": "object"}, "template": "score {{score}}"}],
}


def setup(service: RegistryService, principal: Principal, name: str = "bot", purpose: str = "live") -> Any:
    return service.register_instance(principal, InstanceRegister(
        agent_version={"name": name}, purpose=purpose,  # type: ignore[arg-type]
        agent_schema_version=schema_version_draft(SCHEMA, "agent_schema_version")))


def test_profiles_are_listed_created_and_assigned_and_score_their_agents(store: Store) -> None:
    service = RegistryService(store)
    alice, bob = (Principal(store.accounts.ensure(name)) for name in ("alice", "bob"))
    run = setup(service, alice)
    span = service.create_span(alice, SpanCreate(agent_instance_id=run.id, schema_name="lookup",
                                                 payload={"q": "x"})).span
    default = service.run(alice, RiskProfileGet("default"))
    assert default.is_default and default.agent_count == 1 and default.thresholds["medium"] == 25
    assert service.get_span(alice, SpanGet(agent_span_id=span.id, include_risk_level=True)).risk_score == 6

    strict = service.run(alice, RiskProfileCreate(name="strict", categories={"personal_identifiers": {"weight": 10}},
                                                  thresholds={"medium": 5, "high": 8, "critical": 20}))
    assert strict.categories["personal_identifiers"]["weight"] == 10
    assert strict.categories["health_and_medical"]["weight"] == 9  # from the default template
    with pytest.raises(InvalidValue, match="already the name"):
        service.run(alice, RiskProfileCreate(name="strict"))
    with pytest.raises(InvalidValue, match="thresholds"):
        service.run(alice, RiskProfileCreate(name="bad", thresholds={"medium": 9, "high": 3}))
    empty = service.run(alice, RiskProfileCreate(name="blank", template="empty"))
    assert empty.categories == {} and empty.agent_count == 0

    listed = service.run(alice, RiskProfileList(page=PageRequest(0, 1, Sorting("name", "asc"))))
    assert [p.name for p in listed.items] == ["blank"] and listed.pagination["next_page_offset"] == 1
    assert service.run(alice, RiskProfileList(account_id=service.caller(alice).account_id)).pagination[
        "item_count"] == 2
    with pytest.raises(NotFound):
        service.run(alice, RiskProfileList(account_id=service.caller(bob).account_id))

    service.run(alice, AgentUpdate(agent_id=run.agent_id, risk_profile_id=strict.id))
    scored = service.get_span(alice, SpanGet(agent_span_id=span.id, include_risk_level=True))
    assert (scored.risk_score, scored.risk_level) == (10, "high")
    got = service.get_instance(alice, InstanceGet(agent_instance_id=run.id, include_risk_level=True))
    assert (got.risk_level, got.risk["risk_profile"]) == ("high", "strict")
    assert service.agent_risk(alice, run.agent_id).risk_profile == "strict"
    assert service.run(alice, RiskProfileGet(strict.id)).agent_count == 1

    # Another account's profiles are neither listed nor assignable, even by id.
    assert service.run(bob, RiskProfileList()).items == []
    bob_run = setup(service, bob)
    with pytest.raises(InvalidValue, match="names no risk profile"):
        service.run(bob, AgentUpdate(agent_id=bob_run.agent_id, risk_profile_id=strict.id))
    with pytest.raises(NotFound):
        service.run(bob, RiskProfileGet(strict.id))
    service.run(alice, AgentUpdate(agent_id=run.agent_id, risk_profile_id="default"))
    assert service.get_span(alice, SpanGet(agent_span_id=span.id, include_risk_level=True)).risk_score == 6


def test_alerts_are_raised_once_counted_and_acknowledged_per_account(store: Store) -> None:
    service = RegistryService(store)
    alice, bob = (Principal(store.accounts.ensure(name)) for name in ("alice", "bob"))
    run = setup(service, alice)
    kinds = lambda principal: sorted(a.kind for a in service.run(principal, AlertList()).items)  # noqa: E731
    # Registering the version raised one: the mailer sends health data out.
    assert kinds(alice) == ["critical_risk_combination"]
    service.create_span(alice, SpanCreate(agent_instance_id=run.id, schema_name="lookup", payload={"q": "ok"}))
    broken = service.create_span(alice, SpanCreate(agent_instance_id=run.id, schema_name="lookup", payload={}),
                                 key="span-broken-1").span
    service.create_span(alice, SpanCreate(agent_instance_id=run.id, schema_name="lookup", payload={}),
                        key="span-broken-1")  # a replay raises nothing new
    service.create_span(alice, SpanCreate(agent_instance_id=run.id, schema_name="mystery"))
    service.bulk(alice, [BulkItem(f"bulk-{n}", SpanCreate(agent_instance_id=run.id, schema_name="lookup",
                                                          payload={"q": 1})) for n in range(3)])
    service.run(alice, SpanFinish(agent_span_id=broken.id, result_payload={"fine": True}))
    service.run(alice, InstanceTerminate(agent_instance_id=run.id, reason="runaway"))
    assert kinds(alice) == ["critical_risk_combination", "flagged_span", "schema_breaking_span",
                            "schema_breaking_span", "schema_breaking_span", "schema_breaking_span",
                            "terminated_instance"]
    assert service.run(alice, AlertCount()).count == 7
    assert service.run(bob, AlertCount()).count == 0 and service.run(bob, AlertList()).items == []

    first = service.run(alice, AlertList()).items[0]
    with pytest.raises(NotFound):
        service.run(bob, AlertAcknowledge(alert_ids=(first.id,)))
    done = service.run(alice, AlertAcknowledge(alert_ids=(first.id,)))
    assert (done.acknowledged, done.count) == (1, 6)
    assert service.run(alice, AlertAcknowledge(alert_ids=(first.id,))).acknowledged == 0
    swept = service.run(alice, AlertAcknowledge(everything=True, kind="schema_breaking_span"))
    assert swept.acknowledged == 4 - (first.kind == "schema_breaking_span")
    assert service.run(alice, AlertList(acknowledged=None)).pagination["item_count"] == 7
    assert service.run(alice, AlertList(acknowledged=True)).pagination["item_count"] == swept.acknowledged + 1

    deployed = service.create_deployment_token(alice, run.agent_id)
    principal = service.authenticate(deployed.token)
    assert principal is not None
    with pytest.raises(NotPermitted):
        service.run(principal, AlertCount())


def test_sensitive_values_are_encoded_at_rest_and_answered_masked(store: Store) -> None:
    service = RegistryService(store)
    alice = Principal(store.accounts.ensure("alice"))
    run = setup(service, alice)
    secret = {"$sensitive": "string", "value": "jane@example.com", "labels": ["email", "pii"]}
    written = service.create_span(alice, SpanCreate(agent_instance_id=run.id, schema_name="lookup",
                                                    payload={"q": "find", "who": secret},
                                                    sensitive_encoding=True)).span
    assert written.sensitive_encoding
    assert written.payload["who"] == {"$sensitive": "string", "labels": ["email", "pii"], "masked": True}
    finished = service.run(alice, SpanFinish(agent_span_id=written.id, result_payload={"card": {
        "$sensitive": "string", "value": "4111 1111", "labels": ["account-number"]}}))
    assert finished.span.result_payload == {"card": {"$sensitive": "string", "labels": ["account-number"],
                                                     "masked": True}}
    with store.engine.connect() as connection:
        stored = connection.execute(sa.select(registry_spans.c.payload, registry_spans.c.result_payload)
                                    .where(registry_spans.c.id == written.id)).one()
    assert b"jane@example.com" not in stored.payload and b"4111" not in stored.result_payload
    from agentfolio import _json

    assert decode_at_rest(_json.loads(stored.payload))["who"] == secret  # nothing lost
    listed = service.get_span(alice, SpanGet(agent_span_id=written.id, include_summaries=True))
    assert "jane" not in listed.model_dump_json() and "4111" not in listed.model_dump_json()
    # A wrapper marks a span sensitive even when the client did not say so.
    quiet = service.create_span(alice, SpanCreate(agent_instance_id=run.id, schema_name="lookup",
                                                  payload={"q": {"$sensitive": "string", "value": "s3cret"}})).span
    assert quiet.sensitive_encoding and "s3cret" not in quiet.model_dump_json()


def test_the_fields_the_dashboard_reads(store: Store) -> None:
    service = RegistryService(store)
    alice = Principal(store.accounts.ensure("alice"))
    run = setup(service, alice, purpose="eval")
    span = service.create_span(alice, SpanCreate(agent_instance_id=run.id, schema_name="lookup",
                                                 payload={"q": "x"})).span
    assert span.purpose == "eval"
    recorded = service.run(alice, InstanceRecordQuality(agent_instance_id=run.id, name="accuracy",
                                                        payload={"score": 0.9}))
    assert recorded.quality_payload == {"accuracy": {"score": 0.9}} and recorded.quality_summary == "score 0.9"
    assert recorded.quality_validation["accuracy"]["status"] == "valid"
    assert service.get_instance(alice, InstanceGet(agent_instance_id=run.id)).quality_summary == "score 0.9"
