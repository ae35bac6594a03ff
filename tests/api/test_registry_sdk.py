"""End to end: the unmodified published Prefactor SDKs (prefactor-core, prefactor-http)
against ``agentfolio serve`` on loopback, on SQLite and PostgreSQL.

A small agent instrumented with prefactor-core registers an instance with an inline
schema version, runs nested spans, a failing span and a span whose payload breaks its
schema; a bulk call through prefactor-http adds more spans.  Afterwards the API returns
every span with its parent, status, validation result and rendered template.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx

# Dev dependencies installed by `make test`: a missing SDK fails loudly, never skips.
import prefactor_core
import prefactor_http  # noqa: F401
import pytest

from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.storage import LiveServer


@pytest.fixture
def served(settings: Settings, store: Store) -> Iterator[LiveServer]:
    server = LiveServer(settings, cli_serve=True)
    try:
        yield server
    finally:
        server.stop()


LLM = {"type": "object", "properties": {"model": {"type": "string"}, "prompt": {"type": "string"}},
       "required": ["model", "prompt"]}
TOOL = {"type": "object", "properties": {"tool": {"type": "string"}}, "required": ["tool"]}


def schema_registry():
    registry = prefactor_core.SchemaRegistry()
    registry.register_type(name="agent:llm", params_schema=LLM,
                           result_schema={"type": "object", "properties": {"response": {"type": "string"}}},
                           title="LLM Call", description="A call to a language model",
                           template="{{model}}: {{prompt}} → {{response}}")
    registry.register_type(name="agent:tool", params_schema=TOOL, result_schema={"type": "object"},
                           title="Tool", template="{{tool}}{% if error %} failed: {{error}}{% endif %}")
    return registry


async def run_agent(url: str, token: str, agent_id: str) -> tuple[str, dict[str, str]]:
    """The instrumented agent: returns the instance id and the span ids by role."""
    from prefactor_http import HttpClientConfig

    config = prefactor_core.PrefactorCoreConfig(
        http_config=HttpClientConfig(api_url=url, api_token=token), schema_registry=schema_registry())
    spans: dict[str, str] = {}
    async with prefactor_core.PrefactorCoreClient(config) as client:
        instance = await client.create_agent_instance(
            agent_id=agent_id, agent_version={"name": "E2E agent", "external_identifier": "v1.0.0"})
        await instance.start()
        async with instance.span("agent:llm") as outer:
            await outer.start({"model": "gpt-test", "prompt": "plan the trip"})
            async with instance.span("agent:tool") as inner:
                await inner.start({"tool": "search"})
                await inner.complete({"hits": 3})
            async with instance.span("agent:tool") as failing:
                await failing.start({"tool": "pay"})
                await failing.fail({"error": "card declined"})
            async with instance.span("agent:llm") as broken:
                await broken.start({"model": 42})  # breaks its schema: prompt missing, model not a string
                await broken.complete({"response": "still answered"})
            await outer.complete({"response": "done"})
            spans.update(outer=outer.id, inner=inner.id, failing=failing.id, broken=broken.id)
        await instance.finish()
        return instance.id, spans


async def bulk_spans(url: str, token: str, instance_id: str, parent_id: str) -> dict:
    from prefactor_http import HttpClientConfig, PrefactorHttpClient
    from prefactor_http.models.bulk import BulkItem, BulkRequest

    items = [
        BulkItem(_type="agent_spans/create", idempotency_key="bulk-span-0001",  # type: ignore[call-arg]
                 details={"agent_instance_id": instance_id, "schema_name": "agent:llm", "status": "complete",
                          "parent_span_id": parent_id, "payload": {"model": "m", "prompt": "bulk one"},
                          "result_payload": {"response": "r1"}}),
        BulkItem(_type="agent_spans/create", idempotency_key="bulk-span-0002",  # type: ignore[call-arg]
                 agent_instance_id=instance_id, schema_name="agent:tool", status="active",
                 payload={"tool": "lookup"}),
    ]
    async with PrefactorHttpClient(HttpClientConfig(api_url=url, api_token=token)) as client:
        first = await client.bulk.execute(BulkRequest(items=items))
        second_id = first.outputs["bulk-span-0002"].model_extra["details"]["id"]  # type: ignore[index]
        finish = [BulkItem(_type="agent_spans/finish", idempotency_key="bulk-finish-0002",  # type: ignore[call-arg]
                           agent_span_id=second_id, status="complete", result_payload={"found": True})]
        replay = await client.bulk.execute(BulkRequest(items=items + finish))
    return {"first": first, "replay": replay}


def test_prefactor_core_agent_end_to_end(served: LiveServer, store: Store) -> None:
    token, _ = store.accounts.create_token("e2e")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=30) as api:
        created = api.post("/api/v1/agent", json={"details": {"name": "Trip planner", "external_identifier": "trip"}})
        assert created.status_code == 200, created.text
        agent_id = created.json()["details"]["id"]

        instance_id, ids = asyncio.run(run_agent(served.url, token, agent_id))
        outputs = asyncio.run(bulk_spans(served.url, token, instance_id, ids["outer"]))
        assert {key: out.status for key, out in outputs["first"].outputs.items()} == {
            "bulk-span-0001": "success", "bulk-span-0002": "success"}
        replay = outputs["replay"].outputs
        assert [out.status for out in replay.values()] == ["success"] * 3
        # Replayed items answer their first result: no new spans.
        assert replay["bulk-span-0001"].model_extra == outputs["first"].outputs["bulk-span-0001"].model_extra

        instance = api.get(f"/api/v1/agent_instance/{instance_id}").json()["details"]
        assert instance["status"] == "complete"
        assert instance["span_counts"]["total"] == 6

        listed = api.get("/api/v1/agent_spans", params={"agent_instance_id": instance_id, "include_summaries": "true",
                                                        "pagination[page_size]": "100"}).json()
        spans = {span["id"]: span for span in listed["summaries"]}
        assert listed["pagination"]["item_count"] == 6 and len(spans) == 6
        outer, inner, failing, broken = (spans[ids[role]] for role in ("outer", "inner", "failing", "broken"))

        assert outer["parent_span_id"] is None and outer["status"] == "complete"
        assert outer["schema_title"] == "LLM Call"
        assert outer["summary"] == "gpt-test: plan the trip → done"
        assert outer["validation"]["status"] == "valid"

        assert inner["parent_span_id"] == outer["id"] and inner["status"] == "complete"
        assert inner["summary"] == "search" and inner["validation"]["status"] == "valid"

        assert failing["parent_span_id"] == outer["id"] and failing["status"] == "failed"
        assert failing["result_payload"] == {"error": "card declined"}
        assert failing["summary"] == "pay failed: card declined"

        assert broken["parent_span_id"] == outer["id"] and broken["status"] == "complete"
        assert broken["validation"]["status"] == "invalid"
        pointers = {(p["part"], p["pointer"]) for p in broken["validation"]["problems"]}
        assert ("payload", "/model") in pointers and ("payload", "") in pointers  # type and missing prompt
        assert broken["payload"] == {"model": 42}  # stored as sent, never dropped

        bulk = [span for span in spans.values() if span["id"] not in ids.values()]
        assert len(bulk) == 2
        by_name = {span["schema_name"]: span for span in bulk}
        assert by_name["agent:llm"]["parent_span_id"] == outer["id"]
        assert by_name["agent:llm"]["summary"] == "m: bulk one → r1"
        assert by_name["agent:tool"]["status"] == "complete"
        assert by_name["agent:tool"]["result_payload"] == {"found": True}

        # The schema version was registered inline, once, with the template checked.
        agent = api.get(f"/api/v1/agent/{agent_id}").json()["details"]
        assert agent["status"] == "active" and agent["instance_counts"]["complete"] == 1
        version = api.get(f"/api/v1/agent_schema_version/{agent['current_schema_version_id']}").json()["details"]
        assert version["span_type_schemas"]["agent:llm"]["template_validation"]["status"] == "success"
        assert version["span_type_schemas"]["agent:llm"]["result_schema_validation"]["status"] == "success"

        # A second run with the same registry reuses the schema version (dedup by content).
        second_instance, _ = asyncio.run(run_agent(served.url, token, agent_id))
        again = api.get(f"/api/v1/agent_instance/{second_instance}").json()["details"]
        assert again["agent_schema_version_id"] == version["id"]
