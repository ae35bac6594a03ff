"""The published ``@prefactor/core`` (npm, installed from tests/js's lockfile by
scripts/ensure-node-deps.sh) under Node, against ``agentfolio serve --demo`` with the
token it printed: the run lands with its agent, and every span with its parent."""

from __future__ import annotations

import subprocess

from tests.integrations.prefactor.conftest import DemoServer, everything
from tests.node import JS, node_client


def test_prefactor_core_from_npm_records_a_run_with_parents(demo: DemoServer) -> None:
    node = node_client("@prefactor/core")
    done = subprocess.run([node, "core_client.mjs", demo.api_url, demo.api_token], cwd=JS, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "hello from the model" in done.stdout
    with demo.client() as client:
        agents = [agent for agent in everything(client, "/api/v1/agent") if agent["name"] == "js-support-agent"]
        assert len(agents) == 1, [agent["name"] for agent in everything(client, "/api/v1/agent")]
        instances = everything(client, "/api/v1/agent_instance", agent_id=agents[0]["id"])
        assert len(instances) == 1
        spans = everything(client, "/api/v1/agent_spans", agent_instance_id=instances[0]["id"])
    by_name = {span["schema_name"].rsplit(":", 1)[-1]: span for span in spans}
    assert len(spans) == 3 and set(by_name) == {"agent", "llm", "tool"}, [span["schema_name"] for span in spans]
    root = by_name["agent"]
    assert root["parent_span_id"] is None
    assert by_name["llm"]["parent_span_id"] == root["id"] == by_name["tool"]["parent_span_id"]
    assert all(span["status"] == "complete" for span in spans)
    assert by_name["llm"]["payload"] and by_name["llm"]["result_payload"]
