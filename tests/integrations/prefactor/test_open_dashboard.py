"""The MIT-licensed Prefactor open dashboard's own sync engine (``server/sync.mjs``, run
unmodified under Node with no dependencies) against ``agentfolio serve``: it pages back
every agent, run and span with no warning, reads each run's quality, and its risk and
alert figures are ours.

The dashboard is not on any package registry, so the test reads its file from a
checkout named by ``AGENTFOLIO_OPEN_DASHBOARD`` (a working tree, or a git directory:
``git clone https://github.com/prefactordev/prefactor-open-dashboard``).  Without it the
test skips, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentfolio import _json
from agentfolio.app import Agentfolio
from agentfolio.app.registry import (
    AgentUpdate,
    BulkItem,
    InstanceFinish,
    InstanceRecordQuality,
    InstanceRegister,
    InstanceStart,
    InstanceTerminate,
    Principal,
    RegistryService,
    RiskProfileCreate,
    SpanCreate,
)
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.store import Store
from tests.integrations.prefactor.conftest import everything, ok
from tests.storage import LiveServer

HERE = Path(__file__).resolve().parent
SCHEMA = {
    "span_type_schemas": [
        {"name": "ai-sdk:llm", "params_schema": {"type": "object", "required": ["inputs"]},
         "data_risk": {"action_profile": {"read_data": "allowed"},
                       "params_data_categories": {"personal_identifiers": "included"}}},
        {"name": "ai-sdk:tool:send_email", "params_schema": {},
         "data_risk": {"action_profile": {"external_communication": "allowed"},
                       "params_data_categories": {"contact_information": "included"}}},
        {"name": "prefactor:quality", "params_schema": {}},
    ],
    "quality_schemas": [{"name": "evals", "schema": {"type": "object"}, "template": "accuracy {{accuracy}}"}],
}


def sync_script() -> str:
    source = os.environ.get("AGENTFOLIO_OPEN_DASHBOARD")
    if not source:
        pytest.skip("the open dashboard is on no package registry: set AGENTFOLIO_OPEN_DASHBOARD to a checkout of "
                    "github.com/prefactordev/prefactor-open-dashboard (a working tree or its git directory)")
    root = Path(source)
    if (root / "server" / "sync.mjs").is_file():
        return (root / "server" / "sync.mjs").read_text(encoding="utf-8")
    shown = subprocess.run(["git", "--git-dir", str(root), "show", "HEAD:server/sync.mjs"], capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, f"AGENTFOLIO_OPEN_DASHBOARD={source} holds no server/sync.mjs: {shown.stderr}"
    return shown.stdout


def seed(service: RegistryService, principal: Principal) -> dict[str, Any]:
    """Two agents: one busy enough that every list takes several pages (130 runs, 300+
    spans), with a risk profile of its own, quality, sensitive values, a terminated run
    and a span that breaks its schema; one whose spans declare no risk at all."""
    draft = schema_version_draft(SCHEMA, "agent_schema_version")
    runs = []
    for n in range(130):
        run = service.register_instance(principal, InstanceRegister(
            agent_version={"name": "Support Concierge"}, agent_schema_version=draft,
            purpose="eval" if n % 10 == 0 else "live"))  # type: ignore[arg-type]
        service.run(principal, InstanceStart(agent_instance_id=run.id))
        runs.append(run)
    items = []
    for n, run in enumerate(runs):
        items.append(BulkItem(f"llm-{n:04d}", SpanCreate(agent_instance_id=run.id, schema_name="ai-sdk:llm", payload={
            "inputs": {"ai": {"model": {"id": "gpt-4o-mini"}}}, "token_usage": {"prompt_tokens": 10 + n}})))
        items.append(BulkItem(f"llm2-{n:04d}", SpanCreate(agent_instance_id=run.id, schema_name="ai-sdk:llm",
                                                          payload={"inputs": {}})))
        if n % 3 == 0:
            items.append(BulkItem(f"mail-{n:04d}", SpanCreate(
                agent_instance_id=run.id, schema_name="ai-sdk:tool:send_email", sensitive_encoding=True,
                payload={"inputs": {"to": {"$sensitive": "string", "value": f"user{n}@example.com",
                                           "labels": ["email"]}}})))
    items.append(BulkItem("broken-0001", SpanCreate(agent_instance_id=runs[0].id, schema_name="ai-sdk:llm",
                                                    payload={"no": "inputs"})))
    service.bulk(principal, items)
    for n, run in enumerate(runs[:-5]):
        if n % 4 == 0:
            service.run(principal, InstanceRecordQuality(agent_instance_id=run.id, name="evals",
                                                         payload={"accuracy": round(0.5 + n / 1000, 3)}))
        service.run(principal, InstanceFinish(agent_instance_id=run.id, status="failed" if n % 7 == 0 else None))
    service.run(principal, InstanceTerminate(agent_instance_id=runs[-1].id, reason="runaway loop detected"))
    strict = service.run(principal, RiskProfileCreate(name="Standard guardrails",
                                                      thresholds={"medium": 5, "high": 12, "critical": 40}))
    service.run(principal, AgentUpdate(agent_id=runs[0].agent_id, risk_profile_id=strict.id))
    quiet = service.register_instance(principal, InstanceRegister(agent_version={"name": "Research Analyst"}))
    service.run(principal, InstanceStart(agent_instance_id=quiet.id))  # the dashboard shows started runs only
    service.bulk(principal, [BulkItem(f"quiet-{n}", SpanCreate(agent_instance_id=quiet.id, schema_name="search"))
                             for n in range(7)])
    return {"busy": runs[0].agent_id, "quiet": quiet.agent_id}


def test_the_open_dashboards_sync_pages_everything_back_and_agrees(store: Store, live: LiveServer,
                                                                   tmp_path: Path) -> None:
    script = sync_script()
    node = shutil.which("node")
    assert node, "node is not on PATH (the machine image ships Node.js 20)"
    folio = Agentfolio(store, owned=False)
    token, account = folio.accounts.create_token("dashboard")
    principal = Principal(account)
    seeded = seed(folio.registry, principal)

    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "sync.mjs").write_text(script, encoding="utf-8")
    shutil.copy(HERE / "open_dashboard_driver.mjs", tmp_path / "driver.mjs")
    done = subprocess.run([node, "driver.mjs", live.url, token, str(tmp_path / "data"), str(tmp_path / "out.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = _json.loads((tmp_path / "out.json").read_bytes())
    snapshot = result["snapshot"]
    assert result["warnings"] == [], result["warnings"]
    assert snapshot["meta"]["syncError"] is None and snapshot["meta"]["historyComplete"]

    with httpx_client(live.url, token) as client:
        account_id = ok(client.get("/api/v1/account"))["details"]["id"]
        agents = everything(client, "/api/v1/agent")
        spans = [span for agent in agents for span in everything(
            client, "/api/v1/agent_spans", agent_id=agent["id"], include_risk_level="true")]
        instances = {item["id"]: item for agent in agents
                     for item in everything(client, "/api/v1/agent_instance", agent_id=agent["id"])}
        alerts = client.get("/api/v1/alerts/count").json()["count"]
        profiles = ok(client.get("/api/v1/risk_profile", params={"account_id": account_id}))["summaries"]

    assert snapshot["accountId"] == account_id
    assert sorted(agent["id"] for agent in snapshot["agents"]) == sorted(agent["id"] for agent in agents)
    # Every span and run came back, each once.
    assert len(spans) == 130 * 2 + 44 + 1 + 7
    assert sorted(span["id"] for span in snapshot["spans"]) == sorted(span["id"] for span in spans)
    assert sorted(item["id"] for item in snapshot["instances"]) == sorted(instances)
    # Runs: status, purpose, termination, and the quality the detail pass read.
    for item in snapshot["instances"]:
        ours = instances[item["id"]]
        assert (item["status"], item["purpose"], item["termination_reason"]) == \
            (ours["status"], ours["purpose"], ours["termination_reason"])
        if item["status"] != "active":
            assert item["detail_checked"]
            detail = ok(httpx_get(live.url, token, f"/api/v1/agent_instance/{item['id']}"))["details"]
            assert (item["quality_payload"], item["quality_summary"]) == \
                (detail["quality_payload"], detail["quality_summary"])
    assert sum(1 for item in snapshot["instances"] if item["quality_summary"]) == 32
    # Risk: the dashboard's per-span levels and scores are ours; spans whose type declares
    # nothing are unscored there (unknown here), never low.
    ours_by_id = {span["id"]: span for span in spans}
    levels = Counter()
    for span in snapshot["spans"]:
        ours = ours_by_id[span["id"]]
        assert (span["risk_level"], span["risk_score"]) == (ours["risk_level"], ours["risk_score"])
        assert span["purpose"] == instances[span["agent_instance_id"]]["purpose"]
        levels[span["risk_level"]] += 1
    # The busy agent's own profile: personal identifiers read (6) and contact details sent (4 × 2)
    # are both medium from 5; the quiet agent's spans have no schema version to declare them.
    assert levels == {"medium": 130 * 2 + 1 + 44, "unknown": 7}
    quiet = [span for span in snapshot["spans"] if span["agent_id"] == seeded["quiet"]]
    assert {span["risk_level"] for span in quiet} == {"unknown"}
    busy_llm = [span for span in snapshot["spans"] if span["schema_name"] == "ai-sdk:llm"]
    assert {(span["risk_level"], span["risk_score"]) for span in busy_llm} == {("medium", 6)}
    mails = [span for span in snapshot["spans"] if span["schema_name"] == "ai-sdk:tool:send_email"]
    assert len(mails) == 44 and all(span["sensitive_encoding"] and span["sensitive_labels"] == ["email"]
                                    for span in mails)
    assert snapshot["alerts"] == alerts == 2  # the span that broke its schema, the terminated run
    assert snapshot["riskProfiles"] == [{"id": profile["id"], "name": profile["name"]} for profile in profiles]
    assert [profile["name"] for profile in profiles] == ["Standard guardrails"]


def httpx_client(url: str, token: str) -> Any:
    import httpx

    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def httpx_get(url: str, token: str, path: str) -> Any:
    with httpx_client(url, token) as client:
        return client.get(path)
