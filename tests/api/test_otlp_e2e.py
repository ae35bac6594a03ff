"""End to end: the real OpenTelemetry SDK and its OTLP/HTTP exporter, and real
instrumentations (Microsoft Agent Framework's own observability with a fake chat
client, OpenInference's LangChain instrumentation with LangChain's fake chat model, the
OpenTelemetry OpenAI instrumentation against a fake OpenAI endpoint on loopback),
sending to ``/v1/traces`` of the server under uvicorn on loopback, on SQLite and PostgreSQL.

Each run must land as one trace (an agent instance) holding every span with its
parent, and a session holding every message once, stored as schema-valid durable state
that converts to a valid Prompt Envelope.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentfolio.formats import convert, durable_state
from agentfolio.formats.envelope import FORMAT as ENVELOPE
from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.otlp_support import Relay, get, messages_of, provider, serving, settled_session, spans_of


@pytest.fixture
def served(settings: Settings, store: Store) -> Iterator[tuple[str, str]]:
    with serving(store, "otel") as found:
        yield found


_RELAY = Relay("agent_framework")
_GLOBAL = TracerProvider()
_GLOBAL.add_span_processor(SimpleSpanProcessor(_RELAY))  # one request per span, children first
trace.set_tracer_provider(_GLOBAL)


def _session(store: Store, url: str, token: str, session_id: str, count: int) -> dict[str, Any]:
    """The session once its conversation is taken in, holding ``count`` messages."""
    document = settled_session(url, token, session_id, store)
    assert len(messages_of(document)) == count, messages_of(document)
    return document


def _check_session_document(document: dict[str, Any]) -> None:
    assert durable_state.problems(document) == []
    envelope = convert.convert(document, to="envelope").result
    assert ENVELOPE.validate(envelope) == []


def _one_trace(url: str, token: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    instances = get(url, token, "/api/v1/agent_instance", page_size=50)["summaries"]
    assert len(instances) == 1, [(i["external_identifier"], i["span_counts"]) for i in instances]
    spans = spans_of(url, token, agent_instance_id=instances[0]["id"])
    return instances[0], spans


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_sdk_exporter_spans_become_one_trace_and_one_conversation(served: tuple[str, str], store: Store,
                                                                  encoding: str) -> None:
    url, token = served
    made = provider(url, token, service="joke-service", encoding=encoding)
    tracer = made.get_tracer("tests")
    system = json.dumps([{"type": "text", "content": "You are funny."}])
    question = {"role": "user", "parts": [{"type": "text", "content": "Tell me a joke about cats"}]}
    call = {"role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "joke", "arguments": {"topic": "cats"}}]}
    result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "meow"}]}
    answer = {"role": "assistant", "parts": [{"type": "reasoning", "content": "cats say meow"},
                                             {"type": "text", "content": "Meow!"}]}
    with tracer.start_as_current_span("invoke_agent Joker", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Joker"}) as root:
        trace_id = format(root.get_span_context().trace_id, "032x")
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system_instructions": system,
                "gen_ai.input.messages": json.dumps([question]), "gen_ai.output.messages": json.dumps([call]),
                "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 4, "custom.kept": [1, 2, 3]}):
            pass
        with tracer.start_as_current_span("execute_tool joke", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "joke"}) as tool_span:
            tool_span.add_event("progress", {"step": 1})
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system_instructions": system,
                "gen_ai.input.messages": json.dumps([question, call, result]),
                "gen_ai.output.messages": json.dumps([answer])}):
            pass
    made.force_flush()

    instance, spans = _one_trace(url, token)
    assert instance["external_identifier"] == trace_id
    assert instance["status"] == "complete"
    assert len(spans) == 4
    assert sorted(span["schema_name"] for span in spans) == ["chat gpt-4o", "chat gpt-4o", "execute_tool joke",
                                                             "invoke_agent Joker"]
    by_name = {span["payload"]["name"]: span for span in spans}
    root_id = by_name["invoke_agent Joker"]["id"]
    assert all(span["parent_span_id"] == root_id for span in spans if span["id"] != root_id)
    assert all(span["validation"]["status"] == "valid" for span in spans), [s["validation"] for s in spans]
    first_chat = next(s for s in spans if s["payload"]["attributes"].get("custom.kept"))
    assert first_chat["payload"]["attributes"]["custom.kept"] == [1, 2, 3]  # unknown attributes kept whole
    assert by_name["execute_tool joke"]["payload"]["events"][0]["attributes"] == {"step": 1}
    agent = get(url, token, f"/api/v1/agent/{instance['agent_id']}")["details"]
    assert agent["name"] == "Joker"

    document = _session(store, url, token, f"otel:trace:{trace_id}", 5)
    assert messages_of(document) == [("system", ["text"]), ("user", ["text"]), ("assistant", ["functionCall"]),
                                     ("tool", ["functionResult"]), ("assistant", ["reasoning", "text"])]
    usage = [entry["usage"] for entry in document["data"]["conversationHistory"] if "usage" in entry]
    assert usage == [{"inputTokenCount": 12, "outputTokenCount": 4, "totalTokenCount": 16}]
    _check_session_document(document)

    # The same batch again (an exporter retrying after a lost answer) adds nothing.
    again = OTLPSpanExporter(endpoint=url + "/v1/traces", headers={"Authorization": f"Bearer {token}"})
    memory = InMemorySpanExporter()
    replay = TracerProvider()
    replay.add_span_processor(SimpleSpanProcessor(memory))
    with replay.get_tracer("tests").start_as_current_span("lone"):
        pass
    assert again.export(memory.get_finished_spans()).name == "SUCCESS"
    assert again.export(memory.get_finished_spans()).name == "SUCCESS"
    instances = get(url, token, "/api/v1/agent_instance", page_size=50)["summaries"]
    assert len(instances) == 2
    lone = next(i for i in instances if i["id"] != instance["id"])
    assert len(spans_of(url, token, agent_instance_id=lone["id"])) == 1
    made.shutdown()


def test_agent_framework_run_lands_as_one_trace_and_session(served: tuple[str, str], store: Store) -> None:
    """Agent Framework's own telemetry, each span exported alone as it ends: the chat and
    tool spans reach the server before the agent span that names their agent."""
    from agent_framework import Agent, BaseChatClient, ChatResponse, Content, FunctionInvocationLayer, Message, tool
    from agent_framework.observability import ChatTelemetryLayer, enable_instrumentation

    url, token = served
    enable_instrumentation(enable_sensitive_data=True)

    class FakeChatClient(FunctionInvocationLayer, ChatTelemetryLayer, BaseChatClient):  # type: ignore[misc]
        OTEL_PROVIDER_NAME = "fake"

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        async def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls % 2 == 1:
                call = Content.from_function_call(call_id=f"call-{self.calls}", name="get_weather",
                                                  arguments={"city": "Paris"})
                return ChatResponse(messages=[Message(role="assistant", contents=[call])], model="fake-model")
            return ChatResponse(messages=[Message(role="assistant", contents=["It is sunny in Paris."])],
                                model="fake-model")

    @tool
    def get_weather(city: str) -> str:
        """The weather of a city."""
        return f"sunny in {city}"

    _RELAY.target = OTLPSpanExporter(endpoint=url + "/v1/traces", headers={"Authorization": f"Bearer {token}"})
    try:
        agent = Agent(FakeChatClient(), instructions="You answer weather questions.", name="WeatherBot",
                      tools=[get_weather])
        reply = asyncio.run(agent.run("What is the weather in Paris?"))
    finally:
        _RELAY.target = None
    assert "sunny" in reply.text

    instance, spans = _one_trace(url, token)
    assert get(url, token, f"/api/v1/agent/{instance['agent_id']}")["details"]["name"] == "WeatherBot"
    assert sorted(span["schema_name"] for span in spans) == ["chat fake-model", "chat fake-model",
                                                             "execute_tool get_weather", "invoke_agent WeatherBot"]
    assert all(span["validation"]["status"] == "valid" for span in spans), [s["validation"] for s in spans]
    version = get(url, token, f"/api/v1/agent_schema_version/{instance['agent_schema_version_id']}")["details"]
    assert set(version["span_type_schemas"]) >= {"chat fake-model", "execute_tool get_weather"}

    document = _session(store, url, token, spans[0]["session_id"], 5)
    assert messages_of(document) == [("system", ["text", "text"]), ("user", ["text"]),
                                     ("assistant", ["functionCall"]), ("tool", ["functionResult"]),
                                     ("assistant", ["text"])]
    # The tool catalog (from the agent span) is in the system message, lowered to text for durable state.
    assert "get_weather" in document["data"]["conversationHistory"][0]["messages"][0]["contents"][1]["text"]
    _check_session_document(document)


def test_openinference_langchain_conversation(served: tuple[str, str], store: Store) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from openinference.instrumentation.langchain import LangChainInstrumentor

    url, token = served
    made = provider(url, token, service="langchain-app")
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=made)
    try:
        model = FakeListChatModel(responses=["Paris.", "About 2.1 million."])
        tracer = made.get_tracer("app")
        with tracer.start_as_current_span("conversation"):
            history = [SystemMessage("Answer briefly."), HumanMessage("Capital of France?")]
            first = model.invoke(history)
            history += [AIMessage(first.content), HumanMessage("Its population?")]
            model.invoke(history)
        made.force_flush()
    finally:
        instrumentor.uninstrument()
        made.shutdown()

    _instance, spans = _one_trace(url, token)
    assert len(spans) == 3
    assert sorted(span["schema_name"] for span in spans).count("llm") == 2
    document = _session(store, url, token, spans[0]["session_id"], 5)
    texts = [(m["role"], m["contents"][0]["text"]) for e in document["data"]["conversationHistory"]
             for m in e["messages"]]
    assert texts == [("system", "Answer briefly."), ("user", "Capital of France?"), ("assistant", "Paris."),
                     ("user", "Its population?"), ("assistant", "About 2.1 million.")]
    _check_session_document(document)


class _FakeOpenAI(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        turn = sum(1 for m in body["messages"] if m["role"] == "user")
        answer = {"id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 1, "model": body["model"],
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": f"answer {turn}"}}],
                  "usage": {"prompt_tokens": 5 * turn, "completion_tokens": 2, "total_tokens": 5 * turn + 2}}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_openai_instrumentation_against_a_fake_endpoint(served: tuple[str, str], store: Store,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    fake = HTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    url, token = served
    made = provider(url, token, service="openai-app")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=made)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{fake.server_port}/v1", api_key="not-a-key")
        with made.get_tracer("app").start_as_current_span("session"):
            messages: list[dict[str, str]] = [{"role": "system", "content": "Be short."},
                                              {"role": "user", "content": "question 1"}]
            first = client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
            messages += [{"role": "assistant", "content": first.choices[0].message.content or ""},
                         {"role": "user", "content": "question 2"}]
            client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
        made.force_flush()
    finally:
        instrumentor.uninstrument()
        made.shutdown()
        fake.shutdown()

    _instance, spans = _one_trace(url, token)
    assert sorted(span["schema_name"] for span in spans) == ["chat gpt-4o-mini", "chat gpt-4o-mini", "session"]
    document = _session(store, url, token, spans[0]["session_id"], 5)
    texts = [(m["role"], m["contents"][0]["text"]) for e in document["data"]["conversationHistory"]
             for m in e["messages"]]
    assert texts == [("system", "Be short."), ("user", "question 1"), ("assistant", "answer 1"),
                     ("user", "question 2"), ("assistant", "answer 2")]
    assert [e["usage"]["inputTokenCount"] for e in document["data"]["conversationHistory"] if "usage" in e] == [5, 10]
    _check_session_document(document)
    assert httpx.get(url + "/openapi.json", timeout=10).status_code == 200
