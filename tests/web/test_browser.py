"""The viewer in headless Chromium: every page, every segment kind, XSS, keyboard.

Each test drives Debian's chromium against the real service (uvicorn in a subprocess,
the API and the viewer mounted together as ``agentfolio serve`` does) and asserts that
no console error or uncaught exception happened.  Screenshots land in
``test-output/screenshots/``.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentfolio.samples import showcase as samples
from tests.web.xss import xss_session


def open_file(page: Any, name: str, document: Any, via: str = "/open") -> str:
    """Pick a file on an "open" page as a user does; returns the page it lands on."""
    folder = Path(tempfile.mkdtemp(prefix="agentfolio-open-"))
    path = folder / name
    path.write_bytes(orjson.dumps(document) if not isinstance(document, bytes) else document)
    page.goto(via)
    with page.expect_navigation():
        page.set_input_files("#file", str(path))
    page.wait_for_load_state("networkidle")
    return page.url


def wait_until(page: Any, expression: str, timeout: float = 10.0) -> None:
    """Poll a JavaScript expression until it is true (``wait_for_function`` needs eval,
    which the pages' Content-Security-Policy rightly forbids)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {expression}")
        page.wait_for_timeout(50)


def visit(page: Any, path: str) -> None:
    page.goto(path)
    page.wait_for_load_state("networkidle")
    page.wait_for_selector("html[data-viewer-ready]", state="attached")


# -- every page -------------------------------------------------------------------------


PAGES = [
    ("sessions", "/sessions"),
    ("sessions-search", "/sessions?q=Question+38"),
    ("session-stored-showcase", "/sessions/showcase"),
    ("session-stored-weather", "/sessions/weather-40"),
    ("session-long", "/sessions/long"),
    ("open", "/open"),
    ("traces", "/traces"),
    ("agents", "/agents"),
    ("compare-sessions", "/compare?a=weather-12&b=weather-40"),
    ("login", "/login"),
]


@pytest.mark.parametrize(("name", "path"), PAGES, ids=[name for name, _ in PAGES])
def test_every_page_loads_without_console_errors(page: Any, name: str, path: str) -> None:
    visit(page, path)
    assert page.locator("main").count() == 1
    page.console.screenshot(name)
    page.console.assert_clean()


def test_a_missing_session_is_a_404_page(page: Any) -> None:
    response = page.goto("/sessions/no-such-session")
    assert response.status == 404
    assert page.locator("h1").inner_text() == "Not found"
    page.console.screenshot("not-found")
    # Chromium logs the 404 of the document itself; nothing else may be reported.
    assert [e for e in page.console.errors if "status of 404" not in e] == []
    assert len(page.console.errors) <= 1


OPENED = [
    ("opened-showcase", "showcase.json", samples.showcase_session, "session"),
    ("opened-durable", "durable.json", lambda: samples.durable_session(30), "session"),
    ("opened-trace", "trace.json", samples.span_export, "trace"),
    ("opened-schema-version", "schema-version.json", samples.schema_version, "agents"),
    ("opened-body", "body.json", lambda: {"parts": [
        {"content_type": "text/markdown", "content": "Hello **there**"},
        {"name": "/photos/seine.png", "content_type": "image/png", "content_encoding": "base64",
         "content": samples.tiny_png().split(",", 1)[1]}]}, "body"),
    ("opened-body-schema", "body-schema.json", lambda: {"parts": [{"content_type": "text/*", "required": True}]},
     "body"),
    ("opened-invalid", "broken.json", lambda: {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "request", "messages": [{"role": 7, "contents": [{"$type": "text", "text": 5}]}]}]}}, "session"),
    ("opened-unreadable", "nine.json", lambda: {"schemaVersion": "9.0.0", "data": {}}, "invalid"),
]


