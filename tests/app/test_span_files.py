"""OTLP/JSON files (a collector's file exporter output) read as the conversations their
spans hold: validate, show, import and the viewer, from spans made by the real SDK."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from agentfolio.app.documents import identify_all, read_file, validate_file
from agentfolio.app.span_files import looks_like_span_file, read_span_file
from agentfolio.formats.errors import FormatError
from agentfolio.model import TextContent, ToolCatalogContent
from tests.otlp_support import otlp_json


def _chat(tracer: Any, conversation: str, history: list[dict[str, Any]], answer: str) -> None:
    with tracer.start_as_current_span("invoke_agent Helper", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Helper",
            "gen_ai.conversation.id": conversation}), tracer.start_as_current_span("chat gpt-4o", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.conversation.id": conversation,
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
            "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "lookup"}]),
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop",
                                                   "parts": [{"type": "text", "content": answer}]}]),
            "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2}):
        pass


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "parts": [{"type": "text", "content": text}]}


@pytest.fixture
def exports() -> list[dict[str, Any]]:
    """Three export batches from the real SDK: two conversations over two traces, each
    chat span repeating the history so far, and a span with no messages."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "span-file-tests"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.span_files")
    batches = []
    _chat(tracer, "conv-a", [_user("hi")], "hello")
    batches.append(otlp_json(memory.get_finished_spans()))
    memory.clear()
    _chat(tracer, "conv-a", [_user("hi"), _assistant("hello"), _user("weather?")], "sunny")
    with tracer.start_as_current_span("GET /health"):
        pass
    batches.append(otlp_json(memory.get_finished_spans()))
    memory.clear()
    _chat(tracer, "conv-b", [_user("other")], "yes")
    batches.append(otlp_json(memory.get_finished_spans()))
    provider.shutdown()
    return batches


@pytest.fixture
def jsonl(tmp_path: Path, exports: list[dict[str, Any]]) -> Path:
    """The file exporter's layout: one ExportTraceServiceRequest per line."""
    path = tmp_path / "traces.json"
    path.write_bytes(b"".join(orjson.dumps(batch) + b"\n" for batch in exports))
    return path


def test_a_file_exporter_file_holds_its_conversations_each_message_once(jsonl: Path) -> None:
    spans = read_span_file(jsonl.read_bytes(), source=str(jsonl))
    assert (spans.requests, spans.spans, spans.problems) == (3, 7, [])
    assert [c.session_id for c in spans.found] == ["otel:conv-a", "otel:conv-b"]
    first = spans.found[0].built
    assert first.agent == "Helper"
    texts = [(m.role, c.text) for _, m in first.session.messages() for c in m.items if isinstance(c, TextContent)]
    assert texts == [("system", "Be brief."), ("user", "hi"), ("assistant", "hello"), ("user", "weather?"),
                     ("assistant", "sunny")]
    catalog = next(c for _, m in first.session.messages() for c in m.items if isinstance(c, ToolCatalogContent))
    assert [tool.name for tool in catalog.items] == ["lookup"]


def test_one_pretty_printed_request_reads_too(tmp_path: Path, exports: list[dict[str, Any]]) -> None:
    merged = {"resourceSpans": [rs for batch in exports[:2] for rs in batch["resourceSpans"]]}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(merged, indent=2))
    assert looks_like_span_file(path.read_bytes())
    result = read_file(path)  # one conversation: read as that session, through the one path
    assert result.format == "otlp-json"
    assert len(list(result.session.messages())) == 5


def test_validate_reports_each_bad_line_and_keeps_the_good_ones(jsonl: Path, tmp_path: Path) -> None:
    report = validate_file(jsonl)
    assert (report.valid, report.format, report.version) == (True, "otlp-json", "7 spans, 2 conversations")
    broken = tmp_path / "broken.json"
    lines = jsonl.read_bytes().split(b"\n")
    broken.write_bytes(b"\n".join([lines[0], b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
                                   b"not json", *lines[1:]]))
    report = validate_file(broken)
    assert not report.valid
    assert [p.message.split(":")[0] for p in report.problems] == ["line 2", "line 3"]
    assert "2 conversations" in (report.version or "")  # what could be read still is


