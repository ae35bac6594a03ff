"""``agentfolio instances``: list an account's runs and terminate one; the SDK's next span
answer then carries the stop instruction, and another account's run is not reachable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentfolio import _json
from agentfolio.app import Agentfolio
from agentfolio.app.registry import InstanceGet, InstanceRegister, InstanceStart, Principal, SpanCreate
from agentfolio.cli import app
from agentfolio.settings import Settings

runner = CliRunner()


def start_run(data_dir: Path, account: str, agent: str) -> str:
    with Agentfolio.open(Settings.from_env({}).with_(data_dir=data_dir)) as folio:
        principal = Principal(folio.accounts.ensure(account))
        instance = folio.registry.register_instance(principal, InstanceRegister(agent_version={"name": agent}))
        folio.registry.run(principal, InstanceStart(agent_instance_id=instance.id))
        return instance.id


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_terminate_stops_a_run_and_the_sdk_is_told(data_dir: Path) -> None:
    mine = start_run(data_dir, "default", "support-bot")
    theirs = start_run(data_dir, "other", "support-bot")

    listed = cli("instances", "ls", "--json")
    assert listed.exit_code == 0, listed.output
    assert [row["id"] for row in _json.loads(listed.stdout)["summaries"]] == [mine]

    refused = cli("instances", "terminate", theirs, "--reason", "not yours")
    assert refused.exit_code == 1 and "no agent instance" in refused.output

    done = cli("instances", "terminate", mine, "--reason", "runaway loop")
    assert done.exit_code == 0, done.output
    assert f"terminated {mine}: runaway loop" in done.stdout

    again = cli("instances", "terminate", mine)
    assert again.exit_code == 1 and "already finished (terminated)" in again.output

    with Agentfolio.open(Settings.from_env({}).with_(data_dir=data_dir)) as folio:
        principal = Principal(folio.accounts.require("default"))
        got = folio.registry.get_instance(principal, InstanceGet(agent_instance_id=mine))
        assert (got.status, got.termination_reason) == ("terminated", "runaway loop")
        written = folio.registry.create_span(principal, SpanCreate(agent_instance_id=mine, schema_name="x"))
        assert written.control is not None and written.control.reason == "runaway loop"
        other = Principal(folio.accounts.require("other"))
        assert folio.registry.get_instance(other, InstanceGet(agent_instance_id=theirs)).status == "active"

    table = cli("instances", "ls", "--status", "terminated")
    assert table.exit_code == 0 and mine in table.stdout and "runaway loop" in table.stdout


def test_an_unknown_account_is_one_line(data_dir: Path) -> None:
    answer = cli("instances", "ls", "--account", "nobody")
    assert answer.exit_code == 1 and "no account named 'nobody'" in answer.output