@pytest.mark.parametrize(("name", "file_name", "make", "kind"), OPENED, ids=[item[0] for item in OPENED])
def test_opened_files_render_with_problems_by_pointer(page: Any, name: str, file_name: str, make: Any,
                                                      kind: str) -> None:
    url = open_file(page, file_name, make())
    assert re.search(r"/open/[A-Za-z0-9_-]+$", url)
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    if name == "opened-invalid":
        pointers = page.locator(".problems code.pointer").all_inner_texts()
        assert "/data/conversationHistory/0/messages/0/role" in pointers
        assert page.locator(".entry").count() == 1  # shown anyway
    if name == "opened-unreadable":
        assert page.locator(".problems code.pointer").all_inner_texts() == ["/schemaVersion"]
    if kind == "trace":
        assert page.locator(".span-row[data-id]").count() == 5
    if kind == "agents":
        assert page.locator("article.span-type").count() == 4
    page.console.screenshot(name)
    page.console.assert_clean()


# -- the session page, segment by segment --------------------------------------------------


@pytest.fixture
def showcase(page: Any) -> Any:
    open_file(page, "showcase.json", samples.showcase_session())
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    return page


def segment(page: Any, kind: str) -> Any:
    return page.locator(f'[data-kind="{kind}"]')


def test_folded_segments_show_a_summary_and_expand(showcase: Any) -> None:
    page = showcase
    for kind, summary in (("system_prompt", "711 chars"), ("memory", "2 items: Home city, Diet"),
                          ("skills", "2 skills: book_train, weather"),
                          ("tool_overview", "3 tools: get_weather, search_trains, book_hotel"),
                          ("long_text", "chars · Itinerary draft"), ("reasoning", "61 chars")):
        details = segment(page, kind).first
        assert details.evaluate("el => el.tagName") == "DETAILS", kind
        assert details.evaluate("el => el.open") is False, kind
        assert summary in details.locator(":scope > summary").inner_text(), kind
        body = details.locator(":scope > .seg-body")
        assert not body.is_visible()
        details.locator(":scope > summary").click()
        assert details.evaluate("el => el.open") is True, kind
        assert body.is_visible()
    long_text = segment(page, "long_text").first
    assert f"{len(samples.LONG_TEXT):,} characters" in long_text.inner_text()
    page.console.assert_clean()


def test_tool_calls_are_paired_with_results_and_failures_are_red(showcase: Any) -> None:
    page = showcase
    calls = segment(page, "tool_call_request")
    assert calls.count() == 2
    weather = calls.filter(has_text="get_weather")
    assert '"city": "Paris"' in weather.locator(".tool-args .json").inner_text()
    assert '"forecast": "light rain"' in weather.locator(".tool-result .json").inner_text()
    assert weather.locator(".tool-result img").count() == 1  # the radar image inside the result JSON
    trains = calls.filter(has_text="search_trains")
    assert "failed" in trains.get_attribute("class")
    assert "upstream timeout" in trains.locator(".tool-result").inner_text()
    red = trains.locator(".tool-result .json").evaluate("el => getComputedStyle(el).color")
    assert red == "rgb(198, 40, 40)"
    # Where the results stand in the history, a pointer back to the call.
    pointers = segment(page, "tool_call_result")
    assert pointers.count() == 2
    link = pointers.first.locator("a")
    assert link.get_attribute("href") == "#" + weather.get_attribute("id")
    page.console.assert_clean()