def test_a_file_with_several_conversations_says_so_where_one_is_expected(jsonl: Path) -> None:
    with pytest.raises(FormatError, match="2 conversations"):
        read_file(jsonl)


def test_nothing_readable_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "startTimeUnixNano": "1"}]}]}]}')
    report = validate_file(path)
    assert not report.valid and report.problems


def test_importing_a_file_of_refused_spans_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentfolio.cli import app

    monkeypatch.delenv("AGENTFOLIO_DATABASE_URL", raising=False)
    monkeypatch.setenv("AGENTFOLIO_DATA_DIR", str(tmp_path / "data"))
    path = tmp_path / "refused.json"
    path.write_bytes(b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "01"}]}]}]}')
    imported = CliRunner().invoke(app, ["import", str(path)])
    assert imported.exit_code == 1
    assert "0 spans" in imported.output and "1 refused" in imported.output and "trace_id" in imported.output
    found = identify_all(path.read_bytes(), name="refused.json")
    assert found[0].kind == "invalid" and any("trace_id" in problem.message for problem in found[0].problems)


def test_the_viewer_opens_one_session_per_conversation(jsonl: Path) -> None:
    found = identify_all(jsonl.read_bytes(), name="traces.json")
    assert [(item.kind, item.detected) for item in found] == [("session", "otlp-json")] * 2
    assert found[0].name == "traces.json · Helper · otel:conv-a"


def test_the_cli_validates_shows_and_imports_span_files(jsonl: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from agentfolio.cli import app

    monkeypatch.delenv("AGENTFOLIO_DATABASE_URL", raising=False)
    monkeypatch.setenv("AGENTFOLIO_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()
    checked = runner.invoke(app, ["validate", str(jsonl)])
    assert checked.exit_code == 0 and "otlp-json" in checked.stdout
    shown = runner.invoke(app, ["show", str(jsonl)])
    assert shown.exit_code == 0, shown.output
    assert "otel:conv-a" in shown.stdout and "otel:conv-b" in shown.stdout and "weather?" in shown.stdout
    imported = runner.invoke(app, ["import", "--jsonl", str(jsonl)])
    assert imported.exit_code == 0, imported.output
    outcome = json.loads(imported.stdout.splitlines()[0])
    assert outcome["status"] == "stored" and outcome["format"] == "otlp-json" and len(outcome["ids"]) == 2
    again = runner.invoke(app, ["import", "--jsonl", str(jsonl)])
    assert json.loads(again.stdout.splitlines()[0])["status"] == "skipped"
    exported = runner.invoke(app, ["export", outcome["ids"][0], "--format", "otel-genai"])
    assert exported.exit_code == 0, exported.output
    document = json.loads(exported.stdout)
    assert [m["role"] for m in document["gen_ai.input.messages"]] == ["user", "assistant", "user"]


def test_the_viewer_page_lists_each_conversation_of_a_dropped_file(jsonl: Path) -> None:
    from fastapi.testclient import TestClient

    from agentfolio.web.app import create_web_app

    client = TestClient(create_web_app())
    answer = client.post("/open", files={"file": ("traces.json", jsonl.read_bytes(), "application/json")},
                         follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].endswith("/open")
    listing = client.get(answer.headers["location"])
    assert "otel:conv-a" in listing.text and "otel:conv-b" in listing.text
    first = re.search(r'href="(/open/[^"]+)"[^>]*>[^<]*otel:conv-a', listing.text)
    assert first is not None
    page = client.get(first.group(1))
    assert page.status_code == 200 and "weather?" in page.text and 'data-kind="tool_overview"' in page.text
