"""prefactor-langchain (PyPI) with a LangChain agent, a fake chat model and a tool,
against ``agentfolio serve --demo``: the trace lands whole, each span under its parent.

The agent is traced with the package's callback handler, the way its README shows for
LangGraph graphs (``create_agent`` builds one): its middleware's async path leaves model
calls without a parent (LangGraph runs each node in its own context, so the agent span it
pushed is not seen there), and its sync path sends nothing before an event loop runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.integrations.prefactor.conftest import DemoServer, everything

AGENT = Path(__file__).resolve().parent / "langchain_agent.py"


def test_a_langchain_agent_run_lands_with_its_parents(demo: DemoServer) -> None:
    done = subprocess.run([sys.executable, str(AGENT), demo.api_url, demo.api_token], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "It is sunny in Paris."
    with demo.client() as client:
        agents = [agent for agent in everything(client, "/api/v1/agent") if agent["external_identifier"] ==
                  "weather-agent"]
        assert [agent["name"] for agent in agents] == ["Weather Agent"]  # made by the first run, by its name
        instances = everything(client, "/api/v1/agent_instance", agent_id=agents[0]["id"])
        assert [instance["status"] for instance in instances] == ["complete"]
        spans = everything(client, "/api/v1/agent_spans", agent_instance_id=instances[0]["id"])
    kinds = sorted(span["schema_name"] for span in spans)
    assert kinds.count("langchain:agent") == 1 and kinds.count("langchain:llm") == 2, kinds
    assert kinds.count("langchain:tool") == 1 and kinds.count("langchain:node") >= 3, kinds
    by_id = {span["id"]: span for span in spans}
    root = next(span for span in spans if span["schema_name"] == "langchain:agent")
    assert root["parent_span_id"] is None
    for span in spans:
        assert span["status"] == "complete" and span["validation"]["status"] == "valid", span
        if span is not root:  # every other span hangs under a span of the same run, up to the agent
            parent = by_id[span["parent_span_id"]]
            assert parent["schema_name"] in ("langchain:agent", "langchain:node"), span["schema_name"]
    tool = next(span for span in spans if span["schema_name"] == "langchain:tool")
    assert by_id[tool["parent_span_id"]]["schema_name"] == "langchain:node"
    assert "Paris" in str(tool["payload"]) and "sunny in Paris" in str(tool["result_payload"])
