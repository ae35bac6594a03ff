"""Moving about a long session in headless Chromium: find across the whole session on the
server ("n of N", the page around a match loaded in place), earlier entries when a session
opens mid-way, j/k between turns, anchors and validation pointers that land below the
sticky bars, and pages narrowed to tool calls, errors or one role.

Screenshots: ``test-output/screenshots/navigation-*.png``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
import pytest

from agentfolio.samples import showcase as samples
from tests.web.test_browser import open_file, visit, wait_until

# "city 3?" is asked at these positions of the 200-message session (index % 17 == 3, even).
CITY_3 = [20, 54, 88, 122, 156, 190]


def below_bars(page: Any, selector: str) -> bool:
    """Whether the element's top is on screen and not under the header or the toolbar."""
    return page.evaluate("""(selector) => {
      const box = document.querySelector(selector).getBoundingClientRect();
      let bottom = 0;
      for (const bar of document.querySelectorAll('.top, .toolbar')) {
        const style = getComputedStyle(bar);
        if (style.position !== 'sticky' && style.position !== 'fixed') continue;
        const barBox = bar.getBoundingClientRect();
        if (barBox.top <= bottom + 1) bottom = Math.max(bottom, barBox.bottom);
      }
      return box.top >= bottom - 1 && box.top < innerHeight;
    }""", selector)


def status(page: Any) -> str:
    return page.locator(".find-status").inner_text()


def test_find_searches_the_whole_session_and_loads_the_page_around_a_match(page: Any) -> None:
    visit(page, "/sessions/long")
    assert page.locator("#e190").count() == 0  # far past the first screen
    page.keyboard.press("/")
    page.keyboard.type("what is the weather in CITY 3?")
    wait_until(page, "document.querySelector('.find-status').textContent.includes('of 6')")
    assert status(page).startswith("1 of 6")
    assert below_bars(page, "#e20 mark.find-hit")
    page.keyboard.press("Enter")
    wait_until(page, "document.querySelector('.find-status').textContent.startsWith('2 of 6')")
    # The last match is far away: Shift+Enter from the first wraps round to it, loading its page.
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")
    wait_until(page, "document.querySelector('.find-status').textContent.startsWith('6 of 6')")
    wait_until(page, "document.querySelector('#e190 mark.find-hit.hit-current')")
    assert below_bars(page, "#e190 mark.hit-current")
    assert page.locator("#e0").count() == 0  # the page around the match took the place of the first
    assert page.locator(".load-earlier").count() == 1
    page.console.screenshot("navigation-find")
    page.console.assert_clean()


def test_find_says_when_nothing_matches_and_steps_with_the_buttons(page: Any) -> None:
    visit(page, "/sessions/long")
    page.fill(".find", "no such words anywhere")
    wait_until(page, "document.querySelector('.find-status').textContent.includes('no matches')")
    page.fill(".find", "Question 122:")
    wait_until(page, "document.querySelector('.find-status').textContent.startsWith('1 of 1')")
    assert page.locator("#e122 mark.find-hit").inner_text().lower() == "question 122:"
    page.fill(".find", "city 3?")
    wait_until(page, "document.querySelector('.find-status').textContent.includes('of 6')")
    page.click(".find-next")
    wait_until(page, "/^\\d of 6/.test(document.querySelector('.find-status').textContent) && "
                     "!document.querySelector('.find-status').textContent.startsWith('1 ')")
    page.console.assert_clean()


def test_find_in_an_opened_file_searches_all_of_it(page: Any) -> None:
    open_file(page, "long.json", samples.durable_session(300, seed=9))
    assert page.locator("section.entry").count() < 100
    page.fill(".find", "Question 288:")
    wait_until(page, "document.querySelector('.find-status').textContent.startsWith('1 of 1')")
    assert below_bars(page, "#e288 mark.find-hit")
    page.console.assert_clean()


