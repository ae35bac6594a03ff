"""Files opened in the viewer of a server with a store are kept in the store: a browser may
post a file to one server and read its pages from another, and an account sees only its own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentfolio.app import Agentfolio
from agentfolio.server import create_server
from agentfolio.settings import Settings
from tests.otlp_support import otlp_json

SAMPLE = Path(__file__).resolve().parents[2] / "agentfolio" / "samples" / "durable-agent-state.sample.json"


def signed_in(folio: Agentfolio, token: str) -> TestClient:
    client = TestClient(create_server(folio=folio), base_url="http://127.0.0.1", follow_redirects=False)
    client.headers["Authorization"] = f"Bearer {token}"
    return client


@pytest.fixture
def two_servers(settings: Settings):  # type: ignore[no-untyped-def]
    first, second = Agentfolio.open(settings), Agentfolio.open(settings)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def test_a_file_opened_on_one_server_is_shown_by_another_to_its_account_only(two_servers) -> None:  # type: ignore[no-untyped-def]
    first, second = two_servers
    alice, _ = first.accounts.create_token("alice")
    bob, _ = first.accounts.create_token("bob")
    with signed_in(first, alice) as on_first, signed_in(second, alice) as on_second, \
            signed_in(second, bob) as bob_on_second:
        posted = on_first.post("/open", files={"file": ("sample.json", SAMPLE.read_bytes(), "application/json")})
        assert posted.status_code == 303, posted.text
        page = posted.headers["location"]
        shown = on_second.get(page)
        assert shown.status_code == 200 and "sample.json" in shown.text
        assert on_second.get(page + "/entries?start=1").status_code == 200
        assert "sample.json" in on_second.get("/open").text  # in the "opened recently" list of either server
        assert bob_on_second.get(page).status_code == 404
        assert "sample.json" not in bob_on_second.get("/open").text


def _two_conversations() -> bytes:
    """A collector's file export (one request per line) of two conversations, from the real SDK."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.opened_files")
    for conversation, question in (("conv-a", "first question"), ("conv-b", "second question")):
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.conversation.id": conversation,
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text",
                                                                                 "content": question}]}])}):
            pass
    provider.shutdown()
    return orjson.dumps(otlp_json(memory.get_finished_spans())) + b"\n"


def test_each_conversation_of_a_span_export_is_shown_by_another_server(two_servers) -> None:  # type: ignore[no-untyped-def]
    first, second = two_servers
    alice, _ = first.accounts.create_token("alice")
    with signed_in(first, alice) as on_first, signed_in(second, alice) as on_second:
        posted = on_first.post("/open", files={"file": ("spans.json", _two_conversations(), "application/json")})
        assert posted.status_code == 303 and posted.headers["location"] == "/open", posted.text
        listed = on_second.get("/open").text
        tokens = re.findall(r'href="/open/([^"/]+)"', listed)
        assert len(tokens) == 2, listed
        # Each item, parsed again by the other server, is its own conversation (not the first twice).
        pages = sorted(on_second.get(f"/open/{token}/entries?start=0").text for token in tokens)
        assert "first question" in pages[0] + pages[1] and "second question" in pages[0] + pages[1]
        assert ["first question" in page for page in pages].count(True) == 1
