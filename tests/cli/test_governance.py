"""``agentfolio alerts`` (ls, count, ack) and ``agentfolio risk-profiles`` (ls, create,
show, assign) on the local store, as the account named and no other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentfolio import _json
from agentfolio.app import Agentfolio
from agentfolio.app.registry import InstanceRegister, InstanceStart, InstanceTerminate, Principal, SpanCreate
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.settings import Settings
from tests.cli.test_instances import cli


def seeded(data_dir: Path, account: str) -> Any:
    with Agentfolio.open(Settings.from_env({}).with_(data_dir=data_dir)) as folio:
        principal = Principal(folio.accounts.ensure(account))
        draft = schema_version_draft({"span_type_schemas": [{"name": "known", "params_schema": {}}]})
        run = folio.registry.register_instance(principal, InstanceRegister(agent_version={"name": "bot"},
                                                                           agent_schema_version=draft))
        folio.registry.run(principal, InstanceStart(agent_instance_id=run.id))
        folio.registry.create_span(principal, SpanCreate(agent_instance_id=run.id, schema_name="undeclared"))
        folio.registry.run(principal, InstanceTerminate(agent_instance_id=run.id, reason="loop"))
        return run


def test_alerts_from_the_command_line(data_dir: Path) -> None:
    seeded(data_dir, "default")
    seeded(data_dir, "other")
    assert cli("alerts", "count").stdout.strip() == "2"
    listed = cli("alerts", "ls", "--json")
    alerts = _json.loads(listed.stdout)["summaries"]
    assert sorted(a["kind"] for a in alerts) == ["flagged_span", "terminated_instance"]
    table = cli("alerts", "ls")
    assert table.exit_code == 0 and "run terminated: loop" in table.stdout
    other = _json.loads(cli("alerts", "ls", "--json", "--account", "other").stdout)["summaries"]
    refused = cli("alerts", "ack", other[0]["id"])
    assert refused.exit_code == 1 and "no alert" in refused.output
    assert cli("alerts", "ack").exit_code == 2
    done = cli("alerts", "ack", alerts[0]["id"])
    assert done.exit_code == 0 and "acknowledged 1; 1 open" in done.stdout
    assert "acknowledged 1; 0 open" in cli("alerts", "ack", "--all").stdout
    assert cli("alerts", "count").stdout.strip() == "0"
    assert cli("alerts", "count", "--account", "other").stdout.strip() == "2"
    assert "(acknowledged)" in cli("alerts", "ls", "--all").stdout


def test_risk_profiles_from_the_command_line(data_dir: Path) -> None:
    run = seeded(data_dir, "default")
    made = cli("risk-profiles", "create", "strict", "--weight", "personal_identifiers=10",
               "--multiplier", "read_data=2", "--thresholds", "5,10,20")
    assert made.exit_code == 0, made.output
    profile_id = made.stdout.strip()
    shown = _json.loads(cli("risk-profiles", "show", profile_id).stdout)
    assert shown["categories"]["personal_identifiers"]["weight"] == 10
    assert shown["actions"]["read_data"]["multiplier"] == 2 and shown["thresholds"]["critical"] == 20
    assert cli("risk-profiles", "create", "strict").exit_code == 1  # the name is taken
    assert cli("risk-profiles", "create", "x", "--thresholds", "5,1").exit_code == 2
    assigned = cli("risk-profiles", "assign", run.agent_id, profile_id)
    assert assigned.exit_code == 0 and profile_id in assigned.stdout
    table = cli("risk-profiles", "ls")
    assert "strict" in table.stdout and "default" in table.stdout
    assert "risk profile 'strict'" in cli("agents", "risk", run.agent_id).stdout
    assert cli("risk-profiles", "assign", run.agent_id, "default").exit_code == 0
    assert "risk profile 'default'" in cli("agents", "risk", run.agent_id).stdout
    assert cli("risk-profiles", "show", profile_id, "--account", "nobody").exit_code == 1