def test_documents_media_variables_markdown_and_unknown_kinds(showcase: Any) -> None:
    page = showcase
    card = segment(page, "document")
    assert card.locator(".doc-name").inner_text() == "itinerary.pdf"
    assert card.locator(".doc-type").inner_text() == "application/pdf"
    assert card.locator(".doc-size").inner_text() == "47.1 KB"
    assert "Louvre at 9:00" in card.locator(".doc-snippet").inner_text()
    media = segment(page, "media")
    image = media.locator("img")
    assert image.get_attribute("alt") == "A photo of the Seine"
    assert image.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
    assert media.locator("audio").get_attribute("aria-label") == "Voice note"
    assert media.locator("video").get_attribute("aria-label") == "Street clip"
    variable = segment(page, "static_var")
    assert variable.locator(".var-name").inner_text() == "{{travel_dates}}"
    assert variable.locator("mark.var-value").inner_text() == "2025-11-15 to 2025-11-16"
    assert variable.locator(".var-desc").inner_text() == "Dates the user picked in the form"
    text = segment(page, "text").first
    assert text.locator("strong").inner_text() == "weekend in Paris"
    assert page.locator(".md table td").first.inner_text() == "Sat"
    raw = segment(page, "raw")
    assert '"$type": "hologram"' in raw.first.inner_text()
    assert '"$type": "checkpoint"' in raw.last.inner_text()
    error = segment(page, "error")
    assert "Hotel search is unavailable" in error.inner_text()
    # Roles, authors, times, token usage per response and the totals.
    assert page.locator(".msg.role-user .author").first.inner_text() == "Camille"
    assert page.locator(".msg.role-user time").first.inner_text() == "2025-11-04 19:33:11 UTC"
    assert page.locator(".response-usage").all_inner_texts() == [
        "tokens: in 1,200 · out 85 · total 1,285", "tokens: in 1,500 · out 240 · total 1,740"]
    assert "total 3,025" in page.locator(".totals").inner_text()
    tools = page.locator(".tools-aside code").all_inner_texts()
    assert tools == ["get_weather", "search_trains", "book_hotel"]
    page.console.screenshot("segments")
    page.console.assert_clean()


def test_raw_toggle_keeps_newlines_and_sticks(showcase: Any) -> None:
    page = showcase
    text = segment(page, "text").first
    assert text.locator(".rendered").is_visible() and not text.locator(".raw-text").is_visible()
    page.click(".toggle-raw")
    assert text.locator(".raw-text").is_visible() and not text.locator(".rendered").is_visible()
    assert "for me:\n\n- museums\n- good food" in text.locator(".raw-text").inner_text()
    page.reload()
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    assert segment(page, "text").first.locator(".raw-text").is_visible()
    assert page.locator(".toggle-raw").get_attribute("aria-pressed") == "true"
    page.click(".toggle-raw")
    page.console.assert_clean()


def test_collapse_state_sticks_across_pages(showcase: Any) -> None:
    page = showcase
    prompt = segment(page, "system_prompt").first
    assert prompt.evaluate("el => el.open") is False
    prompt.locator(":scope > summary").click()
    call = segment(page, "tool_call_request").first
    call.locator(":scope > summary").click()  # the user folds tool calls
    assert call.evaluate("el => el.open") is False
    visit(page, "/sessions/showcase")  # another page, another session
    assert segment(page, "system_prompt").first.evaluate("el => el.open") is True
    assert segment(page, "tool_call_request").first.evaluate("el => el.open") is False
    visit(page, "/sessions/weather-40")
    assert segment(page, "tool_call_request").first.evaluate("el => el.open") is False
    page.console.assert_clean()


def test_slash_searches_within_the_session_and_expands_matches(showcase: Any) -> None:
    page = showcase
    parsed = page.locator('[data-kind="document_content"]')
    assert parsed.evaluate("el => el.open") is False
    page.locator("h1").click()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "find"
    page.keyboard.type("Orsay at 10")
    # Typed a key at a time, the search may go out before the last key: wait for the last one's.
    wait_until(page, "document.querySelector('.find-status').textContent.startsWith('1 of 1') && "
                     "document.querySelector('mark.find-hit').textContent.toLowerCase() === 'orsay at 10'")
    assert parsed.evaluate("el => el.open") is True
    page.keyboard.press("Escape")
    assert page.locator("mark.find-hit").count() == 0
    page.console.assert_clean()


def test_keyboard_alone_reaches_and_expands_a_folded_segment(showcase: Any) -> None:
    page = showcase
    page.locator("body").focus()
    for _ in range(80):
        page.keyboard.press("Tab")
        focused = page.evaluate("""() => {
            const el = document.activeElement;
            return el && el.tagName === 'SUMMARY' ? el.parentElement.dataset.kind : null; }""")
        if focused == "system_prompt":
            break
    else:
        pytest.fail("Tab never reached the folded system prompt")
    prompt = segment(page, "system_prompt").first
    assert prompt.evaluate("el => el.open") is False
    page.keyboard.press("Enter")
    assert prompt.evaluate("el => el.open") is True
    assert prompt.locator(".seg-body").is_visible()
    page.keyboard.press("Enter")
    assert prompt.evaluate("el => el.open") is False
    page.console.assert_clean()


