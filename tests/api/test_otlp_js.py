"""The OpenTelemetry JavaScript SDK (npm, installed from tests/js's lockfile by
scripts/ensure-node-deps.sh) under Node, exporting through its OTLP/HTTP exporters, JSON
and protobuf, to ``/v1/traces`` of the server on loopback: the JSON exporter writes ids
as hex and times as decimal strings, the protobuf one its own encoding, and each run must
land as one trace holding every span with its parent and attributes, and one
conversation holding every message once."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from agentfolio.formats import convert, durable_state
from agentfolio.formats.envelope import FORMAT as ENVELOPE
from agentfolio.store import Store
from tests.node import JS, node_client
from tests.otlp_support import get, messages_of, serving, settled_session, spans_of


@pytest.fixture
def served(store: Store) -> Iterator[tuple[str, str]]:
    with serving(store, "otel-js") as found:
        yield found


@pytest.mark.parametrize("protocol", ["json", "proto"])
def test_a_node_agents_run_lands_as_one_trace_and_one_conversation(served: tuple[str, str], store: Store,
                                                                    protocol: str) -> None:
    node = node_client("@opentelemetry/sdk-trace")
    url, token = served
    done = subprocess.run([node, "otel_client.mjs", url, token, protocol], cwd=JS, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    trace_id = json.loads(done.stdout.strip().splitlines()[-1])["trace_id"]

    instances = get(url, token, "/api/v1/agent_instance", page_size=50)["summaries"]
    assert [instance["external_identifier"] for instance in instances] == [trace_id]
    agent = get(url, token, f"/api/v1/agent/{instances[0]['agent_id']}")["details"]
    assert agent["name"] == f"js-{protocol}-agent"
    spans = spans_of(url, token, agent_instance_id=instances[0]["id"])
    # An agent's span type is named by the operation and the agent (not by the span's own name).
    assert sorted(span["schema_name"] for span in spans) == ["chat gpt-4o", "chat gpt-4o", "execute_tool get_weather",
                                                             f"invoke_agent js-{protocol}-agent"]
    root = next(span for span in spans if span["schema_name"].startswith("invoke_agent"))
    assert root["parent_span_id"] is None
    assert all(span["parent_span_id"] == root["id"] for span in spans if span is not root)
    assert all(span["status"] == "complete" for span in spans)
    chats = [span["payload"] for span in spans if span["schema_name"] == "chat gpt-4o"]
    assert all(chat["attributes"]["custom.kept"] == [1, 2, 3] and chat["attributes"]["custom.ratio"] == 2.5
               for chat in chats), [chat["attributes"] for chat in chats]
    assert sorted(chat["attributes"]["gen_ai.usage.input_tokens"] for chat in chats) == [21, 40]
    tool = next(span["payload"] for span in spans if span["schema_name"] == "execute_tool get_weather")
    assert [(event["name"], event["attributes"]) for event in tool["events"]] == [("tool.started", {"attempt": 1})]
    assert all(int(span["payload"]["start_time_unix_nano"]) > 1_600_000_000 * 10**9 for span in spans)

    document = settled_session(url, token, f"otel:js-{protocol}-conversation", store)
    assert messages_of(document) == [("system", ["text"]), ("user", ["text"]), ("assistant", ["functionCall"]),
                                     ("tool", ["functionResult"]), ("assistant", ["text"])]
    usage = [entry["usage"] for entry in document["data"]["conversationHistory"] if "usage" in entry]
    assert usage == [{"inputTokenCount": 21, "outputTokenCount": 7, "totalTokenCount": 28},
                     {"inputTokenCount": 40, "outputTokenCount": 7, "totalTokenCount": 47}]
    assert durable_state.problems(document) == []
    assert ENVELOPE.validate(convert.convert(document, to="envelope").result) == []