def test_a_session_opened_mid_way_offers_the_entries_before(page: Any) -> None:
    visit(page, "/sessions/long?start=100#e100")
    assert page.locator("section.entry").first.get_attribute("id") == "e100"
    assert below_bars(page, "#e100")
    link = page.locator(".load-earlier")
    assert "100 before" in link.inner_text()
    link.click()
    wait_until(page, "document.querySelector('#e60') !== null")
    ids = page.locator("section.entry").evaluate_all("(all) => all.map((s) => s.id)")
    assert ids[:41] == [f"e{index}" for index in range(60, 101)]
    # Earlier again, down to the first entry; then no link is left.
    page.locator(".load-earlier").click()
    wait_until(page, "document.querySelector('#e20') !== null")
    page.locator(".load-earlier").click()
    wait_until(page, "document.querySelector('#e0') !== null")
    assert page.locator(".load-earlier").count() == 0
    page.console.assert_clean()


def test_j_and_k_step_between_turns_below_the_bars(page: Any) -> None:
    visit(page, "/sessions/weather-40")
    for expected in ("e1", "e2", "e3"):
        page.keyboard.press("j")
        wait_until(page, f"document.querySelector('section.current-turn') && "
                         f"document.querySelector('section.current-turn').id === '{expected}'")
        assert below_bars(page, f"#{expected}")
    page.keyboard.press("k")
    wait_until(page, "document.querySelector('section.current-turn').id === 'e2'")
    # Typing in the find box types letters, it does not move.
    page.focus(".find")
    page.keyboard.type("jk")
    assert page.locator("section.current-turn").get_attribute("id") == "e2"
    page.console.assert_clean()


def test_j_past_the_last_loaded_turn_loads_the_next_page(page: Any) -> None:
    visit(page, "/sessions/long?start=150")
    page.evaluate("() => document.querySelector('#e189').scrollIntoView()")
    page.keyboard.press("j")
    page.keyboard.press("j")
    wait_until(page, "document.querySelector('#e190') !== null")
    page.console.assert_clean()


@pytest.fixture
def problems_file(page: Any) -> str:
    document = samples.durable_session(120, seed=5)
    history = document["data"]["conversationHistory"]
    history[70]["messages"][0]["role"] = "narrator"  # not a role the schema knows: a problem, still read
    history[70]["messages"][0]["contents"].insert(0, {"$type": "text", "text": 42})
    return open_file(page, "problems.json", document)


def test_validation_pointers_link_to_the_entry_and_content_they_name(page: Any, problems_file: str) -> None:
    links = page.locator(".problems a.pointer-link")
    assert links.count() >= 1
    hrefs = links.evaluate_all("(all) => all.map((a) => a.getAttribute('href'))")
    assert any(href.endswith("?start=70#e70.m0") for href in hrefs), hrefs
    content = next(index for index, href in enumerate(hrefs) if "#e70.m0.c0" in href)
    links.nth(content).click()
    page.wait_for_load_state("networkidle")
    wait_until(page, "document.querySelector('.target-flash') !== null")
    assert page.url.endswith("#e70.m0.c0")
    assert below_bars(page, ".target-flash")
    page.console.screenshot("navigation-pointer")
    page.console.assert_clean()


def timed_answers() -> tuple[dict, list[float]]:
    document = samples.timed_session(6, seed=1)
    history = document["data"]["conversationHistory"]
    seconds = [datetime.fromisoformat(answer["createdAt"]).timestamp()
               - datetime.fromisoformat(question["createdAt"]).timestamp()
               for question, answer in zip(history[::2], history[1::2], strict=True)]
    return document, seconds


def test_each_answer_and_tool_call_shows_how_long_it_took(page: Any) -> None:
    document, seconds = timed_answers()
    visit(page, "/sessions/timed-1")
    for index, took in enumerate(seconds):
        shown = page.locator(f"#e{2 * index + 1} .entry-head .latency").inner_text()
        assert shown == f"took {took:.1f} s", (index, shown)
    calls = page.locator("details.seg-tool_call_request .latency")
    assert calls.count() == sum(1 for entry in document["data"]["conversationHistory"] if entry["$type"] == "response")
    header = page.locator(".latency-line").inner_text()
    longest = max(seconds)
    assert f"longest {longest:.1f} s" in header and "median" in header
    page.console.screenshot("navigation-latency")
    page.console.assert_clean()