# -- long sessions, lists, side by side, export ---------------------------------------------


def test_long_session_loads_a_screen_then_more_on_scroll(page: Any) -> None:
    visit(page, "/sessions/long")
    first = page.locator("section.entry").count()
    assert 0 < first < 200
    page.locator(".more").scroll_into_view_if_needed()
    wait_until(page, f"document.querySelectorAll('section.entry').length > {first}")
    # Search finds in all of it, on the server, and loads only the page around the match.
    page.keyboard.press("/")
    page.keyboard.type("Question 198:")
    wait_until(page, "document.querySelector('.find-status').textContent.startsWith('1 of 1')")
    assert page.locator("#e198 mark.find-hit").count() == 1
    assert page.locator("section.entry").count() < 200
    page.console.assert_clean()


def test_session_list_searches_filters_and_pages(page: Any) -> None:
    visit(page, "/sessions")
    assert page.locator(".session-table tbody tr").count() == 50
    page.click("a[rel=next]")
    page.wait_for_load_state("networkidle")
    assert page.locator(".session-table tbody tr").count() == 70 - 50  # 55 bulk + 5 named + 10 timed sessions
    visit(page, "/sessions")
    page.fill("#q", "weekend in paris")  # any case
    wait_until(page, "document.querySelectorAll('.session-table tbody tr').length === 1")
    assert page.locator(".session-table tbody a").inner_text() == "showcase"
    assert "q=weekend" in page.url  # pushed, so the search can be shared and reloaded
    page.locator(".session-table tbody a").click()
    page.wait_for_selector("mark.find-hit")
    visit(page, "/sessions?agent=Breeze")
    assert "weather-12" in page.locator(".session-table tbody a").all_inner_texts()
    assert set(page.locator(".session-table tbody td[data-label=Agent]").all_inner_texts()) == {"Breeze"}
    visit(page, "/sessions?since=2030-01-01T00%3A00")
    assert page.locator(".session-table tbody tr").count() == 0
    assert "No sessions match" in page.locator("#session-list").inner_text()
    page.console.assert_clean()


def test_two_sessions_and_two_traces_side_by_side(page: Any) -> None:
    visit(page, "/compare?a=weather-12&b=weather-40")
    heads = page.locator(".cmp-head .cmp-side").all_inner_texts()
    assert heads == ["weather-12", "weather-40"]  # two sessions: their turns aligned
    first = open_file(page, "trace-a.json", samples.span_export(), via="/traces").rsplit("/", 1)[1]
    second = open_file(page, "trace-b.json", samples.span_export(), via="/traces").rsplit("/", 1)[1]
    visit(page, f"/compare?a=file:{first}&b=file:{second}")
    spans = len(samples.span_export()["spans"])  # the same export twice: every span the same
    assert page.locator('.compare-grid .cmp-row[data-status="same"]').count() == spans
    assert page.locator('.compare-grid .cmp-row[data-status]:not([data-status="same"])').count() == 0
    page.console.screenshot("compare-traces")
    page.console.assert_clean()


