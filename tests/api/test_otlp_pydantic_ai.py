"""Pydantic AI's own instrumentation (its ``Instrumentation`` capability over a tracer
provider with the real OTLP/HTTP exporter), an agent calling a tool under Pydantic AI's
``TestModel`` (no network), sent to ``/v1/traces`` of the server on loopback: the run
lands as one trace with every span under the agent's, and one conversation whose tool
result is paired with its call (Pydantic AI writes a tool's response under ``result``,
which the published GenAI schema does not allow: read as the response)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.test import TestModel

from agentfolio.formats import convert, durable_state
from agentfolio.formats.envelope import FORMAT as ENVELOPE
from agentfolio.store import Store
from tests.otlp_support import get, messages_of, provider, serving, settled_session, spans_of


@pytest.fixture
def served(store: Store) -> Iterator[tuple[str, str]]:
    with serving(store, "pydantic-ai") as found:
        yield found


# Format 5 is Pydantic AI's default; 6 gives a tool's response the role "tool" (5: "user").
@pytest.mark.parametrize("version", [5, 6])
def test_a_pydantic_ai_run_lands_as_one_trace_and_one_conversation(served: tuple[str, str], store: Store,
                                                                    version: int) -> None:
    url, token = served
    made = provider(url, token, service="pydantic-ai-app", batch=False)
    agent = Agent(TestModel(), name="weather-agent", instructions="You are a weather bot.",
                  capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=made,
                                                                                  version=version))])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f"18C in {city}"

    try:
        assert "18C in" in agent.run_sync("Weather in Paris?").output
    finally:
        made.shutdown()

    instances = get(url, token, "/api/v1/agent_instance", page_size=50)["summaries"]
    assert len(instances) == 1
    assert get(url, token, f"/api/v1/agent/{instances[0]['agent_id']}")["details"]["name"] == "weather-agent"
    spans = spans_of(url, token, agent_instance_id=instances[0]["id"])
    roots = [span for span in spans if span["parent_span_id"] is None]
    assert len(roots) == 1 and len(spans) == 4, [span["schema_name"] for span in spans]
    assert sorted(span["schema_name"].split(" ")[0] for span in spans) == ["chat", "chat", "execute_tool",
                                                                          "invoke_agent"]

    sessions = get(url, token, "/api/v1/sessions")["details"]["sessions"]
    assert len(sessions) == 1
    document = settled_session(url, token, sessions[0]["id"], store)
    tool_role = "tool" if version >= 6 else "user"
    assert messages_of(document) == [("system", ["text", "text"]), ("user", ["text"]), ("assistant", ["functionCall"]),
                                     (tool_role, ["functionResult"]), ("assistant", ["text"])]
    contents = [content for entry in document["data"]["conversationHistory"] for message in entry["messages"]
                for content in message["contents"]]
    call, result = (next(c for c in contents if c["$type"] == kind) for kind in ("functionCall", "functionResult"))
    assert result["callId"] == call["callId"] and result["result"].startswith("18C in")
    assert [entry["usage"]["totalTokenCount"] > 0 for entry in document["data"]["conversationHistory"]
            if "usage" in entry] == [True, True]
    assert durable_state.problems(document) == []
    assert ENVELOPE.validate(convert.convert(document, to="envelope").result) == []
