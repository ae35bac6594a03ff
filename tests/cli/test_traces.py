"""``agentfolio traces ls|show`` on a local store: traces listed with agent names, filtered,
sorted and paged; a trace printed as a tree with durations and status and its LLM spans'
messages as a conversation; the same as JSON; stored strings printed as text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agentfolio import _json
from agentfolio.app import Agentfolio
from agentfolio.app.demo import load_trace_demo
from agentfolio.app.otlp import OtlpIngest
from agentfolio.cli import app
from agentfolio.samples.traces import genai_request
from agentfolio.settings import Settings

runner = CliRunner()
HOSTILE = "\x1b]0;pwned\x07[red]loud[/red]\u202eevil"
FORBIDDEN = ("\x1b", "\x07", "\u202e")


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTFOLIO_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("AGENTFOLIO_DATABASE_URL", raising=False)
    with Agentfolio.open(Settings.from_env({}).with_(data_dir=tmp_path)) as folio:
        account = folio.accounts.ensure("default")
        load_trace_demo(folio, account, spans=40)
        hostile = genai_request(2, trace_id="7" * 32, service="svc")
        for attribute in hostile["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]:
            if attribute["key"] == "gen_ai.agent.name":
                attribute["value"] = {"stringValue": HOSTILE}
        OtlpIngest(folio.store).export(account, orjson.dumps(hostile), encoding="json")
        other = folio.accounts.ensure("other")
        load_trace_demo(folio, other, spans=5, otel=False)
    return tmp_path


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def listed(*args: str) -> dict[str, Any]:
    done = cli("traces", "ls", "--json", *args)
    assert done.exit_code == 0, done.output
    page: dict[str, Any] = _json.loads(done.stdout)
    return page


def test_ls_lists_agent_names_and_filters_sorts_and_pages(data_dir: Path) -> None:
    done = cli("traces", "ls")
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["trace", "agent", "started"]
    assert any("research-40" in line and "Atlas research" in line and "complete" in line for line in lines)
    assert any("4bf92f3577b34da6a3ce929d0e0e4736" in line and "Breeze" in line for line in lines)
    everything = listed()
    assert len(everything["items"]) == 3  # the other account's run is not listed
    assert {item["agent_name"] for item in listed("--agent", "breez")["items"]} == {"Breeze"}
    by_spans = [item["span_count"] for item in listed("--sort", "spans")["items"]]
    assert by_spans == sorted(by_spans, reverse=True) and by_spans[0] == 40
    assert [item["span_count"] for item in listed("--sort", "spans", "--asc")["items"]] == sorted(by_spans)
    first = listed("--limit", "2")
    assert len(first["items"]) == 2 and first["next"]
    rest = listed("--limit", "2", "--after", first["next"])
    assert [item["id"] for item in first["items"] + rest["items"]] == [item["id"] for item in everything["items"]]
    assert listed("--status", "failed")["items"] == []
    assert cli("traces", "ls", "--sort", "nonsense").exit_code == 2
    assert cli("traces", "ls", "--since", "yesterday").exit_code == 2
    bad = cli("traces", "ls", "--after", "%%%")
    assert bad.exit_code == 1 and "cursor" in bad.output


def test_show_prints_the_tree_with_durations_status_and_messages(data_dir: Path) -> None:
    done = cli("traces", "show", "research-40")
    assert done.exit_code == 0, done.output
    out = done.stdout
    assert out.splitlines()[0].startswith("Atlas research · trace research-40")
    assert "40 spans" in out
    rows = [line for line in out.splitlines() if "langchain:" in line or "workflow:step" in line]
    assert len(rows) == 40
    assert re.match(r"\s*0\s+[\d.]+ s\s+complete\s+▾ Atlas\s+langchain:agent$", rows[0]), rows[0]
    assert re.match(r"\s*0\s+\d+ ms\s+complete\s+· gpt-4o-mini\s+langchain:llm$", rows[1]), rows[1]
    assert re.match(r"\s*\+\d+ ms\s+\d+ ms\s+(complete|failed)\s+· \w+\s+langchain:tool$", rows[2]), rows[2]
    assert all(any(status in row for status in ("complete", "failed")) for row in rows)
    assert "You are Atlas, a travel assistant." in out and "Plan step 1" in out  # an LLM span's messages
    assert "tokens: in" in out
    quiet = cli("traces", "show", "research-40", "--no-messages")
    assert "Plan step 1" not in quiet.stdout and len(quiet.stdout) < len(out)
    otel = cli("traces", "show", "4bf92f3577b34da6a3ce929d0e0e4736")  # by its OpenTelemetry trace id
    assert otel.exit_code == 0 and "Weather in Paris?" in otel.stdout and "get_weather" in otel.stdout
    missing = cli("traces", "show", "no-such-trace")
    assert missing.exit_code == 1 and "no trace" in missing.output


def test_show_json_and_one_span(data_dir: Path) -> None:
    done = cli("traces", "show", "research-40", "--json")
    assert done.exit_code == 0, done.output
    shown = _json.loads(done.stdout)
    assert shown["trace"]["span_count"] == 40 and len(shown["spans"]) == 40
    assert [span["depth"] for span in shown["spans"]][:2] == [0, 1]
    llm = [span for span in shown["spans"] if span["schema_name"] == "langchain:llm"]
    assert llm and all(span["messages"][0]["role"] == "system" for span in llm)
    tool = next(span for span in shown["spans"] if span["schema_name"] == "langchain:tool")
    assert "messages" not in tool
    one = cli("traces", "show", "research-40", "--span", llm[0]["id"], "--json")
    detail = _json.loads(one.stdout)["span"]
    assert detail["payload"]["model_name"] == "gpt-4o-mini" and detail["messages"][1]["role"] == "user"
    printed = cli("traces", "show", "research-40", "--span", tool["id"])
    assert printed.exit_code == 0 and "params" in printed.stdout and tool["id"] in printed.stdout


def test_stored_strings_are_printed_as_text(data_dir: Path) -> None:
    listing = cli("traces", "ls")
    shown = cli("traces", "show", "7" * 32)
    span = _json.loads(cli("traces", "show", "7" * 32, "--json").stdout)["spans"][0]["id"]
    one = cli("traces", "show", "7" * 32, "--span", span)
    for done in (listing, shown, one):
        assert done.exit_code == 0, done.output
        assert not any(ch in done.stdout for ch in FORBIDDEN)
    assert "[red]loud[/red]" in listing.stdout and "[red]loud[/red]" in shown.stdout
    assert "\\x1b" in shown.stdout  # the escape shown, not sent