def test_export_is_one_self_contained_file(page: Any, server: str) -> None:
    response = page.request.get(f"{server}/sessions/showcase/export.html")
    assert response.ok
    assert "attachment" in response.headers["content-disposition"]
    document = response.text()
    assert "/static/" not in document and "http://127.0.0.1" not in document
    path = Path(tempfile.mkdtemp(prefix="agentfolio-export-")) / "showcase.html"
    path.write_text(document, encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    assert page.locator("section.entry").count() == 4
    prompt = segment(page, "system_prompt").first
    prompt.locator(":scope > summary").click()
    assert prompt.evaluate("el => el.open") is True
    page.click(".toggle-raw")
    assert segment(page, "text").first.locator(".raw-text").is_visible()
    page.console.screenshot("export")
    page.console.assert_clean()


# -- traces and agents ---------------------------------------------------------------------


def test_trace_tree_timeline_titles_and_flags(page: Any) -> None:
    open_file(page, "trace.json", samples.span_export(), via="/traces")
    page.wait_for_selector("html[data-trace-ready]", state="attached")
    rows = page.locator(".span-row[data-id]")
    assert rows.count() == 5
    assert [rows.nth(i).get_attribute("aria-level") for i in range(5)] == ["1", "2", "2", "1", "1"]
    titles = page.locator(".span-row[data-id] .span-name").all_inner_texts()
    assert titles[0].startswith("gpt-x: Plan a weekend") and titles[0].endswith("...")  # the template truncates
    assert titles[1] == "get_weather(Paris)"
    flagged = page.locator(".span-row.flagged")
    assert flagged.count() == 2  # s4's params break its schema; s5's parent is unknown
    flagged.nth(0).click()
    page.wait_for_selector(".trace-detail .span-detail-pane[data-span=s4]")
    assert "model" in page.locator(".trace-detail .span-flags").inner_text()
    flagged.nth(1).click()
    page.wait_for_selector(".trace-detail .span-detail-pane[data-span=s5]")
    assert "parent_span_id names no span" in page.locator(".trace-detail .span-flags").inner_text()
    failed = page.locator(".span-row[data-id]", has=page.locator(".badge.status-failed"))
    assert failed.locator(".cell-status").inner_text() == "failed"
    assert failed.locator("svg rect.bar-failed").count() == 1
    assert page.locator(".trace-head .badge.risk-low, .trace-head .badge.risk-medium, .trace-head .badge.risk-high, "
                        ".trace-head .badge.risk-critical").count() == 1
    page.console.screenshot("trace")
    page.console.assert_clean()


def test_agents_risk_badges_rollup_and_compatibility(page: Any) -> None:
    open_file(page, "schema-version.json", samples.schema_version(), via="/agents")
    types = page.locator("article.span-type")
    assert types.count() == 4
    llm = types.filter(has_text="agent:llm")
    assert "Personal identifiers" in llm.locator(".badges").inner_text()
    assert "classification: confidential" in llm.locator(".badges").inner_text()
    flags = page.locator(".risk-flags li").all_inner_texts()
    assert any("destroys data" in flag for flag in flags)
    assert any("external communication with sensitive data" in flag for flag in flags)
    assert any("undeclared data risk" in flag for flag in flags)
    llm.locator('[data-kind="params_schema"] > summary').click()
    assert '"prompt"' in llm.locator('[data-kind="params_schema"] .json').inner_text()
    visit(page, "/agents")
    page.click(".compat-form button[type=submit]")
    page.wait_for_selector(".compat-result .counterexample")
    assert "not compatible" in page.locator(".compat-result").inner_text()
    counter = orjson.loads(page.locator(".counterexample pre").first.inner_text())
    assert counter["parts"]
    page.fill("textarea[name=input_schema]", '{"parts": [{"content_type": "*/*"}]}')
    page.fill("textarea[name=output_schema]", '{"parts": [{"content_type": "text/plain", "required": true}]}')
    page.click(".compat-form button[type=submit]")
    wait_until(page, "document.querySelector('.compat-result').textContent.includes('compatible')")
    assert page.locator(".compat-result .badge.ok").inner_text() == "compatible"
    page.console.screenshot("agents-compat")
    page.console.assert_clean()


def test_stored_traces_and_agents(page: Any) -> None:
    visit(page, "/traces")
    rows = page.locator(".trace-table tbody tr")
    assert rows.count() == 2
    page.console.screenshot("traces-stored")
    # The list page is "ready" too: wait for the trace page itself, not the attribute.
    with page.expect_navigation(url=re.compile(r"/traces/[0-9a-z]+$")):
        rows.filter(has=page.locator("td.num", has_text=re.compile(r"^5$"))).locator("td.trace-id a").first.click()
    page.wait_for_selector("html[data-trace-ready]", state="attached")
    spans = page.locator(".span-row[data-id]")
    assert spans.count() == 5
    assert "get_weather(Paris)" in page.locator(".span-name").all_inner_texts()
    assert page.locator(".span-row.flagged").count() == 2
    flagged = page.locator(".span-row.flagged").last
    flagged.click()
    page.wait_for_selector(".trace-detail .span-flags")
    assert "parent_span_id names no span of this instance" in page.locator(".trace-detail .span-flags").inner_text()
    page.console.screenshot("trace-stored")
    first = page.url.split("?")[0].rsplit("/", 1)[1]
    visit(page, "/agents")
    agent_row = page.locator(".agent-table tbody tr")
    assert agent_row.count() == 1
    assert "destroys data" in agent_row.inner_text()
    agent_row.locator("a").click()
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    assert page.locator("h1").inner_text() == "Atlas"
    flags = page.locator(".rollup .risk-flags").first.inner_text()
    assert "external communication with sensitive data" in flags
    assert page.locator("details.schema-version").count() == 1  # both runs registered the same version
    assert page.locator("details.schema-version article.span-type").count() == 4
    page.console.screenshot("agent-stored")
    visit(page, "/traces")
    second = next(href.rsplit("/", 1)[1] for href in page.locator(".trace-table tbody tr td.trace-id a")
              .evaluate_all("els => els.map(a => a.getAttribute('href'))") if not href.endswith(first))
    visit(page, f"/compare?a=instance:{first}&b=instance:{second}")
    heads = page.locator(".cmp-head .cmp-side").all_inner_texts()
    assert heads == [f"Instance {first}", f"Instance {second}"]
    assert page.locator(".compare-grid .cmp-span").count() >= 2
    page.console.assert_clean()


# -- security ----------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["stored", "opened", "export"])
def test_script_payloads_in_every_text_field_render_as_text(page: Any, server: str, where: str) -> None:
    if where == "stored":
        visit(page, "/sessions/xss")
    elif where == "opened":
        open_file(page, "xss.json", xss_session())
    else:
        document = page.request.get(f"{server}/sessions/xss/export.html").text()
        path = Path(tempfile.mkdtemp(prefix="agentfolio-xss-")) / "xss.html"
        path.write_text(document, encoding="utf-8")
        page.goto(path.as_uri())
    page.wait_for_selector("html[data-viewer-ready]", state="attached")
    page.click(".expand-all")
    page.mouse.move(300, 400)
    page.wait_for_timeout(300)
    assert page.evaluate("window.__xss") is None
    assert page.console.dialogs == []
    # The payloads are on the page as text...
    assert "<script>window.__xss" in page.locator("main").inner_text()
    # ...and none became markup: only our own two scripts (one inline in the export).
    assert page.locator("script").count() == (1 if where == "export" else 2)
    assert page.locator("main iframe, main svg[onload], main [onerror], main [onmouseover]").count() == 0
    hrefs = page.locator("main a[href]").evaluate_all("els => els.map(a => a.getAttribute('href'))")
    assert not [href for href in hrefs if href.lower().startswith("javascript")]
    sources = page.locator("main img, main audio, main video").evaluate_all(
        "els => els.map(e => e.getAttribute('src') || '')")
    assert not [src for src in sources if not src.startswith(("data:image", "data:audio", "data:video", "http"))]
    page.console.screenshot(f"xss-{where}")
    # Chromium reports nothing for the payloads; a CSP violation would show up here.
    page.console.assert_clean()


def test_pages_carry_a_strict_content_security_policy(page: Any, server: str) -> None:
    response = page.request.get(f"{server}/sessions/showcase")
    policy = response.headers["content-security-policy"]
    script_src = next(part for part in policy.split(";") if part.strip().startswith("script-src"))
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    assert response.headers["x-content-type-options"] == "nosniff"
