"""Each provider format's gallery (every block kind it has) shown in the terminal and
as HTML: thinking folded, redacted thinking said to be redacted, server calls beside what
they did, citations linked to their sources, and unknown blocks shown as their JSON."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agentfolio.cli.terminal import render_session
from agentfolio.formats import registry
from agentfolio.model import OpaqueContent
from agentfolio.web.html import export_html

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GALLERIES = ["anthropic", "openai_responses", "gemini", "langchain", "a2a", "otel_genai"]


def session_of(name: str):  # type: ignore[no-untyped-def]
    document = orjson.loads((FIXTURES / name / "gallery.json").read_bytes())
    return registry.detect(document).read(document).session


def terminal(name: str, *, expand: bool = False) -> str:
    console = Console(width=140, record=True)
    console.print(render_session(session_of(name), title=name, expand=expand))
    return console.export_text()


def test_anthropic_thinking_is_folded_redacted_thinking_says_so_and_citations_link_their_sources() -> None:
    folded = terminal("anthropic")
    assert "▸ reasoning · 67 chars · signed" in folded
    assert "▸ redacted thinking · redacted · 64 chars kept for the provider" in folded
    opened = terminal("anthropic", expand=True)
    assert "thinking: The user wants the weather" in opened
    assert "[1] Paris forecast — https://example.com/paris" in opened
    assert "→ server call web_search [srvtoolu_014hJH82Qum7Td6UV8gDXThB]" in opened
    html = export_html(session_of("anthropic"), title="anthropic")
    assert '<a href="https://example.com/paris" rel="noopener noreferrer nofollow"' in html
    assert 'data-kind="redacted_reasoning"' in html and "server tool call" in html


def test_openai_built_in_calls_show_what_the_provider_ran() -> None:
    opened = terminal("openai_responses", expand=True)
    assert "→ server call file_search [fs_68af4033]" in opened
    assert "Revenue grew 12%" in opened  # the file search's results, beside the call
    html = export_html(session_of("openai_responses"), title="responses")
    assert "What the provider ran" in html and "run by the provider" in html


def test_gemini_code_execution_shows_beside_its_result() -> None:
    opened = terminal("gemini", expand=True)
    call_at = opened.index("→ server call code_execution")
    assert opened.index("59.0", call_at) > call_at  # the id-less result is shown with its call


def test_otel_genai_tools_reasoning_and_server_calls_have_their_own_look() -> None:
    folded = terminal("otel_genai")
    assert "tools · 2 tools: get_weather, web_search" in folded  # the tool definitions, folded
    assert "reasoning · 68 chars" in folded  # reasoning folded
    opened = terminal("otel_genai", expand=True)
    call_at = opened.index("→ server call web_search")
    assert opened.index("Paris forecast", call_at) > call_at  # the server call beside what it found
    assert opened.index("→ call get_weather") < opened.index('"sky": "sunny"')
    html = export_html(session_of("otel_genai"), title="otel")
    assert 'data-kind="tool_overview"' in html and 'data-kind="reasoning"' in html


@pytest.mark.parametrize("name", GALLERIES)
def test_unknown_blocks_are_shown_as_their_json_never_hidden(name: str) -> None:
    session = session_of(name)
    unknown = [c for _, m in session.messages() for c in m.items if isinstance(c, OpaqueContent)]
    text = terminal(name, expand=True)
    html = export_html(session, title=name)
    for content in unknown:
        assert content.kind in text and content.kind in html
    assert "<script>alert" not in html
