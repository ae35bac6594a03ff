"""One risk scale: a span type's level and score are the same wherever they are shown —
its spans (API), the agent's risk report, the CLI, the viewer — and a run's are the same
in a list and on its own; a span type that declares nothing is unknown, never low; a
span type that sends health data out is critical whatever its points."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from agentfolio import _json
from agentfolio.app import Agentfolio
from agentfolio.app.registry import (
    InstanceGet,
    InstanceList,
    InstanceRegister,
    PageRequest,
    Principal,
    RegistryService,
    Sorting,
    SpanCreate,
    SpanList,
)
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.cli import app as cli_app
from agentfolio.present.risk import risk_label
from agentfolio.settings import Settings
from agentfolio.store import Store
from agentfolio.web.app import create_web_app
from tests.storage import settings_env

SPAN_TYPES = [
    {"name": "noop", "params_schema": {}},
    {"name": "lookup", "params_schema": {}, "data_risk": {
        "action_profile": {"read_data": "allowed"},
        "params_data_categories": {"personal_identifiers": "included", "contact_information": "included"}}},
    {"name": "mailer", "params_schema": {}, "data_risk": {
        "action_profile": {"external_communication": "allowed"},
        "params_data_categories": {"health_and_medical": "included"}}},
]
SPANS = {"lookup": 40, "mailer": 1, "noop": 2}


def run_agent(service: RegistryService, principal: Principal) -> Any:
    draft = schema_version_draft({"span_type_schemas": SPAN_TYPES}, "agent_schema_version")
    instance = service.register_instance(principal, InstanceRegister(
        agent_version={"name": "scale-bot"}, agent_schema_version=draft))
    for name, count in SPANS.items():
        for _ in range(count):
            service.create_span(principal, SpanCreate(agent_instance_id=instance.id, schema_name=name))
    service.create_span(principal, SpanCreate(agent_instance_id=instance.id, schema_name="undeclared"))
    return instance


def test_the_same_level_and_score_everywhere(store: Store, settings: Settings) -> None:
    service = RegistryService(store)
    principal = Principal(store.accounts.ensure("default"))
    instance = run_agent(service, principal)

    report = service.agent_risk(principal, instance.agent_id)
    by_type = {score["span_type"]: score for score in report.schema_versions[0].span_types}
    assert {name: by_type[name]["risk_level"] for name in by_type} == \
        {"noop": "unknown", "lookup": "low", "mailer": "critical"}
    assert by_type["lookup"]["risk_score"] == 10 and by_type["mailer"]["risk_score"] == 18
    assert (report.risk_level, report.risk_score) == ("critical", 18)

    spans = service.list_spans(principal, SpanList(agent_instance_id=instance.id, include_risk_level=True,
                                                   page=PageRequest(0, 100, Sorting("id", "asc"))))
    assert len(spans.items) == sum(SPANS.values()) + 1
    for span in spans.items:
        expected = by_type.get(span.schema_name, {"risk_level": "unknown", "risk_score": 0})
        assert (span.risk_level, span.risk_score) == (expected["risk_level"], expected["risk_score"]), span.schema_name

    got = service.get_instance(principal, InstanceGet(agent_instance_id=instance.id, include_risk_level=True))
    listed = service.list_instances(principal, InstanceList(include_risk_level=True)).items[0]
    assert (got.risk_level, got.risk_score) == (listed.risk_level, listed.risk_score) == ("critical", 40 * 10 + 18)
    # 418 alone is in the high band (100-250), but the run sent health data out: critical.
    assert got.risk is not None and "external_communication_with_sensitive_data" in got.risk["flags"]

    # The CLI shows the same labels.
    runner = CliRunner()
    env = {**settings_env(settings), "COLUMNS": "250"}
    shown = runner.invoke(cli_app, ["agents", "risk", instance.agent_id], env=env)
    assert shown.exit_code == 0, shown.output
    for name, score in by_type.items():
        line = next(row for row in shown.stdout.splitlines() if row.strip().startswith(name))
        assert risk_label(score["risk_level"], score["risk_score"]) in line
    assert "declares no data risk to score" in shown.stdout and "unknown" in shown.stdout
    assert "critical from 250" in shown.stdout  # the legend
    runs = runner.invoke(cli_app, ["instances", "ls"], env=env)
    assert runs.exit_code == 0 and "critical · 418" in runs.stdout

    # So does the viewer.
    folio = Agentfolio(store, owned=False)
    client = TestClient(create_web_app(folio=folio, account=principal.account))
    page = client.get(f"/agents/{instance.agent_id}").text
    assert "risk critical · 18" in page and "risk low · 10" in page and "risk unknown" in page
    assert "risk critical · 418" in page and "How risk is scored" in page
    listing = client.get("/agents").text
    assert "risk critical · 18" in listing
    assert not re.search(r"\d{1,3},\d{3}\.\d", page + listing)  # no "30,000.0"


def test_a_long_run_shows_a_bounded_number(store: Store) -> None:
    service = RegistryService(store)
    principal = Principal(store.accounts.ensure("default"))
    draft = schema_version_draft({"span_type_schemas": SPAN_TYPES}, "agent_schema_version")
    instance = service.register_instance(principal, InstanceRegister(
        agent_version={"name": "busy-bot"}, agent_schema_version=draft))
    from agentfolio.app.registry import BulkItem

    service.bulk(principal, [BulkItem(f"span-{n:05d}", SpanCreate(agent_instance_id=instance.id,
                                                                   schema_name="lookup")) for n in range(3000)])
    got = service.get_instance(principal, InstanceGet(agent_instance_id=instance.id, include_risk_level=True))
    assert (got.risk_level, got.risk_score) == ("critical", 30_000)
    client = TestClient(create_web_app(folio=Agentfolio(store, owned=False), account=principal.account))
    assert "risk critical · 30k" in client.get(f"/agents/{instance.agent_id}").text
    assert "30,000" not in client.get(f"/agents/{instance.agent_id}").text
    assert _json.loads(_json.dumps(got.risk))["risk_score"] == 30_000