def test_a_response_without_usage_says_so(page: Any) -> None:
    visit(page, "/sessions/timed-1")
    error_entries = page.locator("section.entry-errorResponse")
    assert error_entries.count() >= 1
    assert error_entries.first.locator(".response-usage").inner_text() == "no usage recorded"
    page.console.assert_clean()


@pytest.mark.parametrize(("show", "kinds"), [("errors", {"error", "tool_call_result", "tool_call_request"}),
                                             ("tools", {"tool_call_request", "tool_call_result"})])
def test_a_session_narrowed_to_tool_calls_or_errors(page: Any, show: str, kinds: set[str]) -> None:
    document, _ = timed_answers()
    history = document["data"]["conversationHistory"]
    expected = [index for index, entry in enumerate(history) if any(
        content["$type"] in ("error", "functionCall", "functionResult") if show == "tools" else
        content["$type"] == "error" or (content["$type"] == "functionResult" and "error" in content["result"])
        for message in entry["messages"] for content in message["contents"])]
    visit(page, "/sessions/timed-1")
    with page.expect_navigation():
        page.select_option("select.show-filter", show)
    page.wait_for_load_state("networkidle")
    assert f"show={show}" in page.url
    shown = [int(entry_id[1:]) for entry_id in page.locator("section.entry").evaluate_all(
        "(all) => all.map((s) => s.id)")]
    if show == "tools":
        expected = [index for index in expected if history[index]["$type"] != "errorResponse"]
    assert shown == expected
    segment_kinds = set(page.locator("section.entry .msg-body > [data-kind]").evaluate_all(
        "(all) => all.map((s) => s.getAttribute('data-kind'))"))
    assert segment_kinds <= kinds, segment_kinds
    assert page.locator("p.skipped").count() >= 1
    page.console.screenshot(f"navigation-show-{show}")
    page.console.assert_clean()


def test_a_session_narrowed_to_one_role_shows_only_its_messages(page: Any) -> None:
    visit(page, "/sessions/timed-1?show=role:tool")
    roles = set(page.locator("section.entry article.msg .role").all_inner_texts())
    assert roles == {"tool"}
    visit(page, "/sessions/weather-40?show=role:system")
    assert page.locator("section.entry").count() == 0
    assert "No system messages" in page.locator(".nothing-shown").inner_text()
    page.console.assert_clean()


def test_a_narrowed_long_session_pages_on_through_the_matches(page: Any) -> None:
    visit(page, "/sessions/long?show=role:user")
    wait_until(page, "document.querySelectorAll('section.entry').length >= 40")
    page.locator(".more").scroll_into_view_if_needed()
    wait_until(page, "document.querySelectorAll('section.entry').length >= 80")
    roles = set(page.locator("article.msg .role").all_inner_texts())
    assert roles == {"user"}
    positions = [int(entry_id[1:]) for entry_id in page.locator("section.entry").evaluate_all(
        "(all) => all.map((s) => s.id)")]
    assert positions == list(range(0, 2 * len(positions), 2))
    page.console.assert_clean()


def test_the_find_endpoint_answers_positions_as_json(page: Any, server: str) -> None:
    answer = page.request.get(f"{server}/sessions/long/find?q=CITY+3%3F")
    assert answer.ok and answer.headers["content-type"].startswith("application/json")
    found = orjson.loads(answer.body())
    assert found == {"query": "CITY 3?", "positions": CITY_3, "more": False}
    narrowed = orjson.loads(page.request.get(f"{server}/sessions/long/find?q=answer+20:&show=role:user").body())
    assert narrowed["positions"] == []  # the answers are the assistant's
    assert page.request.get(f"{server}/sessions/nope/find?q=x").status == 404
