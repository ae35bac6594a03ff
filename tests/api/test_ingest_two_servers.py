"""Exactly once across server processes: the same bulk request and the same OTLP batch
sent to two ``agentfolio serve`` processes on one database (SQLite file or PostgreSQL),
at the same moment and again afterwards, store each span once; both answers of the bulk
request name the same spans, and the conversation holds each message once."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.otlp_support import settled_session
from tests.storage import LiveServer

SPANS = 40


@pytest.fixture
def two_servers(settings: Settings, store: Store) -> Iterator[tuple[list[str], dict[str, str]]]:
    token, _ = store.accounts.create_token("shared")
    servers = [LiveServer(settings), LiveServer(settings)]
    try:
        yield [server.url for server in servers], {"Authorization": f"Bearer {token}"}
    finally:
        for server in servers:
            server.stop()


def _at_once(urls: list[str], send: Any) -> list[httpx.Response]:
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def post(url: str) -> None:
        answer = send(url)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=post, args=(url,)) for url in urls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_a_bulk_request_sent_to_two_servers_stores_each_span_once(two_servers: Any) -> None:
    urls, headers = two_servers
    with httpx.Client(base_url=urls[0], headers=headers, timeout=120) as api:
        agent = api.post("/api/v1/agent", json={"details": {"name": "twice"}}).json()["details"]["id"]
        instance = api.post("/api/v1/agent_instance/register", json={
            "agent_id": agent, "agent_version": {"name": "v"}}).json()["details"]["id"]
    body = {"items": [{"_type": "agent_spans/create", "idempotency_key": f"span-{i}",
                       "details": {"agent_instance_id": instance, "schema_name": "step", "status": "complete",
                                   "payload": {"n": i}}} for i in range(SPANS)]}

    def send(url: str) -> httpx.Response:
        return httpx.post(url + "/api/v1/bulk", json=body, headers=headers, timeout=120)

    answers = _at_once(urls, send) + _at_once(list(reversed(urls)), send)
    assert [answer.status_code for answer in answers] == [200] * 4
    named = [{key: output["details"]["id"] for key, output in answer.json()["outputs"].items()}
             for answer in answers]
    assert all(ids == named[0] for ids in named) and len(set(named[0].values())) == SPANS
    listed = httpx.get(urls[1] + "/api/v1/agent_spans", params={"page_size": 1}, headers=headers, timeout=60)
    assert listed.json()["pagination"]["item_count"] == SPANS


def _otlp_batch() -> bytes:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "svc"
    scope = resource_spans.scope_spans.add()
    start = 1_750_000_000 * 10**9
    for index in range(SPANS):
        history = [{"role": "user", "parts": [{"type": "text", "content": f"q{i}"}]} for i in range(index + 1)]
        span = scope.spans.add(trace_id=b"\x07" * 16, span_id=(index + 1).to_bytes(8, "big"), name="chat m",
                               start_time_unix_nano=start + index * 1000, end_time_unix_nano=start + index * 1000 + 10)
        for key, value in {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                           "gen_ai.input.messages": json.dumps(history)}.items():
            span.attributes.add(key=key).value.string_value = value
    return request.SerializeToString()


def test_an_otlp_batch_sent_to_two_servers_stores_each_span_once(two_servers: Any, store: Store) -> None:
    urls, headers = two_servers
    batch = _otlp_batch()

    def send(url: str) -> httpx.Response:
        return httpx.post(url + "/v1/traces", content=batch, timeout=120,
                          headers={**headers, "Content-Type": "application/x-protobuf"})

    answers = _at_once(urls, send) + _at_once(list(reversed(urls)), send)
    assert [answer.status_code for answer in answers] == [200] * 4
    listed = httpx.get(urls[0] + "/api/v1/agent_spans", params={"page_size": 1}, headers=headers, timeout=60)
    assert listed.json()["pagination"]["item_count"] == SPANS
    document = settled_session(urls[1], headers["Authorization"].split()[1], "otel:trace:" + "07" * 16, store)
    texts = [m["contents"][0]["text"] for e in document["data"]["conversationHistory"] for m in e["messages"]]
    assert texts == [f"q{i}" for i in range(SPANS)]


def _tree_half(trace: bytes, indexes: range) -> bytes:
    """Spans ``indexes`` of a binary tree (span 0 the root, naming the agent) in ``trace``."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "svc"
    scope = resource_spans.scope_spans.add()
    start = 1_750_000_000 * 10**9
    for index in indexes:
        span = scope.spans.add(trace_id=trace, span_id=(index + 1).to_bytes(8, "big"), name=f"step {index}",
                               start_time_unix_nano=start + index, end_time_unix_nano=start + index + 10)
        if index:
            span.parent_span_id = ((index - 1) // 2 + 1).to_bytes(8, "big")
        else:
            span.attributes.add(key="gen_ai.agent.name").value.string_value = "Planner"
    return request.SerializeToString()


def test_two_servers_taking_halves_of_new_traces_at_once_agree_on_their_ids(two_servers: Any, store: Store) -> None:
    """Each new trace's first spans reach both servers at the same moment: they fix one
    epoch between them, so every span's parent, sent to the other server, is found."""
    import sqlalchemy as sa

    from agentfolio.registry import ids
    from agentfolio.store.registry_tables import otel_trace_epochs, registry_spans

    urls, headers = two_servers
    traces = [bytes([number]) * 16 for number in range(1, 9)]
    for trace in traces:
        halves = {urls[0]: _tree_half(trace, range(6)), urls[1]: _tree_half(trace, range(6, 12))}

        def send(url: str, halves: dict[str, bytes] = halves) -> httpx.Response:
            return httpx.post(url + "/v1/traces", content=halves[url], timeout=120,
                              headers={**headers, "Content-Type": "application/x-protobuf"})

        assert [answer.status_code for answer in _at_once(urls, send)] == [200, 200]
    with store.engine.connect() as connection:
        stored = connection.execute(sa.select(registry_spans.c.id, registry_spans.c.parent_found,
                                              registry_spans.c.instance_id)).all()
        fixed = dict(connection.execute(sa.select(otel_trace_epochs.c.trace_id, otel_trace_epochs.c.epoch_ms)).all())
    assert len(stored) == len(traces) * 12 and len(fixed) == len(traces)
    assert all(row.parent_found is not False for row in stored)
    assert len({row.instance_id for row in stored}) == len(traces)
    assert {ids.decode(row.id).timestamp_ms for row in stored} == set(fixed.values())
