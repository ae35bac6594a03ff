"""The viewer's registry actions: an agent's recent runs with a terminate button, which
stops the run as the signed-in account and no other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfolio.app import Agentfolio
from agentfolio.app.registry import InstanceGet, InstanceRegister, InstanceStart, Principal
from agentfolio.settings import Settings
from agentfolio.web.app import create_web_app


@pytest.fixture
def folio(tmp_path: Path) -> Any:
    with Agentfolio.open(Settings.from_env({}).with_(data_dir=tmp_path)) as opened:
        yield opened


def running(folio: Any, account: str, name: str) -> Any:
    principal = Principal(folio.accounts.ensure(account))
    instance = folio.registry.register_instance(principal, InstanceRegister(agent_version={"name": name}))
    return folio.registry.run(principal, InstanceStart(agent_instance_id=instance.id))


def test_terminate_from_the_agent_page(folio: Any) -> None:
    run = running(folio, "demo", "support-bot")
    elsewhere = running(folio, "other", "support-bot")
    client = TestClient(create_web_app(folio=folio, account=folio.accounts.require("demo")))

    page = client.get(f"/agents/{run.agent_id}")
    assert page.status_code == 200
    assert f'action="/instances/{run.id}/terminate"' in page.text and "Terminate" in page.text

    stopped = client.post(f"/instances/{run.id}/terminate", data={"reason": "stop <now>"}, follow_redirects=False)
    assert stopped.status_code == 303 and stopped.headers["location"] == f"/agents/{run.agent_id}#runs"
    principal = Principal(folio.accounts.require("demo"))
    got = folio.registry.get_instance(principal, InstanceGet(agent_instance_id=run.id))
    assert (got.status, got.termination_reason) == ("terminated", "stop <now>")

    after = client.get(f"/agents/{run.agent_id}")
    assert f'action="/instances/{run.id}/terminate"' not in after.text
    assert "stop &lt;now&gt;" in after.text and "stop <now>" not in after.text

    again = client.post(f"/instances/{run.id}/terminate", data={})
    assert again.status_code == 409 and "already finished" in again.text
    # Another account's run is not found, and stays running.
    foreign = client.post(f"/instances/{elsewhere.id}/terminate", data={"reason": "x"})
    assert foreign.status_code == 404
    other = Principal(folio.accounts.require("other"))
    assert folio.registry.get_instance(other, InstanceGet(agent_instance_id=elsewhere.id)).status == "active"


def test_terminate_from_another_site_is_refused(folio: Any) -> None:
    run = running(folio, "demo", "bot")
    client = TestClient(create_web_app(folio=folio, account=folio.accounts.require("demo")))
    refused = client.post(f"/instances/{run.id}/terminate", data={}, headers={"Sec-Fetch-Site": "cross-site"})
    assert refused.status_code == 403
    principal = Principal(folio.accounts.require("demo"))
    assert folio.registry.get_instance(principal, InstanceGet(agent_instance_id=run.id)).status == "active"


def test_alerts_are_listed_and_acknowledged_in_the_viewer(folio: Any) -> None:
    from agentfolio.app.registry import AlertCount, AlertList, InstanceTerminate

    run = running(folio, "demo", "bot <b>")
    other = running(folio, "other", "bot")
    for principal, instance in ((Principal(folio.accounts.require("demo")), run),
                                (Principal(folio.accounts.require("other")), other)):
        folio.registry.run(principal, InstanceTerminate(agent_instance_id=instance.id, reason="<script>x</script>"))
    client = TestClient(create_web_app(folio=folio, account=folio.accounts.require("demo")))
    page = client.get("/alerts")
    assert page.status_code == 200 and "1 open" in page.text and "terminated instance" in page.text
    assert "&lt;script&gt;" in page.text and "<script>x</script>" not in page.text
    assert other.id not in page.text
    alert_id = folio.registry.run(Principal(folio.accounts.require("demo")), AlertList()).items[0].id
    done = client.post("/alerts/acknowledge", data={"alert_id": alert_id}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/alerts"
    assert folio.registry.run(Principal(folio.accounts.require("demo")), AlertCount()).count == 0
    assert folio.registry.run(Principal(folio.accounts.require("other")), AlertCount()).count == 1
    assert "No open alerts" in client.get("/alerts").text
    assert "acknowledged" in client.get("/alerts?all=1").text
    refused = client.post("/alerts/acknowledge", data={"all": "1"}, headers={"Sec-Fetch-Site": "cross-site"})
    assert refused.status_code == 403
